package spend_test

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/claude"
	"aicli.dev/aicli/internal/spend/codex"
	"aicli.dev/aicli/internal/spend/pricing"
)

// countingParser wraps a parser and counts the lines it is handed, to prove incremental reads.
type countingParser struct {
	spend.SessionParser
	lines *atomic.Int64
}

func (c countingParser) DedupsAcrossFiles() bool {
	d, ok := c.SessionParser.(spend.CrossFileDeduplicator)
	return ok && d.DedupsAcrossFiles()
}

func (c countingParser) NewFile(path string, st []byte) (spend.FileParser, error) {
	fp, err := c.SessionParser.NewFile(path, st)
	return countingFile{fp, c.lines}, err
}

type countingFile struct {
	spend.FileParser
	lines *atomic.Int64
}

func (c countingFile) Line(l []byte, emit func(spend.Event)) bool {
	c.lines.Add(1)
	return c.FileParser.Line(l, emit)
}

func (c countingFile) Quota() *spend.Quota {
	if q, ok := c.FileParser.(spend.QuotaReporter); ok {
		return q.Quota()
	}
	return nil
}

type fixture struct {
	t     *testing.T
	dir   string
	index string
	lines atomic.Int64
}

func newFixture(t *testing.T) *fixture {
	d := t.TempDir()
	return &fixture{t: t, dir: d, index: filepath.Join(d, "data", "index.bin")}
}

func (f *fixture) service() *spend.Service {
	s, err := spend.NewService(spend.Options{IndexPath: f.index, Pricing: pricing.FileSource{Path: f.pricingFile()},
		Parsers: []spend.SessionParser{countingParser{claude.Parser{}, &f.lines}, countingParser{codex.Parser{}, &f.lines}}})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) pricingFile() string {
	p := filepath.Join(f.dir, "prices.json")
	if _, err := os.Stat(p); err != nil {
		f.write("prices.json", `{"data":[{"id":"anthropic/claude-sonnet-4.5","pricing":{"prompt":"0.000003","completion":"0.000015","input_cache_read":"0.0000003","input_cache_write":"0.00000375","input_cache_write_1h":"0.000006","overrides":[{"min_prompt_tokens":200000,"prompt":"0.000006","completion":"0.0000225"}]}},{"id":"openai/gpt-5-codex","pricing":{"prompt":"0.00000125","completion":"0.00001","input_cache_read":"0.000000125"}}]}`)
	}
	return p
}

func (f *fixture) write(rel, content string) string {
	p := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) appendTo(rel, content string) {
	fh, err := os.OpenFile(filepath.Join(f.dir, rel), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := fh.WriteString(content); err != nil {
		f.t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) local() []spend.Scope {
	return []spend.Scope{{Harness: spend.HarnessClaude, Roots: []string{filepath.Join(f.dir, "claude"), filepath.Join(f.dir, "claude2")}},
		{Harness: spend.HarnessCodex, Roots: []string{filepath.Join(f.dir, "codex"), filepath.Join(f.dir, "codex2")}}}
}

func (f *fixture) history(s *spend.Service) *spend.Report {
	rep, err := s.History(context.Background(), "", f.local())
	if err != nil {
		f.t.Fatal(err)
	}
	return rep
}

func cl(msgID, reqID string, side bool, ts string, in, read, write, out int) string {
	return fmt.Sprintf(`{"isSidechain":%t,"message":{"id":%q,"model":"claude-sonnet-4-5-20250929","content":[],"usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d,"output_tokens":%d}},"requestId":%q,"type":"assistant","timestamp":%q}`+"\n",
		side, msgID, in, read, write, out, reqID, ts)
}

func totals(rep *spend.Report, h spend.Harness) spend.ModelSpend {
	var t spend.ModelSpend
	for _, d := range rep.Days {
		for _, m := range d.Models {
			if m.Harness == h {
				t.UncachedInput += m.UncachedInput
				t.CacheRead += m.CacheRead
				t.CacheWrite += m.CacheWrite
				t.Output += m.Output
				t.CostUSD += m.CostUSD
			}
		}
	}
	return t
}

const claudeFile = "claude/projects/-w/s1.jsonl"

func TestDedupAcrossFilesKeepsLargest(t *testing.T) {
	f := newFixture(t)
	f.write(claudeFile, cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1)+cl("m1", "r1", false, "2025-11-03T10:00:01Z", 1, 0, 0, 50)+
		cl("m2", "r2", false, "2025-11-03T10:00:02Z", 2, 0, 0, 2))
	// resumed session copies m1 (placeholder) into a new file; a subagent sidechain replays m2 under another request id
	f.write("claude/projects/-w/s2.jsonl", cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1)+cl("m3", "r3", false, "2025-11-03T11:00:00Z", 3, 0, 0, 3))
	f.write("claude/projects/-w/s1/subagents/agent-a.jsonl", cl("m2", "rX", true, "2025-11-03T10:00:02Z", 2, 0, 0, 2)+cl("m4", "r4", true, "2025-11-03T12:00:00Z", 4, 0, 0, 4))
	// the same file in a second root (duplicate files in two roots) adds nothing
	f.write("claude2/projects/-w/s1.jsonl", cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1)+cl("m1", "r1", false, "2025-11-03T10:00:01Z", 1, 0, 0, 50)+
		cl("m2", "r2", false, "2025-11-03T10:00:02Z", 2, 0, 0, 2))
	got := totals(f.history(f.service()), spend.HarnessClaude)
	if got.UncachedInput != 1+2+3+4 || got.Output != 50+2+3+4 {
		t.Fatalf("totals = %+v, want input 10 output 59", got)
	}
}

