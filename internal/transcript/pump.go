package transcript

import (
	"context"
	"log/slog"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Log is a durable, per-conversation transcript. Append commits entries (in
// one synced write) and assigns their cursors; entries whose NativeID is
// already committed are skipped, so a re-read of the CLI's session store
// never duplicates a line.
type Log interface {
	Append(ctx context.Context, uid string, entries []transcriptwire.Entry) ([]transcriptwire.Entry, error)
	Read(ctx context.Context, uid string, from int64, limit int) ([]transcriptwire.Entry, error)
	Subscribe(ctx context.Context, uid string, from int64) (<-chan transcriptwire.Entry, error)
	// HasNative reports whether an entry with the CLI's entry id native is committed.
	HasNative(ctx context.Context, uid, native string) (bool, error)
}

// Pump copies a live CLI's native transcript into the Log, attributed: a user
// turn is spoken by whoever Attribution says sent it, else unattributed.
type Pump struct {
	Log         Log
	Attribution *Attribution
	Logger      *slog.Logger
}

// Run follows src until ctx ends or the guest goes away, committing each new
// entry as it arrives. It is safe to run again after a reconnect: entries
// already committed are recognised by their native id.
func (p *Pump) Run(ctx context.Context, uid string, src ptyapi.TranscriptFollower) error {
	err := src.FollowTranscript(ctx, func(e ptyapi.TranscriptEntry) error {
		if e.ID != "" {
			switch seen, err := p.Log.HasNative(ctx, uid, e.ID); {
			case err != nil:
				return err
			case seen:
				return nil // committed before a restart or reconnect
			}
		}
		speaker := p.speaker(uid, e)
		if speaker == "" {
			return nil
		}
		ts := e.Timestamp
		if ts.IsZero() {
			ts = time.Now().UTC()
		}
		_, err := p.Log.Append(ctx, uid, []transcriptwire.Entry{{Speaker: speaker, Text: e.Text, Time: ts, NativeID: e.ID}})
		return err
	})
	if err != nil && ctx.Err() == nil && p.Logger != nil {
		p.Logger.Warn("transcript pump stopped", "conversation", uid, "err", err)
	}
	return err
}

func (p *Pump) speaker(uid string, e ptyapi.TranscriptEntry) string {
	switch e.Role {
	case ptyapi.RoleUser:
		if p.Attribution == nil {
			return transcriptwire.SpeakerUnattributed
		}
		return p.Attribution.Claim(uid, e.Text)
	case ptyapi.RoleAssistant:
		return transcriptwire.SpeakerAgent
	case ptyapi.RoleTool:
		return transcriptwire.SpeakerTool
	default:
		return ""
	}
}
