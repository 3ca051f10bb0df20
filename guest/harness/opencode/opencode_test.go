package opencode

import (
	"encoding/json"
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
		StartRequest: ptyapi.StartRequest{Harness: Name, Model: "claude-sonnet-4-5",
			Env: map[string]string{APIKeyEnv: "sk-ant-fake", BaseURLEnv: "http://127.0.0.1:9/"}}}
}

func TestSeedFilesFreshAndMerged(t *testing.T) {
	files, err := New(Options{}).SeedFiles(launchReq())
	if err != nil || len(files) != 1 || files[0].Path != ConfigPath || files[0].Mode != 0o600 {
		t.Fatalf("seed files %+v, %v", files, err)
	}
	check := func(b []byte) map[string]any {
		t.Helper()
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg["autoupdate"] != false || cfg["share"] != "disabled" || cfg["model"] != "aicli/claude-sonnet-4-5" {
			t.Errorf("config %v", cfg)
		}
		p := cfg["provider"].(map[string]any)[ProviderID].(map[string]any)
		opts := p["options"].(map[string]any)
		if p["npm"] != "@ai-sdk/anthropic" || opts["baseURL"] != "http://127.0.0.1:9/v1" ||
			opts["apiKey"] != "{env:ANTHROPIC_API_KEY}" {
			t.Errorf("provider %v", p)
		}
		if _, ok := p["models"].(map[string]any)["claude-sonnet-4-5"]; !ok {
			t.Errorf("model not declared: %v", p)
		}
		return cfg
	}
	cfg := check(files[0].Data)
	if strings.Contains(string(files[0].Data), "sk-ant-fake") {
		t.Error("the API key was written to disk")
	}
	existing := `{"theme":"tokyonight","provider":{"other":{"npm":"x"},"aicli":{"models":{"old-model":{}}}},"mcp":{"a":{}}}`
	merged, err := files[0].Merge([]byte(existing))
	if err != nil {
		t.Fatal(err)
	}
	cfg = check(merged)
	if cfg["theme"] != "tokyonight" || cfg["mcp"] == nil || cfg["provider"].(map[string]any)["other"] == nil {
		t.Errorf("user config lost: %v", cfg)
	}
	if _, ok := cfg["provider"].(map[string]any)[ProviderID].(map[string]any)["models"].(map[string]any)["old-model"]; !ok {
		t.Error("earlier model dropped")
	}
	if _, err := files[0].Merge([]byte("{broken")); err == nil {
		t.Error("a corrupt config merged silently")
	}
}

func TestLaunch(t *testing.T) {
	a := New(Options{Binary: "/opt/opencode"})
	req := launchReq()
	l, err := a.Launch(req)
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != "/opt/opencode" || len(l.Args) != 2 || l.Args[0] != "-m" || l.Args[1] != "aicli/claude-sonnet-4-5" ||
		l.SessionID != "" || l.Resumed {
		t.Fatalf("fresh launch %+v", l)
	}
	if l.Env["OPENCODE_DISABLE_AUTOUPDATE"] != "1" || l.Env["OPENCODE_DISABLE_MODELS_FETCH"] != "1" {
		t.Fatalf("env %v", l.Env)
	}
	req.ResumeSession = "ses_dc8c62f3dffe000xvS6tpyotXC"
	req.Model = "anthropic/claude-opus-4-6"
	l, _ = a.Launch(req)
	if !l.Resumed || l.SessionID != req.ResumeSession || l.Args[0] != "--session" || l.Args[1] != req.ResumeSession ||
		l.Args[3] != "anthropic/claude-opus-4-6" {
		t.Fatalf("resume launch %+v", l)
	}
	req.ResumeSession = "../x"
	if _, err := a.Launch(req); err == nil {
		t.Fatal("bad resume id accepted")
	}
}

func TestDiscoverSessionFromLog(t *testing.T) {
	a := New(Options{})
	home := t.TempDir()
	wd := "/tmp/i6g/capo2/work" // the directory of the captured log
	since := time.Date(2026, 12, 2, 14, 44, 0, 0, time.UTC)
	if _, ok, err := a.DiscoverSession(home, wd, since); ok || err != nil {
		t.Fatalf("discovered with no log: %v %v", ok, err)
	}
	b, err := os.ReadFile("testdata/logs/opencode.log")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(DataDir(home), "log")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "opencode.log")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := a.DiscoverSession(home, wd, since); !ok || err != nil || got != "ses_dc8c62f3dffe000xvS6tpyotXC" {
		t.Fatalf("DiscoverSession = %q %v %v", got, ok, err)
	}
	if _, ok, _ := a.DiscoverSession(home, "/elsewhere", since); ok {
		t.Fatal("a session of another directory was discovered")
	}
	if _, ok, _ := a.DiscoverSession(home, wd, since.Add(time.Hour)); ok {
		t.Fatal("a session created before since was discovered")
	}
	if f, err := a.SessionFile(home, wd, "ses_dc8c62f3dffe000xvS6tpyotXC"); err != nil || f != DBPath(home) {
		t.Fatalf("SessionFile = %q %v", f, err)
	}
}

func TestLogFields(t *testing.T) {
	f := logFields(`timestamp=2026-12-02T14:44:46.207Z level=INFO message=created id=ses_x title="New session - a \"b\"" directory=/w`)
	if f["message"] != "created" || f["id"] != "ses_x" || f["title"] != `New session - a "b"` || f["directory"] != "/w" {
		t.Fatalf("fields %q", f)
	}
}

func TestProviderEnv(t *testing.T) {
	var m harness.ProviderEnvMapper = New(Options{})
	for _, base := range []string{"http://127.0.0.1:7", "http://127.0.0.1:7/v1/"} {
		env := m.ProviderEnv(ptyapi.ProviderAccess{BaseURL: base, APIKey: "k"})
		if env[BaseURLEnv] != "http://127.0.0.1:7" || env[APIKeyEnv] != "k" {
			t.Errorf("ProviderEnv(%s) = %v", base, env)
		}
	}
}
