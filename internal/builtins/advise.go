package builtins

import (
	"context"
	"errors"
	"strings"

	"aicli.dev/aicli/guest/ptyapi"
)

// Advisor delivers a monitor's advice (monitor.Service). An error with a
// Refused() bool method that returns true is a refusal (exit 126), shown to
// the monitor as it is.
type Advisor interface {
	Advise(ctx context.Context, ns, monitor, conversation, text string) (string, error)
}

// advise is `advise [TEXT…]`: one piece of advice (the text, or stdin) from a
// monitor conversation into the target conversation it watches.
func (c *call) advise(ctx context.Context, raw []string) error {
	if c.s.Advisor == nil {
		return fail(exitFailed, "this supervisor runs no monitors")
	}
	a, err := parse(raw, map[string]bool{})
	if err != nil {
		return err
	}
	text, err := c.text(a, 0, ptyapi.MaxMessageBytes, "advice")
	if err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return fail(exitUsage, "usage: advise TEXT (or the advice on stdin); staying silent needs no call")
	}
	done, err := c.s.Advisor.Advise(ctx, c.auth.Namespace, c.auth.Agent, c.auth.Conversation, text)
	var r interface{ Refused() bool }
	if errors.As(err, &r) && r.Refused() {
		return fail(exitRefused, "%v", err)
	}
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	c.printf("%s\n", done)
	return nil
}
