// Command ptycapture runs a real AI CLI under the guest's PTY host against the
// fake model provider, drives it with a small script and records every distinct
// rendered screen, the provider's request log and the CLI's home (with its
// native session store). It is how the adapters' screen and transcript
// fixtures were captured.
//
//	go run ./hack/realcli/ptycapture -harness codex -bin "$(hack/realcli/bin.sh codex)" \
//	  -out /tmp/cap -steps 'waitidle;send:hello there;waitidle;send:second;waitidle'
//
// Steps (separated by ';'): send:<text> (the adapter's formatted message,
// written raw), msg:<text> (ptyhost SendMessage, waits for IDLE), sleep:<dur>,
// waitfor:<regexp> (on the screen, 60s), waitidle (adapter status IDLE, 60s),
// key:<enter|esc|down|up|tab|ctrl-c>, delay:<dur> (provider per-token delay),
// tool:<Name>:<json> (answer model calls with this tool call until a tool result comes back).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/claude"
	"aicli.dev/aicli/guest/harness/codex"
	"aicli.dev/aicli/guest/harness/gemini"
	"aicli.dev/aicli/guest/harness/opencode"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyhost"
	"aicli.dev/aicli/internal/fakeprovider"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ptycapture:", err)
		os.Exit(1)
	}
}

type snap struct {
	MS     int64                  `json:"ms"`
	Status ptyapi.ExecutionStatus `json:"status"`
	Note   string                 `json:"note,omitempty"`
	Lines  []string               `json:"lines"`
	CurX   int                    `json:"cursorX"`
	CurY   int                    `json:"cursorY"`
}

