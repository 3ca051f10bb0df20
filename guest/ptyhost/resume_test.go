package ptyhost

import (
	"os"
	"path/filepath"
	"testing"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/ptyapi"
)

func TestResumeOfAnUnwrittenSessionStartsFreshUnderTheSameID(t *testing.T) {
	a := fake.New(fake.Options{})
	home, work := t.TempDir(), t.TempDir()
	req := func() harness.LaunchRequest {
		return harness.LaunchRequest{StartRequest: ptyapi.StartRequest{ResumeSession: "8c2f6a8e-3c1e-4f7a-9b1a-2d7f0e6c5b11"}, Home: home, WorkDir: work}
	}
	got := resumeOrFresh(a, req())
	if got.ResumeSession != "" || got.SessionID != "8c2f6a8e-3c1e-4f7a-9b1a-2d7f0e6c5b11" {
		t.Fatalf("unwritten session: %+v", got.StartRequest)
	}
	path, err := a.SessionFile(home, work, "8c2f6a8e-3c1e-4f7a-9b1a-2d7f0e6c5b11")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := resumeOrFresh(a, req()); got.ResumeSession != "8c2f6a8e-3c1e-4f7a-9b1a-2d7f0e6c5b11" || got.SessionID != "" {
		t.Fatalf("written session must be resumed natively: %+v", got.StartRequest)
	}
}
