package aictl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"aicli.dev/aicli/internal/apischema"
	"aicli.dev/aicli/internal/client"
)

type getOptions struct {
	output   string
	allNS    bool
	selector string
	watch    bool
}

func newGetCommand(g *globalOptions) *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get KIND[,KIND...] [NAME...] | KIND/NAME...",
		Short: "List resources as a table or print them as yaml, json or names",
		Example: "  aictl get agents\n  aictl get agents -A -o wide\n  aictl get agent coder -o yaml\n" +
			"  aictl get conversations -l team=a -w\n  aictl get agents,conversations,grants",
		Args:              cobra.ArbitraryArgs,
		ValidArgsFunction: completeKindsAndNames(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if len(args) == 1 && strings.Contains(args[0], ",") && !strings.Contains(args[0], "/") {
				return o.runKinds(cmd.Context(), g, cl, strings.Split(args[0], ","))
			}
			res, targets, err := parseTargets(args, cl.Registry())
			if err != nil {
				return err
			}
			for _, t := range targets {
				if t.res != res {
					return errors.New("get with several names needs them to be of one kind")
				}
			}
			return o.run(cmd.Context(), g, cl, res, targets)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "output format: wide, yaml, json or name (default: table)")
	f.BoolVarP(&o.allNS, "all-namespaces", "A", false, "list across all namespaces")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector, e.g. team=a,tier!=db")
	f.BoolVarP(&o.watch, "watch", "w", false, "after listing, stream changes")
	return cmd
}

// runKinds lists several kinds, one table (or name list) after another.
func (o *getOptions) runKinds(ctx context.Context, g *globalOptions, cl *client.Client, kinds []string) error {
	if o.watch || o.output == "json" || o.output == "yaml" {
		return errors.New("several kinds at once print as tables or names only, without -w")
	}
	var resources []*apischema.Resource
	for _, k := range kinds {
		res, err := lookup(k, cl.Registry())
		if err != nil {
			return err
		}
		resources = append(resources, res)
	}
	sep := &separated{w: g.streams.Out, blank: o.output != "name"}
	sub := *g
	sub.streams.Out = sep
	for _, res := range resources {
		if err := o.run(ctx, &sub, cl, res, nil); err != nil {
			return err
		}
		sep.next()
	}
	return nil
}

// separated puts a blank line between the outputs of consecutive kinds
// that printed something.
type separated struct {
	w       io.Writer
	blank   bool
	wrote   bool // something was written since the last separator
	pending bool // a separator is owed before the next write
}

func (s *separated) Write(p []byte) (int, error) {
	if s.pending && s.blank {
		if _, err := io.WriteString(s.w, "\n"); err != nil {
			return 0, err
		}
	}
	s.pending, s.wrote = false, true
	return s.w.Write(p)
}

func (s *separated) next() {
	if s.wrote {
		s.pending, s.wrote = true, false
	}
}

func (o *getOptions) run(ctx context.Context, g *globalOptions, cl *client.Client, res *apischema.Resource, targets []target) error {
	switch o.output {
	case "", "wide", "yaml", "json", "name":
	default:
		return fmt.Errorf("unknown output format %q: allowed formats are wide, yaml, json, name", o.output)
	}
	ns := g.ns()
	if o.allNS || !res.Namespaced {
		ns = ""
	}
	out := g.streams.Out
	var table *tablePrinter
	if o.output == "" || o.output == "wide" {
		var err error
		if table, err = newTablePrinter(res, o.output == "wide", o.allNS && res.Namespaced); err != nil {
			return err
		}
	}

	var objs []unstructured.Unstructured
	var listRV string
	var errs []error
	if len(targets) > 0 {
		if o.allNS && res.Namespaced {
			return errors.New("a resource cannot be retrieved by name across all namespaces")
		}
		for _, t := range targets {
			obj, err := cl.Get(ctx, res.Plural, ns, t.name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			objs = append(objs, *obj)
		}
	} else {
		list, err := cl.List(ctx, res.Plural, ns, client.ListOptions{LabelSelector: o.selector})
		if err != nil {
			return err
		}
		objs, listRV = list.Items, list.GetResourceVersion()
	}

	switch {
	case table != nil && len(objs) > 0:
		if err := table.printTable(out, objs, true); err != nil {
			return err
		}
	case table != nil && len(targets) == 0 && !o.watch:
		if ns == "" {
			fmt.Fprintln(g.streams.ErrOut, "No resources found")
		} else {
			fmt.Fprintf(g.streams.ErrOut, "No resources found in %s namespace.\n", ns)
		}
	case table == nil && len(objs) > 0 && o.watch:
		// A stream of single objects, as the changes that follow.
		for i := range objs {
			if err := printStreamed(out, o.output, &objs[i], res); err != nil {
				return err
			}
		}
	case table == nil && len(objs) > 0:
		if err := printObjects(out, o.output, objs, len(targets) != 1, res); err != nil {
			return err
		}
	case table == nil && len(targets) == 0 && !o.watch:
		if err := printObjects(out, o.output, nil, true, res); err != nil {
			return err
		}
	}
	if len(errs) > 0 || !o.watch {
		return errors.Join(errs...)
	}
	return o.stream(ctx, cl, res, ns, targets, objs, listRV, table, len(objs) > 0, out)
}

// stream prints each change after the listing until ctx ends.
func (o *getOptions) stream(ctx context.Context, cl *client.Client, res *apischema.Resource, ns string,
	targets []target, objs []unstructured.Unstructured, rv string, table *tablePrinter, headerDone bool, out io.Writer) error {
	names := map[string]bool{}
	for _, t := range targets {
		names[t.name] = true
	}
	if rv == "" { // named objects: resume after the newest one read
		for i := range objs {
			if v := objs[i].GetResourceVersion(); newerRV(v, rv) {
				rv = v
			}
		}
	}
	selector := o.selector
	if len(targets) > 0 {
		selector = ""
	}
	return cl.WatchUntil(ctx, res.Plural, ns, client.ListOptions{LabelSelector: selector, ResourceVersion: rv}, func(ev watch.Event) (bool, error) {
		obj, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || (len(names) > 0 && !names[obj.GetName()]) {
			return false, nil
		}
		if table != nil {
			err := table.printTable(out, []unstructured.Unstructured{*obj}, !headerDone)
			headerDone = true
			return false, err
		}
		return false, printStreamed(out, o.output, obj, res)
	})
}

// printStreamed prints one object of a -w stream: yaml documents separated
// by ---, json objects one after another, or names.
func printStreamed(out io.Writer, format string, obj *unstructured.Unstructured, res *apischema.Resource) error {
	if format == "yaml" {
		fmt.Fprintln(out, "---")
	}
	return printObjects(out, format, []unstructured.Unstructured{*obj}, false, res)
}
