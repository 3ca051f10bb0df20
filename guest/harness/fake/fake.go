package fake

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake/cli"
	"aicli.dev/aicli/guest/harness/fake/sessionstore"
	"aicli.dev/aicli/guest/ptyapi"
)

// Name is the harness name.
const Name = "fake"

// DefaultBinary is the fake CLI's executable when Options.Binary is empty.
const DefaultBinary = "aicli-fake-cli"

// Options configure the adapter.
type Options struct {
	// Binary is the fake CLI executable (default DefaultBinary, looked up on PATH).
	Binary string
	// ExtraArgs are put before the request's own Args (e.g. "--alt-screen").
	ExtraArgs []string
	// PasteEnterPause is the pause between the pasted text and Enter (default 20ms).
	PasteEnterPause time.Duration
}

// Adapter drives aicli-fake-cli.
type Adapter struct {
	opts Options
}

var _ harness.Adapter = (*Adapter)(nil)

// New returns the fake adapter.
func New(opts Options) *Adapter {
	if opts.Binary == "" {
		opts.Binary = DefaultBinary
	}
	if opts.PasteEnterPause == 0 {
		opts.PasteEnterPause = 20 * time.Millisecond
	}
	return &Adapter{opts: opts}
}

// Name implements harness.Adapter.
func (a *Adapter) Name() string { return Name }

// Capabilities implements harness.Adapter.
func (a *Adapter) Capabilities() harness.Capabilities {
	return harness.Capabilities{PreassignSessionID: true, Resume: true}
}

// SeedFiles implements harness.Adapter: the fake needs only its store directory
// to exist; a marker config file shows where real adapters put theirs.
func (a *Adapter) SeedFiles(req harness.LaunchRequest) ([]harness.SeedFile, error) {
	return []harness.SeedFile{{
		Path:         ".fake/config.json",
		Data:         []byte(`{"onboarded":true}` + "\n"),
		Mode:         0o600,
		KeepExisting: true,
	}}, nil
}

// InstructionsFile implements harness.Adapter: the fake reads
// cli.InstructionsPath at start and reports its first line.
func (a *Adapter) InstructionsFile(string) string { return cli.InstructionsPath }

// Launch implements harness.Adapter.
func (a *Adapter) Launch(req harness.LaunchRequest) (harness.Launch, error) {
	l := harness.Launch{Path: a.opts.Binary}
	args := append([]string(nil), a.opts.ExtraArgs...)
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

// Classify implements harness.Adapter. A permission prompt wins over every
// other cue; the busy hint wins over the idle prompt (the prompt row stays
// drawn while the fake works, like Claude's input box).
func (a *Adapter) Classify(s ptyapi.Screen) (ptyapi.ExecutionStatus, bool) {
	prompt, footer := false, false
	busy := false
	for _, l := range s.Lines {
		switch {
		case strings.Contains(l, cli.PermissionAsk):
			return ptyapi.StatusWaitingForInput, true
		case strings.Contains(l, cli.BusyHint):
			busy = true
		case strings.HasPrefix(l, cli.PromptPrefix) || l == strings.TrimSpace(cli.PromptPrefix):
			prompt = true
		case strings.HasPrefix(l, cli.FooterHint):
			footer = true
		}
	}
	switch {
	case busy:
		return ptyapi.StatusBusy, true
	case prompt && footer:
		return ptyapi.StatusIdle, true
	}
	return "", false
}

// FormatMessage implements harness.Adapter: bracketed paste of the sanitised
// text, a short pause, Enter.
func (a *Adapter) FormatMessage(text string) []harness.Chunk {
	return harness.BracketedPaste(text, a.opts.PasteEnterPause)
}

// Delivery implements harness.Adapter.
func (a *Adapter) Delivery() harness.DeliveryPolicy {
	return harness.DeliveryPolicy{AcceptsQueuedInput: false, SettleAfterSubmit: 50 * time.Millisecond}
}

var quotaRE = regexp.MustCompile(`quota tokens (\d+)/(\d+) \(([^)]+)\)`)

// Quota implements harness.Adapter: the fake's footer "quota tokens U/M (window)".
func (a *Adapter) Quota(s ptyapi.Screen) []ptyapi.QuotaMetric {
	for _, l := range s.Lines {
		m := quotaRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		cur, _ := strconv.ParseFloat(m[1], 64)
		max, _ := strconv.ParseFloat(m[2], 64)
		return []ptyapi.QuotaMetric{{Name: "tokens", Unit: "tokens", Max: max, Current: cur, Window: m[3]}}
	}
	return nil
}

// SessionStoreDir implements harness.Adapter.
func (a *Adapter) SessionStoreDir(home, _ string) string {
	return filepath.Join(home, sessionstore.Dir)
}

// SessionFile implements harness.Adapter.
func (a *Adapter) SessionFile(home, _ string, sessionID string) (string, error) {
	if _, err := uuid.Parse(sessionID); err != nil {
		return "", ptyapi.Errorf(ptyapi.ErrInvalidArgument, "session id %q is not a uuid", sessionID)
	}
	return sessionstore.Path(home, sessionID), nil
}

// DiscoverSession implements harness.Adapter: the newest store file modified
// at or after since. The fake can pre-assign ids, so this is the fallback path
// real CLIs without --session-id use.
func (a *Adapter) DiscoverSession(home, workDir string, since time.Time) (string, bool, error) {
	dir := a.SessionStoreDir(home, workDir)
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("list sessions: %w", err)
	}
	type cand struct {
		id string
		mt time.Time
	}
	var cs []cand
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok {
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

// ParseTranscript implements harness.Adapter.
func (a *Adapter) ParseTranscript(r io.Reader) ([]harness.TranscriptEntry, error) {
	recs, err := sessionstore.Read(r)
	if err != nil {
		return nil, fmt.Errorf("parse fake transcript: %w", err)
	}
	out := make([]harness.TranscriptEntry, 0, len(recs))
	for _, rec := range recs {
		role := rec.Message.Role
		if role == "" {
			role = rec.Type
		}
		out = append(out, harness.TranscriptEntry{
			TranscriptEntry: ptyapi.TranscriptEntry{ID: rec.UUID, Role: role, Text: rec.Text(), Timestamp: rec.Timestamp},
			MessageID:       rec.Message.ID, RequestID: rec.RequestID, Model: rec.Message.Model,
		})
	}
	return out, nil
}
