package spendcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/claude"
	"aicli.dev/aicli/internal/spend/codex"
	"aicli.dev/aicli/internal/spend/spendapi"
)

// Fetcher returns the supervisor's spendhistory JSON body for a since day.
type Fetcher func(ctx context.Context, since string) ([]byte, error)

type options struct {
	since       string
	output      string
	local       bool
	claudeDirs  []string
	codexDirs   []string
	offline     bool
	pricingFile string
	pricingURL  string
	dataDir     string
}

// NewCommand builds `spend`. fetch is how the command reaches the supervisor; --local runs the library in-process.
func NewCommand(fetch Fetcher) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "spend",
		Short: "Show token usage and dollar cost per UTC day and model",
		Long: "Show token usage and cost per UTC day and model from the supervisor's spend history, or with --local " +
			"from Claude Code and Codex session directories on this machine (no daemon needed).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), cmd.OutOrStdout(), fetch) },
	}
	f := cmd.Flags()
	f.StringVar(&o.since, "since", "", "first UTC day to include, YYYY-MM-DD (default: 30 days ago)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.BoolVar(&o.local, "local", false, "compute spend in-process over session directories instead of asking the supervisor")
	f.StringSliceVar(&o.claudeDirs, "claude-dir", nil, "Claude config dir(s) holding projects/ (default: $CLAUDE_CONFIG_DIR, ~/.config/claude, ~/.claude)")
	f.StringSliceVar(&o.codexDirs, "codex-dir", nil, "Codex home(s) holding sessions/ (default: $CODEX_HOME or ~/.codex)")
	f.BoolVar(&o.offline, "offline", false, "with --local: do not fetch live prices (use the cached or bundled table)")
	f.StringVar(&o.pricingFile, "pricing-file", "", "with --local: price from this models-list JSON file")
	f.StringVar(&o.pricingURL, "pricing-url", "", "with --local: models-list endpoint to fetch live prices from")
	f.StringVar(&o.dataDir, "data-dir", "", "with --local: where the index and price cache live (default: user cache dir)")
	return cmd
}

func (o *options) run(ctx context.Context, out io.Writer, fetch Fetcher) error {
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("--output must be table or json, got %q", o.output)
	}
	since := o.since
	if since == "" {
		since = time.Now().UTC().AddDate(0, 0, -spendapi.DefaultDays).Format(time.DateOnly)
	} else if _, err := time.Parse(time.DateOnly, since); err != nil {
		return fmt.Errorf("--since must be YYYY-MM-DD: %w", err)
	}
	var rep *spend.Report
	if o.local {
		r, err := o.runLocal(ctx, since)
		if err != nil {
			return err
		}
		rep = r
	} else {
		if o.offline || o.pricingFile != "" || len(o.claudeDirs) > 0 || len(o.codexDirs) > 0 {
			return errors.New("--offline, --pricing-file, --claude-dir and --codex-dir need --local")
		}
		if fetch == nil {
			return errors.New("no supervisor connection configured; use --local")
		}
		body, err := fetch(ctx, since)
		if err != nil {
			return fmt.Errorf("fetch spend history: %w", err)
		}
		rep = &spend.Report{}
		if err := json.Unmarshal(body, rep); err != nil {
			return fmt.Errorf("decode spend history: %w", err)
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return WriteTable(out, rep)
}

func (o *options) runLocal(ctx context.Context, since string) (*spend.Report, error) {
	// A directory named on the command line must exist: a typo would otherwise report $0 (a default root that does
	// not exist is just a CLI this user does not run).
	for _, fl := range []struct {
		name string
		dirs []string
	}{{"--claude-dir", o.claudeDirs}, {"--codex-dir", o.codexDirs}} {
		for _, d := range fl.dirs {
			if err := isDir(d); err != nil {
				return nil, fmt.Errorf("%s %s: %w", fl.name, d, err)
			}
		}
	}
	home, _ := os.UserHomeDir()
	claudeRoots := o.claudeDirs
	if len(claudeRoots) == 0 {
		claudeRoots = claude.DefaultRoots(os.Getenv, home)
	}
	codexRoots := o.codexDirs
	if len(codexRoots) == 0 {
		codexRoots = codex.DefaultRoots(os.Getenv, home)
	}
	dataDir := o.dataDir
	if dataDir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("find a cache dir (use --data-dir): %w", err)
		}
		dataDir = filepath.Join(cache, "aicli")
	}
	svc, err := spendapi.NewService(spendapi.Config{DataDir: dataDir, PricingURL: o.pricingURL, Offline: o.offline,
		PricingFile: o.pricingFile})
	if err != nil {
		return nil, err
	}
	return svc.History(ctx, since, []spend.Scope{
		{Harness: spend.HarnessClaude, Roots: claudeRoots},
		{Harness: spend.HarnessCodex, Roots: codexRoots},
	})
}

// isDir reports why path is not an existing directory, or nil.
func isDir(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("no such directory")
	case err != nil:
		return err
	case !fi.IsDir():
		return errors.New("not a directory")
	}
	return nil
}
