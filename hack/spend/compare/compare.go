package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"

	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/claude"
	"aicli.dev/aicli/internal/spend/codex"
)

// CCUsageVersion is the pinned reference version.
const CCUsageVersion = "20.0.24"

// Cell identifies one day and model.
type Cell struct {
	Date  string
	Model string
}

// Tokens are the four bucket totals of a cell.
type Tokens struct {
	Input, CacheRead, CacheWrite, Output int64
}

// Totals maps cells to tokens.
type Totals map[Cell]Tokens

// NativeBinary returns the path of ccusage's native binary inside an npm prefix.
func NativeBinary(prefix string) (string, error) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" || runtime.GOOS != "linux" {
		return "", fmt.Errorf("compare: no ccusage native package for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	return filepath.Join(prefix, "node_modules", "@ccusage", "ccusage-linux-"+arch, "bin", "ccusage"), nil
}

// EnsureCCUsage installs the pinned ccusage into prefix with npm when it is missing and returns its native binary.
func EnsureCCUsage(ctx context.Context, prefix string) (string, error) {
	bin, err := NativeBinary(prefix)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(prefix, 0o755); err != nil {
			return "", fmt.Errorf("compare: %w", err)
		}
		if _, err := os.Stat(filepath.Join(prefix, "package.json")); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(filepath.Join(prefix, "package.json"), []byte(`{"private":true}`+"\n"), 0o644); err != nil {
				return "", fmt.Errorf("compare: %w", err)
			}
		}
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, "ccusage@"+CCUsageVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("compare: npm install ccusage@%s: %w\n%s", CCUsageVersion, err, out)
		}
	} else if err != nil {
		return "", fmt.Errorf("compare: %w", err)
	}
	// npm does not keep the executable bit on the optional native package; the npx wrapper sets it on first run.
	if err := os.Chmod(bin, 0o755); err != nil {
		return "", fmt.Errorf("compare: chmod ccusage: %w", err)
	}
	return bin, nil
}

// CCUsage runs `ccusage <harness> daily --json --offline -z UTC` over the tree.
func CCUsage(ctx context.Context, bin string, harness spend.Harness, claudeDir, codexDir string) (Totals, error) {
	cmd := exec.CommandContext(ctx, bin, string(harness), "daily", "--json", "--offline", "-z", "UTC")
	home, err := os.MkdirTemp("", "ccusage-home-*")
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	defer func() { _ = os.RemoveAll(home) }()
	cmd.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+claudeDir, "CODEX_HOME="+codexDir, "HOME="+home, "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("compare: ccusage %s: %w: %s", harness, err, stderr.String())
	}
	var doc struct {
		Daily []struct {
			Date string `json:"date"`
			// claude
			ModelBreakdowns []struct {
				ModelName           string `json:"modelName"`
				InputTokens         int64  `json:"inputTokens"`
				CacheReadTokens     int64  `json:"cacheReadTokens"`
				CacheCreationTokens int64  `json:"cacheCreationTokens"`
				OutputTokens        int64  `json:"outputTokens"`
			} `json:"modelBreakdowns"`
			// codex
			Models map[string]struct {
				InputTokens         int64 `json:"inputTokens"`
				CacheReadTokens     int64 `json:"cacheReadTokens"`
				CacheCreationTokens int64 `json:"cacheCreationTokens"`
				OutputTokens        int64 `json:"outputTokens"`
			} `json:"models"`
		} `json:"daily"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("compare: decode ccusage output: %w", err)
	}
	t := Totals{}
	for _, d := range doc.Daily {
		for _, m := range d.ModelBreakdowns {
			t[Cell{d.Date, m.ModelName}] = Tokens{m.InputTokens, m.CacheReadTokens, m.CacheCreationTokens, m.OutputTokens}
		}
		for name, m := range d.Models {
			t[Cell{d.Date, name}] = Tokens{m.InputTokens, m.CacheReadTokens, m.CacheCreationTokens, m.OutputTokens}
		}
	}
	return t, nil
}

// Ours runs the spend library over the tree (fresh index) and returns one harness's totals and the report.
func Ours(ctx context.Context, harness spend.Harness, claudeDir, codexDir string) (Totals, *spend.Report, error) {
	svc, err := spend.NewService(spend.Options{Parsers: []spend.SessionParser{claude.Parser{}, codex.Parser{}}})
	if err != nil {
		return nil, nil, err
	}
	rep, err := svc.History(ctx, "", []spend.Scope{{Harness: spend.HarnessClaude, Roots: []string{claudeDir}},
		{Harness: spend.HarnessCodex, Roots: []string{codexDir}}})
	if err != nil {
		return nil, nil, err
	}
	t := Totals{}
	for _, d := range rep.Days {
		for _, m := range d.Models {
			if m.Harness == harness {
				t[Cell{d.Date, m.Model}] = Tokens{m.UncachedInput, m.CacheRead, m.CacheWrite, m.Output}
			}
		}
	}
	return t, rep, nil
}

// Diff lists the cells where the two totals differ.
func Diff(ref, got Totals) []string {
	keys := map[Cell]bool{}
	for k := range ref {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		r, rok := ref[k]
		g, gok := got[k]
		if r != g || rok != gok {
			out = append(out, fmt.Sprintf("%s %s: ccusage %+v (present %v), ours %+v (present %v)", k.Date, k.Model, r, rok, g, gok))
		}
	}
	sort.Strings(out)
	return out
}
