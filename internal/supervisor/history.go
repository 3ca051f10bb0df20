package supervisor

import (
	"context"
	"log/slog"

	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/history"
	"aicli.dev/aicli/internal/history/historyapi"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript"
)

// startHistory opens the transcript history index under <data>/history (it
// catches up with the transcript table in the background, rebuilding it when
// missing), hands it every batch the transcript log commits, and serves
// agents/{name}/historysearch. The caller closes the index before the store.
func startHistory(ctx context.Context, dir layout.Dir, st *store.Store, transcripts *transcript.StoreLog,
	api *apiserver.Server, log *slog.Logger) (*history.Index, error) {
	ix, err := history.Open(ctx, st, dir.History(), &history.StoreResolver{Store: st},
		history.Options{Logger: log.With("component", "history")})
	if err != nil {
		return nil, err
	}
	transcripts.Committed = ix.Committed
	historyapi.Register(api, ix, st)
	return ix, nil
}
