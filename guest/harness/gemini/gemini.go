package gemini

import (
	"bufio"
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
const Name = "gemini"

// Version is the Gemini CLI release the adapter's cues and config were taken from.
const Version = "0.61.0"

// DefaultBinary is the executable when Options.Binary is empty.
const DefaultBinary = "gemini"

// Request variables the CLI reads (passed through from the request's Env).
const (
	// APIKeyEnv holds the model credential.
	APIKeyEnv = "GEMINI_API_KEY"
	// BaseURLEnv names the provider's base URL (without the /v1beta version).
	BaseURLEnv = "GOOGLE_GEMINI_BASE_URL"
)

// SettingsPath is the user settings file relative to the home.
const SettingsPath = ".gemini/settings.json"

// Options configure the adapter.
type Options struct {
	// Binary is the gemini executable (default DefaultBinary, looked up on PATH).
	Binary string
	// PasteEnterPause is the pause between the pasted text and Enter (default
	// 250ms: Gemini CLI turns an Enter that arrives within 40ms of a paste
	// into a newline, and under load its timer fires late — 100ms failed here).
	PasteEnterPause time.Duration
}

// Adapter drives Gemini CLI. It is stateless.
type Adapter struct {
	opts Options
}

var _ harness.Adapter = (*Adapter)(nil)

// New returns the gemini adapter.
func New(opts Options) *Adapter {
	if opts.Binary == "" {
		opts.Binary = DefaultBinary
	}
	if opts.PasteEnterPause == 0 {
		opts.PasteEnterPause = 250 * time.Millisecond
	}
	return &Adapter{opts: opts}
}

// Name implements harness.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements harness.Adapter: --session-id takes a uuid.
func (a *Adapter) Capabilities() harness.Capabilities {
	return harness.Capabilities{PreassignSessionID: true, Resume: true}
}

// Env is the environment the adapter sets for every launch: one process (no
// self-relaunch with a bigger heap), no update notifier.
var Env = map[string]string{
	"GEMINI_CLI_NO_RELAUNCH": "true",
	"NO_UPDATE_NOTIFIER":     "1",
}

// SeedFiles implements harness.Adapter: settings.json with API-key auth
// selected, folder trust off, telemetry, usage statistics and auto-update off,
// merged into what the user or the CLI wrote there (their other keys are kept).
func (a *Adapter) SeedFiles(harness.LaunchRequest) ([]harness.SeedFile, error) {
	fresh, err := mergeSettings(nil)
	if err != nil {
		return nil, err
	}
	return []harness.SeedFile{{Path: SettingsPath, Data: fresh, Mode: 0o600, Merge: mergeSettings}}, nil
}

// mergeSettings sets the seeded keys in a settings document.
func mergeSettings(existing []byte) ([]byte, error) {
	cfg := map[string]any{}
	if len(strings.TrimSpace(string(existing))) > 0 {
		if err := json.Unmarshal(existing, &cfg); err != nil {
			return nil, fmt.Errorf("merge gemini settings: %w", err)
		}
	}
	set(cfg, "gemini-api-key", "security", "auth", "selectedType")
	set(cfg, false, "security", "folderTrust", "enabled")
	set(cfg, false, "telemetry", "enabled")
	set(cfg, false, "privacy", "usageStatisticsEnabled")
	set(cfg, true, "general", "disableAutoUpdate")
	set(cfg, true, "general", "disableUpdateNag")
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode gemini settings: %w", err)
	}
	return append(b, '\n'), nil
}