func run() error {
	name := flag.String("harness", "claude", "claude, codex, gemini or opencode")
	bin := flag.String("bin", "", "CLI binary")
	out := flag.String("out", "", "output directory")
	home := flag.String("home", "", "home directory (default <out>/home; reused for resume)")
	workDir := flag.String("workdir", "", "working directory (default <out>/work)")
	model := flag.String("model", "", "model")
	resume := flag.String("resume", "", "native session to resume")
	steps := flag.String("steps", "waitidle;send:hello;waitidle", "script")
	delay := flag.Duration("token-delay", 0, "provider per-token delay")
	debug := flag.Bool("debug", false, "ptyhost debug log")
	pastePause := flag.Duration("paste-pause", 0, "adapter paste→Enter pause (0: the adapter's default)")
	extra := flag.String("args", "", "extra CLI arguments, space separated")
	untrusted := flag.Bool("untrusted", false, "seed config without trusting the working directory")
	instructions := flag.String("instructions", "", "standing instructions (the agent's persona) for the CLI's instructions file")
	flag.Parse()
	if *out == "" || *bin == "" {
		return errors.New("-out and -bin are required")
	}
	if *home == "" {
		*home = filepath.Join(*out, "home")
	}
	if *workDir == "" {
		*workDir = filepath.Join(*out, "work")
	}
	for _, d := range []string{*out, *home, *workDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	prov, err := fakeprovider.Start(fakeprovider.Options{TokenDelay: *delay})
	if err != nil {
		return err
	}
	defer prov.Close()
	var a harness.Adapter
	env := map[string]string{}
	switch *name {
	case "claude":
		a = claude.New(claude.Options{Binary: *bin, PasteEnterPause: *pastePause})
		env["ANTHROPIC_BASE_URL"] = prov.URL()
		env["ANTHROPIC_API_KEY"] = "sk-ant-fake-0123456789abcdefghijklmnop"
		if *model == "" {
			*model = "claude-sonnet-4-5"
		}
	case "codex":
		a = codex.New(codex.Options{Binary: *bin, PasteEnterPause: *pastePause})
		env["OPENAI_BASE_URL"] = prov.URL() + "/v1"
		env["OPENAI_API_KEY"] = "sk-fake-0123456789abcdefghijklmnop"
		if *model == "" {
			*model = "gpt-5.1-codex"
		}
	case "gemini":
		a = gemini.New(gemini.Options{Binary: *bin, PasteEnterPause: *pastePause})
		env[gemini.BaseURLEnv] = prov.URL()
		env[gemini.APIKeyEnv] = "fake-gemini-key-0123456789"
		if *model == "" {
			*model = "gemini-2.5-pro"
		}
	case "opencode":
		a = opencode.New(opencode.Options{Binary: *bin, PasteEnterPause: *pastePause})
		env[opencode.BaseURLEnv] = prov.URL()
		env[opencode.APIKeyEnv] = "sk-ant-fake-0123456789abcdefghijklmnop"
		if *model == "" {
			*model = "claude-sonnet-4-5"
		}
	default:
		return fmt.Errorf("unknown harness %q", *name)
	}
	if *untrusted {
		a = untrustedAdapter{a}
	}
	reg, err := harness.NewRegistry(a)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	logf, err := os.Create(filepath.Join(*out, "ptyhost.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	h, err := ptyhost.New(ptyhost.Options{Registry: reg, Home: *home, WorkDir: *workDir,
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"},
		Logger:  slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: level}))})
	if err != nil {
		return err
	}
	defer h.Close()
	ctx := context.Background()
	t0 := time.Now()
	resp, err := h.Start(ctx, ptyapi.StartRequest{Harness: *name, Model: *model, Env: env, ResumeSession: *resume,
		WorkDir: *workDir, Args: strings.Fields(*extra), Instructions: *instructions})
	if err != nil {
		return err
	}
	fmt.Printf("started pid %d session %q resumed=%v\n", resp.PID, resp.SessionID, resp.Resumed)

	sf, err := os.Create(filepath.Join(*out, "screens.jsonl"))
	if err != nil {
		return err
	}
	defer sf.Close()
	enc := json.NewEncoder(sf)
	notes := make(chan string, 16)
	stop := make(chan struct{})
	snapDone := make(chan struct{})
	go func() {
		defer close(snapDone)
		var prev string
		note := ""
		for {
			select {
			case <-stop:
				return
			case n := <-notes:
				note += n
			case <-time.After(25 * time.Millisecond):
			}
			scr, err := h.RenderScreen(ctx)
			if err != nil {
				continue
			}
			st, _ := h.Status(ctx)
			cur := strings.Join(scr.Lines, "\n")
			if cur == prev && note == "" {
				continue
			}
			prev = cur
			_ = enc.Encode(snap{MS: time.Since(t0).Milliseconds(), Status: st.Status, Note: note, Lines: scr.Lines,
				CurX: scr.CursorX, CurY: scr.CursorY})
			note = ""
		}
	}()
	screen := func() string {
		scr, _ := h.RenderScreen(ctx)
		return strings.Join(scr.Lines, "\n")
	}
	for _, step := range strings.Split(*steps, ";") {
		verb, arg, _ := strings.Cut(step, ":")
		fmt.Printf("%6dms step %s\n", time.Since(t0).Milliseconds(), step)
		notes <- "step " + step + ";"
		switch verb {
		case "send":
			for _, c := range a.FormatMessage(arg) {
				if _, err := h.Write(c.Data); err != nil {
					return err
				}
				time.Sleep(c.Pause)
			}
		case "msg":
			if err := h.SendMessage(ctx, arg); err != nil {
				return err
			}
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return err
			}
			time.Sleep(d)
		case "tool":
			// tool:<Name>:<json input> — the next model calls (until their
			// history holds a tool result) answer with this tool call.
			tname, input, _ := strings.Cut(arg, ":")
			prov.SetToolCall(func(r fakeprovider.Request) *fakeprovider.ToolCall {
				for _, m := range r.Messages {
					if m.Role == "tool" {
						return nil
					}
				}
				return &fakeprovider.ToolCall{Name: tname, Input: json.RawMessage(input)}
			})
		case "delay":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return err
			}
			prov.SetTokenDelay(d)
		case "waitfor":
			re := regexp.MustCompile(arg)
			if err := poll(60*time.Second, func() bool { return re.MatchString(screen()) }); err != nil {
				fmt.Println(screen())
				return fmt.Errorf("waitfor %q: %w", arg, err)
			}
		case "waitidle":
			if err := poll(60*time.Second, func() bool {
				st, _ := h.Status(ctx)
				return st.Status == ptyapi.StatusIdle
			}); err != nil {
				fmt.Println(screen())
				return fmt.Errorf("waitidle: %w", err)
			}
		case "key":
			keys := map[string]string{"enter": "\r", "esc": "\x1b", "down": "\x1b[B", "up": "\x1b[A", "tab": "\t",
				"ctrl-c": "\x03", "1": "1", "2": "2", "y": "y", "f2": "\x1bOQ", "right": "\x1b[C"}
			if _, err := h.Write([]byte(keys[arg])); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown step %q", step)
		}
	}
	st, _ := h.Status(ctx)
	fmt.Printf("%6dms done; status %s session %q\n", time.Since(t0).Milliseconds(), st.Status, st.SessionID)
	fmt.Println(screen())
	close(stop)
	<-snapDone
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_ = h.Stop(sctx)
	reqs, _ := json.MarshalIndent(prov.Requests(), "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "requests.json"), reqs, 0o644); err != nil {
		return err
	}
	for i, r := range prov.Requests() {
		if err := os.WriteFile(filepath.Join(*out, fmt.Sprintf("body-%03d.json", i)), r.Body, 0o644); err != nil {
			return err
		}
		fmt.Printf("request %s %s %s model=%s stream=%v msgs=%d reply=%q\n", r.API, r.Op, r.Path, r.Model, r.Stream,
			len(r.Messages), trunc(r.Reply, 60))
	}
	return nil
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func poll(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("timed out")
}

// untrustedAdapter seeds the config as if no working directory were given, so
// the CLI shows its folder-trust dialog.
type untrustedAdapter struct{ harness.Adapter }

func (u untrustedAdapter) SeedFiles(req harness.LaunchRequest) ([]harness.SeedFile, error) {
	req.WorkDir = ""
	files, err := u.Adapter.SeedFiles(req)
	if err != nil || u.Name() != gemini.Name {
		return files, err
	}
	// Gemini's trust is a global switch, not a per-directory entry: turn it on.
	for i := range files {
		if files[i].Path == gemini.SettingsPath {
			files[i].Data = bytes.Replace(files[i].Data, []byte(`"folderTrust": {
      "enabled": false`), []byte(`"folderTrust": {
      "enabled": true`), 1)
			files[i].Merge = nil
		}
	}
	return files, nil
}
