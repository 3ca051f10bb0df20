//go:build realcli

package realcli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"aicli.dev/aicli/internal/fakeprovider"
)

// TestGeminiOneShotAgainstFakeProvider checks the fake's Gemini API against
// the real Gemini CLI 0.61.0 (installed with "install.sh gemini"): the
// structured-output routing side call and the streamed answer, one-shot (the
// interactive adapter runs in TestRealCLIs).
func TestGeminiOneShotAgainstFakeProvider(t *testing.T) {
	bin := binary(t, "gemini")
	prov, err := fakeprovider.Start(fakeprovider.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prov.Close() })
	home, work := t.TempDir(), t.TempDir()
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},
		"telemetry":{"enabled":false},"general":{"disableAutoUpdate":true,"disableUpdateNag":true},
		"privacy":{"usageStatisticsEnabled":false}}`
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "hello gemini")
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GEMINI_API_KEY=fake-key-0123456789",
		"GOOGLE_GEMINI_BASE_URL=" + prov.URL(), "GEMINI_CLI_NO_RELAUNCH=true"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gemini -p: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "echo: hello gemini") {
		t.Fatalf("reply missing from output:\n%s", out)
	}
	var streamed, side bool
	for _, r := range prov.Conversations() {
		switch {
		case r.Op == "streamGenerateContent" && r.LastUserText() == "hello gemini":
			streamed = true
		case r.Op == "generateContent" && len(r.JSONSchema) > 0:
			side = true
		}
	}
	if !streamed || !side {
		t.Fatalf("provider saw streamed=%v structured side call=%v: %+v", streamed, side, prov.Requests())
	}
}
