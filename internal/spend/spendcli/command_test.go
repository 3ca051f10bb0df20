package spendcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"aicli.dev/aicli/internal/spend"
)

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, fetch Fetcher, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand(fetch)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestLocalJSONAndTable(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "claude", "projects", "-w", "s.jsonl"),
		`{"message":{"id":"m1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":10,"cache_read_input_tokens":100,"cache_creation_input_tokens":5,"output_tokens":20}},"requestId":"r1","type":"assistant","timestamp":"2025-11-03T10:00:00Z"}`+"\n"+
			`{"message":{"id":"m2","model":"claude-mystery-1","usage":{"input_tokens":1,"output_tokens":2}},"requestId":"r2","type":"assistant","timestamp":"2025-11-04T10:00:00Z"}`+"\n")
	if err := os.Mkdir(filepath.Join(dir, "codex"), 0o755); err != nil { // a named dir must exist, even empty
		t.Fatal(err)
	}
	args := []string{"--local", "--offline", "--since", "2025-11-01", "--claude-dir", filepath.Join(dir, "claude"),
		"--codex-dir", filepath.Join(dir, "codex"), "--data-dir", filepath.Join(dir, "data")}
	out, err := run(t, nil, append(args, "-o", "json")...)
	if err != nil {
		t.Fatal(err, out)
	}
	var rep spend.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err, out)
	}
	if len(rep.Days) != 2 || rep.PricingSource != "bundled" || len(rep.UnpricedModels) != 1 || rep.Days[1].Models[0].Priced {
		t.Fatalf("report %+v", rep)
	}
	out, err = run(t, nil, args...)
	if err != nil {
		t.Fatal(err, out)
	}
	for _, want := range []string{"2025-11-03", "day total", "TOTAL", "claude-mystery-1", "*", "unpriced models", "pricing: bundled"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	total := ""
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "TOTAL") {
			total = strings.Join(strings.Fields(l), " ")
		}
	}
	if !strings.HasPrefix(total, "TOTAL 11 100 5 22 ") {
		t.Errorf("grand total row %q", total)
	}
}

func TestViaSupervisorFetch(t *testing.T) {
	var gotSince string
	fetch := func(_ context.Context, since string) ([]byte, error) {
		gotSince = since
		return []byte(`{"days":[{"date":"2025-11-03","models":[{"model":"gpt-5-codex","harness":"codex","uncachedInput":60,"cacheRead":40,"cacheWrite":0,"output":10,"costUSD":0.0002,"priced":true}]}],"unpricedModels":[],"unparseableFiles":1,"unparseableLines":2,"pricingSource":"cache","pricingFallbackReason":"fetch failed"}`), nil
	}
	out, err := run(t, fetch, "--since", "2025-11-01")
	if err != nil {
		t.Fatal(err)
	}
	if gotSince != "2025-11-01" || !strings.Contains(out, "gpt-5-codex") || !strings.Contains(out, "fallback: fetch failed") ||
		!strings.Contains(out, "unparseable: 1 files, 2 lines") {
		t.Fatalf("since %q out:\n%s", gotSince, out)
	}
	if _, err := run(t, func(context.Context, string) ([]byte, error) { return nil, errors.New("boom") }); err == nil {
		t.Fatal("fetch error not returned")
	}
	if _, err := run(t, fetch, "--offline"); err == nil {
		t.Fatal("--offline without --local accepted")
	}
	if _, err := run(t, fetch, "-o", "yaml"); err == nil {
		t.Fatal("bad output format accepted")
	}
}

func TestLocalNamedDirsMustExist(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFile(t, file, "x")
	missing := filepath.Join(dir, "typo")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--claude-dir", missing}, "--claude-dir " + missing + ": no such directory"},
		{[]string{"--claude-dir", dir, "--codex-dir", missing}, "--codex-dir " + missing + ": no such directory"},
		{[]string{"--codex-dir", dir + "," + file}, "--codex-dir " + file + ": not a directory"},
	} {
		out, err := run(t, nil, append([]string{"--local", "--offline", "--data-dir", filepath.Join(dir, "data")}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q (output %q)", tc.args, err, tc.want, out)
		}
	}
}

// TestLocalSaturatedCounts is the reported overflow through the command: 11 lines of 999,999,999,999,999,999
// output tokens printed −7,446,744,073,709,551,627 and a negative cost.
func TestLocalSaturatedCounts(t *testing.T) {
	dir := t.TempDir()
	var body strings.Builder
	for i := range 11 {
		fmt.Fprintf(&body, `{"message":{"id":"m%d","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":1,"output_tokens":999999999999999999}},"requestId":"r%d","type":"assistant","timestamp":"2025-11-03T10:00:00Z"}`+"\n", i, i)
	}
	writeFile(t, filepath.Join(dir, "claude", "projects", "-w", "s.jsonl"), body.String())
	args := []string{"--local", "--offline", "--since", "2025-11-01", "--claude-dir", filepath.Join(dir, "claude"),
		"--codex-dir", dir, "--data-dir", filepath.Join(dir, "data")}
	out, err := run(t, nil, append(args, "-o", "json")...)
	if err != nil {
		t.Fatal(err, out)
	}
	var rep spend.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err, out)
	}
	m := rep.Days[0].Models[0]
	if m.Output != math.MaxInt64 || !m.Saturated || rep.SaturatedRows != 1 || m.CostUSD <= 0 || m.UncachedInput != 11 {
		t.Fatalf("row %+v saturated rows %d", m, rep.SaturatedRows)
	}
	out, err = run(t, nil, args...)
	if err != nil {
		t.Fatal(err, out)
	}
	if !strings.Contains(out, "9223372036854775807+") || !strings.Contains(out, "saturated: ") {
		t.Fatalf("table:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "TOTAL" && f[0] != "2025-11-03" {
			continue
		}
		if slices.ContainsFunc(f, func(v string) bool { return strings.HasPrefix(v, "-") }) {
			t.Errorf("negative value in %q", l)
		}
		if !strings.HasSuffix(f[len(f)-1], "+") {
			t.Errorf("cost of a saturated row not marked as a lower bound: %q", l)
		}
	}
}

func TestTableTotalsSaturate(t *testing.T) {
	// Two rows that fit but whose day total does not: the total saturates (marked +), the costs are exact.
	rep := &spend.Report{PricingSource: "bundled", Days: []spend.Day{{Date: "2025-11-03", Models: []spend.ModelSpend{
		{Model: "a", Harness: "claude", Output: math.MaxInt64 - 1, CostUSD: 1, Priced: true},
		{Model: "b", Harness: "claude", Output: 2, CostUSD: 1, Priced: true}}}}}
	var out bytes.Buffer
	if err := WriteTable(&out, rep); err != nil {
		t.Fatal(err)
	}
	var total string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "TOTAL") {
			total = strings.Join(strings.Fields(l), " ")
		}
	}
	if total != "TOTAL 0 0 0 9223372036854775807+ 2.0000" || !strings.Contains(out.String(), "saturated: ") {
		t.Fatalf("total row %q in:\n%s", total, out.String())
	}
}
