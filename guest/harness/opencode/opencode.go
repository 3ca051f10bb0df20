package opencode

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// Name is the harness name.
const Name = "opencode"

// Version is the OpenCode release the adapter's cues and config were taken from.
const Version = "1.18.33"

// DefaultBinary is the executable when Options.Binary is empty.
const DefaultBinary = "opencode"

// Request variables the adapter reads.
const (
	// BaseURLEnv names the provider's Anthropic Messages API base URL (without
	// /v1); when set, the seeded config routes the model through it.
	BaseURLEnv = "ANTHROPIC_BASE_URL"
	// APIKeyEnv holds the model credential; the seeded provider reads it from
	// the environment ({env:…}), so it is never written to disk.
	APIKeyEnv = "ANTHROPIC_API_KEY"
	// ProviderID is the provider id seeded into opencode.json.
	ProviderID = "aicli"
)

// ConfigPath is the global config file relative to the home.
const ConfigPath = ".config/opencode/opencode.json"

// Options configure the adapter.
type Options struct {
	// Binary is the opencode executable (default DefaultBinary, looked up on PATH).
	Binary string
	// PasteEnterPause is the pause between the pasted text and Enter (default 50ms).
	PasteEnterPause time.Duration
}

// Adapter drives OpenCode. It is stateless.
type Adapter struct {
	opts Options
}

var _ harness.Adapter = (*Adapter)(nil)

// New returns the opencode adapter.
func New(opts Options) *Adapter {
	if opts.Binary == "" {
		opts.Binary = DefaultBinary
	}
	if opts.PasteEnterPause == 0 {
		opts.PasteEnterPause = 50 * time.Millisecond
	}
	return &Adapter{opts: opts}
}

// Name implements harness.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements harness.Adapter: OpenCode picks its own session id.
func (a *Adapter) Capabilities() harness.Capabilities {
	return harness.Capabilities{PreassignSessionID: false, Resume: true}
}

// Env is the environment the adapter sets for every launch: no model catalog
// download, self-update, LSP download, sharing or default plugins.
var Env = map[string]string{
	"OPENCODE_DISABLE_MODELS_FETCH":    "1",
	"OPENCODE_DISABLE_AUTOUPDATE":      "1",
	"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
	"OPENCODE_DISABLE_SHARE":           "1",
	"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
}

// ModelRef is the provider/model reference OpenCode's -m flag and config take:
// a bare model name is qualified with the seeded provider.
func ModelRef(model string) string {
	if model == "" || strings.Contains(model, "/") {
		return model
	}
	return ProviderID + "/" + model
}

// SeedFiles implements harness.Adapter: the global opencode.json with
// autoupdate and sharing off and, when the request names a base URL, an
// Anthropic-API provider pointed at it holding the request's model. Keys the
// user or the CLI added are kept.
func (a *Adapter) SeedFiles(req harness.LaunchRequest) ([]harness.SeedFile, error) {
	merge := func(existing []byte) ([]byte, error) { return mergeConfig(existing, req) }
	fresh, err := merge(nil)
	if err != nil {
		return nil, err
	}
	return []harness.SeedFile{{Path: ConfigPath, Data: fresh, Mode: 0o600, Merge: merge}}, nil
}

func mergeConfig(existing []byte, req harness.LaunchRequest) ([]byte, error) {
	cfg := map[string]any{}
	if len(strings.TrimSpace(string(existing))) > 0 {
		if err := json.Unmarshal(existing, &cfg); err != nil {
			return nil, fmt.Errorf("merge opencode.json: %w", err)
		}
	}
	if _, ok := cfg["$schema"]; !ok {
		cfg["$schema"] = "https://opencode.ai/config.json"
	}
	cfg["autoupdate"] = false
	cfg["share"] = "disabled"
	if base := req.Env[BaseURLEnv]; base != "" {
		providers, _ := cfg["provider"].(map[string]any)
		if providers == nil {
			providers = map[string]any{}
		}
		p, _ := providers[ProviderID].(map[string]any)
		if p == nil {
			p = map[string]any{}
		}
		p["npm"] = "@ai-sdk/anthropic"
		p["name"] = ProviderID
		p["options"] = map[string]any{"baseURL": strings.TrimRight(base, "/") + "/v1", "apiKey": "{env:" + APIKeyEnv + "}"}
		models, _ := p["models"].(map[string]any)
		if models == nil {
			models = map[string]any{}
		}
		if req.Model != "" && !strings.Contains(req.Model, "/") {
			if _, ok := models[req.Model]; !ok {
				models[req.Model] = map[string]any{"name": req.Model}
			}
		}
		p["models"] = models
		providers[ProviderID] = p
		cfg["provider"] = providers
	}
	if req.Model != "" {
		cfg["model"] = ModelRef(req.Model)
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode opencode.json: %w", err)
	}
	return append(b, '\n'), nil
}

// sessionIDRE is the form of OpenCode's session ids.
var sessionIDRE = regexp.MustCompile(`^ses_[0-9A-Za-z]{20,40}$`)

// ValidSessionID reports whether id looks like an OpenCode session id.
func ValidSessionID(id string) bool { return sessionIDRE.MatchString(id) }

