package mailbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
)

// SeedLog writes n message_sent records from one of a few senders to agent
// straight into the log, with 64 concurrent synced writes (benchmark setup:
// the store's group commit makes this far faster than n serial Appends).
func SeedLog(ctx context.Context, st Store, ns, agent string, n int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		g.Go(func() error {
			raw, err := json.Marshal(&record{
				Type: typeSent, Time: t0.Add(time.Duration(i) * time.Millisecond),
				From: fmt.Sprintf("peer-%d", i%8), To: agent, ConversationContext: "conv-1",
				Body: fmt.Sprintf("message %d: a short line of mail of typical length for an agent", i),
			})
			if err != nil {
				return err
			}
			return st.PutKV(ctx, bucket, logKey(ns, uint64(i+1)), raw)
		})
	}
	return g.Wait()
}
