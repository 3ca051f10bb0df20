package sidechannel_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"aicli.dev/aicli/guest/sidechannel"
)

const goodFP = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestBootstrapFromEnv(t *testing.T) {
	full := map[string]string{
		sidechannel.EnvSocket:         "/run/aicli/gw.sock",
		sidechannel.EnvFingerprint:    goodFP,
		sidechannel.EnvConversationID: "conv-1",
		sidechannel.EnvLaunchToken:    "tok-secret",
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
		{"token missing", with(sidechannel.EnvLaunchToken, "<unset>"), false, sidechannel.EnvLaunchToken},
		{"only token", map[string]string{sidechannel.EnvLaunchToken: "tok-secret"}, false, "partial"},
		{"bad fingerprint", with(sidechannel.EnvFingerprint, "sha256:XYZ"), false, sidechannel.EnvFingerprint},
		{"upper-case fingerprint", with(sidechannel.EnvFingerprint, strings.ToUpper(goodFP)), false, sidechannel.EnvFingerprint},
		{"empty conversation", with(sidechannel.EnvConversationID, ""), false, sidechannel.EnvConversationID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{sidechannel.EnvSocket, sidechannel.EnvFingerprint, sidechannel.EnvConversationID, sidechannel.EnvLaunchToken} {
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
			if _, set := os.LookupEnv(sidechannel.EnvLaunchToken); set {
				t.Fatal("launch token still in the environment")
			}
		})
	}
}

// TestChildDoesNotInheritToken checks the scrub with a real child process, as the AI CLI would be started.
func TestChildDoesNotInheritToken(t *testing.T) {
	t.Setenv(sidechannel.EnvSocket, "/run/aicli/gw.sock")
	t.Setenv(sidechannel.EnvFingerprint, goodFP)
	t.Setenv(sidechannel.EnvConversationID, "conv-1")
	t.Setenv(sidechannel.EnvLaunchToken, "tok-secret-child")
	if _, ok, err := sidechannel.BootstrapFromEnv(); !ok || err != nil {
		t.Fatalf("ok %v err %v", ok, err)
	}
	out, err := exec.Command("env").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "tok-secret-child") || strings.Contains(string(out), sidechannel.EnvLaunchToken) {
		t.Fatal("child process inherited the launch token")
	}
	if !strings.Contains(string(out), sidechannel.EnvConversationID+"=conv-1") {
		t.Fatal("child env lost the non-secret variables (test is not looking at the right env)")
	}
}
