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
	seen, err := p.committed(ctx, uid)
	if err != nil {
		return err
	}
	err = src.FollowTranscript(ctx, func(e ptyapi.TranscriptEntry) error {
		if e.ID != "" && seen[e.ID] {
			return nil // committed before a restart or reconnect
		}
		speaker := p.speaker(uid, e)
		if speaker == "" {
			return nil
		}
		ts := e.Timestamp
		if ts.IsZero() {
			ts = time.Now().UTC()
		}
		if _, err := p.Log.Append(ctx, uid, []transcriptwire.Entry{{Speaker: speaker, Text: e.Text, Time: ts, NativeID: e.ID}}); err != nil {
			return err
		}
		if e.ID != "" {
			seen[e.ID] = true
		}
		return nil
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

// committed returns the native ids already in the conversation's log.
func (p *Pump) committed(ctx context.Context, uid string) (map[string]bool, error) {
	seen := map[string]bool{}
	for from := int64(1); ; {
		batch, err := p.Log.Read(ctx, uid, from, 1000)
		if err != nil {
			return nil, err
		}
		for _, e := range batch {
			if e.NativeID != "" {
				seen[e.NativeID] = true
			}
			from = e.Cursor + 1
		}
		if len(batch) < 1000 {
			return seen, nil
		}
	}
}
