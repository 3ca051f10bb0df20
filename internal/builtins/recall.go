package builtins

import (
	"context"
	"errors"
	"strings"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/recall"
)

// Recall is the agents' recall buckets (recall.Recall).
type Recall interface {
	Put(ctx context.Context, ref recall.BucketRef, d recall.Doc) (recall.Doc, error)
	Search(ctx context.Context, ref recall.BucketRef, q string, limit int) ([]recall.Hit, error)
}

// remember is `remember BUCKET [--title T] [--tag T]… [TEXT…]`.
func (c *call) remember(ctx context.Context, raw []string) error {
	a, err := parse(raw, map[string]bool{"title": true, "tag": true})
	if err != nil {
		return err
	}
	if len(a.pos) == 0 {
		return fail(exitUsage, "usage: remember BUCKET [--title T] [--tag T]… [TEXT…] (the text from stdin when none is given)")
	}
	ref, err := c.bucket(ctx, a.pos[0], v1alpha1.RecallReadWrite)
	if err != nil {
		return err
	}
	body, err := c.text(a, 1, recall.MaxBodyBytes, "document")
	if err != nil {
		return err
	}
	if strings.TrimSpace(body) == "" {
		return fail(exitFailed, "the document is empty; nothing was stored")
	}
	d, err := c.s.Recall.Put(ctx, ref, recall.Doc{Title: a.str("title"), Tags: a.flags["tag"], Body: body})
	if errors.Is(err, recall.ErrTooLarge) {
		return fail(exitFailed, "%v; nothing was stored", err)
	} else if err != nil {
		return err
	}
	c.printf("remembered in %s as %s\n", ref.Bucket, d.ID)
	return nil
}

// recall is `recall BUCKET QUERY… [--limit N]`.
func (c *call) recall(ctx context.Context, raw []string) error {
	a, err := parse(raw, map[string]bool{"limit": true})
	if err != nil {
		return err
	}
	if len(a.pos) < 2 {
		return fail(exitUsage, "usage: recall BUCKET QUERY [--limit N]")
	}
	ref, err := c.bucket(ctx, a.pos[0], v1alpha1.RecallRead)
	if err != nil {
		return err
	}
	limit, err := a.num("limit", recall.DefaultSearchLimit, recall.MaxSearchLimit)
	if err != nil {
		return err
	}
	hits, err := c.s.Recall.Search(ctx, ref, strings.Join(a.pos[1:], " "), int(limit))
	var qe *recall.QueryError
	if errors.As(err, &qe) {
		return fail(exitFailed, "%v", err)
	} else if err != nil {
		return err
	}
	if len(hits) == 0 {
		c.printf("nothing found in %s\n", ref.Bucket)
		return nil
	}
	for _, h := range hits {
		title := h.Title
		if title == "" {
			title = "(untitled)"
		}
		c.printf("%s  %.3f  %s\n    %s\n", h.ID, h.Score, title, strings.ReplaceAll(h.Snippet, "\n", " "))
	}
	return nil
}

// bucket checks that the agent's Grants give it name with at least access.
func (c *call) bucket(ctx context.Context, name string, need v1alpha1.RecallAccess) (recall.BucketRef, error) {
	if c.s.Recall == nil {
		return recall.BucketRef{}, fail(exitFailed, "this supervisor serves no recall buckets")
	}
	all, err := c.grants(ctx)
	if err != nil {
		return recall.BucketRef{}, err
	}
	have, ok := grants.Buckets(c.auth.Agent, all)[name]
	switch {
	case !ok:
		return recall.BucketRef{}, fail(exitRefused, "refused: no Grant of agent %q names recall bucket %q (spec.recall)", c.auth.Agent, name)
	case need == v1alpha1.RecallReadWrite && have != v1alpha1.RecallReadWrite:
		return recall.BucketRef{}, fail(exitRefused, "refused: recall bucket %q is granted %s, not ReadWrite", name, have)
	}
	return recall.BucketRef{Namespace: c.auth.Namespace, Agent: c.auth.Agent, Bucket: name}, nil
}

// grants lists the namespace's grants.
func (c *call) grants(ctx context.Context) ([]v1alpha1.Grant, error) {
	var list v1alpha1.GrantList
	if err := c.s.Client.List(ctx, c.auth.Namespace, &list, nil); err != nil {
		return nil, err
	}
	return list.Items, nil
}
