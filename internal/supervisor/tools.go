package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"aicli.dev/aicli/internal/authority"
	"aicli.dev/aicli/internal/budget"
	"aicli.dev/aicli/internal/capability"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/secrets"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/tools"
)

// toolStack is the supervisor's side of mounted tools: the capability
// leases the conversation controller drives, the tool server the gateway
// routes tool streams to, and the binary mounted into containers.
type toolStack struct {
	leases *authority.Manager
	server *tools.Server
	binary string
}

// startTools opens the capability keyring and makes the call recorder (the
// recorder charges priced calls to the agent's budget); the tool server runs
// granted backends and the built-ins.
func startTools(ctx context.Context, cfg Config, dir layout.Dir, c *storeclient.Client, sec secrets.Store,
	ledger *budget.Ledger, builtins tools.Builtins, log *slog.Logger) (*toolStack, error) {
	keys, err := capability.OpenKeyring(dir.CapKeys())
	if err != nil {
		return nil, fmt.Errorf("capability keys: %w", err)
	}
	leases := &authority.Manager{Keys: keys, TTL: cfg.LeaseTTL, Logger: log}
	auth := &authority.Authorizer{Leases: leases, Keys: keys, Client: c, Secrets: sec, Quota: capability.NewQuota()}
	rec := &authority.Recorder{Client: c, Logger: log, Charge: func(ns, agent, cost string) {
		usd, err := budget.ParseUSD(cost)
		if err == nil {
			err = ledger.ChargeToolCall(ns, agent, usd)
		}
		if err != nil {
			log.Warn("charging a tool call to the budget", "agent", ns+"/"+agent, "err", err)
		}
	}}
	srv, err := tools.New(tools.Options{Authorizer: auth, Recorder: rec, Delegator: authority.Delegator{Authorizer: auth},
		Builtins: builtins, Logger: log})
	if err != nil {
		return nil, err
	}
	bin, err := artifactDir(cfg)
	if err != nil {
		return nil, err
	}
	return &toolStack{leases: leases, server: srv, binary: filepath.Join(bin, "aicli-tool")}, nil
}

// artifactDir is where the guest binaries are: Config.ArtifactDir, or the
// supervisor's own directory (as the image builder resolves it).
func artifactDir(cfg Config) (string, error) {
	if cfg.ArtifactDir != "" {
		return cfg.ArtifactDir, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locating the artifact dir: %w", err)
	}
	return filepath.Dir(exe), nil
}