// Launch implements harness.Adapter: "opencode [-m provider/model] [args]" or
// "opencode --session <id> [-m provider/model] [args]".
func (a *Adapter) Launch(req harness.LaunchRequest) (harness.Launch, error) {
	l := harness.Launch{Path: a.opts.Binary, Env: map[string]string{}}
	for k, v := range Env {
		l.Env[k] = v
	}
	var args []string
	if req.ResumeSession != "" {
		if !ValidSessionID(req.ResumeSession) {
			return l, ptyapi.Errorf(ptyapi.ErrInvalidArgument, "resume session %q is not an opencode session id",
				req.ResumeSession)
		}
		args = append(args, "--session", req.ResumeSession)
		l.SessionID, l.Resumed = req.ResumeSession, true
	}
	if req.Model != "" {
		args = append(args, "-m", ModelRef(req.Model))
	}
	l.Args = append(args, req.Args...)
	return l, nil
}

// FormatMessage implements harness.Adapter: a bracketed paste of the
// sanitised text, a short pause, Enter.
func (a *Adapter) FormatMessage(text string) []harness.Chunk {
	return harness.BracketedPaste(text, a.opts.PasteEnterPause)
}

// Delivery implements harness.Adapter. The first message of a session is
// answered from the start screen, which looks idle until the session exists
// (see IsStartScreen): a turn that never leaves it ends after ReactWithin.
func (a *Adapter) Delivery() harness.DeliveryPolicy {
	return harness.DeliveryPolicy{AcceptsQueuedInput: false, SettleAfterSubmit: 100 * time.Millisecond,
		ReactWithin: 10 * time.Second}
}

// Quota implements harness.Adapter: OpenCode shows no quota with an API key.
func (a *Adapter) Quota(ptyapi.Screen) []ptyapi.QuotaMetric { return nil }

// DataDir is OpenCode's data directory under home (XDG_DATA_HOME default).
func DataDir(home string) string { return filepath.Join(home, ".local", "share", "opencode") }

// DBPath is OpenCode's SQLite session store.
func DBPath(home string) string { return filepath.Join(DataDir(home), "opencode.db") }

// SessionStoreDir implements harness.Adapter.
func (a *Adapter) SessionStoreDir(home, _ string) string { return DataDir(home) }

// SessionFile implements harness.Adapter. OpenCode keeps every session in one
// SQLite database, not in a file per session; the returned path is that
// database. It is not line-based: read it with a row dump in the line format
// ParseTranscript takes (see RowLine).
func (a *Adapter) SessionFile(home, _ string, sessionID string) (string, error) {
	if !ValidSessionID(sessionID) {
		return "", ptyapi.Errorf(ptyapi.ErrInvalidArgument, "session id %q is not an opencode session id", sessionID)
	}
	return DBPath(home), nil
}

// DiscoverSession implements harness.Adapter from OpenCode's own log: the
// newest "message=created id=ses_… directory=<workDir>" record at or after
// since (any directory when workDir is empty). OpenCode creates the session
// when the first message is submitted.
func (a *Adapter) DiscoverSession(home, workDir string, since time.Time) (string, bool, error) {
	logs, err := filepath.Glob(filepath.Join(DataDir(home), "log", "*.log"))
	if err != nil {
		return "", false, fmt.Errorf("list opencode logs: %w", err)
	}
	var best string
	var bestT time.Time
	for _, p := range logs {
		if st, err := os.Stat(p); err != nil || st.ModTime().Before(since) {
			continue
		}
		id, t, ok := lastCreated(p, workDir, since)
		if ok && (best == "" || !t.Before(bestT)) {
			best, bestT = id, t
		}
	}
	return best, best != "", nil
}

// lastCreated scans one log for the newest session-created record.
func lastCreated(path, workDir string, since time.Time) (string, time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var id string
	var at time.Time
	for sc.Scan() {
		fields := logFields(sc.Text())
		if fields["message"] != "created" || !ValidSessionID(fields["id"]) || fields["parentID"] != "undefined" &&
			fields["parentID"] != "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, fields["timestamp"])
		if err != nil || t.Before(since.Add(-time.Second)) {
			continue
		}
		if workDir != "" && filepath.Clean(fields["directory"]) != filepath.Clean(workDir) {
			continue
		}
		id, at = fields["id"], t
	}
	return id, at, id != ""
}

// logFields splits a logfmt-style line (key=value, values optionally quoted).
func logFields(line string) map[string]string {
	out := map[string]string{}
	for line != "" {
		line = strings.TrimLeft(line, " ")
		k, rest, ok := strings.Cut(line, "=")
		if !ok || strings.Contains(k, " ") {
			break
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := 1
			for end < len(rest) && (rest[end] != '"' || rest[end-1] == '\\') {
				end++
			}
			v = strings.ReplaceAll(rest[1:min(end, len(rest))], `\"`, `"`)
			line = rest[min(end+1, len(rest)):]
		} else {
			v, line, _ = strings.Cut(rest, " ")
		}
		out[k] = v
	}
	return out
}

// ProviderEnv implements harness.ProviderEnvMapper: the seeded provider takes
// the Anthropic API base without /v1 (SeedFiles adds it) and reads the key
// from the environment.
func (a *Adapter) ProviderEnv(p ptyapi.ProviderAccess) map[string]string {
	return map[string]string{BaseURLEnv: strings.TrimSuffix(strings.TrimRight(p.BaseURL, "/"), "/v1"), APIKeyEnv: p.APIKey}
}

// InstructionsPath is OpenCode's global rules file, relative to the home:
// added to the system prompt of every request ("Instructions from: …").
const InstructionsPath = ".config/opencode/AGENTS.md"

// InstructionsFile implements harness.Adapter.
func (a *Adapter) InstructionsFile(string) string { return InstructionsPath }
