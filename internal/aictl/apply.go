package aictl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/internal/client"
)

// applyRetries bounds how often apply re-reads and retries after a conflict.
const applyRetries = 5

func newApplyCommand(g *globalOptions) *cobra.Command {
	var files []string
	var dryRun string
	cmd := &cobra.Command{
		Use:   "apply -f FILENAME",
		Short: "Create or update resources from files, directories or stdin",
		Long: "Create the objects of the given files that do not exist yet and update the others: their spec, " +
			"labels and annotations become the file's; server-kept metadata (finalizers, owner references) and " +
			"status stay. Re-applying an unchanged file changes nothing.",
		Example: "  aictl apply -f config/samples/\n  aictl apply -f agent.yaml -n team-a\n  cat agent.yaml | aictl apply -f -",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dry, err := parseDryRun(dryRun)
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			ms, err := readManifests(files, g.streams.In, cl.Registry())
			if err != nil {
				return err
			}
			return g.apply(cmd.Context(), cl, ms, dry, g.streams.Out)
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file, directory (its .yaml/.yml/.json files) or - for stdin; repeatable")
	cmd.Flags().StringVar(&dryRun, "dry-run", "none", `"server" validates and defaults on the server without storing; "none" applies`)
	return cmd
}

func parseDryRun(v string) (bool, error) {
	switch v {
	case "", "none":
		return false, nil
	case "server":
		return true, nil
	default:
		return false, fmt.Errorf(`--dry-run must be "none" or "server", not %q`, v)
	}
}

// apply applies every manifest, printing one line per object, and returns
// the joined errors of those that failed.
func (g *globalOptions) apply(ctx context.Context, cl *client.Client, ms []manifest, dry bool, out io.Writer) error {
	var errs []error
	suffix := ""
	if dry {
		suffix = " (server dry run)"
	}
	for _, m := range ms {
		if err := g.setNamespace(m); err != nil {
			errs = append(errs, err)
			continue
		}
		result, err := applyOne(ctx, cl, m, dry)
		if err != nil {
			errs = append(errs, &opError{op: "error when applying " + m.where(), err: err})
			continue
		}
		fmt.Fprintf(out, "%s %s%s\n", ref(m.res, m.obj.GetName()), result, suffix)
	}
	return errors.Join(errs...)
}

// applyOne creates or updates one object and says which: created,
// configured or unchanged.
func applyOne(ctx context.Context, cl *client.Client, m manifest, dry bool) (string, error) {
	opts := client.WriteOptions{DryRun: dry}
	for attempt := 0; ; attempt++ {
		live, err := cl.Get(ctx, m.res.Plural, m.obj.GetNamespace(), m.obj.GetName())
		if apierrors.IsNotFound(err) {
			_, err = cl.Create(ctx, forCreate(m.obj), opts)
			if apierrors.IsAlreadyExists(err) && attempt < applyRetries {
				continue // created concurrently: update it instead
			}
			if err != nil {
				return "", err
			}
			return "created", nil
		}
		if err != nil {
			return "", err
		}
		desired := mergeForApply(live, m.obj)
		updated, err := cl.Update(ctx, desired, opts)
		if apierrors.IsConflict(err) && attempt < applyRetries {
			continue
		}
		if err != nil {
			return "", err
		}
		if unchanged(live, updated, dry) {
			return "unchanged", nil
		}
		return "configured", nil
	}
}

func unchanged(live, updated *unstructured.Unstructured, dry bool) bool {
	if !dry {
		return updated.GetResourceVersion() == live.GetResourceVersion()
	}
	return reflect.DeepEqual(live.Object, updated.Object)
}

// forCreate drops what the server assigns (identity, versions, times and
// status), so the output of `get -o yaml` can be applied elsewhere.
func forCreate(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	return out
}

// serverOwned are the top-level fields apply never takes from the file.
var serverOwned = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "status": true}

// userMeta are the metadata fields apply takes from the file; serverMeta the
// ones it keeps from the live object. Any other metadata field in the file is
// sent as is, so the server rejects it as unknown.
var (
	userMeta   = map[string]bool{"labels": true, "annotations": true}
	serverMeta = map[string]bool{
		"name": true, "namespace": true, "uid": true, "resourceVersion": true, "generation": true,
		"creationTimestamp": true, "deletionTimestamp": true, "deletionGracePeriodSeconds": true,
		"finalizers": true, "ownerReferences": true, "generateName": true, "managedFields": true, "selfLink": true,
	}
)

// mergeForApply is the update apply sends: the live object with the file's
// spec (and any other user field), labels and annotations, keeping the live
// resourceVersion as the precondition.
func mergeForApply(live, file *unstructured.Unstructured) *unstructured.Unstructured {
	out := live.DeepCopy()
	for k := range out.Object {
		if !serverOwned[k] {
			delete(out.Object, k)
		}
	}
	for k, v := range file.Object {
		if !serverOwned[k] {
			out.Object[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	meta, _ := out.Object["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		out.Object["metadata"] = meta
	}
	for k := range userMeta {
		delete(meta, k)
	}
	if fileMeta, ok := file.Object["metadata"].(map[string]any); ok {
		for k, v := range fileMeta {
			if !serverMeta[k] {
				meta[k] = runtime.DeepCopyJSONValue(v)
			}
		}
	}
	return out
}
