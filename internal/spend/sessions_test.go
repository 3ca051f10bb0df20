package spend_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"aicli.dev/aicli/internal/spend"
)

const (
	sessA = "11111111-2222-3333-4444-555555555555"
	sessB = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
)

func TestSessionOf(t *testing.T) {
	for path, want := range map[string]string{
		"/h/.claude/projects/-w/" + sessA + ".jsonl":                                    sessA,
		"/h/.claude/projects/-w/" + sessA + "/subagents/agent-1f2e.jsonl":               sessA,
		"/h/.codex/sessions/2025/11/03/rollout-2025-11-03T10-00-00-" + sessB + ".jsonl": sessB,
		"/h/.claude/projects/-w/notes.jsonl":                                            "",
	} {
		if got := spend.SessionOf(path); got != want {
			t.Errorf("SessionOf(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestSessionsCostPerSessionAndSurviveReload(t *testing.T) {
	f := newFixture(t)
	home := filepath.Join(f.dir, "agents", "team", "a", "home")
	f.write("agents/team/a/home/.claude/projects/-w/"+sessA+".jsonl",
		cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1000, 0, 0, 1000))
	// a subagent of session A counts for A; a resumed session B repeats m1 (counted once, for the first session
	// in id order, A) and adds m2
	f.write("agents/team/a/home/.claude/projects/-w/"+sessA+"/subagents/agent-x.jsonl",
		cl("m3", "r3", true, "2025-11-03T10:00:01Z", 0, 0, 0, 1000))
	f.write("agents/team/a/home/.claude/projects/-w/"+sessB+".jsonl",
		cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1000, 0, 0, 1000)+cl("m2", "r2", false, "2025-11-04T10:00:00Z", 2000, 0, 0, 0))
	scopes := func(s *spend.Service) []spend.Scope {
		return s.HomeScopes([]spend.AgentHome{{Namespace: "team", Name: "a", Home: home}})
	}
	check := func(s *spend.Service) {
		t.Helper()
		got, err := s.Sessions(context.Background(), scopes(s))
		if err != nil {
			t.Fatal(err)
		}
		wantA, wantB := 1000*3e-6+2000*15e-6, 2000*3e-6
		if len(got) != 2 || got[0].Session != sessA || got[1].Session != sessB || got[0].Agent != "a" || got[0].Namespace != "team" {
			t.Fatalf("sessions = %+v", got)
		}
		if math.Abs(got[0].CostUSD-wantA) > 1e-12 || math.Abs(got[1].CostUSD-wantB) > 1e-12 {
			t.Fatalf("costs = %v, %v; want %v, %v", got[0].CostUSD, got[1].CostUSD, wantA, wantB)
		}
	}
	check(f.service())
	check(f.service()) // from the durable index
}
