package claude

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// Name is the harness name.
const Name = "claude"

// Version is the Claude Code release the adapter's cues and config were taken from.
const Version = "2.1.332"

// DefaultBinary is the executable when Options.Binary is empty.
const DefaultBinary = "claude"

// Options configure the adapter.
type Options struct {
	// Binary is the claude executable (default DefaultBinary, looked up on PATH).
	Binary string
	// PasteEnterPause is the pause between the pasted text and Enter (default 30ms).
	PasteEnterPause time.Duration
}

// Adapter drives Claude Code. It is stateless.
type Adapter struct {
	opts Options
}

var _ harness.Adapter = (*Adapter)(nil)

// New returns the claude adapter.
func New(opts Options) *Adapter {
	if opts.Binary == "" {
		opts.Binary = DefaultBinary
	}
	if opts.PasteEnterPause == 0 {
		opts.PasteEnterPause = 30 * time.Millisecond
	}
	return &Adapter{opts: opts}
}

// Name implements harness.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements harness.Adapter.
func (a *Adapter) Capabilities() harness.Capabilities {
	return harness.Capabilities{PreassignSessionID: true, Resume: true}
}

// Env is the environment the adapter sets for every launch: no telemetry,
// error reports, auto-update or other non-essential traffic.
var Env = map[string]string{
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
	"DISABLE_TELEMETRY":                        "1",
	"DISABLE_ERROR_REPORTING":                  "1",
	"DISABLE_AUTOUPDATER":                      "1",
	"DISABLE_BUG_COMMAND":                      "1",
}

// APIKeyEnv is the request variable holding the model credential; BaseURLEnv
// the provider endpoint (without /v1).
const (
	APIKeyEnv  = "ANTHROPIC_API_KEY"
	BaseURLEnv = "ANTHROPIC_BASE_URL"
)

// SeedFiles implements harness.Adapter: ~/.claude.json with onboarding done,
// the API key's suffix approved and the working directory trusted, merged into
// whatever the CLI has written there since.
func (a *Adapter) SeedFiles(req harness.LaunchRequest) ([]harness.SeedFile, error) {
	apply := func(cfg map[string]any) ([]byte, error) {
		seedConfig(cfg, req.WorkDir, req.Env[APIKeyEnv])
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode .claude.json: %w", err)
		}
		return append(b, '\n'), nil
	}
	fresh, err := apply(map[string]any{})
	if err != nil {
		return nil, err
	}
	files := []harness.SeedFile{{
		Path: ".claude.json",
		Data: fresh,
		Mode: 0o600,
		Merge: func(existing []byte) ([]byte, error) {
			cfg := map[string]any{}
			if len(strings.TrimSpace(string(existing))) > 0 {
				if err := json.Unmarshal(existing, &cfg); err != nil {
					return nil, fmt.Errorf("merge .claude.json: %w", err)
				}
			}
			return apply(cfg)
		},
	}}
	if len(req.Tools) > 0 {
		files = append(files, toolSettings(req.Tools))
	}
	return files, nil
}

// toolSettings pre-approves the granted tools for Claude's Bash tool in the
// user settings (permissions.allow: "Bash(greet)" and "Bash(greet *)"),
// merged into what is there: the grant already is the user's decision, so
// the CLI does not stop to ask.
func toolSettings(tools []string) harness.SeedFile {
	apply := func(cfg map[string]any) ([]byte, error) {
		perms, _ := cfg["permissions"].(map[string]any)
		if perms == nil {
			perms = map[string]any{}
		}
		allowed := stringList(perms["allow"])
		for _, t := range tools {
			for _, rule := range []string{"Bash(" + t + ")", "Bash(" + t + " *)"} {
				if !contains(allowed, rule) {
					allowed = append(allowed, rule)
				}
			}
		}
		perms["allow"] = allowed
		cfg["permissions"] = perms
		b, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode settings.json: %w", err)
		}
		return append(b, '\n'), nil
	}
	fresh, _ := apply(map[string]any{})
	return harness.SeedFile{Path: ".claude/settings.json", Data: fresh, Mode: 0o600,
		Merge: func(existing []byte) ([]byte, error) {
			cfg := map[string]any{}
			if len(strings.TrimSpace(string(existing))) > 0 {
				if err := json.Unmarshal(existing, &cfg); err != nil {
					return nil, fmt.Errorf("merge settings.json: %w", err)
				}
			}
			return apply(cfg)
		}}
}

