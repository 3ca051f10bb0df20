// Command aicli-supervisor is the AiCli host supervisor daemon: the durable
// home of agents and the driver of their conversation containers.
package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/go-logr/logr"

	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/capability"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/secrets"
	"aicli.dev/aicli/internal/secrets/secretwire"
	"aicli.dev/aicli/internal/supervisor"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "aicli-supervisor:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	var cfg supervisor.Config
	var logFormat, logLevel string
	root := &cobra.Command{
		Use:           "aicli-supervisor",
		Short:         "Run the AiCli host supervisor",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(logFormat, logLevel)
			if err != nil {
				return err
			}
			cfg.Logger = log
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return supervisor.Run(ctx, cfg)
		},
	}
	f := root.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", layout.DefaultDataDir(), "directory holding the store, sockets, keys and agents' durable homes")
	f.StringVar(&cfg.Socket, "socket", "", "admin unix socket (default <data-dir>/supervisor.sock)")
	f.StringVar(&cfg.Listen, "listen", "", "also serve the API on this TCP HOST:PORT, with TLS and bearer tokens")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "TLS certificate for --listen (default: self-signed under <data-dir>/tls)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "TLS key for --listen")
	f.StringVar(&cfg.TokensFile, "tokens-file", "", "bearer tokens for --listen (default <data-dir>/tokens.yaml)")
	f.StringVar(&cfg.ArtifactDir, "artifact-dir", "", "directory holding aicli-guest and the other binaries guest images copy (default: this executable's directory)")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", 60*time.Second,
		"lifetime of a capability token; renewed every third of it while the conversation's container lives")
	f.StringVar(&cfg.PricingURL, "pricing-url", "", "models-list endpoint for spend pricing (default: OpenRouter's)")
	f.BoolVar(&cfg.OfflinePricing, "offline-pricing", false, "never fetch prices live: use the cached or bundled table")
	f.BoolVar(&cfg.MirrorCLIOutput, "mirror-cli-output", false,
		"also copy each CLI's raw output into its container's log (docker logs); costs the engine CPU on fast output")
	f.IntVar(&cfg.WatchCache, "watch-cache", 0,
		"recent store events kept in memory to serve watches without reading the store (0: the default, 4096)")
	f.IntVar(&cfg.MemTableMiB, "memtable-mib", 0,
		"size of the store's memtable in MiB, memory outside the Go heap filled by writes until a flush (0: 64)")
	f.IntVar(&cfg.CacheMiB, "cache-mib", 0,
		"size of the store's block cache in MiB, memory outside the Go heap filled by reads of flushed tables (0: 8)")
	f.StringVar(&logFormat, "log-format", "json", "log format: json or text")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.AddCommand(newTokenCommand(), newSecretCommand(), newCapKeyCommand())
	return root
}

func newLogger(format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	switch format {
	case "json":
		h = slog.NewJSONHandler(os.Stderr, opts)
	case "text":
		h = slog.NewTextHandler(os.Stderr, opts)
	default:
		return nil, fmt.Errorf("--log-format must be json or text, not %q", format)
	}
	log := slog.New(h)
	slog.SetDefault(log)
	lr := logr.FromSlogHandler(h)
	ctrl.SetLogger(lr)
	klog.SetLogger(lr)
	return log, nil
}

// tokenFile is the token commands' --data-dir and --tokens-file.
type tokenFile struct{ dataDir, file string }

func (t *tokenFile) addFlags(c *cobra.Command) {
	c.Flags().StringVar(&t.dataDir, "data-dir", layout.DefaultDataDir(), "the supervisor's data dir")
	c.Flags().StringVar(&t.file, "tokens-file", "", "token file (default <data-dir>/tokens.yaml)")
}

// path is the token file: --tokens-file, else the data dir's.
func (t *tokenFile) path() string {
	if t.file != "" {
		return t.file
	}
	return layout.Dir(t.dataDir).Tokens()
}

func newTokenCommand() *cobra.Command {
	token := &cobra.Command{Use: "token", Short: "Manage bearer tokens of the TCP API"}
	var tf tokenFile
	var name, role string
	var namespaces, monitors []string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a token bound to namespaces, with a role, and print it once",
		Long: "Create a bearer token of the TCP API and print it once (only its SHA-256 is stored).\n\n" +
			"Roles (docs/security.md#roles): view reads; edit also writes Agents, Conversations, Grants and\n" +
			"MonitorAttachments and uses their subresources (send, attach, start, mail, rearm, recall); admin also\n" +
			"writes the namespace's Secrets; cluster-admin (with --namespace '*') may do anything, ToolClasses and\n" +
			"NamespacePolicies included, like the unix socket's owner.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			file := tf.path()
			raw, err := supervisor.CreateToken(file, apiserver.Token{Name: name, Namespaces: namespaces, Role: role, Monitors: monitors})
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), raw)
			fmt.Fprintf(cmd.ErrOrStderr(), "token %q added to %s; a running supervisor accepts it within a second\n", name, file)
			return nil
		},
	}
	tf.addFlags(create)
	create.Flags().StringVar(&name, "name", "", "who holds the token")
	create.Flags().StringSliceVar(&namespaces, "namespace", nil, "namespace the token may touch (repeatable; \"*\" for all)")
	create.Flags().StringVar(&role, "role", string(apiserver.RoleEdit), "view, edit, admin, or cluster-admin (with --namespace '*')")
	create.Flags().StringSliceVar(&monitors, "monitor", nil,
		"monitor agent the holder may send advice as (repeatable): for the home supervisor of a remote monitor")
	token.AddCommand(create, newTokenListCommand(), newTokenDeleteCommand())
	return token
}

