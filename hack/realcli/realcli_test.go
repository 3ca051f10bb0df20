//go:build realcli

package realcli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
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

// cliSpec is what differs between the CLIs in the scenario.
type cliSpec struct {
	name    string
	adapter func(bin string) harness.Adapter
	env     func(url string) map[string]string
	model   string
	// follow, when set, follows the transcript itself (the guest's line
	// follower cannot read the CLI's store).
	follow func(ctx context.Context, se *session, home string)
	// resumeReady, when set, is text that must be on screen after a native
	// resume before a message is sent (the CLI drops input typed before its
	// history replay).
	resumeReady string
}

var specs = []cliSpec{
	{
		name:    claude.Name,
		adapter: func(bin string) harness.Adapter { return claude.New(claude.Options{Binary: bin}) },
		env: func(url string) map[string]string {
			return map[string]string{"ANTHROPIC_BASE_URL": url, claude.APIKeyEnv: "sk-ant-fake-0123456789abcdefghijklmnop"}
		},
		model: "claude-opus-4-6",
	},
	{
		name: codex.Name,
		adapter: func(bin string) harness.Adapter {
			// AICLI_CODEX_PASTE_PAUSE overrides the paste→Enter pause (to measure the minimum).
			d, _ := time.ParseDuration(os.Getenv("AICLI_CODEX_PASTE_PAUSE"))
			return codex.New(codex.Options{Binary: bin, PasteEnterPause: d})
		},
		env: func(url string) map[string]string {
			return map[string]string{codex.BaseURLEnv: url + "/v1", codex.APIKeyEnv: "sk-fake-0123456789abcdefghijklmnop"}
		},
		model: "gpt-5.1-codex",
	},
	{
		name: gemini.Name,
		adapter: func(bin string) harness.Adapter {
			// AICLI_GEMINI_PASTE_PAUSE overrides the paste→Enter pause (to measure the minimum).
			d, _ := time.ParseDuration(os.Getenv("AICLI_GEMINI_PASTE_PAUSE"))
			return gemini.New(gemini.Options{Binary: bin, PasteEnterPause: d})
		},
		env: func(url string) map[string]string {
			return map[string]string{gemini.BaseURLEnv: url, gemini.APIKeyEnv: "fake-gemini-key-0123456789"}
		},
		model:       "gemini-2.5-pro",
		resumeReady: "echo: line one of three",
	},
	{
		name:    opencode.Name,
		adapter: func(bin string) harness.Adapter { return opencode.New(opencode.Options{Binary: bin}) },
		env: func(url string) map[string]string {
			return map[string]string{opencode.BaseURLEnv: url, opencode.APIKeyEnv: "sk-ant-fake-0123456789abcdefghijklmnop"}
		},
		model:       "claude-sonnet-4-5",
		follow:      followOpenCode,
		resumeReady: "echo: line one of three",
	},
}

// binary finds the installed CLI; a missing one fails the test (this tier
// exists to run them).
func binary(t *testing.T, name string) string {
	t.Helper()
	if p := os.Getenv("AICLI_" + strings.ToUpper(name) + "_BIN"); p != "" {
		return p
	}
	out, err := exec.Command("./bin.sh", name).Output()
	if err != nil {
		t.Fatalf("%s CLI not installed (run hack/realcli/install.sh or set AICLI_%s_BIN): %v",
			name, strings.ToUpper(name), err)
	}
	return strings.TrimSpace(string(out))
}

// session is one CLI run under a PTY host, with its transcript followed.
type session struct {
	t    *testing.T
	h    *ptyhost.Host
	resp ptyapi.StartResponse

	mu      sync.Mutex
	entries []ptyapi.TranscriptEntry
}