func TestIncrementalAppendPartialLineAndDurability(t *testing.T) {
	f := newFixture(t)
	f.write(claudeFile, cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1))
	s := f.service()
	if got := totals(f.history(s), spend.HarnessClaude); got.Output != 1 {
		t.Fatalf("first scan output = %d", got.Output)
	}
	f.lines.Store(0)
	if got := totals(f.history(s), spend.HarnessClaude); got.Output != 1 || f.lines.Load() != 0 {
		t.Fatalf("unchanged tree: output %d, lines read %d", got.Output, f.lines.Load())
	}
	// append one complete line and half of another: only the complete one is read
	next := cl("m2", "r2", false, "2025-11-03T10:00:05Z", 0, 0, 0, 10)
	f.appendTo(claudeFile, next+next[:40])
	f.lines.Store(0)
	if got := totals(f.history(s), spend.HarnessClaude); got.Output != 11 || f.lines.Load() != 1 {
		t.Fatalf("after append: output %d, lines read %d (want 11, 1)", got.Output, f.lines.Load())
	}
	f.appendTo(claudeFile, strings.Replace(next[40:], "m2", "m2", 1))
	f.lines.Store(0)
	rep := f.history(s)
	if got := totals(rep, spend.HarnessClaude); got.Output != 11 || f.lines.Load() != 1 || rep.UnparseableLines != 0 {
		t.Fatalf("after completing the partial line (a copy of m2): output %d, lines %d, unparseable %d", got.Output, f.lines.Load(), rep.UnparseableLines)
	}
	// a new Service on the same index file reads nothing
	f.lines.Store(0)
	if got := totals(f.history(f.service()), spend.HarnessClaude); got.Output != 11 || f.lines.Load() != 0 {
		t.Fatalf("reloaded index: output %d, lines read %d", got.Output, f.lines.Load())
	}
}

func TestTruncatedReplacedAndDeletedFiles(t *testing.T) {
	f := newFixture(t)
	f.write(claudeFile, cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 100)+cl("m2", "r2", false, "2025-11-03T10:00:00Z", 1, 0, 0, 100))
	f.write("claude/projects/-w/s2.jsonl", cl("m3", "r3", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1))
	// a line without message.id is counted per file, outside the dedup groups
	f.write("claude/projects/-w/s3.jsonl", `{"message":{"model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":1,"output_tokens":1000}},"type":"assistant","timestamp":"2025-11-03T10:00:00Z"}`+"\n")
	cx := "codex/sessions/2025/11/03/rollout-a.jsonl"
	f.write(cx, `{"timestamp":"2025-11-03T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}`+"\n"+
		`{"timestamp":"2025-11-03T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"output_tokens":10}}}}`+"\n")
	s := f.service()
	if got := totals(f.history(s), spend.HarnessClaude); got.Output != 1201 {
		t.Fatalf("output %d", got.Output)
	}
	if err := os.Remove(filepath.Join(f.dir, "claude/projects/-w/s3.jsonl")); err != nil {
		t.Fatal(err)
	}
	// truncated between calls
	f.write(claudeFile, cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 100))
	if got := totals(f.history(s), spend.HarnessClaude); got.Output != 101 {
		t.Fatalf("after truncation output %d, want 101", got.Output)
	}
	// replaced by different content of a larger size (same path)
	f.write(claudeFile, cl("m7", "r7", false, "2025-11-03T10:00:00Z", 1, 0, 0, 7)+cl("m8", "r8", false, "2025-11-03T10:00:00Z", 1, 0, 0, 8)+
		cl("m9", "r9", false, "2025-11-03T10:00:00Z", 1, 0, 0, 9))
	if got := totals(f.history(s), spend.HarnessClaude); got.Output != 7+8+9+1 {
		t.Fatalf("after replacement output %d, want 25", got.Output)
	}
	// deleted between calls
	if err := os.Remove(filepath.Join(f.dir, claudeFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.dir, cx)); err != nil {
		t.Fatal(err)
	}
	rep := f.history(s)
	if got := totals(rep, spend.HarnessClaude); got.Output != 1 {
		t.Fatalf("after deletion output %d, want 1", got.Output)
	}
	if got := totals(rep, spend.HarnessCodex); got.Output != 0 {
		t.Fatalf("codex after deletion output %d, want 0", got.Output)
	}
}

