package sidechannel_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	scwire "aicli.dev/aicli/guest/sidechannel/wire"

	"aicli.dev/aicli/guest/sidechannel"
)

const goodFP = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestBootstrapFromEnv(t *testing.T) {
	full := map[string]string{
		scwire.EnvSocket:         "/run/aicli/gw.sock",
		scwire.EnvFingerprint:    goodFP,
		scwire.EnvConversationID: "conv-1",
		scwire.EnvLaunchToken:    "tok-secret",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for kk, vv := range full {
			m[kk] = vv
		}
		if v == "<unset>" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name    string
		env     map[string]string
		ok      bool
		wantErr string
	}{
		{"none set", map[string]string{}, false, ""},
		{"complete", full, true, ""},
		{"token missing", with(scwire.EnvLaunchToken, "<unset>"), false, scwire.EnvLaunchToken},
		{"only token", map[string]string{scwire.EnvLaunchToken: "tok-secret"}, false, "partial"},
		{"bad fingerprint", with(scwire.EnvFingerprint, "sha256:XYZ"), false, scwire.EnvFingerprint},
		{"upper-case fingerprint", with(scwire.EnvFingerprint, strings.ToUpper(goodFP)), false, scwire.EnvFingerprint},
		{"empty conversation", with(scwire.EnvConversationID, ""), false, scwire.EnvConversationID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{scwire.EnvSocket, scwire.EnvFingerprint, scwire.EnvConversationID, scwire.EnvLaunchToken} {
				t.Setenv(k, "") // registers restoration
				if v, ok := tc.env[k]; ok {
					t.Setenv(k, v)
				} else if err := os.Unsetenv(k); err != nil {
					t.Fatal(err)
				}
			}
			b, ok, err := sidechannel.BootstrapFromEnv()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want mention of %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "tok-secret") {
					t.Fatal("error message leaks the token")
				}
			} else if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if ok && (b.LaunchToken != "tok-secret" || b.ConversationID != "conv-1" || b.SocketPath != "/run/aicli/gw.sock" || b.SupervisorFingerprint != goodFP) {
				t.Fatalf("bootstrap %+v", b)
			}
			if _, set := os.LookupEnv(scwire.EnvLaunchToken); set {
				t.Fatal("launch token still in the environment")
			}
		})
	}
}

// TestChildDoesNotInheritToken checks the scrub with a real child process, as the AI CLI would be started.
func TestChildDoesNotInheritToken(t *testing.T) {
	t.Setenv(scwire.EnvSocket, "/run/aicli/gw.sock")
	t.Setenv(scwire.EnvFingerprint, goodFP)
	t.Setenv(scwire.EnvConversationID, "conv-1")
	t.Setenv(scwire.EnvLaunchToken, "tok-secret-child")
	if _, ok, err := sidechannel.BootstrapFromEnv(); !ok || err != nil {
		t.Fatalf("ok %v err %v", ok, err)
	}
	out, err := exec.Command("env").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "tok-secret-child") || strings.Contains(string(out), scwire.EnvLaunchToken) {
		t.Fatal("child process inherited the launch token")
	}
	if !strings.Contains(string(out), scwire.EnvConversationID+"=conv-1") {
		t.Fatal("child env lost the non-secret variables (test is not looking at the right env)")
	}
}
