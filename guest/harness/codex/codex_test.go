package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

func launchReq() harness.LaunchRequest {
	return harness.LaunchRequest{Home: "/home/agent", WorkDir: "/workspace",
		StartRequest: ptyapi.StartRequest{Harness: Name, Model: "gpt-5.1-codex",
			Env: map[string]string{BaseURLEnv: "http://127.0.0.1:4000/v1/", APIKeyEnv: "sk-fake"}}}
}

func TestSeedConfigFresh(t *testing.T) {
	files, err := New(Options{}).SeedFiles(launchReq())
	if err != nil || len(files) != 1 || files[0].Path != ConfigPath {
		t.Fatalf("%+v %v", files, err)
	}
	got := string(files[0].Data)
	for _, want := range []string{
		`model = "gpt-5.1-codex"`,
		`model_provider = "aicli"`,
		"check_for_update_on_startup = false",
		"[model_providers.aicli]\nname = \"aicli\"\nbase_url = \"http://127.0.0.1:4000/v1\"\nenv_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"",
		"[projects.\"/workspace\"]\ntrust_level = \"trusted\"",
		"[features]\ndaemon_auto_start = false",
		"[tui]\nscreen_reader_detection_done = true",
		"[notice.model_migrations]\n\"gpt-5.1-codex\" = \"gpt-5.1-codex\"",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	// Without a base URL the provider is left to Codex's defaults.
	req := launchReq()
	delete(req.Env, BaseURLEnv)
	files, _ = New(Options{}).SeedFiles(req)
	if strings.Contains(string(files[0].Data), "model_provider") {
		t.Errorf("provider seeded without a base URL:\n%s", files[0].Data)
	}
}

// What Codex 0.171.0 itself wrote to the seeded file during a capture run.
const codexWritten = `model = "old-model"
model_provider = "aicli"

[model_providers.aicli]
name = "aicli"
base_url = "http://127.0.0.1:9/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"

[projects."/workspace"]
trust_level = "trusted"

[features]
daemon_auto_start = false

[tui]
screen_reader_detection_done = true

[tui.model_availability_nux]
"gpt-6.1-sol" = 1

[analytics]
enabled = false

[mcp_servers.docs]
command = "docs-mcp"
args = [
  "--port",
  "1",
]
`

func TestSeedConfigMergeKeepsCLIState(t *testing.T) {
	files, _ := New(Options{}).SeedFiles(launchReq())
	merged, err := files[0].Merge([]byte(codexWritten))
	if err != nil {
		t.Fatal(err)
	}
	got := string(merged)
	for _, want := range []string{
		`model = "gpt-5.1-codex"`,
		`base_url = "http://127.0.0.1:4000/v1"`,
		"[tui.model_availability_nux]\n\"gpt-6.1-sol\" = 1",
		"[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [\n  \"--port\",\n  \"1\",\n]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("merged config lacks %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"old-model", "127.0.0.1:9"} {
		if strings.Contains(got, gone) {
			t.Errorf("stale %q kept:\n%s", gone, got)
		}
	}
	for _, h := range []string{"[features]", "[tui]", "[model_providers.aicli]", `[projects."/workspace"]`} {
		if n := strings.Count(got, h+"\n"); n != 1 {
			t.Errorf("table %s appears %d times (TOML forbids duplicates):\n%s", h, n, got)
		}
	}
	// Merging again changes nothing.
	again, _ := files[0].Merge(merged)
	if string(again) != got {
		t.Errorf("merge not idempotent:\n%s\n---\n%s", got, again)
	}
}

func TestLaunch(t *testing.T) {
	a := New(Options{Binary: "/opt/codex"})
	req := launchReq()
	l, err := a.Launch(req)
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != "/opt/codex" || strings.Join(l.Args, " ") != "-m gpt-5.1-codex" || l.SessionID != "" || l.Resumed {
		t.Fatalf("fresh launch %+v", l)
	}
	if l.Env["CODEX_HOME"] != "/home/agent/.codex" {
		t.Fatalf("env %v", l.Env)
	}
	req.ResumeSession = "01a2371a-38ad-7092-a739-65e5f6d07f52"
	req.Args = []string{"--no-alt-screen"}
	l, _ = a.Launch(req)
	if strings.Join(l.Args, " ") != "resume "+req.ResumeSession+" -m gpt-5.1-codex --no-alt-screen" ||
		!l.Resumed || l.SessionID != req.ResumeSession {
		t.Fatalf("resume launch %+v", l)
	}
	req.ResumeSession = "x; rm"
	if _, err := a.Launch(req); err == nil {
		t.Fatal("bad resume id accepted")
	}
	if a.Capabilities().PreassignSessionID {
		t.Fatal("codex cannot pre-assign ids")
	}
	cs := a.FormatMessage("hi")
	if len(cs) != 2 || cs[0].Pause < 400*time.Millisecond {
		t.Fatalf("paste→Enter pause %v, Codex needs ≈0.5s", cs[0].Pause)
	}
}

func writeRollout(t *testing.T, home, day, id, cwd string, mt time.Time) string {
	t.Helper()
	dir := filepath.Join(home, ".codex", "sessions", day)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rollout-2026-12-02T14-13-15-"+id+".jsonl")
	meta := `{"timestamp":"2026-12-02T14:13:15.215Z","type":"session_meta","payload":{"id":"` + id + `","cwd":"` + cwd + `"}}` + "\n"
	if err := os.WriteFile(p, []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDiscoverSessionAndSessionFile(t *testing.T) {
	a := New(Options{})
	home := t.TempDir()
	since := time.Now().Add(-time.Minute)
	if _, ok, err := a.DiscoverSession(home, "/workspace", since); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	old := writeRollout(t, home, "2026/12/01", "01a2371a-0000-7000-8000-000000000001", "/workspace",
		time.Now().Add(-time.Hour))
	other := writeRollout(t, home, "2026/12/02", "01a2371a-0000-7000-8000-000000000002", "/elsewhere", time.Now())
	want := writeRollout(t, home, "2026/12/02", "01a2371a-0000-7000-8000-000000000003", "/workspace",
		time.Now().Add(-time.Second))
	_ = other
	id, ok, err := a.DiscoverSession(home, "/workspace", since)
	if err != nil || !ok || id != "01a2371a-0000-7000-8000-000000000003" {
		t.Fatalf("DiscoverSession = %q %v %v (older one and another cwd must not match)", id, ok, err)
	}
	p, err := a.SessionFile(home, "/workspace", id)
	if err != nil || p != want {
		t.Fatalf("SessionFile = %q %v", p, err)
	}
	p, err = a.SessionFile(home, "", "01a2371a-0000-7000-8000-000000000001")
	if err != nil || p != old {
		t.Fatalf("SessionFile(old) = %q %v", p, err)
	}
	if _, err := a.SessionFile(home, "", "01a2371a-0000-7000-8000-00000000000f"); err == nil {
		t.Fatal("missing session found")
	}
	if id, ok := SessionIDFromPath(want); !ok || id != "01a2371a-0000-7000-8000-000000000003" {
		t.Fatalf("SessionIDFromPath = %q %v", id, ok)
	}
}
