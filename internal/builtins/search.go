package builtins

import (
	"context"
	"errors"
	"strings"
	"time"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/history"
	"aicli.dev/aicli/internal/history/historywire"
)

// History searches committed transcripts (history.Index).
type History interface {
	Search(ctx context.Context, q history.Query) ([]history.Hit, error)
}

// transcriptSearch is `transcript-search QUERY… [--agent A] [--speaker S]
// [--since DURATION|TIME] [--limit N]`: the agent's own history and, with its
// Grants' observe targets, theirs.
func (c *call) transcriptSearch(ctx context.Context, raw []string) error {
	if c.s.History == nil {
		return fail(exitFailed, "this supervisor serves no transcript history")
	}
	a, err := parse(raw, map[string]bool{"agent": true, "speaker": true, "since": true, "limit": true})
	if err != nil {
		return err
	}
	if len(a.pos) == 0 && !a.has("speaker") && !a.has("since") {
		return fail(exitUsage, "usage: transcript-search QUERY [--agent A] [--speaker S] [--since DURATION|TIME] [--limit N]")
	}
	limit, err := a.num("limit", historywire.DefaultLimit, historywire.MaxLimit)
	if err != nil {
		return err
	}
	var since time.Time
	if v := a.str("since"); v != "" {
		if since, err = historywire.ParseSince(v, time.Now()); err != nil {
			return fail(exitUsage, "%v", err)
		}
	}
	all, err := c.grants(ctx)
	if err != nil {
		return err
	}
	atts, err := c.attachments(ctx)
	if err != nil {
		return err
	}
	targets := append([]v1alpha1.TargetRef{{Agent: c.auth.Agent}}, grants.Observed(c.auth.Agent, all, atts)...)
	if want := a.str("agent"); want != "" {
		var only []v1alpha1.TargetRef
		for _, t := range targets {
			if t.Agent == want {
				only = append(only, t)
			}
		}
		if len(only) == 0 {
			return fail(exitRefused, "refused: no Grant of agent %q lets it observe agent %q (spec.observe), nor a MonitorAttachment it monitors with", c.auth.Agent, want)
		}
		targets = only
	}
	hits, err := c.s.History.Search(ctx, history.Query{Namespace: c.auth.Namespace, Targets: targets,
		Text: strings.Join(a.pos, " "), Speaker: a.str("speaker"), Since: since, Limit: int(limit)})
	var qe *history.QueryError
	if errors.As(err, &qe) {
		return fail(exitFailed, "%v", err)
	} else if err != nil {
		return err
	}
	if len(hits) == 0 {
		c.printf("nothing found\n")
		return nil
	}
	for _, h := range hits {
		c.printf("%s #%d %s %s: %s\n", h.Conversation, h.Cursor, h.Time.UTC().Format("2006-01-02 15:04:05Z"), h.Speaker,
			strings.ReplaceAll(h.Snippet, "\n", " "))
	}
	c.printf("(read around a hit: transcript-read CONVERSATION --from CURSOR)\n")
	return nil
}
