package builtins

import "context"

// History is filled in with the history index.
type History interface{}

func (c *call) transcriptSearch(ctx context.Context, raw []string) error {
	return fail(exitFailed, "not yet")
}
