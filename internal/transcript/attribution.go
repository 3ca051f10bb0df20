package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// Bounds of the expected messages of one conversation. An expectation waits
// until the CLI records its user turn, which for a message the guest holds
// while the CLI is busy can be long after the send (a long turn); one never
// recorded (a CLI that crashed, a permission answer typed into a terminal)
// is forgotten after PendingTTL, and at most MaxPending are kept (oldest
// dropped first).
const (
	PendingTTL = 24 * time.Hour
	MaxPending = 256
)

// AttributionBucket is the store side-table bucket of the durable
// expectations, keyed "<conversation uid>/<20-digit sequence>".
const AttributionBucket = "attribution"

// AttributionStore is the part of the event store that keeps expectations
// across a supervisor restart.
type AttributionStore interface {
	PutKV(ctx context.Context, bucket, key string, val []byte) error
	DeleteKV(ctx context.Context, bucket, key string) error
	ScanKV(ctx context.Context, bucket, prefix, from string, limit int) ([]store.KV, error)
}

// Attribution remembers who sent each message into a conversation (through
// the API, an attached terminal or the platform's own deliveries), so that
// when the CLI's session store shows the message as a user turn it is
// attributed to its real sender (human, injected:<monitor>, mail:<agent>,
// trigger:<attachment>). A user turn nobody announced is unattributed: the
// CLI, or anything running as its user, wrote it (docs/conversations.md).
//
// With a Store, every expectation is also a synced side-table write before
// Expect returns (and deleted when claimed or expired), and Load restores
// them after a restart: a message accepted just before a crash and recorded
// by the CLI after the restart keeps its speaker.
type Attribution struct {
	// Store keeps expectations durably; nil keeps them in memory only.
	Store AttributionStore
	// Logger receives failed durable writes (default: discard).
	Logger *slog.Logger

	mu      sync.Mutex
	pending map[string][]pending
	lastSeq uint64
}

type pending struct {
	key     string
	speaker string
	text    string
	at      time.Time
}

// record is the side-table value of one expectation.
type record struct {
	Speaker string    `json:"speaker"`
	Text    string    `json:"text"`
	At      time.Time `json:"at"`
}

// Expect records that speaker is sending text into the conversation uid.
// Callers call it before they hand the text to the guest.
func (a *Attribution) Expect(uid, speaker, text string) {
	now := time.Now()
	a.mu.Lock()
	if a.pending == nil {
		a.pending = map[string][]pending{}
	}
	// The sequence orders expectations across restarts: nanoseconds, strictly increasing.
	a.lastSeq = max(a.lastSeq+1, uint64(now.UnixNano()))
	p := pending{key: fmt.Sprintf("%s/%020d", uid, a.lastSeq), speaker: speaker, text: normalize(text), at: now}
	list := append(a.pending[uid], p)
	var dropped []pending
	if len(list) > MaxPending {
		dropped = append(dropped, list[:len(list)-MaxPending]...)
		list = append([]pending(nil), list[len(list)-MaxPending:]...)
	}
	a.pending[uid] = list
	a.mu.Unlock()
	if a.Store == nil {
		return
	}
	ctx := context.Background()
	val, _ := json.Marshal(record{Speaker: speaker, Text: text, At: now.UTC()})
	if err := a.Store.PutKV(ctx, AttributionBucket, p.key, val); err != nil {
		a.log().Warn("attribution: the expectation is kept in memory only", "conversation", uid, "speaker", speaker, "err", err)
	}
	a.drop(ctx, dropped)
}

// Claim returns the speaker of the oldest expected message of uid whose text
// matches, consuming it; transcriptwire.SpeakerUnattributed when none does.
// Texts match when they are equal after normalize (the guest's paste
// sanitising, line endings, surrounding space).
func (a *Attribution) Claim(uid, text string) string {
	now := time.Now()
	want := normalize(text)
	a.mu.Lock()
	list := a.pending[uid]
	kept := make([]pending, 0, len(list))
	var gone []pending
	speaker := ""
	for _, p := range list {
		switch {
		case now.Sub(p.at) > PendingTTL:
			gone = append(gone, p)
		case speaker == "" && p.text == want:
			speaker = p.speaker
			gone = append(gone, p)
		default:
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		delete(a.pending, uid)
	} else {
		a.pending[uid] = kept
	}
	a.mu.Unlock()
	a.drop(context.Background(), gone)
	if speaker == "" {
		return transcriptwire.SpeakerUnattributed
	}
	return speaker
}

// Forget drops every expectation of uid.
func (a *Attribution) Forget(uid string) {
	a.mu.Lock()
	gone := a.pending[uid]
	delete(a.pending, uid)
	a.mu.Unlock()
	a.drop(context.Background(), gone)
}

// Load restores the durable expectations (at supervisor start, before any
// transcript is pumped) and deletes the expired ones.
func (a *Attribution) Load(ctx context.Context) error {
	if a.Store == nil {
		return nil
	}
	kvs, err := a.Store.ScanKV(ctx, AttributionBucket, "", "", 0)
	if err != nil {
		return fmt.Errorf("attribution: reading expectations: %w", err)
	}
	now := time.Now()
	var gone []pending
	a.mu.Lock()
	if a.pending == nil {
		a.pending = map[string][]pending{}
	}
	for _, kv := range kvs {
		uid, _, ok := strings.Cut(kv.Key, "/")
		var r record
		if !ok || json.Unmarshal(kv.Value, &r) != nil || now.Sub(r.At) > PendingTTL {
			gone = append(gone, pending{key: kv.Key})
			continue
		}
		if a.has(uid, kv.Key) {
			continue
		}
		a.pending[uid] = append(a.pending[uid], pending{key: kv.Key, speaker: r.Speaker, text: normalize(r.Text), at: r.At})
	}
	a.mu.Unlock()
	a.drop(ctx, gone)
	return nil
}

// has reports whether uid's pending list holds key. a.mu must be held.
func (a *Attribution) has(uid, key string) bool {
	for _, p := range a.pending[uid] {
		if p.key == key {
			return true
		}
	}
	return false
}

// drop deletes expectations from the store.
func (a *Attribution) drop(ctx context.Context, gone []pending) {
	if a.Store == nil {
		return
	}
	for _, p := range gone {
		if err := a.Store.DeleteKV(ctx, AttributionBucket, p.key); err != nil {
			a.log().Warn("attribution: deleting a consumed expectation", "key", p.key, "err", err)
		}
	}
}

func (a *Attribution) log() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Logger
}

// normalize is the form in which a sent text and a recorded user turn are
// compared: what the guest's bracketed paste leaves of it
// (ptyapi.SanitizeMessage), without surrounding space.
func normalize(s string) string { return strings.TrimSpace(ptyapi.SanitizeMessage(s)) }
