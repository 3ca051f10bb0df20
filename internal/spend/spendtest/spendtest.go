// Package spendtest writes CLI session files with known token usage into an
// agent's home, so a supervisor's spend history reports known numbers (the
// consoles' spend fixture). The lines follow the formats internal/spend/claude
// and internal/spend/codex parse (docs/spend.md).
package spendtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Claude is one Claude Code request's usage.
type Claude struct {
	// At is when the request happened (its UTC day is the report's day).
	At    time.Time
	Model string
	// The four buckets: uncached input, cache read, cache write (5-minute), output.
	Input, CacheRead, CacheWrite, Output int64
}

// WriteClaude appends the requests to a Claude Code session file under
// home (<home>/.claude/projects/-workspace/<session>.jsonl). Each request gets
// its own message and request id, so none is deduplicated.
func WriteClaude(home, session string, reqs ...Claude) error {
	var b strings.Builder
	for i, r := range reqs {
		fmt.Fprintf(&b, `{"type":"assistant","timestamp":%q,"requestId":"%s-r%d","message":{"id":"%s-m%d","model":%q,`+
			`"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}}}`+"\n",
			r.At.UTC().Format(time.RFC3339), session, i, session, i, r.Model, r.Input, r.Output, r.CacheRead, r.CacheWrite)
	}
	return appendFile(filepath.Join(home, ".claude", "projects", "-workspace", session+".jsonl"), b.String())
}

// CodexQuota is a Codex rate-limit snapshot: the used share of its 5-hour
// (primary) and weekly (secondary) windows.
type CodexQuota struct {
	At                            time.Time
	PrimaryPercent, WeeklyPercent float64
}

// WriteCodexQuota appends a rate-limit snapshot to a Codex session file under
// home (<home>/.codex/sessions/<session>.jsonl).
func WriteCodexQuota(home, session string, q CodexQuota) error {
	line := fmt.Sprintf(`{"timestamp":%q,"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":`+
		`{"primary":{"used_percent":%g,"window_minutes":300,"resets_in_seconds":3600},`+
		`"secondary":{"used_percent":%g,"window_minutes":10080,"resets_in_seconds":86400}}}}`+"\n",
		q.At.UTC().Format(time.RFC3339), q.PrimaryPercent, q.WeeklyPercent)
	return appendFile(filepath.Join(home, ".codex", "sessions", session+".jsonl"), line)
}

func appendFile(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
