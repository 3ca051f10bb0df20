package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/jsonscan"
)

// UnknownModel is reported for usage that no turn_context names a model for.
const UnknownModel = "unknown"

// replayGapMillis is the longest pause inside the burst of replayed parent history at the head of a forked file.
const replayGapMillis = 1000

// Parser is the Codex SessionParser.
type Parser struct{}

var _ spend.SessionParser = Parser{}

// Harness implements spend.SessionParser.
func (Parser) Harness() spend.Harness { return spend.HarnessCodex }

// HomeRoots implements spend.SessionParser: ~/.codex inside the home.
func (Parser) HomeRoots(home string) []string { return []string{filepath.Join(home, ".codex")} }

// DefaultRoots resolves the roots the way Codex does: $CODEX_HOME (comma-separated) when set, otherwise ~/.codex.
func DefaultRoots(getenv func(string) string, home string) []string {
	if v := strings.TrimSpace(getenv("CODEX_HOME")); v != "" {
		var out []string
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	return Parser{}.HomeRoots(home)
}

// Discover implements spend.SessionParser. Files are keyed by name, so a rollout present in both sessions/ and
// archived_sessions/ (or in two roots) is read once; the active sessions/ copy wins. A folder that could not be
// listed is reported too.
func (Parser) Discover(roots []string, readDir spend.ReadDirFunc) ([]spend.SourceFile, error) {
	var out []spend.SourceFile
	for _, root := range roots {
		for rank, sub := range []string{"archived_sessions", "sessions"} {
			err := spend.WalkFiles(filepath.Join(root, sub), ".jsonl", readDir, func(path, name string) {
				out = append(out, spend.SourceFile{Path: path, Key: name, Rank: rank})
			}, func(path string, err error) {
				out = append(out, spend.UnreadableDir(path, err))
			})
			if err != nil {
				return nil, fmt.Errorf("codex: %w", err)
			}
		}
	}
	return out, nil
}

// raw is one token_usage object as Codex writes it.
type raw struct {
	In     int64 `json:"i"`
	Cached int64 `json:"c"`
	Write  int64 `json:"w"`
	Out    int64 `json:"o"`
}

func (r raw) covers(p raw) bool {
	return r.In >= p.In && r.Cached >= p.Cached && r.Write >= p.Write && r.Out >= p.Out
}
func (r raw) sub(p raw) raw {
	return raw{r.In - p.In, r.Cached - p.Cached, r.Write - p.Write, r.Out - p.Out}
}

// fork phases
const (
	forkUnknown = iota // no session_meta seen yet
	forkNone
	forkPrefix // inside the replayed parent history
	forkDone
)

// state is a file's resume state.
type state struct {
	Model      string          `json:"model,omitempty"`
	Prev       *raw            `json:"prev,omitempty"`
	Fork       int             `json:"fork,omitempty"`
	ForkAt     int64           `json:"forkAt,omitempty"`
	LastReplay int64           `json:"lastReplay,omitempty"`
	LimitsAt   int64           `json:"limitsAt,omitempty"`
	LimitsTS   string          `json:"limitsTs,omitempty"`
	Limits     json.RawMessage `json:"limits,omitempty"`
}

// NewFile implements spend.SessionParser.
func (Parser) NewFile(path string, st []byte) (spend.FileParser, error) {
	fp := &fileParser{}
	if len(st) > 0 {
		if err := json.Unmarshal(st, &fp.st); err != nil {
			return nil, fmt.Errorf("codex: resume state of %s: %w", path, err)
		}
	}
	return fp, nil
}

type fileParser struct {
	st state
}

// State implements spend.FileParser.
func (p *fileParser) State() []byte {
	b, _ := json.Marshal(p.st) // plain struct: cannot fail
	return b
}

// Line implements spend.FileParser.
func (p *fileParser) Line(line []byte, emit func(spend.Event)) bool {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return false
	}
	var typ, ts string
	payloadAt := -1
	bad := false
	_, ok := jsonscan.Object(line, 0, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "timestamp":
			ts, _ = jsonscan.String(line[vs:ve])
		case "type":
			var ok bool
			if typ, ok = jsonscan.String(line[vs:ve]); !ok {
				bad = true
				return false
			}
			if typ != "session_meta" && typ != "turn_context" && typ != "event_msg" {
				return false // other record types are skipped without reading further
			}
		case "payload":
			payloadAt = vs
		}
		return !(typ != "" && payloadAt >= 0 && ts != "")
	})
	if !ok || bad {
		return false
	}
	if payloadAt < 0 || line[payloadAt] != '{' {
		return true
	}
	switch typ {
	case "session_meta":
		return p.sessionMeta(line, payloadAt, ts)
	case "turn_context":
		return p.turnContext(line, payloadAt)
	case "event_msg":
		return p.eventMsg(line, payloadAt, ts, emit)
	}
	return true
}

