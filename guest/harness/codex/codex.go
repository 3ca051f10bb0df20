package codex

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// Name is the harness name.
const Name = "codex"

// Version is the Codex CLI release the adapter's cues and config were taken from.
const Version = "0.171.0"

// DefaultBinary is the executable when Options.Binary is empty. Run the static
// binary itself, not the npm node wrapper (which survives SIGKILL of node).
const DefaultBinary = "codex"

// Request variables the adapter reads.
const (
	// BaseURLEnv names the provider's Responses API base URL (ending in /v1).
	BaseURLEnv = "OPENAI_BASE_URL"
	// APIKeyEnv holds the model credential; the seeded provider reads it.
	APIKeyEnv = "OPENAI_API_KEY"
	// ProviderID is the provider id seeded into config.toml.
	ProviderID = "aicli"
)

// Options configure the adapter.
type Options struct {
	// Binary is the codex executable (default DefaultBinary, looked up on PATH).
	Binary string
	// PasteEnterPause is the pause between the pasted text and Enter (default
	// 500ms: an Enter sent sooner is taken as part of the paste).
	PasteEnterPause time.Duration
}

// Adapter drives the Codex CLI. It is stateless.
type Adapter struct {
	opts Options
}

var _ harness.Adapter = (*Adapter)(nil)

// New returns the codex adapter.
func New(opts Options) *Adapter {
	if opts.Binary == "" {
		opts.Binary = DefaultBinary
	}
	if opts.PasteEnterPause == 0 {
		opts.PasteEnterPause = 500 * time.Millisecond
	}
	return &Adapter{opts: opts}
}

// Name implements harness.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements harness.Adapter: Codex picks its own session id.
func (a *Adapter) Capabilities() harness.Capabilities {
	return harness.Capabilities{PreassignSessionID: false, Resume: true}
}

// codexHome is CODEX_HOME under the durable home.
func codexHome(home string) string { return filepath.Join(home, ".codex") }

// Launch implements harness.Adapter: "codex [-m model] [args]" or
// "codex resume <id> [-m model] [args]"; CODEX_HOME points into the home.
func (a *Adapter) Launch(req harness.LaunchRequest) (harness.Launch, error) {
	l := harness.Launch{Path: a.opts.Binary, Env: map[string]string{"CODEX_HOME": codexHome(req.Home)}}
	var args []string
	if req.ResumeSession != "" {
		if _, err := uuid.Parse(req.ResumeSession); err != nil {
			return l, ptyapi.Errorf(ptyapi.ErrInvalidArgument, "resume session %q is not a uuid", req.ResumeSession)
		}
		args = append(args, "resume", req.ResumeSession)
		l.SessionID, l.Resumed = req.ResumeSession, true
	}
	if req.Model != "" {
		args = append(args, "-m", req.Model)
	}
	l.Args = append(args, req.Args...)
	return l, nil
}

// FormatMessage implements harness.Adapter: a bracketed paste of the
// sanitised text, the paste pause, Enter.
func (a *Adapter) FormatMessage(text string) []harness.Chunk {
	return harness.BracketedPaste(text, a.opts.PasteEnterPause)
}

// Delivery implements harness.Adapter. Right after its first prompt Codex
// redraws a busy line while its start-up requests (update and model checks,
// refused by egress) run: the first IDLE must hold 1 s.
func (a *Adapter) Delivery() harness.DeliveryPolicy {
	return harness.DeliveryPolicy{AcceptsQueuedInput: false, SettleAfterSubmit: 100 * time.Millisecond,
		StartupSettle: time.Second}
}

// Quota implements harness.Adapter: Codex shows no quota with an API key.
func (a *Adapter) Quota(ptyapi.Screen) []ptyapi.QuotaMetric { return nil }

// SessionStoreDir implements harness.Adapter: rollouts live under
// CODEX_HOME/sessions/YYYY/MM/DD.
func (a *Adapter) SessionStoreDir(home, _ string) string {
	return filepath.Join(codexHome(home), "sessions")
}

