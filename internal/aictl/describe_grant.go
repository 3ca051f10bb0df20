package aictl

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/toolcalls"
)

// recentCalls is how many calls describe grant lists.
const recentCalls = 20

// describeGrant prints what is particular to a grant: its tools, leases, call
// counters and its most recent calls, read from history.
func describeGrant(w io.Writer, obj *unstructured.Unstructured, history []client.HistoryEntry, now time.Time) error {
	var g v1alpha1.Grant
	if err := client.ToTyped(obj, &g); err != nil {
		return fmt.Errorf("decoding grant %s: %w", obj.GetName(), err)
	}
	tw := newTabWriter(w)
	fmt.Fprintln(w, "Tools:")
	if len(g.Spec.Tools) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		writeRow(tw, []string{"  NAME", "CLASS", "USAGE", "TIMEOUT", "PARAMETERS", "PINS", "CALLS/HOUR"})
		for _, t := range g.Spec.Tools {
			class := orNone(t.ClassName)
			if t.Backend != nil {
				class = "<inline backend: refused, see conditions>"
			}
			writeRow(tw, []string{"  " + t.Name, class, orNone(t.Usage), timeoutOf(t), orNone(strings.Join(t.Parameters, ",")),
				orNone(pinsOf(g.Spec.Attenuation, t.Attenuation)), callsPerHour(g.Spec.Attenuation, t.Attenuation)})
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "Leases:")
	if len(g.Status.Conversations) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		writeRow(tw, []string{"  CONVERSATION", "LEASE", "EXPIRES", "CALLS"})
		for _, c := range g.Status.Conversations {
			state, expires := "None", "<none>"
			if e := c.LeaseExpiresAt; e != nil {
				state, expires = "Held", "in "+duration.HumanDuration(e.Sub(now))
				if !e.After(now) {
					state, expires = "Expired", duration.HumanDuration(now.Sub(e.Time))+" ago"
				}
			}
			writeRow(tw, []string{"  " + c.Name, state, expires, strconv.FormatInt(c.Calls, 10)})
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "Calls:  %d authorised, %d refused\n", g.Status.Calls, g.Status.Refused)

	events := make([]toolcalls.Event, len(history))
	for i, h := range history {
		events[i] = toolcalls.Event{Type: h.Type, Object: h.Object}
	}
	calls := toolcalls.FromHistory(g.Name, events)
	if len(calls) == 0 {
		fmt.Fprintln(w, "Recent Calls:  <none>")
		return nil
	}
	shown := calls[max(0, len(calls)-recentCalls):]
	fmt.Fprintf(w, "Recent Calls (%d of %d, newest last):\n", len(shown), len(calls))
	writeRow(tw, append([]string{"  CONVERSATION", "TOOL"}, callColumns...))
	for _, c := range shown {
		writeRow(tw, append([]string{"  " + c.Conversation, c.Tool}, callCells(c.ToolCall, now)...))
	}
	return tw.Flush()
}

func timeoutOf(t v1alpha1.ToolGrant) string {
	if t.TimeoutSeconds == 0 {
		return "<class>"
	}
	return (time.Duration(t.TimeoutSeconds) * time.Second).String()
}

// pinsOf lists the pinned parameters of a tool, the grant's and its own, as
// k=v sorted by key.
func pinsOf(grant, tool *v1alpha1.Attenuation) string {
	pins := map[string]string{}
	for _, a := range []*v1alpha1.Attenuation{grant, tool} {
		if a != nil {
			for k, v := range a.PinnedParams {
				pins[k] = v
			}
		}
	}
	kv := make([]string, 0, len(pins))
	for k, v := range pins {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// callsPerHour is the tool's effective rate cap: the smaller of the grant's
// and its own, "unlimited" when neither sets one.
func callsPerHour(grant, tool *v1alpha1.Attenuation) string {
	var limit int32
	for _, a := range []*v1alpha1.Attenuation{grant, tool} {
		if a != nil && a.MaxCallsPerHour > 0 && (limit == 0 || a.MaxCallsPerHour < limit) {
			limit = a.MaxCallsPerHour
		}
	}
	if limit == 0 {
		return "unlimited"
	}
	return strconv.Itoa(int(limit))
}
