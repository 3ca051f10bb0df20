package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"golang.org/x/term"

	"aicli.dev/aicli/guest/harness/fake/sessionstore"
)

// DelayEnv overrides the default reply delay (a Go duration, e.g. "0s").
const DelayEnv = "AICLI_FAKE_DELAY"

// Script markers recognised in messages.
const (
	MarkAsk   = "!ask"   // show a y/n permission prompt before answering
	MarkSlow  = "!slow"  // stay busy for SlowDelay
	MarkCrash = "!crash" // exit with code 3
	MarkSpawn = "!spawn" // start a grandchild process that sleeps forever
	MarkRead  = "!read"  // "!read <path>": try to read a file and report the result
	MarkID    = "!id"    // report uid and gid
	// MarkRun is "!run CMD ARGS…" (the rest of the message): run a command
	// from PATH, as a real CLI's shell tool would, and put its exit code and
	// output in the reply.
	MarkRun = "!run"
	// MarkForge is "!forge TEXT" (the rest of the message): after the turn,
	// append a user turn saying TEXT to the CLI's own session store, which
	// nobody sent — what a hostile CLI can do (its transcript reads
	// "unattributed").
	MarkForge = "!forge"
	// MarkInstructions makes the reply report the standing instructions read at start.
	MarkInstructions = "!instructions"
)

// InstructionsPath is where the fake reads standing instructions, relative
// to its home (like a real CLI's user-level CLAUDE.md or AGENTS.md).
const InstructionsPath = ".fake/AGENTS.md"

// InstructionsLineFmt is the line the fake shows at start when it has
// standing instructions (their first line), and the report "!instructions"
// adds to its reply; NoInstructions is that report when it has none.
const (
	InstructionsLineFmt = "instructions: %s"
	NoInstructions      = "instructions: none"
)

// SlowDelay is how long a "!slow" turn stays busy.
const SlowDelay = 3 * time.Second

// Screen cues the harness adapter matches on.
const (
	PromptPrefix   = "> "
	FooterHint     = "? for shortcuts"
	BusyHint       = "esc to interrupt"
	PermissionAsk  = "Do you want to proceed? (y/n)"
	ReplyPrefixFmt = "fake[turn %d]: "
)

// config holds the parsed flags.
type config struct {
	sessionID    string
	resume       string
	model        string
	delay        time.Duration
	altScreen    bool
	probe        bool
	quotaMax     int
	sleepForever bool
}

// Main runs the fake CLI and returns its exit code.
func Main(args []string, stdin, stdout *os.File, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if cfg.sleepForever {
		for {
			time.Sleep(time.Hour)
		}
	}
	s, err := newSession(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fake-cli: %v\n", err)
		return 1
	}
	if term.IsTerminal(int(stdin.Fd())) {
		return runTUI(s, stdin, stdout)
	}
	return runLines(s, stdin, stdout)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("aicli-fake-cli", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	defDelay := 200 * time.Millisecond
	if v := os.Getenv(DelayEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			fmt.Fprintf(stderr, "fake-cli: bad %s: %v\n", DelayEnv, err)
			return cfg, fmt.Errorf("parse %s: %w", DelayEnv, err)
		}
		defDelay = d
	}
	fs.StringVar(&cfg.sessionID, "session-id", "", "pre-assigned session id")
	fs.StringVar(&cfg.resume, "resume", "", "resume the session with this id")
	fs.StringVar(&cfg.model, "model", "fake-model", "model name recorded in the session store")
	fs.DurationVar(&cfg.delay, "delay", defDelay, "reply delay per turn (env "+DelayEnv+")")
	fs.BoolVar(&cfg.altScreen, "alt-screen", false, "draw on the alternate screen")
	fs.BoolVar(&cfg.probe, "probe-terminal", false, "query cursor position and device attributes at start")
	fs.IntVar(&cfg.quotaMax, "quota-max", 0, "show a token quota line with this maximum")
	fs.BoolVar(&cfg.sleepForever, "sleep-forever", false, "internal: sleep forever (used by !spawn)")
	if err := fs.Parse(args); err != nil {
		return cfg, fmt.Errorf("parse flags: %w", err)
	}
	if cfg.sessionID != "" && cfg.resume != "" {
		fmt.Fprintln(stderr, "fake-cli: --session-id and --resume are exclusive")
		return cfg, errors.New("exclusive flags")
	}
	return cfg, nil
}

