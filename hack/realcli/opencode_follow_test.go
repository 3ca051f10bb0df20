//go:build realcli

package realcli

import (
	"bytes"
	"context"
	"errors"
	"time"

	"aicli.dev/aicli/guest/harness/opencode"
	"aicli.dev/aicli/guest/harness/opencode/ocdb"
	"aicli.dev/aicli/guest/ptyapi"
)

// followOpenCode follows an OpenCode session's transcript from its SQLite
// store: every 50ms it dumps the session's finished messages with ocdb and
// hands the entries not seen before (by id) to the session. This is what the
// guest's follower would do for OpenCode; it does not yet (it tails files).
func followOpenCode(ctx context.Context, se *session, home string) {
	a := opencode.New(opencode.Options{})
	seen := map[string]bool{}
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := se.h.Status(ctx)
		if err != nil || st.SessionID == "" {
			continue
		}
		d, err := ocdb.Open(opencode.DBPath(home))
		if err != nil {
			continue
		}
		var buf bytes.Buffer
		_, err = d.Dump(ctx, st.SessionID, &buf)
		_ = d.Close()
		if err != nil && !errors.Is(err, ocdb.ErrIncomplete) {
			se.t.Logf("opencode dump: %v", err)
			continue
		}
		entries, err := a.ParseTranscript(&buf)
		if err != nil {
			se.t.Logf("opencode rows: %v", err)
			continue
		}
		se.mu.Lock()
		for _, e := range entries {
			if !seen[e.ID] {
				seen[e.ID] = true
				se.entries = append(se.entries, ptyapi.TranscriptEntry(e.TranscriptEntry))
			}
		}
		se.mu.Unlock()
	}
}
