package gemini

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

func launchReq() harness.LaunchRequest {
	return harness.LaunchRequest{Home: "/home/agent", WorkDir: "/workspace",
		StartRequest: ptyapi.StartRequest{Harness: Name, Model: "gemini-2.5-pro",
			Env: map[string]string{APIKeyEnv: "fake-key", BaseURLEnv: "http://127.0.0.1:1"}}}
}

func TestSeedFilesFreshAndMerged(t *testing.T) {
	files, err := New(Options{}).SeedFiles(launchReq())
	if err != nil || len(files) != 1 || files[0].Path != SettingsPath || files[0].Mode != 0o600 {
		t.Fatalf("seed files %+v, %v", files, err)
	}
	check := func(b []byte) map[string]any {
		t.Helper()
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		sec := cfg["security"].(map[string]any)
		if sec["auth"].(map[string]any)["selectedType"] != "gemini-api-key" ||
			sec["folderTrust"].(map[string]any)["enabled"] != false {
			t.Errorf("auth/trust not seeded: %v", sec)
		}
		if cfg["telemetry"].(map[string]any)["enabled"] != false ||
			cfg["general"].(map[string]any)["disableAutoUpdate"] != true ||
			cfg["privacy"].(map[string]any)["usageStatisticsEnabled"] != false {
			t.Errorf("telemetry/update/statistics not off: %v", cfg)
		}
		return cfg
	}
	check(files[0].Data)
	existing := `{"ui":{"theme":"Dracula"},"security":{"auth":{"selectedType":"oauth-personal"},"x":1},"telemetry":true}`
	merged, err := files[0].Merge([]byte(existing))
	if err != nil {
		t.Fatal(err)
	}
	cfg := check(merged)
	if cfg["ui"].(map[string]any)["theme"] != "Dracula" || cfg["security"].(map[string]any)["x"] != float64(1) {
		t.Errorf("user settings lost: %v", cfg)
	}
	if _, err := files[0].Merge([]byte("{broken")); err == nil {
		t.Error("a corrupt settings file merged silently")
	}
}

func TestLaunch(t *testing.T) {
	a := New(Options{Binary: "/opt/gemini"})
	req := launchReq()
	l, err := a.Launch(req)
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != "/opt/gemini" || len(l.Args) != 4 || l.Args[0] != "-m" || l.Args[1] != "gemini-2.5-pro" ||
		l.Args[2] != "--session-id" || l.Args[3] != l.SessionID || l.SessionID == "" || l.Resumed {
		t.Fatalf("fresh launch %+v", l)
	}
	if l.Env["GEMINI_CLI_NO_RELAUNCH"] != "true" {
		t.Fatalf("env %v", l.Env)
	}
	req.SessionID = "0b6e1d1e-4c1f-4a51-8f7e-9d2b8f0c1a2b"
	req.Args = []string{"--debug"}
	l, _ = a.Launch(req)
	if l.SessionID != req.SessionID || l.Args[3] != req.SessionID || l.Args[4] != "--debug" {
		t.Fatalf("pre-assigned launch %+v", l)
	}
	req.ResumeSession = req.SessionID
	l, _ = a.Launch(req)
	if !l.Resumed || l.Args[2] != "--resume" || l.Args[3] != req.ResumeSession {
		t.Fatalf("resume launch %+v", l)
	}
	req.ResumeSession = "latest"
	if _, err := a.Launch(req); err == nil {
		t.Fatal("non-uuid resume accepted")
	}
}

func TestSessionStore(t *testing.T) {
	a := New(Options{})
	home, wd := t.TempDir(), "/work/proj"
	id := "f1be27db-0cb1-4a25-a378-a92bb4db3613"
	// Before the CLI wrote anything: the base name, a path that does not exist.
	if got := ProjectName(home, wd); got != "proj" {
		t.Fatalf("ProjectName = %q", got)
	}
	// Unwritten: the name Gemini gives a chat started in the current minute.
	p, err := a.sessionFileAt(home, wd, id, time.Date(2026, 12, 2, 14, 42, 57, 0, time.UTC))
	if err != nil || p != filepath.Join(home, ".gemini/tmp/proj/chats/session-2026-12-02T14-42-f1be27db.jsonl") {
		t.Fatalf("SessionFile of an unwritten session = %q, %v", p, err)
	}
	since := time.Now().Add(-time.Second)
	if _, ok, err := a.DiscoverSession(home, wd, since); ok || err != nil {
		t.Fatalf("discovered in an empty store: %v %v", ok, err)
	}
	// The CLI's registry names the project "proj-1" (a name clash), as Gemini does.
	reg := `{"projects":{"/work/proj":"proj-1"}}`
	chats := filepath.Join(home, ".gemini", "tmp", "proj-1", "chats")
	if err := os.MkdirAll(chats, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "projects.json"), []byte(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	copyFile(t, "testdata/sessions/two-turns-resumed.jsonl", filepath.Join(chats, "session-2026-12-02T14-42-f1be27db.jsonl"))
	copyFile(t, "testdata/sessions/resume-stub.jsonl", filepath.Join(chats, "session-2026-12-02T14-43-f1be27db.jsonl"))
	// Another session whose id shares the 8-character prefix must not match.
	other := `{"sessionId":"f1be27db-0000-4000-8000-000000000000","kind":"main"}` + "\n"
	if err := os.WriteFile(filepath.Join(chats, "session-2026-12-02T15-00-f1be27db.jsonl"), bytes.Repeat([]byte(other), 80), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err = a.SessionFile(home, wd, id)
	if err != nil || filepath.Base(p) != "session-2026-12-02T14-42-f1be27db.jsonl" {
		t.Fatalf("SessionFile = %q, %v; want the file with the conversation", p, err)
	}
	if got, ok, err := a.DiscoverSession(home, wd, since); !ok || err != nil || got == "" {
		t.Fatalf("DiscoverSession = %q %v %v", got, ok, err)
	}
	if _, ok, _ := a.DiscoverSession(home, wd, time.Now().Add(time.Hour)); ok {
		t.Fatal("a session older than since was discovered")
	}
	if _, err := a.SessionFile(home, wd, "../x"); err == nil {
		t.Fatal("path-like session id accepted")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFormatMessageIsBracketedPaste(t *testing.T) {
	cs := New(Options{}).FormatMessage("hi\x1b[201~\rrm")
	if len(cs) != 2 || string(cs[0].Data) != "\x1b[200~hi\nrm\x1b[201~" || string(cs[1].Data) != "\r" ||
		cs[0].Pause < 100*time.Millisecond {
		t.Fatalf("chunks %q", cs)
	}
}

func TestProviderEnv(t *testing.T) {
	var m harness.ProviderEnvMapper = New(Options{})
	for _, base := range []string{"http://127.0.0.1:7/", "http://127.0.0.1:7/v1beta", "http://127.0.0.1:7/v1"} {
		env := m.ProviderEnv(ptyapi.ProviderAccess{BaseURL: base, APIKey: "k"})
		if env[BaseURLEnv] != "http://127.0.0.1:7" || env[APIKeyEnv] != "k" {
			t.Errorf("ProviderEnv(%s) = %v", base, env)
		}
	}
}