func (p *fileParser) sessionMeta(line []byte, at int, ts string) bool {
	fork := false
	metaTS := ""
	_, ok := jsonscan.Object(line, at, func(k []byte, vs, ve int) bool {
		v := line[vs:ve]
		switch string(k) {
		case "forked_from_id":
			if s, _ := jsonscan.String(v); s != "" {
				fork = true
			}
		case "source":
			if v[0] == '{' && bytes.Contains(v, []byte(`"subagent"`)) {
				fork = true
			}
		case "timestamp":
			metaTS, _ = jsonscan.String(v)
		}
		return true
	})
	if !ok {
		return false
	}
	if p.st.Fork != forkUnknown {
		return true
	}
	p.st.Fork = forkNone
	if fork {
		if metaTS == "" {
			metaTS = ts
		}
		at, _ := jsonscan.ParseTimeMilli(metaTS)
		p.st.Fork, p.st.ForkAt, p.st.LastReplay = forkPrefix, at, at
	}
	return true
}

func (p *fileParser) turnContext(line []byte, at int) bool {
	_, ok := jsonscan.Object(line, at, func(k []byte, vs, ve int) bool {
		if string(k) == "model" {
			if m, ok := jsonscan.String(line[vs:ve]); ok && m != "" {
				p.st.Model = m
			}
		}
		return true
	})
	return ok
}

func (p *fileParser) eventMsg(line []byte, at int, ts string, emit func(spend.Event)) bool {
	isCount := false
	infoAt, limitsAt := -1, -1
	bad := false
	_, ok := jsonscan.Object(line, at, func(k []byte, vs, ve int) bool {
		switch string(k) {
		case "type":
			t, ok := jsonscan.String(line[vs:ve])
			if !ok {
				bad = true
				return false
			}
			if t != "token_count" {
				return false
			}
			isCount = true
		case "info":
			infoAt = vs
		case "rate_limits":
			limitsAt = vs
		}
		return true
	})
	if !ok || bad {
		return false
	}
	if !isCount {
		return true
	}
	ms, tok := jsonscan.ParseTimeMilli(ts)
	if !tok {
		return false
	}
	if limitsAt >= 0 && line[limitsAt] == '{' && ms >= p.st.LimitsAt {
		end, _ := jsonscan.SkipValue(line, limitsAt)
		p.st.Limits = append(p.st.Limits[:0], line[limitsAt:end]...)
		p.st.LimitsAt, p.st.LimitsTS = ms, ts
	}
	if infoAt < 0 || line[infoAt] != '{' {
		return true // info: null carries no usage
	}
	var total, last *raw
	_, ok = jsonscan.Object(line, infoAt, func(k []byte, vs, ve int) bool {
		var dst **raw
		switch string(k) {
		case "total_token_usage":
			dst = &total
		case "last_token_usage":
			dst = &last
		default:
			return true
		}
		if line[vs] != '{' {
			return true
		}
		r, ok := parseRaw(line, vs)
		if !ok {
			bad = true
			return false
		}
		*dst = &r
		return true
	})
	if !ok || bad {
		return false
	}
	p.count(ms, total, last, emit)
	return true
}