func TestBadInputIsCountedNotDropped(t *testing.T) {
	f := newFixture(t)
	f.write(claudeFile, cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1)+`{"type":"assistant","message":{"id":"x","usage":{"input_tok`+"\n"+
		cl("m2", "r2", false, "2025-11-03T10:00:00Z", -1, 0, 0, 1))
	f.write("claude/projects/-w/garbage.jsonl", "\x00\x01\x02\xff\xfe\n\x89PNG\r\n\x1a\n")
	f.write("claude/projects/-w/unknown-model.jsonl", strings.Replace(cl("m3", "r3", false, "2025-11-03T10:00:00Z", 5, 0, 0, 5), "claude-sonnet-4-5-20250929", "claude-nobody-9", 1))
	rep := f.history(f.service())
	if rep.UnparseableLines != 2+3 || rep.UnparseableFiles != 1 { // truncated + negative; three garbage lines
		t.Fatalf("unparseable lines %d files %d, want 5 and 1", rep.UnparseableLines, rep.UnparseableFiles)
	}
	if len(rep.UnpricedModels) != 1 || rep.UnpricedModels[0] != "claude-nobody-9" {
		t.Fatalf("unpriced = %v", rep.UnpricedModels)
	}
	for _, m := range rep.Days[0].Models {
		if m.Model == "claude-nobody-9" && (m.Priced || m.UncachedInput != 5 || m.Output != 5) {
			t.Fatalf("unknown model row = %+v", m)
		}
		if m.Model != "claude-nobody-9" && !m.Priced {
			t.Fatalf("known model unpriced: %+v", m)
		}
	}
}

func TestTieredPricingPerRequestAndCosts(t *testing.T) {
	f := newFixture(t)
	// one small request and one above 200k prompt tokens on the same day and model
	f.write(claudeFile, cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1000, 0, 0, 1000)+cl("m2", "r2", false, "2025-11-03T10:00:00Z", 250_000, 0, 0, 1000))
	rep := f.history(f.service())
	want := 1000*3e-6 + 1000*15e-6 + 250_000*6e-6 + 1000*22.5e-6
	if got := totals(rep, spend.HarnessClaude).CostUSD; math.Abs(got-want) > 1e-9 {
		t.Fatalf("cost = %v, want %v", got, want)
	}
	if rep.PricingSource != pricing.PricingFile {
		t.Fatalf("pricing source %q", rep.PricingSource)
	}
}