func startCLI(t *testing.T, s cliSpec, bin, home, work, url, resume string) *session {
	t.Helper()
	reg, err := harness.NewRegistry(s.adapter(bin))
	if err != nil {
		t.Fatal(err)
	}
	h, err := ptyhost.New(ptyhost.Options{Registry: reg, Home: home, WorkDir: work,
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	se := &session{t: t, h: h}
	t.Cleanup(func() {
		cancel()
		sctx, c := context.WithTimeout(context.Background(), 10*time.Second)
		defer c()
		_ = h.Stop(sctx)
		_ = h.Close()
	})
	se.resp, err = h.Start(ctx, ptyapi.StartRequest{Harness: s.name, Model: s.model, Env: s.env(url),
		ResumeSession: resume, WorkDir: work})
	if err != nil {
		t.Fatal(err)
	}
	if s.follow != nil {
		go s.follow(ctx, se, home)
		return se
	}
	go func() {
		_ = h.FollowTranscript(ctx, func(e ptyapi.TranscriptEntry) error {
			se.mu.Lock()
			se.entries = append(se.entries, e)
			se.mu.Unlock()
			return nil
		})
	}()
	return se
}

func (se *session) status() ptyapi.StatusInfo {
	st, err := se.h.Status(context.Background())
	if err != nil {
		se.t.Fatal(err)
	}
	return st
}

func (se *session) screen() string {
	s, _ := se.h.RenderScreen(context.Background())
	return strings.Join(s.Lines, "\n")
}

func (se *session) hasEntry(role, text string) bool {
	se.mu.Lock()
	defer se.mu.Unlock()
	for _, e := range se.entries {
		if e.Role == role && e.Text == text {
			return true
		}
	}
	return false
}

func (se *session) waitFor(what string, d time.Duration, cond func() bool) {
	se.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			se.t.Fatalf("timed out waiting for %s; status %+v; screen:\n%s", what, se.status(), se.screen())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// turn sends text and returns the latency until the reply is in the
// transcript and the CLI is IDLE. While the reply is streaming onto the screen
// (its beginning is visible, its end is not), IDLE must not be reported.
//
// Before that, right after Enter, a CLI may send its request before it redraws
// (Claude does): the screen still shows the typed text and no spinner for a
// few milliseconds. No screen classifier can tell that apart from text typed
// and left there; the guest's delivery logic and the transcript cover it.
func (se *session) turn(text string) time.Duration {
	se.t.Helper()
	reply := "echo: " + text
	words := strings.Fields(text)
	head := "echo: " + strings.Join(words[:min(2, len(words))], " ")
	t0 := time.Now()
	if err := se.h.SendMessage(context.Background(), text); err != nil {
		se.t.Fatal(err)
	}
	se.waitFor("reply "+reply, 90*time.Second, func() bool {
		st := se.status().Status
		if st == ptyapi.StatusIdle {
			scr := se.screen()
			if strings.Contains(scr, head) && !strings.Contains(scr, reply) {
				// Re-check against a fresh render: the reply may have landed in between.
				if scr = se.screen(); !strings.Contains(scr, reply) && se.status().Status == ptyapi.StatusIdle {
					se.t.Fatalf("IDLE reported while the reply %q is streaming:\n%s", reply, scr)
				}
			}
		}
		return se.hasEntry(ptyapi.RoleAssistant, reply) && se.hasEntry(ptyapi.RoleUser, text) && st == ptyapi.StatusIdle
	})
	return time.Since(t0)
}

func TestRealCLIs(t *testing.T) {
	for _, s := range specs {
		t.Run(s.name, func(t *testing.T) {
			bin := binary(t, s.name)
			prov, err := fakeprovider.Start(fakeprovider.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = prov.Close() })
			home, work := t.TempDir(), t.TempDir()

			t0 := time.Now()
			se := startCLI(t, s, bin, home, work, prov.URL(), "")
			se.waitFor("first IDLE", 60*time.Second, func() bool { return se.status().Status == ptyapi.StatusIdle })
			t.Logf("%s: start → IDLE %v", s.name, time.Since(t0).Round(time.Millisecond))

			var lat []time.Duration
			for i := 0; i < 5; i++ {
				lat = append(lat, se.turn(fmt.Sprintf("turn %d says hello", i)))
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			t.Logf("%s: turn latency (send → reply in transcript → IDLE) p50 %v min %v max %v", s.name,
				lat[len(lat)/2].Round(time.Millisecond), lat[0].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))

			// A slow stream: IDLE must not show while tokens still arrive.
			prov.SetTokenDelay(120 * time.Millisecond)
			slow := se.turn("stream this reply slowly word by word so that it takes a while")
			t.Logf("%s: slow-stream turn %v", s.name, slow.Round(time.Millisecond))
			prov.SetTokenDelay(0)

			// A message sent while the CLI is BUSY is queued and delivered at IDLE.
			prov.SetTokenDelay(80 * time.Millisecond)
			if err := se.h.SendMessage(context.Background(), "first of two queued"); err != nil {
				t.Fatal(err)
			}
			se.waitFor("BUSY on the first", 30*time.Second, func() bool { return se.status().Status == ptyapi.StatusBusy })
			if err := se.h.SendMessage(context.Background(), "second of two queued"); err != nil {
				t.Fatalf("send while BUSY: %v", err)
			}
			se.waitFor("both queued replies", 60*time.Second, func() bool {
				return se.hasEntry(ptyapi.RoleAssistant, "echo: first of two queued") &&
					se.hasEntry(ptyapi.RoleAssistant, "echo: second of two queued") &&
					se.status().Status == ptyapi.StatusIdle
			})
			prov.SetTokenDelay(0)
			var second fakeprovider.Request
			for _, r := range prov.Conversations() {
				if r.LastUserText() == "second of two queued" {
					second = r
				}
			}
			if !second.HasText("echo: first of two queued") {
				t.Fatalf("the queued message was not a turn of its own after the first reply: %+v", second.Messages)
			}

			// A multi-line message arrives whole as one user turn.
			multi := "line one of three\nline two\nline three"
			if err := se.h.SendMessage(context.Background(), multi); err != nil {
				t.Fatal(err)
			}
			se.waitFor("multi-line turn", 60*time.Second, func() bool {
				return se.hasEntry(ptyapi.RoleUser, multi) && se.hasEntry(ptyapi.RoleAssistant, "echo: "+multi) &&
					se.status().Status == ptyapi.StatusIdle
			})

			se.waitFor("session id", 30*time.Second, func() bool { return se.status().SessionID != "" })
			sid := se.status().SessionID
			sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := se.h.Stop(sctx); err != nil {
				t.Fatalf("stop: %v", err)
			}

			// Native resume: the provider must see the earlier turns.
			re := startCLI(t, s, bin, home, work, prov.URL(), sid)
			if !re.resp.Resumed || re.resp.SessionID != sid {
				t.Fatalf("resume start %+v", re.resp)
			}
			re.waitFor("IDLE after resume", 60*time.Second, func() bool { return re.status().Status == ptyapi.StatusIdle })
			if s.resumeReady != "" {
				re.waitFor("resumed history on screen", 60*time.Second, func() bool {
					return strings.Contains(re.screen(), s.resumeReady) && re.status().Status == ptyapi.StatusIdle
				})
			}
			n := len(prov.Conversations())
			re.turn("after resume")
			var last fakeprovider.Request
			for _, r := range prov.Conversations()[n:] {
				if r.LastUserText() == "after resume" {
					last = r
				}
			}
			if !last.HasText("turn 0 says hello") || !last.HasText("echo: turn 4 says hello") {
				t.Fatalf("resumed request lacks the earlier turns: %+v", last.Messages)
			}
			// The resumed transcript starts from the session's beginning.
			re.waitFor("earlier turns in the resumed transcript", 10*time.Second, func() bool {
				return re.hasEntry(ptyapi.RoleUser, "turn 0 says hello")
			})
			if filepath.IsAbs(home) && s.name == codex.Name {
				if _, err := os.Stat(filepath.Join(home, ".codex", "config.toml")); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