// session is the conversation state shared by both front ends.
type session struct {
	cfg       config
	id        string
	storePath string
	cwd       string
	turn      int
	lastUUID  string
	usedToks  int
	restored  []string // history lines restored on resume
	// instructions is the text of InstructionsPath at start, HTML comment
	// lines left out (as Claude Code reads its CLAUDE.md).
	instructions string
	mu           sync.Mutex
	children     []*exec.Cmd
}

func newSession(cfg config) (*session, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("home: %w", err)
	}
	cwd, _ := os.Getwd()
	s := &session{cfg: cfg, cwd: cwd, instructions: readInstructions(filepath.Join(home, InstructionsPath))}
	switch {
	case cfg.resume != "":
		s.id = cfg.resume
		s.storePath = sessionstore.Path(home, s.id)
		recs, err := sessionstore.ReadFile(s.storePath)
		if err != nil {
			return nil, fmt.Errorf("resume %s: %w", s.id, err)
		}
		for _, r := range recs {
			s.lastUUID = r.UUID
			if r.Turn > s.turn {
				s.turn = r.Turn
			}
			switch r.Type {
			case "user":
				s.restored = append(s.restored, "user: "+r.Text())
			case "assistant":
				s.restored = append(s.restored, r.Text())
				if r.Message.Usage != nil {
					s.usedToks += r.Message.Usage.InputTokens + r.Message.Usage.OutputTokens
				}
			}
		}
		s.restored = append(s.restored, fmt.Sprintf("resumed session %s at turn %d", s.id, s.turn))
	case cfg.sessionID != "":
		if _, err := uuid.Parse(cfg.sessionID); err != nil {
			return nil, fmt.Errorf("session id %q is not a uuid: %w", cfg.sessionID, err)
		}
		s.id = cfg.sessionID
		s.storePath = sessionstore.Path(home, s.id)
	default:
		s.id = uuid.NewString()
		s.storePath = sessionstore.Path(home, s.id)
	}
	return s, nil
}

// userTurn records the user message and returns the turn number.
func (s *session) userTurn(text string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn++
	return s.turn, s.appendUser(text)
}

// forge appends a user record nobody typed to the session store.
func (s *session) forge(text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.appendUser(text); err != nil {
		return "forge: error: " + err.Error()
	}
	return "forged a user turn"
}

// appendUser appends a user record of the current turn. s.mu must be held.
func (s *session) appendUser(text string) error {
	id := uuid.NewString()
	rec := sessionstore.Record{
		Type: "user", UUID: id, ParentUUID: s.lastUUID, SessionID: s.id, Timestamp: time.Now().UTC(),
		Cwd: s.cwd, Turn: s.turn,
		Message: sessionstore.Message{Role: "user", Content: []sessionstore.Content{{Type: "text", Text: text}}},
	}
	s.lastUUID = id
	return sessionstore.Append(s.storePath, rec)
}

// assistantTurn records the reply of turn.
func (s *session) assistantTurn(turn int, prompt, reply string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := uuid.NewString()
	usage := &sessionstore.Usage{
		InputTokens: len(prompt)/4 + 1, OutputTokens: len(reply)/4 + 1, CacheReadInputTokens: 10 * turn,
	}
	s.usedToks += usage.InputTokens + usage.OutputTokens
	rec := sessionstore.Record{
		Type: "assistant", UUID: id, ParentUUID: s.lastUUID, SessionID: s.id, Timestamp: time.Now().UTC(),
		Cwd: s.cwd, Turn: turn, RequestID: "req_fake_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20],
		Message: sessionstore.Message{
			ID: "msg_fake_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20], Type: "message",
			Role: "assistant", Model: s.cfg.model,
			Content: []sessionstore.Content{{Type: "text", Text: reply}}, Usage: usage,
		},
	}
	s.lastUUID = id
	return sessionstore.Append(s.storePath, rec)
}

