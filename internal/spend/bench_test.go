package spend_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"aicli.dev/aicli/hack/spend/treegen"
	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/claude"
	"aicli.dev/aicli/internal/spend/codex"
)

const benchTreeBytes = 64 << 20

var (
	benchTreeOnce sync.Once
	benchTreeDir  string
	benchTreeSize int64
	benchTreeErr  error
)

// benchTree generates, once per test binary, an agent home holding a realistic Claude and Codex tree of
// benchTreeBytes each (the generator of hack/spend).
func benchTree(b *testing.B) (home string, size int64) {
	benchTreeOnce.Do(func() {
		benchTreeDir, benchTreeErr = os.MkdirTemp("", "spend-bench-")
		if benchTreeErr != nil {
			return
		}
		home := filepath.Join(benchTreeDir, "home")
		o := treegen.Options{Seed: 1, Bytes: benchTreeBytes}
		var n int64
		if n, benchTreeErr = treegen.Claude(filepath.Join(home, ".claude"), o); benchTreeErr != nil {
			return
		}
		benchTreeSize += n
		if n, benchTreeErr = treegen.Codex(filepath.Join(home, ".codex"), o); benchTreeErr != nil {
			return
		}
		benchTreeSize += n
	})
	if benchTreeErr != nil {
		b.Fatal(benchTreeErr)
	}
	return filepath.Join(benchTreeDir, "home"), benchTreeSize
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchTreeDir != "" {
		_ = os.RemoveAll(benchTreeDir)
	}
	os.Exit(code)
}

// benchFullScan measures a full scan (fresh in-memory index) of the tree through the scopes scopes returns.
func benchFullScan(b *testing.B, scopes func(s *spend.Service, home string) []spend.Scope) {
	home, size := benchTree(b)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	defer func() { b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op") }()
	for range b.N {
		s, err := spend.NewService(spend.Options{Parsers: []spend.SessionParser{claude.Parser{}, codex.Parser{}}})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := s.History(context.Background(), "", scopes(s, home))
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Days) == 0 || rep.UnparseableFiles != 0 {
			b.Fatalf("scan found %d days, %d unparseable files", len(rep.Days), rep.UnparseableFiles)
		}
	}
}

// cpuTime is the process's user and system CPU time: steadier than wall time on a shared machine.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFullScanLocal is `aictl spend --local`'s path: scopes without a home.
func BenchmarkFullScanLocal(b *testing.B) {
	benchFullScan(b, func(_ *spend.Service, home string) []spend.Scope {
		return []spend.Scope{{Harness: spend.HarnessClaude, Roots: []string{filepath.Join(home, ".claude")}},
			{Harness: spend.HarnessCodex, Roots: []string{filepath.Join(home, ".codex")}}}
	})
}

// BenchmarkFullScanHome is the supervisor's path: an agent home's scopes (HomeScopes).
func BenchmarkFullScanHome(b *testing.B) {
	benchFullScan(b, func(s *spend.Service, home string) []spend.Scope {
		return s.HomeScopes([]spend.AgentHome{{Namespace: "ns", Name: "a", Home: home}})
	})
}
