package aictl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

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
				h.ResourceVersion, client.SummarizeChange(h.Type, prev, h.Object))
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
