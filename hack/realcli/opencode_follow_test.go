//go:build realcli

package realcli

import (
	"context"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/opencode"
	"aicli.dev/aicli/guest/harness/opencode/ocdb"
	"aicli.dev/aicli/guest/ptyapi"
)

// followOpenCode follows an OpenCode session's transcript from its SQLite
// store with ocdb.Follow (what the guest's follower would do for OpenCode; it
// tails files, so it cannot yet).
func followOpenCode(ctx context.Context, se *session, home string) {
	sid := func() string {
		st, err := se.h.Status(ctx)
		if err != nil {
			return ""
		}
		return st.SessionID
	}
	_ = ocdb.Follow(ctx, opencode.DBPath(home), sid, 50*time.Millisecond, func(e harness.TranscriptEntry) error {
		se.mu.Lock()
		se.entries = append(se.entries, ptyapi.TranscriptEntry(e.TranscriptEntry))
		se.mu.Unlock()
		return nil
	})
}