// rolloutRE matches a rollout file name and captures its session id.
var rolloutRE = regexp.MustCompile(`^rollout-.*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)

// SessionIDFromPath returns the session id a rollout file name carries.
func SessionIDFromPath(p string) (string, bool) {
	m := rolloutRE.FindStringSubmatch(filepath.Base(p))
	if m == nil {
		return "", false
	}
	return m[1], true
}

// walkRollouts calls fn for every rollout file under the store.
func (a *Adapter) walkRollouts(home string, fn func(path, id string, info fs.FileInfo) error) error {
	root := a.SessionStoreDir(home, "")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		id, ok := SessionIDFromPath(p)
		if !ok {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil //nolint:nilerr // a file removed under us is skipped
		}
		return fn(p, id, info)
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("walk codex sessions: %w", err)
	}
	return nil
}

// SessionFile implements harness.Adapter: the rollout file whose name ends in
// the id (the newest when a resume wrote more than one).
func (a *Adapter) SessionFile(home, _ string, sessionID string) (string, error) {
	if _, err := uuid.Parse(sessionID); err != nil {
		return "", ptyapi.Errorf(ptyapi.ErrInvalidArgument, "session id %q is not a uuid", sessionID)
	}
	var best string
	var bestMT time.Time
	err := a.walkRollouts(home, func(p, id string, info fs.FileInfo) error {
		if id == sessionID && (best == "" || info.ModTime().After(bestMT)) {
			best, bestMT = p, info.ModTime()
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if best == "" {
		return "", fmt.Errorf("codex session %s has no rollout file: %w", sessionID, fs.ErrNotExist)
	}
	return best, nil
}

// DiscoverSession implements harness.Adapter: the newest rollout modified at
// or after since whose session_meta names workDir (any cwd when workDir is empty).
func (a *Adapter) DiscoverSession(home, workDir string, since time.Time) (string, bool, error) {
	var bestID string
	var bestMT time.Time
	err := a.walkRollouts(home, func(p, id string, info fs.FileInfo) error {
		if info.ModTime().Before(since) || (bestID != "" && !info.ModTime().After(bestMT)) {
			return nil
		}
		if workDir != "" {
			if cwd, ok := rolloutCwd(p); !ok || filepath.Clean(cwd) != filepath.Clean(workDir) {
				return nil
			}
		}
		bestID, bestMT = id, info.ModTime()
		return nil
	})
	if err != nil {
		return "", false, err
	}
	return bestID, bestID != "", nil
}

// rolloutCwd reads the cwd from a rollout's first (session_meta) line.
func rolloutCwd(p string) (string, bool) {
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
	var line struct {
		Type    string `json:"type"`
		Payload struct {
			Cwd string `json:"cwd"`
		} `json:"payload"`
	}
	if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "session_meta" {
		return "", false
	}
	return line.Payload.Cwd, line.Payload.Cwd != ""
}

// trimmed reports whether s, trimmed, starts with any of the prefixes.
func hasAnyPrefix(s string, prefixes ...string) bool {
	s = strings.TrimSpace(s)
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// ProviderEnv implements harness.ProviderEnvMapper: Codex wants the base URL
// of the Responses API, ending in /v1.
func (a *Adapter) ProviderEnv(p ptyapi.ProviderAccess) map[string]string {
	base := strings.TrimRight(p.BaseURL, "/")
	if base != "" && !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return map[string]string{BaseURLEnv: base, APIKeyEnv: p.APIKey}
}

// Codex's global instruction files, relative to the home ($CODEX_HOME, see
// codexHome): Codex reads AGENTS.override.md instead of AGENTS.md when it
// exists, and sends the one it reads as a user message ("# AGENTS.md
// instructions") at the start of a session and again on resume.
const (
	InstructionsPath         = ".codex/AGENTS.md"
	InstructionsOverridePath = ".codex/AGENTS.override.md"
)

// InstructionsFile implements harness.Adapter: AGENTS.md, or the override
// file when someone put one in the home (Codex would read only that one).
func (a *Adapter) InstructionsFile(home string) string {
	if _, err := os.Lstat(filepath.Join(home, InstructionsOverridePath)); err == nil {
		return InstructionsOverridePath
	}
	return InstructionsPath
}
