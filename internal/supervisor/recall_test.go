package supervisor

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/recall/recallwire"
)

// The supervisor serves the recall API (its own checks answer, not the
// generic resource route's 404) with indexes under <data>/recall.
func TestRecallAPIIsServed(t *testing.T) {
	dir := t.TempDir()
	startSupervisor(t, Config{DataDir: dir})
	if fi, err := os.Stat(layout.Dir(dir).Recall()); err != nil || !fi.IsDir() {
		t.Fatalf("recall index dir: %v", err)
	}
	c := unixClient(layout.Dir(dir).Socket())
	for path, want := range map[string]int{
		recallwire.AgentPath("default", "ghost"):                          http.StatusNotFound,
		recallwire.AgentPath("default", "ghost", "Bad_Name", "documents"): http.StatusBadRequest,
	} {
		resp, err := c.Get("http://supervisor" + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d %s, want %d", path, resp.StatusCode, body, want)
		}
		if want == http.StatusNotFound && !strings.Contains(string(body), `agents.aicli.dev \"ghost\" not found`) {
			t.Errorf("%s: %s does not name the agent", path, body)
		}
	}
}