// readInstructions returns the standing instructions in path without its
// HTML comment lines, "" when there are none.
func readInstructions(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "<!--") && strings.HasSuffix(t, "-->") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.TrimSpace(strings.Join(keep, "\n"))
}

// instructionsLine reports the standing instructions: their first line, or
// NoInstructions.
func (s *session) instructionsLine() string {
	if s.instructions == "" {
		return NoInstructions
	}
	first, _, _ := strings.Cut(s.instructions, "\n")
	return fmt.Sprintf(InstructionsLineFmt, strings.TrimSpace(first))
}

// quotaLine is the footer quota text, empty without --quota-max.
func (s *session) quotaLine() string {
	if s.cfg.quotaMax <= 0 {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("quota tokens %d/%d (5h)", s.usedToks, s.cfg.quotaMax)
}

// sideEffects runs the scripted markers that produce extra output lines.
func (s *session) sideEffects(text string) []string {
	var out []string
	if strings.Contains(text, MarkSpawn) {
		out = append(out, s.spawn())
	}
	if i := strings.Index(text, MarkRead+" "); i >= 0 {
		path := strings.Fields(text[i+len(MarkRead)+1:])
		if len(path) > 0 {
			b, err := os.ReadFile(filepath.Clean(path[0]))
			if err != nil {
				out = append(out, fmt.Sprintf("read %s: error: %v", path[0], err))
			} else {
				out = append(out, fmt.Sprintf("read %s: ok %d bytes", path[0], len(b)))
			}
		}
	}
	if i := strings.Index(text, MarkForge+" "); i >= 0 {
		out = append(out, s.forge(strings.TrimSpace(text[i+len(MarkForge)+1:])))
	}
	if strings.Contains(text, MarkID) {
		out = append(out, fmt.Sprintf("id: uid=%d gid=%d pid=%d pgid=%d", os.Getuid(), os.Getgid(),
			os.Getpid(), syscall.Getpgrp()))
	}
	return out
}

func (s *session) spawn() string {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Sprintf("spawn: error: %v", err)
	}
	cmd := exec.Command(exe, "--sleep-forever")
	if err := cmd.Start(); err != nil {
		return fmt.Sprintf("spawn: error: %v", err)
	}
	s.mu.Lock()
	s.children = append(s.children, cmd)
	s.mu.Unlock()
	return fmt.Sprintf("spawned pid %d", cmd.Process.Pid)
}

// replyText is the assistant reply for turn: the message echoed, and for
// MarkInstructions the instructions report after " | ".
func (s *session) replyText(turn int, text string) string {
	reply := fmt.Sprintf(ReplyPrefixFmt, turn) + text
	if strings.Contains(text, MarkInstructions) {
		reply += " | " + s.instructionsLine()
	}
	if i := strings.Index(text, MarkRun+" "); i >= 0 {
		reply += " | " + runCommand(strings.Fields(text[i+len(MarkRun)+1:]))
	}
	return reply
}

// runTimeout bounds a "!run" command.
const runTimeout = 60 * time.Second

// runCommand runs argv (looked up on PATH, no shell) and reports
// "run NAME: exit N: OUTPUT" on one line, or "run NAME: command not found".
func runCommand(argv []string) string {
	if len(argv) == 0 {
		return "run: nothing to run"
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Sprintf("run %s: command not found", argv[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	out, err := cmd.CombinedOutput()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return fmt.Sprintf("run %s: error: %v", argv[0], err)
	}
	return fmt.Sprintf("run %s: exit %d: %s", argv[0], code, strings.Join(strings.Fields(string(out)), " "))
}

// turnDelay is how long the turn stays busy.
func (s *session) turnDelay(text string) time.Duration {
	if strings.Contains(text, MarkSlow) {
		return SlowDelay
	}
	return s.cfg.delay
}

// notifyResize subscribes to SIGWINCH.
func notifyResize() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	return ch, func() { signal.Stop(ch) }
}
