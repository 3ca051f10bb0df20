package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

const testKey = "sk-ant-fake-0123456789abcdefghijklmnop"

func launchReq() harness.LaunchRequest {
	return harness.LaunchRequest{Home: "/home/agent", WorkDir: "/workspace",
		StartRequest: ptyapi.StartRequest{Harness: Name, Model: "claude-opus-4-6",
			Env: map[string]string{APIKeyEnv: testKey, "ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}}}
}

func TestSeedFilesFreshAndMerged(t *testing.T) {
	files, err := New(Options{}).SeedFiles(launchReq())
	if err != nil || len(files) != 1 || files[0].Path != ".claude.json" || files[0].Mode != 0o600 {
		t.Fatalf("seed files %+v, %v", files, err)
	}
	check := func(b []byte) map[string]any {
		t.Helper()
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg["hasCompletedOnboarding"] != true || cfg["lastOnboardingVersion"] != Version {
			t.Errorf("onboarding not done: %v", cfg)
		}
		approved := cfg["customApiKeyResponses"].(map[string]any)["approved"].([]any)
		if !slices.Contains(approved, any(testKey[len(testKey)-20:])) {
			t.Errorf("key suffix not approved: %v", approved)
		}
		p := cfg["projects"].(map[string]any)["/workspace"].(map[string]any)
		if p["hasTrustDialogAccepted"] != true {
			t.Errorf("workdir not trusted: %v", p)
		}
		return cfg
	}
	check(files[0].Data)
	// The CLI has written its own state since; a rejected key and another project.
	existing := `{"numStartups":7,"theme":"light","customApiKeyResponses":{"approved":[],"rejected":["` +
		testKey[len(testKey)-20:] + `"]},"projects":{"/other":{"hasTrustDialogAccepted":false},
		"/workspace":{"allowedTools":["Bash"],"lastCost":1.5}}}`
	merged, err := files[0].Merge([]byte(existing))
	if err != nil {
		t.Fatal(err)
	}
	cfg := check(merged)
	if cfg["numStartups"] != float64(7) || cfg["theme"] != "light" {
		t.Errorf("CLI state lost: %v", cfg)
	}
	if rej := cfg["customApiKeyResponses"].(map[string]any)["rejected"].([]any); len(rej) != 0 {
		t.Errorf("key still rejected: %v", rej)
	}
	ws := cfg["projects"].(map[string]any)["/workspace"].(map[string]any)
	if ws["lastCost"] != 1.5 || len(ws["allowedTools"].([]any)) != 1 {
		t.Errorf("project state lost: %v", ws)
	}
	if _, ok := cfg["projects"].(map[string]any)["/other"]; !ok {
		t.Error("other project dropped")
	}
	if _, err := files[0].Merge([]byte("{broken")); err == nil {
		t.Error("a corrupt config merged silently")
	}
}

func TestLaunch(t *testing.T) {
	a := New(Options{Binary: "/opt/claude"})
	req := launchReq()
	l, err := a.Launch(req)
	if err != nil {
		t.Fatal(err)
	}
	if l.Path != "/opt/claude" || len(l.Args) != 4 || l.Args[0] != "--model" || l.Args[1] != "claude-opus-4-6" ||
		l.Args[2] != "--session-id" || l.Args[3] != l.SessionID || l.SessionID == "" || l.Resumed {
		t.Fatalf("fresh launch %+v", l)
	}
	if l.Env["DISABLE_AUTOUPDATER"] != "1" || l.Env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] != "1" {
		t.Fatalf("env %v", l.Env)
	}
	req.SessionID = "0b6e1d1e-4c1f-4a51-8f7e-9d2b8f0c1a2b"
	req.Args = []string{"--verbose"}
	l, _ = a.Launch(req)
	if l.SessionID != req.SessionID || l.Args[3] != req.SessionID || l.Args[4] != "--verbose" {
		t.Fatalf("pre-assigned launch %+v", l)
	}
	req.ResumeSession = req.SessionID
	l, _ = a.Launch(req)
	if !l.Resumed || l.Args[2] != "--resume" || l.Args[3] != req.ResumeSession {
		t.Fatalf("resume launch %+v", l)
	}
	req.ResumeSession = "not-a-uuid"
	if _, err := a.Launch(req); err == nil {
		t.Fatal("bad resume id accepted")
	}
}

func TestSessionStore(t *testing.T) {
	a := New(Options{})
	if got := ProjectDirName("/tmp/cap-claude2/work"); got != "-tmp-cap-claude2-work" {
		t.Fatalf("ProjectDirName = %q (observed: -tmp-cap-claude2-work)", got)
	}
	home, wd := t.TempDir(), "/workspace"
	id := "66044a97-0ede-417d-8a9d-6ef6558bfd6d"
	p, err := a.SessionFile(home, wd, id)
	if err != nil || p != filepath.Join(home, ".claude/projects/-workspace", id+".jsonl") {
		t.Fatalf("SessionFile = %q, %v", p, err)
	}
	since := time.Now().Add(-time.Second)
	if _, ok, err := a.DiscoverSession(home, wd, since); ok || err != nil {
		t.Fatalf("discovered in an empty store: %v %v", ok, err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := a.DiscoverSession(home, wd, since); !ok || err != nil || got != id {
		t.Fatalf("DiscoverSession = %q %v %v", got, ok, err)
	}
	if _, ok, _ := a.DiscoverSession(home, wd, time.Now().Add(time.Hour)); ok {
		t.Fatal("a session older than since was discovered")
	}
	if _, err := a.SessionFile(home, wd, "../x"); err == nil {
		t.Fatal("path-like session id accepted")
	}
}

func TestFormatMessageIsBracketedPaste(t *testing.T) {
	cs := New(Options{}).FormatMessage("hi\x1b[201~\rrm")
	if len(cs) != 2 || string(cs[0].Data) != "\x1b[200~hi\nrm\x1b[201~" || string(cs[1].Data) != "\r" || cs[0].Pause <= 0 {
		t.Fatalf("chunks %q", cs)
	}
}

func TestSeedFilesPreApproveGrantedTools(t *testing.T) {
	req := launchReq()
	req.Tools = []string{"greet", "search"}
	files, err := New(Options{}).SeedFiles(req)
	if err != nil || len(files) != 2 || files[1].Path != ".claude/settings.json" {
		t.Fatalf("seed files %+v, %v", files, err)
	}
	merged, err := files[1].Merge([]byte(`{"model":"x","permissions":{"allow":["Bash(ls *)","Bash(greet)"],"deny":["Read(./.env)"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(merged, &cfg); err != nil {
		t.Fatal(err)
	}
	perms := cfg["permissions"].(map[string]any)
	got := stringList(perms["allow"])
	want := []string{"Bash(ls *)", "Bash(greet)", "Bash(greet *)", "Bash(search)", "Bash(search *)"}
	if !slices.Equal(got, want) || cfg["model"] != "x" || len(stringList(perms["deny"])) != 1 {
		t.Fatalf("settings %v", cfg)
	}
	if files, _ := New(Options{}).SeedFiles(launchReq()); len(files) != 1 {
		t.Fatalf("without tools: %d seed files", len(files))
	}
}
