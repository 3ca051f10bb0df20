package transcript

import (
	"strings"
	"sync"
	"time"

	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// pendingTTL bounds how long an expected message waits to be seen in the
// CLI's session store before it is forgotten.
const pendingTTL = 10 * time.Minute

// Attribution remembers who sent each message through the API, so that when
// the CLI's session store shows the message as a user turn it is attributed
// to its real sender (human, or injected:<monitor>). Text typed straight into
// an attached terminal has no expectation and counts as human.
type Attribution struct {
	mu      sync.Mutex
	pending map[string][]pending
}

type pending struct {
	speaker string
	text    string
	at      time.Time
}

// Expect records that speaker is sending text into the conversation uid.
func (a *Attribution) Expect(uid, speaker, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pending == nil {
		a.pending = map[string][]pending{}
	}
	a.pending[uid] = append(a.pending[uid], pending{speaker: speaker, text: normalize(text), at: time.Now()})
}

// Claim returns the speaker of the oldest expected message of uid whose text
// matches, consuming it; "human" when none does.
func (a *Attribution) Claim(uid, text string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	list, ok := a.pending[uid]
	if !ok {
		// Nothing expected (a fresh supervisor, or text typed in an attached terminal): the human's.
		return transcriptwire.SpeakerHuman
	}
	now := time.Now()
	kept := list[:0]
	speaker := ""
	want := normalize(text)
	for _, p := range list {
		switch {
		case now.Sub(p.at) > pendingTTL:
		case speaker == "" && p.text == want:
			speaker = p.speaker
		default:
			kept = append(kept, p)
		}
	}
	a.pending[uid] = kept
	if speaker == "" {
		return transcriptwire.SpeakerHuman
	}
	return speaker
}

// Forget drops every expectation of uid.
func (a *Attribution) Forget(uid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, uid)
}

func normalize(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }
