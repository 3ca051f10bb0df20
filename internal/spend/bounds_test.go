package spend_test

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/claude"
	"aicli.dev/aicli/internal/spend/codex"
	"aicli.dev/aicli/internal/spend/pricing"
)

// TestScanBudgetReadsOnAcrossCalls: a call reads at most ScanBudget bytes of a home; a file it did not finish is
// counted in PendingFiles and read on by the next calls, from where the last one stopped (an over-long line's skip
// included, across reloads of the index), until everything counts.
func TestScanBudgetReadsOnAcrossCalls(t *testing.T) {
	f := newFixture(t)
	home := filepath.Join(f.dir, "home")
	f.write("home/.claude/projects/-w/a.jsonl", cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1))
	// 40 MiB of data (not a hole: the writer paid for it) without a newline, then a line.
	f.write("home/.claude/projects/-w/b.jsonl", strings.Repeat("x", 40<<20)+"\n"+cl("m2", "r2", false, "2025-11-03T10:00:01Z", 1, 0, 0, 10))
	service := func() *spend.Service {
		s, err := spend.NewService(spend.Options{IndexPath: f.index, Pricing: pricing.FileSource{Path: f.pricingFile()},
			Parsers: []spend.SessionParser{claude.Parser{}, codex.Parser{}}, ScanBudget: spend.MaxLineBytes + 1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var outputs, pending []int64
	for call := 0; call < 8; call++ {
		var rep *spend.Report
		if n := allocated(func() { rep = homeHistory(t, service(), home) }); n > memBound {
			t.Fatalf("call %d allocated %d MiB, want at most %d MiB", call, n>>20, memBound>>20)
		}
		outputs, pending = append(outputs, totals(rep, spend.HarnessClaude).Output), append(pending, int64(rep.PendingFiles))
		if rep.PendingFiles == 0 {
			if rep.UnparseableLines != 1 {
				t.Fatalf("unparseable lines %d, want the long line once", rep.UnparseableLines)
			}
			break
		}
	}
	// Call 1 reads a.jsonl and has too little budget left for b; calls 2 and 3 read 16 MiB of b each; call 4 the
	// rest.
	if want := "[1 1 1 11] [1 1 1 0]"; fmt.Sprint(outputs, pending) != want {
		t.Fatalf("output and pending files per call: %v %v, want %s", outputs, pending, want)
	}
}

// TestManyEventsAreAppliedInChunks: a file with more usage lines than one hand-over holds counts them all.
func TestManyEventsAreAppliedInChunks(t *testing.T) {
	f := newFixture(t)
	var b strings.Builder
	const n = 20_000 // more than one hand-over (16384 events)
	for i := range n {
		b.WriteString(cl(fmt.Sprint("m", i), fmt.Sprint("r", i), false, "2025-11-03T10:00:00Z", 1, 0, 0, 1))
	}
	f.write(claudeFile, b.String())
	if got := totals(f.history(f.service()), spend.HarnessClaude); got.Output != n || got.UncachedInput != n {
		t.Fatalf("totals %+v, want %d each", got, n)
	}
}

type fakeEntry struct {
	name string
	dir  bool
}

func (e fakeEntry) Name() string               { return e.name }
func (e fakeEntry) IsDir() bool                { return e.dir }
func (e fakeEntry) Type() fs.FileMode          { return map[bool]fs.FileMode{true: fs.ModeDir}[e.dir] }
func (e fakeEntry) Info() (fs.FileInfo, error) { return nil, fs.ErrInvalid }

// TestWalkFilesBounds: a folder of ten million entries is listed only up to MaxWalkEntries (never asked for more),
// a tree without bottom only to MaxWalkDepth, and each cut is reported once.
func TestWalkFilesBounds(t *testing.T) {
	const huge = 10_000_000
	var files, asked int
	var cuts []string
	wide := func(name string, n int) ([]fs.DirEntry, error) {
		asked = max(asked, n)
		out := make([]fs.DirEntry, 0, min(n, huge))
		for i := range min(n, huge) {
			out = append(out, fakeEntry{name: fmt.Sprintf("s%08d.jsonl", i)})
		}
		return out, nil
	}
	err := spend.WalkFiles("/wide", ".jsonl", wide, func(string, string) { files++ }, func(p string, err error) { cuts = append(cuts, p) })
	if err != nil || files != spend.MaxWalkEntries || asked > spend.MaxWalkEntries+1 || len(cuts) != 1 {
		t.Fatalf("wide: err %v, %d files (want %d), asked for up to %d entries, cuts %v", err, files, spend.MaxWalkEntries, asked, cuts)
	}
	var depth int
	cuts = nil
	deep := func(name string, n int) ([]fs.DirEntry, error) {
		depth = max(depth, strings.Count(name, "/d"))
		return []fs.DirEntry{fakeEntry{name: "d", dir: true}}, nil
	}
	if err := spend.WalkFiles("/root", ".jsonl", deep, func(string, string) {}, func(p string, err error) { cuts = append(cuts, p) }); err != nil ||
		depth != spend.MaxWalkDepth || len(cuts) != 1 {
		t.Fatalf("deep: err %v, listed %d levels down (want %d), cuts %v", err, depth, spend.MaxWalkDepth, cuts)
	}
}
