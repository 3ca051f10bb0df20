package aictl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/internal/client"
)

type deleteOptions struct {
	files          []string
	wait           bool
	timeout        time.Duration
	ignoreNotFound bool
}

func newDeleteCommand(g *globalOptions) *cobra.Command {
	o := &deleteOptions{}
	cmd := &cobra.Command{
		Use:   "delete KIND NAME... | KIND/NAME... | -f FILENAME",
		Short: "Delete objects by name or by the files that define them",
		Long: "Delete asks the server to delete each object; objects with finalizers stay, marked for deletion, " +
			"until their controller releases them. With --wait, delete returns only once they are gone.",
		Example:           "  aictl delete agent coder\n  aictl delete -f config/samples/ --wait --timeout 1m",
		ValidArgsFunction: completeKindsAndNames(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			var targets []target
			var nss []string
			switch {
			case len(o.files) > 0 && len(args) > 0:
				return errors.New("give either -f FILENAME or KIND NAME, not both")
			case len(o.files) > 0:
				ms, err := readManifests(o.files, g.streams.In, cl.Registry())
				if err != nil {
					return err
				}
				for _, m := range ms {
					if err := g.setNamespace(m); err != nil {
						return err
					}
					targets = append(targets, target{res: m.res, name: m.obj.GetName()})
					nss = append(nss, m.obj.GetNamespace())
				}
			default:
				_, ts, err := parseTargets(args, cl.Registry())
				if err != nil {
					return err
				}
				if len(ts) == 0 {
					return fmt.Errorf("delete needs names: aictl delete %s NAME", args[0])
				}
				for _, t := range ts {
					targets = append(targets, t)
					nss = append(nss, g.ns())
				}
			}
			return o.run(cmd.Context(), g, cl, targets, nss)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "delete the objects defined in this file, directory or - (stdin)")
	f.BoolVar(&o.wait, "wait", false, "wait until the objects are gone (finalizers released)")
	f.DurationVar(&o.timeout, "timeout", 60*time.Second, "with --wait, how long to wait")
	f.BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "treat absent objects as deleted")
	return cmd
}

func (o *deleteOptions) run(ctx context.Context, g *globalOptions, cl *client.Client, targets []target, nss []string) error {
	var errs []error
	var pending []int
	for i, t := range targets {
		_, err := cl.Delete(ctx, t.res.Plural, nss[i], t.name)
		switch {
		case apierrors.IsNotFound(err) && o.ignoreNotFound:
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(g.streams.Out, "%s deleted\n", quotedRef(t.res, t.name))
		pending = append(pending, i)
	}
	if o.wait && len(pending) > 0 {
		wctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		for _, i := range pending {
			if err := waitFor(wctx, cl, targets[i], nss[i], condition{deleted: true}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