// seedConfig sets the keys that skip Claude Code's first-run dialogs.
func seedConfig(cfg map[string]any, workDir, apiKey string) {
	cfg["hasCompletedOnboarding"] = true
	cfg["lastOnboardingVersion"] = Version
	if _, ok := cfg["theme"]; !ok {
		cfg["theme"] = "dark"
	}
	cfg["autoUpdates"] = false
	if apiKey != "" {
		suffix := apiKey
		if len(suffix) > 20 {
			suffix = suffix[len(suffix)-20:]
		}
		resp, _ := cfg["customApiKeyResponses"].(map[string]any)
		if resp == nil {
			resp = map[string]any{}
		}
		approved := stringList(resp["approved"])
		if !contains(approved, suffix) {
			approved = append(approved, suffix)
		}
		resp["approved"] = approved
		resp["rejected"] = without(stringList(resp["rejected"]), suffix)
		cfg["customApiKeyResponses"] = resp
	}
	if workDir != "" {
		projects, _ := cfg["projects"].(map[string]any)
		if projects == nil {
			projects = map[string]any{}
		}
		p, _ := projects[workDir].(map[string]any)
		if p == nil {
			p = map[string]any{"allowedTools": []any{}}
		}
		p["hasTrustDialogAccepted"] = true
		p["hasCompletedProjectOnboarding"] = true
		projects[workDir] = p
		cfg["projects"] = projects
	}
}

func stringList(v any) []string {
	xs, _ := v.([]any)
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func without(xs []string, s string) []string {
	out := xs[:0]
	for _, x := range xs {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// Launch implements harness.Adapter: --model, then --resume <id> or
// --session-id <uuid> (a fresh one when the request has none).
func (a *Adapter) Launch(req harness.LaunchRequest) (harness.Launch, error) {
	l := harness.Launch{Path: a.opts.Binary, Env: map[string]string{}}
	for k, v := range Env {
		l.Env[k] = v
	}
	var args []string
	if req.Model != "" {
		args = append(args, "--model", req.Model)
	}
	session, id, resumed, err := harness.SessionArgs(req)
	if err != nil {
		return l, err
	}
	l.SessionID, l.Resumed = id, resumed
	l.Args = append(append(args, session...), req.Args...)
	return l, nil
}

// FormatMessage implements harness.Adapter: a bracketed paste of the sanitised
// text, a short pause, Enter.
func (a *Adapter) FormatMessage(text string) []harness.Chunk {
	return harness.BracketedPaste(text, a.opts.PasteEnterPause)
}

// Delivery implements harness.Adapter.
func (a *Adapter) Delivery() harness.DeliveryPolicy {
	return harness.DeliveryPolicy{AcceptsQueuedInput: false, SettleAfterSubmit: 100 * time.Millisecond}
}

// Quota implements harness.Adapter: Claude Code shows no quota with an API key.
func (a *Adapter) Quota(ptyapi.Screen) []ptyapi.QuotaMetric { return nil }

// ProjectDirName is Claude Code's directory name for a working directory:
// every character other than an ASCII letter or digit becomes '-'.
func ProjectDirName(workDir string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, workDir)
}

// SessionStoreDir implements harness.Adapter.
func (a *Adapter) SessionStoreDir(home, workDir string) string {
	return filepath.Join(home, ".claude", "projects", ProjectDirName(workDir))
}

// SessionFile implements harness.Adapter.
func (a *Adapter) SessionFile(home, workDir, sessionID string) (string, error) {
	if _, err := uuid.Parse(sessionID); err != nil {
		return "", ptyapi.Errorf(ptyapi.ErrInvalidArgument, "session id %q is not a uuid", sessionID)
	}
	return filepath.Join(a.SessionStoreDir(home, workDir), sessionID+".jsonl"), nil
}

// DiscoverSession implements harness.Adapter: the newest session file of the
// working directory modified at or after since. Claude takes pre-assigned ids,
// so this is only a fallback.
func (a *Adapter) DiscoverSession(home, workDir string, since time.Time) (string, bool, error) {
	ents, err := os.ReadDir(a.SessionStoreDir(home, workDir))
	if os.IsNotExist(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("list claude sessions: %w", err)
	}
	type cand struct {
		id string
		mt time.Time
	}
	var cs []cand
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || e.IsDir() {
			continue
		}
		if _, err := uuid.Parse(id); err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil || info.ModTime().Before(since) {
			continue
		}
		cs = append(cs, cand{id, info.ModTime()})
	}
	if len(cs) == 0 {
		return "", false, nil
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].mt.After(cs[j].mt) })
	return cs[0].id, true, nil
}

// ProviderEnv implements harness.ProviderEnvMapper: Claude Code takes the
// provider's base URL without the /v1 suffix.
func (a *Adapter) ProviderEnv(p ptyapi.ProviderAccess) map[string]string {
	return map[string]string{BaseURLEnv: strings.TrimSuffix(strings.TrimRight(p.BaseURL, "/"), "/v1"), APIKeyEnv: p.APIKey}
}

// InstructionsPath is Claude Code's user memory, relative to the home: the
// CLAUDE.md it loads for every project when a session starts (or resumes)
// and sends as the user's global instructions, HTML comment lines stripped.
const InstructionsPath = ".claude/CLAUDE.md"

// InstructionsFile implements harness.Adapter.
func (a *Adapter) InstructionsFile(string) string { return InstructionsPath }
