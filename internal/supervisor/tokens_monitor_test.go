package supervisor

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/apiserver"
)

// A token minted with monitors carries them to its principal: the monitor
// agents its holder (a remote monitor's home supervisor) may speak as.
func TestTokenMonitorsReachThePrincipal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	raw, err := CreateToken(file, apiserver.Token{Name: "supervisor-a", Namespaces: []string{"default"}, Role: "view", Monitors: []string{"watcher", "auditor"}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := CreateToken(file, apiserver.Token{Name: "tenant", Namespaces: []string{"default"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateToken(file, apiserver.Token{Name: "bad", Namespaces: []string{"default"}, Monitors: []string{"Not_A_Label"}}); err == nil ||
		!strings.Contains(err.Error(), `monitors[0] "Not_A_Label"`) {
		t.Fatalf("a monitor name that is no DNS-1123 label: %v", err)
	}
	tf, err := apiserver.LoadTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	authn := apiserver.NewTokenAuthenticator(tf)
	for _, c := range []struct {
		raw  string
		want []string
	}{{raw, []string{"watcher", "auditor"}}, {plain, nil}} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+c.raw)
		p, err := authn.Authenticate(r)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Monitors, c.want) || (len(c.want) > 0 && (!p.MaySpeakAs("watcher") || p.MaySpeakAs("coder"))) {
			t.Errorf("principal %q: monitors %q, want %q", p.Name, p.Monitors, c.want)
		}
	}

	// A hand-edited file with a bad monitor name is refused when loaded.
	if err := os.WriteFile(file, []byte("tokens:\n- name: x\n  sha256: "+strings.Repeat("a", 64)+
		"\n  namespaces: [default]\n  monitors: [\"a b\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := apiserver.LoadTokens(file); err == nil || !strings.Contains(err.Error(), "tokens[0]: monitors[0]") {
		t.Fatalf("a bad monitor in the token file: %v", err)
	}
}
