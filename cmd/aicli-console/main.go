// Command aicli-console serves the two web consoles over a fleet of
// supervisors: the Manager for fleet admins at /manage and the end-user
// console (MyLittleAgi) at /. It holds no agent state (docs/consoles.md).
package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"aicli.dev/aicli/internal/console"
	"aicli.dev/aicli/internal/console/auth"
	"aicli.dev/aicli/internal/console/fleet"
	"aicli.dev/aicli/internal/layout"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "aicli-console:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	var (
		cfg                  console.Config
		supervisors, tokens  []string
		passwordFile, logFmt string
		proxies              []string
		secureCookies        string
	)
	root := &cobra.Command{
		Use:   "aicli-console",
		Short: "Serve the Manager (/manage) and the end-user console (/) over a fleet of supervisors",
		Long: "aicli-console serves two web consoles over the supervisors' public API. --supervisor lists them " +
			"(unix:///path/to/supervisor.sock or https://host:port, optionally NAME=ADDR; default: the local " +
			"supervisor's socket); a given list replaces the stored one. Its own state is one small file in " +
			"--data-dir: the console password's hash and the supervisor list. At the first start it prints a " +
			"generated password once (or takes --password-file). Behind a TLS-terminating reverse proxy, list it with " +
			"--trusted-proxy so the login limits see each client's address and the cookies are Secure.",
		Example:       "  aicli-console\n  aicli-console --supervisor a=unix:///srv/a/supervisor.sock,b=https://b.example:7443 --supervisor-token b=/etc/aicli/b.token",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var h slog.Handler = slog.NewJSONHandler(os.Stderr, nil)
			if logFmt == "text" {
				h = slog.NewTextHandler(os.Stderr, nil)
			}
			cfg.Logger, cfg.Out = slog.New(h), os.Stderr
			cfg.Supervisors = fleet.ParseFlag(supervisors)
			for _, t := range tokens {
				name, file, ok := strings.Cut(t, "=")
				if !ok {
					return fmt.Errorf("--supervisor-token %q: want NAME=FILE", t)
				}
				found := false
				for i := range cfg.Supervisors {
					if cfg.Supervisors[i].Name == name {
						cfg.Supervisors[i].TokenFile, found = file, true
					}
				}
				if !found {
					return fmt.Errorf("--supervisor-token %q: no --supervisor is named %q", t, name)
				}
			}
			var err error
			if cfg.TrustedProxies, err = auth.ParseProxies(proxies); err != nil {
				return fmt.Errorf("--trusted-proxy: %w", err)
			}
			if cfg.SecureCookies, err = auth.ParseCookieMode(secureCookies); err != nil {
				return fmt.Errorf("--secure-cookies: %w", err)
			}
			if passwordFile != "" {
				raw, err := os.ReadFile(passwordFile)
				if err != nil {
					return fmt.Errorf("--password-file: %w", err)
				}
				cfg.Password = strings.TrimSpace(string(raw))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return console.Run(ctx, cfg)
		},
	}
	f := root.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "HTTP address to serve the consoles on")
	f.StringSliceVar(&supervisors, "supervisor", nil, "supervisors to manage, comma-separated [NAME=]ADDR (default: the local socket)")
	f.StringArrayVar(&tokens, "supervisor-token", nil, "NAME=FILE: the bearer token file of an https supervisor (repeatable)")
	f.StringVar(&cfg.DataDir, "data-dir", filepath.Join(layout.DefaultDataDir(), "console"), "directory of the console's own small state file")
	f.StringVar(&passwordFile, "password-file", "", "set the console password from this file (at least 12 characters)")
	f.StringVar(&logFmt, "log-format", "json", "log format: json or text")
	f.StringArrayVar(&proxies, "trusted-proxy", nil, "CIDR or address of a reverse proxy whose X-Forwarded-For, -Proto and -Host are believed (repeatable; default: none)")
	f.StringVar(&secureCookies, "secure-cookies", string(auth.CookiesAuto), "mark cookies Secure: auto (when reached over https: TLS, or a trusted proxy's X-Forwarded-Proto), always or never")
	return root
}
