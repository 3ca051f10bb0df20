package supervisor

import (
	"fmt"

	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/recall"
	"aicli.dev/aicli/internal/recall/recallapi"
	"aicli.dev/aicli/internal/store"
)

// startRecall opens the agents' recall buckets (documents in st, search
// indexes under <data>/recall) and serves them to namespace owners on api.
// The caller closes the returned Recall after the API and the built-in
// tools (remember, recall) have stopped using it, and before st closes.
func startRecall(dir layout.Dir, st *store.Store, api *apiserver.Server) (*recall.Recall, error) {
	r, err := recall.Open(st, dir.Recall(), recall.Options{})
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	recallapi.Mount(api, r, st)
	return r, nil
}
