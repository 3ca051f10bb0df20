package aictl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/secrets/secretwire"
)

// newSecretCommand is `aictl secret set|list|delete`: supervisor-held
// secrets, write-only (no command can print a value back).
func newSecretCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Set, list and delete supervisor-held secrets (values are write-only)",
		Long: "Secrets are held by the supervisor and handed to model providers and tool backends; they never " +
			"enter a container. Values are write-only: no command or endpoint returns one.",
	}
	cmd.AddCommand(newSecretSetCommand(g), newSecretListCommand(g), newSecretDeleteCommand(g))
	return cmd
}

func newSecretSetCommand(g *globalOptions) *cobra.Command {
	var file string
	var stdin bool
	cmd := &cobra.Command{
		Use:   "set NAME (--from-file FILE | --from-stdin)",
		Short: "Store a secret value read from a file or standard input",
		Long: "Set stores the value read from --from-file or --from-stdin (at most 64 KiB; a trailing line " +
			"break is dropped). There is deliberately no way to pass the value as an argument: it would land " +
			"in your shell history and in the process list.",
		Example: "  aictl secret set anthropic --from-file ~/.keys/anthropic\n" +
			"  pass show search-api | aictl secret set search-api --from-stdin -n team-a",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (file == "") == !stdin {
				return errors.New("give exactly one of --from-file FILE or --from-stdin (never the value itself)")
			}
			value, err := secretwire.ReadValueFrom(file, g.streams.In)
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			resp, err := cl.Do(cmd.Context(), http.MethodPut, client.ResourcePath(secretwire.Plural, g.ns(), args[0]),
				secretwire.ContentType, bytes.NewReader(value))
			if err != nil {
				return err
			}
			_ = resp.Body.Close()
			verb := "configured"
			if resp.StatusCode == http.StatusCreated {
				verb = "created"
			}
			fmt.Fprintf(g.streams.Out, "secret/%s %s\n", args[0], verb)
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "from-file", "", "read the value from this file")
	cmd.Flags().BoolVar(&stdin, "from-stdin", false, "read the value from standard input")
	return cmd
}

func newSecretListCommand(g *globalOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the namespace's secrets: names, sizes and ages, never values",
		Example: "  aictl secret list -n team-a\n  aictl secret list -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			data, err := cl.DoRaw(cmd.Context(), http.MethodGet, client.ResourcePath(secretwire.Plural, g.ns(), ""), "", nil)
			if err != nil {
				return err
			}
			var list secretwire.List
			if err := json.Unmarshal(data, &list); err != nil {
				return fmt.Errorf("decoding the secret list: %w", err)
			}
			return printReply(g.streams, output, list, len(list.Items), "No secrets found in "+g.ns()+" namespace.",
				func(w io.Writer) error { return printSecrets(w, list.Items, time.Now()) })
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default: table)")
	return cmd
}

func printSecrets(w io.Writer, items []secretwire.Secret, now time.Time) error {
	tw := newTabWriter(w)
	writeRow(tw, []string{"NAME", "SIZE", "AGE"})
	for _, s := range items {
		writeRow(tw, []string{s.Name, strconv.FormatInt(s.Size, 10), duration.HumanDuration(now.Sub(s.Modified.Time))})
	}
	return tw.Flush()
}

func newSecretDeleteCommand(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME",
		Short:   "Delete a secret",
		Example: "  aictl secret delete search-api -n team-a",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := g.client()
			if err != nil {
				return err
			}
			if _, err := cl.DoRaw(cmd.Context(), http.MethodDelete, client.ResourcePath(secretwire.Plural, g.ns(), args[0]), "", nil); err != nil {
				return err
			}
			fmt.Fprintf(g.streams.Out, "secret %q deleted\n", args[0])
			return nil
		},
	}
}
