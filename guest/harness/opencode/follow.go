package opencode

import (
	"context"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/opencode/ocdb"
	"aicli.dev/aicli/guest/ptyapi"
)

// StorePoll is how often FollowStore reads OpenCode's database for new rows.
const StorePoll = 200 * time.Millisecond

var _ harness.StoreFollower = (*Adapter)(nil)

// FollowStore implements harness.StoreFollower: OpenCode's transcript lives
// in the SQLite database under home (DBPath), not in a line-based file, so it
// is followed with ocdb.Follow — every finished message of the current
// session from its start, then each one OpenCode completes, a changed
// session id starting over from the new session's start. A database that
// does not exist yet is waited for. It returns ctx's error or fn's error.
func (a *Adapter) FollowStore(ctx context.Context, home, _ string, sessionID func() string,
	fn func(ptyapi.TranscriptEntry) error) error {
	return ocdb.Follow(ctx, DBPath(home), sessionID, StorePoll, func(e harness.TranscriptEntry) error {
		return fn(e.TranscriptEntry)
	})
}
