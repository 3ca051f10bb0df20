package aictl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/client"
)

// condition is what wait waits for: a condition type with a status, or
// deletion.
type condition struct {
	deleted bool
	typ     string
	status  string
}

func parseFor(v string) (condition, error) {
	if strings.EqualFold(v, "delete") {
		return condition{deleted: true}, nil
	}
	spec, ok := strings.CutPrefix(v, "condition=")
	if !ok || spec == "" {
		return condition{}, fmt.Errorf("--for must be delete or condition=TYPE[=STATUS], not %q", v)
	}
	typ, status, found := strings.Cut(spec, "=")
	if !found {
		status = "True"
	}
	if typ == "" || status == "" {
		return condition{}, fmt.Errorf("--for must be delete or condition=TYPE[=STATUS], not %q", v)
	}
	return condition{typ: typ, status: status}, nil
}

// met reports whether obj satisfies c: the condition observed for the
// object's current generation (client.ConditionMet).
func (c condition) met(obj *unstructured.Unstructured) bool {
	return client.ConditionMet(obj, c.typ, c.status)
}

func (c condition) String() string {
	if c.deleted {
		return "delete"
	}
	return "condition=" + c.typ + "=" + c.status
}

func newWaitCommand(g *globalOptions) *cobra.Command {
	var forFlag string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait --for=condition=TYPE[=STATUS]|--for=delete KIND/NAME... | KIND NAME...",
		Short: "Wait until objects have a condition for their current generation, or are deleted",
		Long: "Wait watches the objects until the condition holds with an observedGeneration equal to the object's " +
			"generation (a Ready written for an older spec does not count), or until they are gone. It exits " +
			"non-zero when --timeout passes first.",
		Example: "  aictl wait --for=condition=Ready agent/coder --timeout 60s\n  aictl wait --for=delete conversation/coder-1",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := parseFor(forFlag)
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			_, targets, err := parseTargets(args, cl.Registry())
			if err != nil {
				return err
			}
			if len(targets) == 0 {
				return errors.New("wait needs objects: aictl wait --for=... KIND/NAME")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			for _, t := range targets {
				if err := waitFor(ctx, cl, t, g.ns(), c); err != nil {
					return err
				}
				fmt.Fprintf(g.streams.Out, "%s condition met\n", ref(t.res, t.name))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&forFlag, "for", "", "condition=TYPE[=STATUS] (STATUS defaults to True) or delete")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait before giving up")
	_ = cmd.MarkFlagRequired("for")
	return cmd
}

// errTimeout is returned when the wait deadline passes.
var errTimeout = errors.New("timed out waiting")

// waitFor blocks until t satisfies c or ctx ends, following the object
// through the watch (client.WaitFor).
func waitFor(ctx context.Context, cl *client.Client, t target, ns string, c condition) error {
	_, err := cl.WaitFor(ctx, t.res.Plural, ns, t.name, func(obj *unstructured.Unstructured) (bool, error) {
		if obj == nil {
			return c.deleted, nil
		}
		return !c.deleted && c.met(obj), nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, client.ErrDeleted):
		return fmt.Errorf("%s was deleted while waiting for %s", quotedRef(t.res, t.name), c)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Errorf("interrupted while waiting for %s on %s/%s", c, t.res.Plural, t.name)
	case ctx.Err() != nil:
		return fmt.Errorf("%w for %s on %s/%s", errTimeout, c, t.res.Plural, t.name)
	}
	return err
}