func TestAgentsSinceAndQuota(t *testing.T) {
	f := newFixture(t)
	homeA := filepath.Join(f.dir, "agents", "team", "a", "home")
	homeB := filepath.Join(f.dir, "agents", "team", "b", "home")
	f.write("agents/team/a/home/.claude/projects/-w/s.jsonl", cl("m1", "r1", false, "2025-11-01T10:00:00Z", 1, 0, 0, 1)+cl("m2", "r2", false, "2025-11-03T10:00:00Z", 2, 0, 0, 2))
	f.write("agents/team/b/home/.codex/sessions/2025/11/03/rollout-b.jsonl",
		`{"timestamp":"2025-11-03T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}`+"\n"+
			`{"timestamp":"2025-11-03T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10}},"rate_limits":{"primary":{"used_percent":12.5,"window_minutes":300,"resets_in_seconds":60},"secondary":{"used_percent":40,"window_minutes":10080,"resets_in_seconds":600}}}}`+"\n")
	s := f.service()
	rep, err := s.History(context.Background(), "2025-11-02", s.HomeScopes([]spend.AgentHome{{Namespace: "team", Name: "a", Home: homeA}, {Namespace: "team", Name: "b", Home: homeB}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Days) != 1 || rep.Days[0].Date != "2025-11-03" || len(rep.Days[0].Models) != 2 {
		t.Fatalf("days = %+v", rep.Days)
	}
	if len(rep.Agents) != 2 || rep.Agents[0].Agent != "a" || rep.Agents[0].Days[0].Models[0].UncachedInput != 2 ||
		rep.Agents[1].Agent != "b" || rep.Agents[1].Days[0].Models[0].UncachedInput != 60 {
		t.Fatalf("agents = %+v", rep.Agents)
	}
	if len(rep.Quota) != 1 || rep.Quota[0].Agent != "b" || rep.Quota[0].Primary.UsedPercent != 12.5 || rep.Quota[0].Secondary.WindowMinutes != 10080 {
		t.Fatalf("quota = %+v", rep.Quota)
	}
}

func TestCorruptIndexIsRebuilt(t *testing.T) {
	f := newFixture(t)
	f.write(claudeFile, cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1))
	f.history(f.service())
	if err := os.WriteFile(f.index, []byte("AICLISPENDIDX\x01\xff\xff\xff"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := f.history(f.service())
	if totals(rep, spend.HarnessClaude).Output != 1 || rep.IndexNote == "" {
		t.Fatalf("after corrupt index: %+v", rep)
	}
}

func TestSinceValidation(t *testing.T) {
	f := newFixture(t)
	if _, err := f.service().History(context.Background(), "11/03/2025", f.local()); err == nil {
		t.Fatal("want an error for a malformed since")
	}
}

func TestCodexDuplicateFilesInTwoRoots(t *testing.T) {
	f := newFixture(t)
	body := `{"timestamp":"2025-11-03T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}` + "\n" +
		`{"timestamp":"2025-11-03T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"output_tokens":10}}}}` + "\n"
	f.write("codex/sessions/2025/11/03/rollout-dup.jsonl", body)
	f.write("codex2/sessions/2025/11/03/rollout-dup.jsonl", body)
	f.write("codex2/archived_sessions/rollout-dup.jsonl", body)
	if got := totals(f.history(f.service()), spend.HarnessCodex); got.UncachedInput != 100 || got.Output != 10 {
		t.Fatalf("codex totals %+v, want one copy counted", got)
	}
}

func TestPricingFallbackReachesThePayload(t *testing.T) {
	f := newFixture(t)
	f.write(claudeFile, cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1000, 0, 0, 1000))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("\x00garbage")) }))
	defer srv.Close()
	s, err := spend.NewService(spend.Options{Pricing: &pricing.Chain{URL: srv.URL, CachePath: filepath.Join(f.dir, "p.json")},
		Parsers: []spend.SessionParser{claude.Parser{}, codex.Parser{}}})
	if err != nil {
		t.Fatal(err)
	}
	rep := f.history(s)
	if rep.PricingSource != spend.PricingBundled || !strings.Contains(rep.PricingFallbackReason, "models list") {
		t.Fatalf("source %q reason %q", rep.PricingSource, rep.PricingFallbackReason)
	}
	if got := totals(rep, spend.HarnessClaude).CostUSD; math.Abs(got-(1000*3e-6+1000*15e-6)) > 1e-12 {
		t.Fatalf("bundled cost %v", got)
	}
}

// TestSumsSaturateInsteadOfWrapping is the reported case: 11 accepted lines of 999,999,999,999,999,999 output
// tokens wrapped to −7,446,744,073,709,551,627 tokens and −$111,701,161,105,643.
func TestSumsSaturateInsteadOfWrapping(t *testing.T) {
	const huge = 999_999_999_999_999_999
	f := newFixture(t)
	var body strings.Builder
	for i := range 11 {
		body.WriteString(cl(fmt.Sprintf("m%d", i), fmt.Sprintf("r%d", i), false, "2025-11-03T10:00:00Z", 0, 0, 0, huge))
	}
	f.write(claudeFile, body.String())
	s := f.service()
	rep := f.history(s)
	m := rep.Days[0].Models[0]
	if m.Output != math.MaxInt64 || !m.Saturated || rep.SaturatedRows != 1 {
		t.Fatalf("row %+v, saturated rows %d: want output saturated at MaxInt64 and flagged", m, rep.SaturatedRows)
	}
	if want := float64(math.MaxInt64) * 15e-6; m.CostUSD < want*(1-1e-12) || m.CostUSD > want*(1+1e-12) {
		t.Fatalf("cost %v, want the lower bound %v", m.CostUSD, want)
	}

	// Codex files are summed per file and then across files (a count has at most 18 digits, so ten files of the
	// largest count do not fit); taking one off a saturated total recomputes it exactly.
	tc := `{"timestamp":"2025-11-04T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}` + "\n" +
		fmt.Sprintf(`{"timestamp":"2025-11-04T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"output_tokens":%d}}}}`, huge, huge) + "\n"
	for i := range 10 {
		f.write(fmt.Sprintf("codex/sessions/2025/11/04/rollout-%d.jsonl", i), tc)
	}
	rep = f.history(s)
	if got := totals(rep, spend.HarnessCodex); got.Output != math.MaxInt64 || got.UncachedInput != math.MaxInt64 || rep.SaturatedRows != 2 {
		t.Fatalf("codex %+v, saturated rows %d", got, rep.SaturatedRows)
	}
	if err := os.Remove(filepath.Join(f.dir, "codex/sessions/2025/11/04/rollout-9.jsonl")); err != nil {
		t.Fatal(err)
	}
	rep = f.history(s)
	if got := totals(rep, spend.HarnessCodex); got.Output != 9*huge || rep.SaturatedRows != 1 || rep.Days[1].Models[0].Saturated {
		t.Fatalf("after removing a file: codex %+v, saturated rows %d, want the exact 9×%d", got, rep.SaturatedRows, int64(huge))
	}
	// The same holds after a reload of the durable index.
	if got := totals(f.history(f.service()), spend.HarnessCodex); got.Output != 9*huge {
		t.Fatalf("reloaded: codex output %d", got.Output)
	}
}

