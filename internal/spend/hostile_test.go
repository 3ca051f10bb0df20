package spend_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/claude"
	"aicli.dev/aicli/internal/spend/codex"
)

// An agent's home is written by the CLI in its container, which the supervisor does not trust. These tests play
// that CLI: what it writes must cost the supervisor bounded memory and time, and must not make it read outside
// the home.

// memBound is what one call may allocate however hostile the files: the scan buffer grows to at most
// MaxLineBytes+1 by doubling (about 3×MaxLineBytes in all), plus small change.
const memBound = 5 * spend.MaxLineBytes

// sparse writes head, then a hole of hole bytes (they read as zeros: no newline, no disk), then tail.
func sparse(t *testing.T, path, head string, hole int64, tail string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fh.Close() }()
	if _, err := fh.WriteString(head); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Seek(hole, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(tail); err != nil {
		t.Fatal(err)
	}
}

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func homeScopes(s *spend.Service, home string) []spend.Scope {
	return s.HomeScopes([]spend.AgentHome{{Namespace: "team", Name: "a", Home: home}})
}

func homeHistory(t *testing.T, s *spend.Service, home string) *spend.Report {
	t.Helper()
	rep, err := s.History(context.Background(), "", homeScopes(s, home))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestEndlessLineInHomeCostsBoundedMemory: `truncate -s 16G` on a session file makes a 16 GiB line that costs its
// writer no disk. A call allocates O(MaxLineBytes) whatever the file's size, skips the line (its hole is sought
// through, not read) without counting it twice across calls and reloads of the index, and the valid lines around it
// count.
func TestEndlessLineInHomeCostsBoundedMemory(t *testing.T) {
	f := newFixture(t)
	home := filepath.Join(f.dir, "home")
	sparse(t, filepath.Join(home, ".claude/projects/-w/s.jsonl"),
		cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1), 16<<30,
		"\n"+cl("m2", "r2", false, "2025-11-03T10:00:01Z", 1, 0, 0, 10))
	var rep *spend.Report
	for call := 1; ; call++ {
		s := f.service() // a new Service each time: the skip survives a reload of the index
		if n := allocated(func() { rep = homeHistory(t, s, home) }); n > memBound {
			t.Fatalf("call %d allocated %d MiB, want at most %d MiB", call, n>>20, memBound>>20)
		}
		if got := totals(rep, spend.HarnessClaude).Output; got == 11 {
			break
		} else if call == 6 {
			t.Fatalf("after %d calls output is %d, want 11 (the lines around the endless one)", call, got)
		}
	}
	if rep.UnparseableLines != 1 || rep.UnparseableFiles != 0 {
		t.Fatalf("unparseable lines %d, files %d; want the endless line counted once", rep.UnparseableLines, rep.UnparseableFiles)
	}
}

// TestLongLineIsSkippedAndLinesAfterItCount: a 100 MiB line (here in the user's own folders: the cap holds for
// every scope) is one unparseable line; the lines on both sides of it count, and reading it costs O(MaxLineBytes).
func TestLongLineIsSkippedAndLinesAfterItCount(t *testing.T) {
	f := newFixture(t)
	sparse(t, filepath.Join(f.dir, claudeFile), cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1), 100<<20,
		"\n"+cl("m2", "r2", false, "2025-11-03T10:00:01Z", 1, 0, 0, 10)+cl("m3", "r3", false, "2025-11-03T10:00:02Z", 1, 0, 0, 100))
	s := f.service()
	var rep *spend.Report
	if n := allocated(func() { rep = f.history(s) }); n > memBound {
		t.Fatalf("allocated %d MiB, want at most %d MiB", n>>20, memBound>>20)
	}
	if got := totals(rep, spend.HarnessClaude).Output; got != 111 || rep.UnparseableLines != 1 {
		t.Fatalf("output %d, unparseable lines %d; want 111 and 1", got, rep.UnparseableLines)
	}
	// A line just under the cap is still a line.
	long := cl("m4", "r4", false, "2025-11-03T10:00:03Z", 1, 0, 0, 1000)
	long = strings.Replace(long, `"content":[]`, `"content":"`+strings.Repeat("x", spend.MaxLineBytes-len(long)-20)+`"`, 1)
	f.appendTo(claudeFile, long)
	if rep = f.history(s); totals(rep, spend.HarnessClaude).Output != 1111 || rep.UnparseableLines != 1 {
		t.Fatalf("a %d-byte line: output %d, unparseable %d", len(long), totals(rep, spend.HarnessClaude).Output, rep.UnparseableLines)
	}
}