func newTokenListCommand() *cobra.Command {
	var tf tokenFile
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tokens: name, role, namespaces and monitors (never a token or its hash)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := apiserver.LoadTokens(tf.path())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 3, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLE\tNAMESPACES\tMONITORS")
			for _, t := range loaded.Tokens {
				role, _ := apiserver.ParseRole(t.Role)
				monitors := strings.Join(t.Monitors, ",")
				if monitors == "" {
					monitors = "<none>"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, role, strings.Join(t.Namespaces, ","), monitors)
			}
			return tw.Flush()
		},
	}
	tf.addFlags(list)
	return list
}

func newTokenDeleteCommand() *cobra.Command {
	var tf tokenFile
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Revoke a token: a running supervisor refuses it within a second",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := tf.path()
			if err := supervisor.DeleteToken(file, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "token %q deleted from %s\n", args[0], file)
			return nil
		},
	}
	tf.addFlags(del)
	return del
}

func newSecretCommand() *cobra.Command {
	secret := &cobra.Command{Use: "secret", Short: "Manage supervisor-held secrets (model API keys; values are never printed)"}
	var dataDir, namespace, name, file string
	set := &cobra.Command{
		Use:   "set",
		Short: "Store a secret from --from-file or standard input (never from the command line)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			value, err := secretwire.ReadValueFrom(file, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if err := (secrets.Store{Dir: layout.Dir(dataDir).Secrets()}).Set(namespace, name, value); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "secret %s/%s stored\n", namespace, name)
			return nil
		},
	}
	del := &cobra.Command{
		Use:   "delete",
		Short: "Delete a secret",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return (secrets.Store{Dir: layout.Dir(dataDir).Secrets()}).Delete(namespace, name)
		},
	}
	for _, c := range []*cobra.Command{set, del} {
		c.Flags().StringVar(&dataDir, "data-dir", layout.DefaultDataDir(), "the supervisor's data dir")
		c.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of the agents that may use it")
		c.Flags().StringVar(&name, "name", "", "secret name (an Agent's spec.provider.secretName)")
		_ = c.MarkFlagRequired("name")
	}
	set.Flags().StringVar(&file, "from-file", "", "read the value from this file (default: standard input)")
	secret.AddCommand(set, del)
	return secret
}

func newCapKeyCommand() *cobra.Command {
	capkey := &cobra.Command{Use: "capkey", Short: "Manage the root keys of capability tokens (key bytes are never printed)"}
	var dataDir string
	var grace time.Duration
	rotate := &cobra.Command{
		Use:   "rotate NAMESPACE",
		Short: "Make a new current key; older keys keep verifying for --grace, then are dropped",
		Long: "Make a new current key for NAMESPACE. Tokens are minted under it from now on (a running supervisor\n" +
			"notices the rewritten key file); tokens of older keys keep verifying until the grace ends.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := capability.OpenKeyring(layout.Dir(dataDir).CapKeys())
			if err != nil {
				return err
			}
			info, err := k.Rotate(args[0], grace)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), info.ID)
			fmt.Fprintf(cmd.ErrOrStderr(), "capability key %s is current for %s; older keys retire by %s\n",
				info.ID, args[0], info.Created.Add(grace).Format(time.RFC3339))
			return nil
		},
	}
	rotate.Flags().DurationVar(&grace, "grace", time.Hour, "how long tokens of older keys keep verifying")
	list := &cobra.Command{
		Use:   "list [NAMESPACE]",
		Short: "List the keys that still verify, of one namespace or of all",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := capability.OpenKeyring(layout.Dir(dataDir).CapKeys())
			if err != nil {
				return err
			}
			namespaces := args
			if len(namespaces) == 0 {
				namespaces = k.ListNamespaces()
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAMESPACE\tKEY\tCREATED\tRETIRES\tCURRENT")
			for _, ns := range namespaces {
				keys, err := k.List(ns)
				if err != nil {
					return err
				}
				for _, key := range keys {
					retires := "-"
					if key.RetiresAt != nil {
						retires = key.RetiresAt.Format(time.RFC3339)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%t\n", ns, key.ID, key.Created.Format(time.RFC3339), retires, key.Current)
				}
			}
			return w.Flush()
		},
	}
	for _, c := range []*cobra.Command{rotate, list} {
		c.Flags().StringVar(&dataDir, "data-dir", layout.DefaultDataDir(), "the supervisor's data dir")
	}
	capkey.AddCommand(rotate, list)
	return capkey
}