// deniedParser lists directories through the lister it is handed, except those in denied: tests run as root, who
// can list a mode-000 directory, so permission denial is simulated at the Discover seam.
type deniedParser struct {
	spend.SessionParser
	denied map[string]bool
}

func (p deniedParser) Discover(roots []string, readDir spend.ReadDirFunc) ([]spend.SourceFile, error) {
	return p.SessionParser.Discover(roots, func(name string, n int) ([]fs.DirEntry, error) {
		if p.denied[name] {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
		}
		return readDir(name, n)
	})
}

func (p deniedParser) DedupsAcrossFiles() bool {
	d, ok := p.SessionParser.(spend.CrossFileDeduplicator)
	return ok && d.DedupsAcrossFiles()
}

// TestUnreadableFolderIsCounted: a folder under a root that cannot be listed is counted with the unreadable files
// (its files' tokens are unknown), not skipped silently. Permission denial goes through the Discover seam
// (deniedParser); a `projects` that is a file (ENOTDIR, which root gets too) exercises the real filesystem.
func TestUnreadableFolderIsCounted(t *testing.T) {
	f := newFixture(t)
	f.write(claudeFile, cl("m1", "r1", false, "2025-11-03T10:00:00Z", 1, 0, 0, 1))
	f.write("claude/projects/-hidden/s.jsonl", cl("m2", "r2", false, "2025-11-03T10:00:00Z", 1, 0, 0, 10))
	f.write("codex/sessions/2025/11/03/rollout-a.jsonl", `{"timestamp":"2025-11-03T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}`+"\n"+
		`{"timestamp":"2025-11-03T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"output_tokens":10}}}}`+"\n")
	denied := map[string]bool{filepath.Join(f.dir, "claude/projects/-hidden"): true, filepath.Join(f.dir, "codex/sessions/2025"): true}
	s, err := spend.NewService(spend.Options{IndexPath: f.index, Pricing: pricing.FileSource{Path: f.pricingFile()},
		Parsers: []spend.SessionParser{deniedParser{claude.Parser{}, denied}, deniedParser{codex.Parser{}, denied}}})
	if err != nil {
		t.Fatal(err)
	}
	rep := f.history(s)
	if got := totals(rep, spend.HarnessClaude); rep.UnparseableFiles != 2 || got.Output != 1 || totals(rep, spend.HarnessCodex).Output != 0 {
		t.Fatalf("unparseable files %d (want the 2 folders), claude output %d (want 1)", rep.UnparseableFiles, got.Output)
	}
	// Readable again: its files count, and nothing is reported unreadable.
	clear(denied)
	rep = f.history(s)
	if got := totals(rep, spend.HarnessClaude); rep.UnparseableFiles != 0 || got.Output != 11 || totals(rep, spend.HarnessCodex).Output != 10 {
		t.Fatalf("after access came back: unparseable files %d, claude %+v, codex %+v", rep.UnparseableFiles, got, totals(rep, spend.HarnessCodex))
	}

	// The real filesystem: a root whose projects is not a folder.
	f.write("claude2/projects", "not a folder\n")
	if rep = f.history(f.service()); rep.UnparseableFiles != 1 {
		t.Fatalf("projects as a file: unparseable files %d, want 1", rep.UnparseableFiles)
	}
}