// set stores v at the nested key path, creating (or replacing non-object) parents.
func set(cfg map[string]any, v any, path ...string) {
	m := cfg
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// Launch implements harness.Adapter: "gemini [-m model] --session-id <uuid>"
// (a fresh uuid when the request has none) or "gemini [-m model] --resume <id>".
func (a *Adapter) Launch(req harness.LaunchRequest) (harness.Launch, error) {
	l := harness.Launch{Path: a.opts.Binary, Env: map[string]string{}}
	for k, v := range Env {
		l.Env[k] = v
	}
	var args []string
	if req.Model != "" {
		args = append(args, "-m", req.Model)
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

// Delivery implements harness.Adapter. After Enter, Gemini CLI clears the
// input box about 100ms before its spinner appears (an idle-looking screen),
// so an IDLE screen must hold 250ms after a delivery before the next one.
// Resumed, it first draws a ready-looking screen and replaces it with
// "Resuming session" 0.6–0.8 s later; Enter typed in between is lost, so the
// first IDLE must hold 1.5 s.
func (a *Adapter) Delivery() harness.DeliveryPolicy {
	return harness.DeliveryPolicy{AcceptsQueuedInput: false, SettleAfterSubmit: 250 * time.Millisecond,
		StartupSettle: 1500 * time.Millisecond}
}

// Quota implements harness.Adapter: Gemini CLI shows no quota with an API key.
func (a *Adapter) Quota(ptyapi.Screen) []ptyapi.QuotaMetric { return nil }

// ProjectName is the directory Gemini CLI keeps a working directory's chats
// under (~/.gemini/tmp/<name>): the name its ~/.gemini/projects.json registry
// gives the directory, else the directory's base name (what it assigns first).
func ProjectName(home, workDir string) string {
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if b, err := os.ReadFile(filepath.Join(home, ".gemini", "projects.json")); err == nil &&
		json.Unmarshal(b, &reg) == nil {
		if n := reg.Projects[filepath.Clean(workDir)]; n != "" && !strings.ContainsAny(n, `/\`) && n != ".." {
			return n
		}
	}
	return filepath.Base(filepath.Clean(workDir))
}

// SessionStoreDir implements harness.Adapter.
func (a *Adapter) SessionStoreDir(home, workDir string) string {
	return filepath.Join(home, ".gemini", "tmp", ProjectName(home, workDir), "chats")
}

// sessionFiles lists the chat files of a session: session-<time>-<id8>.jsonl
// whose header names the session id.
func (a *Adapter) sessionFiles(home, workDir, sessionID string) ([]string, error) {
	dir := a.SessionStoreDir(home, workDir)
	matches, err := filepath.Glob(filepath.Join(dir, "session-*-"+sessionID[:8]+".jsonl"))
	if err != nil {
		return nil, fmt.Errorf("list gemini chats: %w", err)
	}
	var out []string
	for _, p := range matches {
		if id, ok := headerSessionID(p); ok && id == sessionID {
			out = append(out, p)
		}
	}
	return out, nil
}

// SessionFile implements harness.Adapter: the chat file holding the session's
// conversation. "gemini --resume" appends to the existing file (and writes a
// small stub with the same id); when several files carry the id, the one with
// the most content wins. Before Gemini has written the session, the result is
// the name it will use if it starts the chat in the current minute:
// session-<UTC start time to the minute>-<first 8 characters of the id>.jsonl
// (the guest resolves the path once per session id, usually right after
// launch, when the file does not exist yet; a start that crosses a minute
// boundary is missed).
func (a *Adapter) SessionFile(home, workDir, sessionID string) (string, error) {
	return a.sessionFileAt(home, workDir, sessionID, time.Now())
}

func (a *Adapter) sessionFileAt(home, workDir, sessionID string, now time.Time) (string, error) {
	if _, err := uuid.Parse(sessionID); err != nil {
		return "", ptyapi.Errorf(ptyapi.ErrInvalidArgument, "session id %q is not a uuid", sessionID)
	}
	files, err := a.sessionFiles(home, workDir, sessionID)
	if err != nil {
		return "", err
	}
	best, bestSize := "", int64(-1)
	for _, p := range files {
		if st, err := os.Stat(p); err == nil && st.Size() > bestSize {
			best, bestSize = p, st.Size()
		}
	}
	if best == "" {
		name := "session-" + strings.ReplaceAll(now.UTC().Format("2006-01-02T15:04"), ":", "-") + "-" +
			sessionID[:8] + ".jsonl"
		return filepath.Join(a.SessionStoreDir(home, workDir), name), nil
	}
	return best, nil
}

// DiscoverSession implements harness.Adapter: the newest chat file modified
// at or after since. Gemini takes pre-assigned ids, so this is only a fallback.
func (a *Adapter) DiscoverSession(home, workDir string, since time.Time) (string, bool, error) {
	matches, err := filepath.Glob(filepath.Join(a.SessionStoreDir(home, workDir), "session-*.jsonl"))
	if err != nil {
		return "", false, fmt.Errorf("list gemini chats: %w", err)
	}
	type cand struct {
		id string
		mt time.Time
	}
	var cs []cand
	for _, p := range matches {
		st, err := os.Stat(p)
		if err != nil || st.ModTime().Before(since) {
			continue
		}
		if id, ok := headerSessionID(p); ok {
			cs = append(cs, cand{id, st.ModTime()})
		}
	}
	if len(cs) == 0 {
		return "", false, nil
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].mt.After(cs[j].mt) })
	return cs[0].id, true, nil
}

// headerSessionID reads the sessionId from a chat file's first line.
func headerSessionID(p string) (string, bool) {
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	if !sc.Scan() {
		return "", false
	}
	var h struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(sc.Bytes(), &h) != nil || h.SessionID == "" {
		return "", false
	}
	if _, err := uuid.Parse(h.SessionID); err != nil {
		return "", false
	}
	return h.SessionID, true
}

// ProviderEnv implements harness.ProviderEnvMapper: Gemini CLI takes the
// provider's base URL without the API version (it adds /v1beta itself).
func (a *Adapter) ProviderEnv(p ptyapi.ProviderAccess) map[string]string {
	base := strings.TrimRight(p.BaseURL, "/")
	for _, v := range []string{"/v1beta", "/v1"} {
		base = strings.TrimSuffix(base, v)
	}
	return map[string]string{BaseURLEnv: base, APIKeyEnv: p.APIKey}
}

// InstructionsPath is Gemini CLI's global context file, relative to the home:
// loaded at start (before the working directory's GEMINI.md files) into the
// system instruction.
const InstructionsPath = ".gemini/GEMINI.md"

// InstructionsFile implements harness.Adapter.
func (a *Adapter) InstructionsFile(string) string { return InstructionsPath }
