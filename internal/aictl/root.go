package aictl

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/client"
)

// IOStreams are the command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// globalOptions are the flags every command shares.
type globalOptions struct {
	streams   IOStreams
	server    string
	token     string
	caFile    string
	insecure  bool
	namespace string
	// nsSet is true when -n was given explicitly.
	nsSet bool
	// cl caches the API client built from the flags.
	cl *client.Client
}

// DefaultNamespace is used when -n is not given.
const DefaultNamespace = "default"

// client returns the API client for the global flags, falling back to
// AICLI_SERVER / AICLI_TOKEN and the supervisor's defaults.
func (g *globalOptions) client() (*client.Client, error) {
	if g.cl != nil {
		return g.cl, nil
	}
	cfg := client.FromEnv()
	if g.server != "" {
		cfg.Server = g.server
	}
	if g.token != "" {
		cfg.Token = g.token
	}
	cfg.CAFile = g.caFile
	cfg.InsecureSkipVerify = g.insecure
	cl, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	g.cl = cl
	return cl, nil
}

// ns returns the namespace to use for objects that name none.
func (g *globalOptions) ns() string {
	if g.namespace == "" {
		return DefaultNamespace
	}
	return g.namespace
}

// NewRootCommand builds the aictl command tree writing to streams.
func NewRootCommand(streams IOStreams) *cobra.Command {
	g := &globalOptions{streams: streams}
	root := &cobra.Command{
		Use:   "aictl",
		Short: "aictl controls an aicli supervisor",
		Long: "aictl controls an aicli supervisor through its API: apply resource files, list, describe, " +
			"delete and wait for agents, conversations, grants and monitor attachments.\n\n" +
			"The server is --server, else $AICLI_SERVER, else unix://$HOME/.aicli/supervisor.sock.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			g.nsSet = cmd.Flags().Changed("namespace")
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	pf := root.PersistentFlags()
	pf.StringVar(&g.server, "server", "", "supervisor address: unix:///path/to/supervisor.sock or https://host:port (default $AICLI_SERVER or unix://$HOME/.aicli/supervisor.sock)")
	pf.StringVar(&g.token, "token", "", "bearer token for an https server (default $AICLI_TOKEN)")
	pf.StringVar(&g.caFile, "certificate-authority", "", "PEM file of the certificate authority that signed the server's certificate")
	pf.BoolVar(&g.insecure, "insecure-skip-tls-verify", false, "do not verify the server's certificate (insecure)")
	pf.StringVarP(&g.namespace, "namespace", "n", "", "namespace (default \"default\")")

	root.AddCommand(
		newApplyCommand(g),
		newGetCommand(g),
		newDescribeCommand(g),
		newDeleteCommand(g),
		newWaitCommand(g),
		newDiffCommand(g),
		newAPIResourcesCommand(g),
		newStartCommand(g),
		newSendCommand(g),
		newTranscriptCommand(g),
		newScreenCommand(g),
		newAttachCommand(g),
		newPauseCommand(g),
		newResumeCommand(g),
		newArchiveCommand(g),
		newSpendCommand(g),
		newSecretCommand(g),
		newToolCallsCommand(g),
		newBudgetCommand(g),
		newHistoryCommand(g),
		newMailCommand(g),
		newBucketCommand(g),
		newMonitorCommand(g),
		newInfoCommand(g),
	)
	return root
}

// Run executes aictl with args and returns the process exit code: 0 on
// success, 1 on errors (diff: 1 when objects differ, >1 on errors).
func Run(ctx context.Context, args []string, streams IOStreams) int {
	root := NewRootCommand(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return handleError(streams.ErrOut, err)
}

// Main runs aictl as a process: os streams, cancelled on SIGINT/SIGTERM.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
}