// TestHomeLinksDoNotLeadOutside: symbolic links in the home (a session file, a session root, a root's projects
// folder) that point outside it are not followed: their tokens are not counted and they are reported.
func TestHomeLinksDoNotLeadOutside(t *testing.T) {
	f := newFixture(t)
	home := filepath.Join(f.dir, "home")
	f.write("home/.claude/projects/-w/own.jsonl", cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1))
	// Outside the home: what the links point to (another agent's files, the supervisor's data).
	secret := f.write("outside/secret.jsonl", cl("m2", "r2", false, "2025-11-03T10:00:00Z", 1, 0, 0, 10))
	f.write("outside/claude/projects/-x/s.jsonl", cl("m3", "r3", false, "2025-11-03T10:00:00Z", 1, 0, 0, 100))
	f.write("outside/codex/sessions/2025/11/03/rollout-a.jsonl", `{"timestamp":"2025-11-03T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}`+"\n"+
		`{"timestamp":"2025-11-03T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"output_tokens":10}}}}`+"\n")
	for link, target := range map[string]string{
		"home/.claude/projects/-w/leak.jsonl": secret,
		"home/.claude/projects/-w/zero.jsonl": "/dev/zero",
		"home/.config/claude/projects":        filepath.Join(f.dir, "outside/claude/projects"),
		"home/.codex":                         filepath.Join(f.dir, "outside/codex"),
	} {
		p := filepath.Join(f.dir, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	rep := homeHistory(t, f.service(), home)
	if c, x := totals(rep, spend.HarnessClaude), totals(rep, spend.HarnessCodex); c.Output != 1 || x.Output != 0 {
		t.Fatalf("claude output %d (want 1: the home's own file), codex output %d (want 0)", c.Output, x.Output)
	}
	// Reported: the two file links, the projects link, and the two folders Codex lists under the .codex link.
	if rep.UnparseableFiles != 5 {
		t.Fatalf("unparseable files %d, want 5 (the links)", rep.UnparseableFiles)
	}
}

// swappingParser replaces a session file by a FIFO just before it is opened for reading: the window between the
// stat that found a regular file and the open, which a CLI racing the reader can hit.
type swappingParser struct {
	spend.SessionParser
	t    *testing.T
	swap string
}

func (p swappingParser) DedupsAcrossFiles() bool { return true }

func (p swappingParser) NewFile(path string, st []byte) (spend.FileParser, error) {
	if path == p.swap {
		if err := os.Remove(path); err != nil {
			p.t.Error(err)
		}
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			p.t.Error(err)
		}
	}
	return p.SessionParser.NewFile(path, st)
}

// TestHomeFIFOsDoNotBlock: a FIFO where a folder or a session file should be, or one that replaces a session file
// between its stat and its open, is reported, never opened for a blocking read (which would hang the spend index,
// and every caller behind its lock, until someone writes to the FIFO).
func TestHomeFIFOsDoNotBlock(t *testing.T) {
	f := newFixture(t)
	home := filepath.Join(f.dir, "home")
	f.write("home/.claude/projects/-w/own.jsonl", cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1))
	swap := f.write("home/.claude/projects/-w/swap.jsonl", cl("m2", "r2", false, "2025-11-03T10:00:00Z", 1, 0, 0, 10))
	for _, p := range []string{"home/.claude/projects/-w/fifo.jsonl", "home/.config/claude/projects", "home/.codex/sessions"} {
		p = filepath.Join(f.dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := spend.NewService(spend.Options{Parsers: []spend.SessionParser{swappingParser{claude.Parser{}, t, swap}, codex.Parser{}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *spend.Report, 1)
	go func() {
		rep, err := s.History(context.Background(), "", homeScopes(s, home))
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	select {
	case rep := <-done:
		if rep == nil {
			return
		}
		if got := totals(rep, spend.HarnessClaude).Output; got != 1 || rep.UnparseableFiles != 4 {
			t.Fatalf("output %d (want 1), unparseable files %d (want the 4 FIFOs)", got, rep.UnparseableFiles)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("History blocked on a FIFO in the home for 10 s")
	}
}

// TestDeepHomeTreeIsBounded: folders nested deeper than MaxWalkDepth are not walked (a tree built to be walked
// forever); the cut is reported.
func TestDeepHomeTreeIsBounded(t *testing.T) {
	f := newFixture(t)
	home := filepath.Join(f.dir, "home")
	f.write("home/.claude/projects/-w/own.jsonl", cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1))
	deep := "home/.claude/projects" + strings.Repeat("/d", 40) + "/s.jsonl"
	f.write(deep, cl("m2", "r2", false, "2025-11-03T10:00:00Z", 1, 0, 0, 10))
	rep := homeHistory(t, f.service(), home)
	if got := totals(rep, spend.HarnessClaude).Output; got != 1 || rep.UnparseableFiles != 1 {
		t.Fatalf("output %d (want 1: nothing below the depth bound), unparseable files %d (want 1: the cut)", got, rep.UnparseableFiles)
	}
}
