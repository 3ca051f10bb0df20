package ptyhost

import (
	"testing"

	"aicli.dev/aicli/guest/harness/claude"
	"aicli.dev/aicli/guest/harness/codex"
	"aicli.dev/aicli/guest/harness/fake"
	"aicli.dev/aicli/guest/ptyapi"
)

func TestProviderAccessBecomesTheCLIsOwnEnvironment(t *testing.T) {
	p := &ptyapi.ProviderAccess{BaseURL: "http://127.0.0.1:8780", APIKey: "sk-test-key-0123456789"}
	req := ptyapi.StartRequest{Provider: p, Env: map[string]string{"KEEP": "1", claude.APIKeyEnv: "overridden"}}

	got := withProviderEnv(claude.New(claude.Options{}), req).Env
	if got["ANTHROPIC_BASE_URL"] != "http://127.0.0.1:8780" || got[claude.APIKeyEnv] != p.APIKey || got["KEEP"] != "1" {
		t.Errorf("claude env: %v", got)
	}
	got = withProviderEnv(codex.New(codex.Options{}), req).Env
	if got[codex.BaseURLEnv] != "http://127.0.0.1:8780/v1" || got[codex.APIKeyEnv] != p.APIKey {
		t.Errorf("codex env: %v", got)
	}
	if req.Env[claude.APIKeyEnv] != "overridden" {
		t.Error("the caller's env map was modified")
	}
	if got := withProviderEnv(fake.New(fake.Options{}), req).Env; got[claude.APIKeyEnv] != "overridden" {
		t.Errorf("fake adapter has no provider mapping, env must be unchanged: %v", got)
	}
}