func parseRaw(line []byte, at int) (raw, bool) {
	var r raw
	okAll := true
	num := func(v []byte, dst *int64) bool {
		if jsonscan.IsNull(v) {
			return true
		}
		n, ok := jsonscan.Uint(v)
		*dst = n
		return ok
	}
	_, ok := jsonscan.Object(line, at, func(k []byte, vs, ve int) bool {
		v := line[vs:ve]
		switch string(k) {
		case "input_tokens":
			okAll = num(v, &r.In)
		case "cached_input_tokens":
			okAll = num(v, &r.Cached)
		case "cache_write_input_tokens":
			okAll = num(v, &r.Write)
		case "output_tokens":
			okAll = num(v, &r.Out)
		case "reasoning_output_tokens", "total_tokens":
			var x int64
			okAll = num(v, &x)
		}
		return okAll
	})
	return r, ok && okAll
}

// count turns one token_count into a usage delta: the advance of total_token_usage, or last_token_usage when the
// totals dropped or are missing; unchanged totals (rate-limit refreshes) count nothing.
func (p *fileParser) count(ms int64, total, last *raw, emit func(spend.Event)) {
	prev := p.st.Prev
	var d raw
	switch {
	case total != nil && prev != nil && *total == *prev:
		return
	case total != nil && prev == nil:
		d = *total
	case total != nil && total.covers(*prev):
		d = total.sub(*prev)
	case last != nil:
		d = *last
	case total != nil:
		d = *total
	default:
		return
	}
	if total != nil {
		t := *total
		p.st.Prev = &t
	}
	if p.st.Fork == forkPrefix {
		if ms <= p.st.ForkAt || ms-p.st.LastReplay <= replayGapMillis {
			p.st.LastReplay = max(p.st.LastReplay, ms)
			return // replayed parent history: it only moves the baseline
		}
		p.st.Fork = forkDone
	}
	cached := min(d.Cached, d.In)
	write := min(d.Write, d.In-cached)
	b := spend.Buckets{UncachedInput: d.In - cached - write, CacheRead: cached, CacheWrite5m: write, Output: d.Out}
	if b.IsZero() {
		return
	}
	model := p.st.Model
	if model == "" {
		model = UnknownModel
	}
	emit(spend.Event{UnixMilli: ms, Model: model, Tokens: b})
}

type limitsJSON struct {
	Primary   *windowJSON `json:"primary"`
	Secondary *windowJSON `json:"secondary"`
}

type windowJSON struct {
	UsedPercent     float64         `json:"used_percent"`
	WindowMinutes   int64           `json:"window_minutes"`
	ResetsInSeconds *int64          `json:"resets_in_seconds"`
	ResetsAt        json.RawMessage `json:"resets_at"`
}

// Quota implements spend.QuotaReporter from the newest rate_limits record.
func (p *fileParser) Quota() *spend.Quota {
	if len(p.st.Limits) == 0 {
		return nil
	}
	var l limitsJSON
	if err := json.Unmarshal(p.st.Limits, &l); err != nil {
		return nil
	}
	observed := time.UnixMilli(p.st.LimitsAt).UTC()
	q := &spend.Quota{Harness: spend.HarnessCodex, ObservedAt: observed.Format(time.RFC3339), UnixMilli: p.st.LimitsAt}
	q.Primary = l.Primary.window(observed)
	q.Secondary = l.Secondary.window(observed)
	if q.Primary == nil && q.Secondary == nil {
		return nil
	}
	return q
}

func (w *windowJSON) window(observed time.Time) *spend.QuotaWindow {
	if w == nil {
		return nil
	}
	out := &spend.QuotaWindow{UsedPercent: w.UsedPercent, WindowMinutes: w.WindowMinutes}
	switch {
	case w.ResetsInSeconds != nil:
		out.ResetsAt = observed.Add(time.Duration(*w.ResetsInSeconds) * time.Second).Format(time.RFC3339)
	case len(w.ResetsAt) > 0:
		var n int64
		var s string
		if json.Unmarshal(w.ResetsAt, &n) == nil && n > 0 {
			out.ResetsAt = time.Unix(n, 0).UTC().Format(time.RFC3339)
		} else if json.Unmarshal(w.ResetsAt, &s) == nil {
			out.ResetsAt = s
		}
	}
	return out
}
