package aictl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/client"
)

func newDescribeCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:               "describe KIND NAME | KIND/NAME",
		Short:             "Show an object's metadata, spec, conditions and history",
		Example:           "  aictl describe agent coder\n  aictl describe conversation/coder-1 -n team-a",
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeKindsAndNames(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			_, targets, err := parseTargets(args, cl.Registry())
			if err != nil {
				return err
			}
			if len(targets) == 0 {
				return fmt.Errorf("describe needs a name: aictl describe %s NAME", args[0])
			}
			for i, t := range targets {
				if i > 0 {
					fmt.Fprintln(g.streams.Out)
				}
				if err := describe(cmd.Context(), cl, t.res, g.ns(), t.name, g.streams.Out, time.Now()); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func describe(ctx context.Context, cl *client.Client, res *apischema.Resource, ns, name string, w io.Writer, now time.Time) error {
	obj, err := cl.Get(ctx, res.Plural, ns, name)
	if err != nil {
		return err
	}
	history, histErr := cl.History(ctx, res.Plural, ns, name)

	tw := newTabWriter(w)
	field := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	field("Name", obj.GetName())
	field("Namespace", obj.GetNamespace())
	field("Kind", obj.GetKind())
	field("API Version", obj.GetAPIVersion())
	field("Labels", keyValues(obj.GetLabels()))
	field("Annotations", keyValues(obj.GetAnnotations()))
	field("UID", string(obj.GetUID()))
	field("Resource Version", obj.GetResourceVersion())
	field("Generation", fmt.Sprint(obj.GetGeneration()))
	ct := obj.GetCreationTimestamp()
	field("Created", fmt.Sprintf("%s (%s ago)", ct.UTC().Format(time.RFC3339), duration.HumanDuration(now.Sub(ct.Time))))
	if dt := obj.GetDeletionTimestamp(); dt != nil {
		field("Deleting Since", fmt.Sprintf("%s (%s ago)", dt.UTC().Format(time.RFC3339), duration.HumanDuration(now.Sub(dt.Time))))
	}
	field("Finalizers", orNone(strings.Join(obj.GetFinalizers(), ", ")))
	var owners []string
	for _, o := range obj.GetOwnerReferences() {
		owners = append(owners, o.Kind+"/"+o.Name)
	}
	field("Owner References", orNone(strings.Join(owners, ", ")))
	if err := tw.Flush(); err != nil {
		return err
	}

	if spec, ok := obj.Object["spec"]; ok {
		fmt.Fprintln(w, "Spec:")
		writeIndentedYAML(w, spec, "  ")
	}
	describeStatus(w, obj, now)
	if res.Kind == "Grant" && obj.GetKind() == "Grant" {
		if err := describeGrant(w, obj, history, now); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "Events:")
	switch {
	case histErr != nil:
		fmt.Fprintf(w, "  <unavailable: %s>\n", strings.TrimPrefix(formatError(histErr), "error: "))
	case len(history) == 0:
		fmt.Fprintln(w, "  <none>")
	default:
		tw = newTabWriter(w)
		fmt.Fprintln(tw, "  TYPE\tAGE\tRESOURCE VERSION\tCHANGE")
		var prev *unstructured.Unstructured
		for _, h := range history {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", h.Type, duration.HumanDuration(now.Sub(h.Time.Time)),
				h.ResourceVersion, summarizeChange(h.Type, prev, h.Object))
			if h.Object != nil {
				prev = h.Object
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func describeStatus(w io.Writer, obj *unstructured.Unstructured, now time.Time) {
	status, ok := obj.Object["status"].(map[string]any)
	if !ok || len(status) == 0 {
		fmt.Fprintln(w, "Status:  <none>")
		return
	}
	fmt.Fprintln(w, "Status:")
	rest := map[string]any{}
	for k, v := range status {
		if k != "conditions" && k != "observedGeneration" {
			rest[k] = v
		}
	}
	if og, ok := status["observedGeneration"]; ok {
		fmt.Fprintf(w, "  Observed Generation:  %v\n", og)
	}
	conds, _ := status["conditions"].([]any)
	if len(conds) > 0 {
		fmt.Fprintln(w, "  Conditions:")
		tw := newTabWriter(w)
		fmt.Fprintln(tw, "    TYPE\tSTATUS\tREASON\tMESSAGE\tAGE\tOBSERVED GENERATION")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			age := ""
			if s, ok := m["lastTransitionTime"].(string); ok {
				if t, err := time.Parse(time.RFC3339, s); err == nil {
					age = duration.HumanDuration(now.Sub(t))
				}
			}
			og := "<none>"
			if v, ok := m["observedGeneration"]; ok {
				og = fmt.Sprint(v)
			}
			fmt.Fprintf(tw, "    %v\t%v\t%v\t%v\t%s\t%s\n", str(m["type"]), str(m["status"]), str(m["reason"]),
				str(m["message"]), age, og)
		}
		_ = tw.Flush()
	}
	if len(rest) > 0 {
		writeIndentedYAML(w, rest, "  ")
	}
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func keyValues(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, "\n\t")
}

func writeIndentedYAML(w io.Writer, v any, indent string) {
	b, err := yaml.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "%s<unprintable: %v>\n", indent, err)
		return
	}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		fmt.Fprintln(w, indent+line)
	}
}

// maxChanges bounds how many changed fields one history line lists.
const maxChanges = 3

// summarizeChange describes what an event changed relative to the previous one.
func summarizeChange(typ string, prev, cur *unstructured.Unstructured) string {
	switch {
	case typ == "ADDED" && cur != nil:
		return fmt.Sprintf("created (generation %d)", cur.GetGeneration())
	case typ == "DELETED":
		return "removed"
	case prev == nil || cur == nil:
		return ""
	}
	// Conditions first (Ready leading), then field changes, each sorted.
	changes := conditionChanges(prev, cur)
	sort.Slice(changes, func(i, j int) bool {
		ri, rj := strings.HasPrefix(changes[i], v1alpha1.ConditionReady+"="), strings.HasPrefix(changes[j], v1alpha1.ConditionReady+"=")
		if ri != rj {
			return ri
		}
		return changes[i] < changes[j]
	})
	var fields []string
	before, after := map[string]string{}, map[string]string{}
	flattenFields("", prev.Object, before)
	flattenFields("", cur.Object, after)
	for k, v := range after {
		if old, ok := before[k]; !ok {
			fields = append(fields, fmt.Sprintf("%s: %s", k, v))
		} else if old != v {
			fields = append(fields, fmt.Sprintf("%s: %s → %s", k, old, v))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			fields = append(fields, k+" removed")
		}
	}
	sort.Strings(fields)
	changes = append(changes, fields...)
	if len(changes) == 0 {
		return "no field changes"
	}
	if len(changes) > maxChanges {
		return strings.Join(changes[:maxChanges], "; ") + fmt.Sprintf("; +%d more", len(changes)-maxChanges)
	}
	return strings.Join(changes, "; ")
}

// conditionChanges describes changed conditions as "Ready=True (Reason, generation 2)".
func conditionChanges(prev, cur *unstructured.Unstructured) []string {
	old := conditionsByType(prev)
	var out []string
	for typ, c := range conditionsByType(cur) {
		o, existed := old[typ]
		if existed && o["status"] == c["status"] && o["reason"] == c["reason"] &&
			fmt.Sprint(o["observedGeneration"]) == fmt.Sprint(c["observedGeneration"]) && o["message"] == c["message"] {
			continue
		}
		s := fmt.Sprintf("%s=%s (%s", typ, str(c["status"]), str(c["reason"]))
		if g, ok := c["observedGeneration"]; ok {
			s += fmt.Sprintf(", generation %v", g)
		}
		out = append(out, s+")")
	}
	for typ := range old {
		if _, ok := conditionsByType(cur)[typ]; !ok {
			out = append(out, typ+" condition removed")
		}
	}
	return out
}

func conditionsByType(obj *unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			out[str(m["type"])] = m
		}
	}
	return out
}

// noisyFields change on every write and would hide the real change;
// conditions are summarised separately.
var noisyFields = map[string]bool{
	"metadata.resourceVersion": true, "metadata.managedFields": true, "metadata.generation": true,
	"status.conditions": true,
}

// flattenFields maps leaf paths to compact JSON values; lists of objects with
// a "type" or "name" key are keyed by it (status.conditions[Ready].status).
func flattenFields(prefix string, v any, out map[string]string) {
	if noisyFields[prefix] || strings.HasSuffix(prefix, ".lastTransitionTime") {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flattenFields(p, child, out)
		}
		return
	case []any:
		keyed := true
		for _, it := range x {
			if listKey(it) == "" {
				keyed = false
				break
			}
		}
		if keyed && len(x) > 0 {
			for _, it := range x {
				flattenFields(prefix+"["+listKey(it)+"]", it, out)
			}
			return
		}
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	out[prefix] = s
}

func listKey(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"type", "name"} {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}
