package console

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/console/state"
)

// A supervisor's bearer token stays in the console: no page or partial
// carries it (the supervisor here is down, so the pages show its error too).
func TestNoPageCarriesASupervisorToken(t *testing.T) {
	const token = "SECRET-TOKEN-4f1d9c"
	file := filepath.Join(t.TempDir(), "b.token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, addr := monitorSupervisor(t)
	c := newTestConsole(t, state.Supervisor{Name: "a", Server: addr},
		state.Supervisor{Name: "b", Server: "https://127.0.0.1:1", TokenFile: file})
	c.srv.Fleet.CheckAll(t.Context())
	for _, path := range []string{"/", "/settings", "/agents/new", "/manage", "/manage/status", "/manage/monitors",
		"/manage/monitors/new", "/manage/spend", "/manage/alerts", "/manage/describe/b/agents/default/x"} {
		_, body := c.get(path)
		if strings.Contains(body, token) {
			t.Errorf("%s carries the supervisor token", path)
		}
		if path == "/manage" && !strings.Contains(body, "127.0.0.1:1") {
			t.Errorf("/manage does not show the down supervisor b:\n%s", body)
		}
	}
}
