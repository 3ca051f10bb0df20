package supervisor

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestTokensChangeWithoutARestart: the TCP API reads the token file again
// when it changes, so a token created is accepted and a token deleted is
// refused within seconds; a file that no longer reads accepts no token.
func TestTokensChangeWithoutARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	old, err := CreateToken(file, apiserver.Token{Name: "old", Namespaces: []string{"default"}})
	if err != nil {
		t.Fatal(err)
	}
	authn, err := apiserver.FileTokenAuthenticator(file, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	accepts := func(raw string) bool {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+raw)
		_, err := authn.Authenticate(r)
		return err == nil
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out: %s", what)
			}
		}
	}
	if !accepts(old) {
		t.Fatal("the first token is refused")
	}
	fresh, err := CreateToken(file, apiserver.Token{Name: "fresh", Namespaces: []string{"default"}, Role: "view"})
	if err != nil {
		t.Fatal(err)
	}
	eventually("a new token accepted", func() bool { return accepts(fresh) })
	if err := DeleteToken(file, "old"); err != nil {
		t.Fatal(err)
	}
	eventually("a deleted token refused", func() bool { return !accepts(old) })
	if !accepts(fresh) {
		t.Fatal("the remaining token is refused")
	}
	if err := DeleteToken(file, "old"); err == nil {
		t.Fatal("deleting a missing token succeeded")
	}
	if err := os.WriteFile(file, []byte("tokens: [this is not a token"), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually("a broken file accepts nobody", func() bool { return !accepts(fresh) })
}
