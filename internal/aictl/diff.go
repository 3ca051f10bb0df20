package aictl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
)

// Exit codes of diff, as kubectl diff: 0 no differences, 1 differences, >1 errors.
const (
	diffExitChanged = 1
	diffExitError   = 2
)

func newDiffCommand(g *globalOptions) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   "diff -f FILENAME",
		Short: "Show what apply would change, as a unified diff against the live objects",
		Long: "Diff asks the server what applying the files would produce (a dry run, so server defaults are " +
			"included) and prints a unified diff against the live objects. Exit status: 0 no differences, " +
			"1 differences found, 2 or more an error.",
		Example: "  aictl diff -f config/samples/agent-claude.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			changed, err := g.diff(cmd.Context(), files)
			if err != nil {
				return &exitError{code: diffExitError, err: err}
			}
			if changed {
				return &exitError{code: diffExitChanged}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file, directory or - for stdin")
	return cmd
}

// diff prints the differences for every object of files and reports
// whether there were any.
func (g *globalOptions) diff(ctx context.Context, files []string) (bool, error) {
	cl, err := g.client()
	if err != nil {
		return false, err
	}
	ms, err := readManifests(files, g.streams.In, cl.Registry())
	if err != nil {
		return false, err
	}
	changed := false
	var errs []error
	for _, m := range ms {
		if err := g.setNamespace(m); err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := diffOne(ctx, cl, m)
		if err != nil {
			errs = append(errs, &opError{op: "error when diffing " + m.where(), err: err})
			continue
		}
		if d != "" {
			changed = true
			if _, err := io.WriteString(g.streams.Out, d); err != nil {
				return changed, err
			}
		}
	}
	return changed, errors.Join(errs...)
}

// diffOne returns the unified diff between the live object and the server's
// dry-run result of applying m, or "" when they are equal.
func diffOne(ctx context.Context, cl *client.Client, m manifest) (string, error) {
	var live, merged *unstructured.Unstructured
	current, err := cl.Get(ctx, m.res.Plural, m.obj.GetNamespace(), m.obj.GetName())
	switch {
	case apierrors.IsNotFound(err):
		merged, err = cl.Create(ctx, forCreate(m.obj), client.WriteOptions{DryRun: true})
	case err != nil:
		return "", err
	default:
		live = current
		merged, err = cl.Update(ctx, mergeForApply(current, m.obj), client.WriteOptions{DryRun: true})
	}
	if err != nil {
		return "", err
	}
	a, err := yamlLines(live)
	if err != nil {
		return "", err
	}
	b, err := yamlLines(merged)
	if err != nil {
		return "", err
	}
	name := strings.Join([]string{v1alpha1.Group, v1alpha1.Version, m.res.Kind, m.obj.GetNamespace(), m.obj.GetName()}, ".")
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: a, B: b, FromFile: "LIVE/" + name, ToFile: "MERGED/" + name, Context: 3,
	})
}

func yamlLines(obj *unstructured.Unstructured) ([]string, error) {
	if obj == nil {
		return nil, nil
	}
	b, err := yaml.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding yaml: %w", err)
	}
	return difflib.SplitLines(string(b)), nil
}
