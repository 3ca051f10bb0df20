package claude

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"aicli.dev/aicli/internal/spend"
	"aicli.dev/aicli/internal/spend/jsonscan"
)

// SyntheticModel marks lines Claude Code writes for API errors; they carry no billed usage.
const SyntheticModel = "<synthetic>"

// Parser is the Claude Code SessionParser.
type Parser struct{}

var _ spend.SessionParser = Parser{}

// Harness implements spend.SessionParser.
func (Parser) Harness() spend.Harness { return spend.HarnessClaude }

// HomeRoots implements spend.SessionParser: ~/.config/claude and ~/.claude inside the home.
func (Parser) HomeRoots(home string) []string {
	return []string{filepath.Join(home, ".config", "claude"), filepath.Join(home, ".claude")}
}

// DefaultRoots resolves the roots the way Claude Code does: $CLAUDE_CONFIG_DIR (comma-separated) when set,
// otherwise ~/.config/claude and ~/.claude.
func DefaultRoots(getenv func(string) string, home string) []string {
	if v := strings.TrimSpace(getenv("CLAUDE_CONFIG_DIR")); v != "" {
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

// Discover implements spend.SessionParser: every *.jsonl under <root>/projects, recursively (subagent
// transcripts live under <session-id>/subagents/), and every folder there that could not be listed.
func (Parser) Discover(roots []string, readDir spend.ReadDirFunc) ([]spend.SourceFile, error) {
	var out []spend.SourceFile
	seen := map[string]bool{}
	for _, root := range roots {
		dir := filepath.Join(root, "projects")
		err := spend.WalkFiles(dir, ".jsonl", readDir, func(path, _ string) {
			if !seen[path] {
				seen[path] = true
				out = append(out, spend.SourceFile{Path: path, Key: path})
			}
		}, func(path string, err error) {
			if !seen[path] {
				seen[path] = true
				out = append(out, spend.UnreadableDir(path, err))
			}
		})
		if err != nil {
			return nil, fmt.Errorf("claude: %w", err)
		}
	}
	return out, nil
}

// DedupsAcrossFiles implements spend.CrossFileDeduplicator: resumed sessions and sidechains copy requests into
// other files.
func (Parser) DedupsAcrossFiles() bool { return true }

// NewFile implements spend.SessionParser; Claude files need no resume state (deduplication is global).
func (Parser) NewFile(string, []byte) (spend.FileParser, error) { return &fileParser{}, nil }

type fileParser struct{}

func (*fileParser) State() []byte { return nil }

var usageKey = []byte(`"usage"`)

// Line implements spend.FileParser.
func (*fileParser) Line(line []byte, emit func(spend.Event)) bool {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return false
	}
	if bytes.Index(line, usageKey) < 0 {
		return true // not a usage line; its shape was checked cheaply above
	}
	ev, ok, count := parseAssistant(line)
	if !ok {
		return false
	}
	if count {
		emit(ev)
	}
	return true
}

// parseAssistant extracts the event from a line mentioning usage. ok is false for malformed lines; count is false
// for well-formed lines that carry no billable usage.
func parseAssistant(line []byte) (ev spend.Event, ok, count bool) {
	var typ, ts, reqID, msgID, model string
	var sidechain, hasUsage, bad bool
	var tokens spend.Buckets
	_, ok = jsonscan.Object(line, 0, func(key []byte, vs, ve int) bool {
		v := line[vs:ve]
		ok := true
		switch string(key) {
		case "type":
			typ, ok = jsonscan.String(v)
		case "timestamp":
			ts, ok = jsonscan.String(v)
		case "requestId":
			if !jsonscan.IsNull(v) {
				reqID, ok = jsonscan.String(v)
			}
		case "isSidechain":
			sidechain, _ = jsonscan.Bool(v)
		case "message":
			if v[0] != '{' {
				return true
			}
			_, ok = jsonscan.Object(line, vs, func(mk []byte, ms, me int) bool {
				mv := line[ms:me]
				var mok = true
				switch string(mk) {
				case "id":
					if !jsonscan.IsNull(mv) {
						msgID, mok = jsonscan.String(mv)
					}
				case "model":
					if !jsonscan.IsNull(mv) {
						model, mok = jsonscan.String(mv)
					}
				case "usage":
					if mv[0] == '{' {
						hasUsage = true
						tokens, mok = parseUsage(line, ms)
					}
				}
				if !mok {
					bad = true
				}
				return mok
			})
		default:
			return true
		}
		if !ok {
			bad = true
		}
		return ok
	})
	if !ok || bad {
		return ev, false, false
	}
	if typ != "assistant" || !hasUsage || model == SyntheticModel {
		return ev, true, false
	}
	ms, tok := jsonscan.ParseTimeMilli(ts)
	if !tok {
		return ev, false, false
	}
	if model == "" {
		model = "unknown"
	}
	ev = spend.Event{UnixMilli: ms, Model: model, Tokens: tokens, Dedup: msgID, Sidechain: sidechain}
	if msgID != "" {
		ev.DedupVariant = reqID
	}
	return ev, true, true
}

// parseUsage reads message.usage into the four buckets. cache_creation_input_tokens is the billed write total; the
// 1-hour part comes from the cache_creation breakdown and the rest counts as 5-minute writes.
func parseUsage(line []byte, at int) (spend.Buckets, bool) {
	var in, write, read, out, h1 int64
	var hasWrite, hasBreak bool
	var e5 int64
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
			okAll = num(v, &in)
		case "output_tokens":
			okAll = num(v, &out)
		case "cache_read_input_tokens":
			okAll = num(v, &read)
		case "cache_creation_input_tokens":
			hasWrite = true
			okAll = num(v, &write)
		case "cache_creation":
			if v[0] != '{' {
				return true
			}
			hasBreak = true
			_, okAll = jsonscan.Object(line, vs, func(ck []byte, cs, ce int) bool {
				switch string(ck) {
				case "ephemeral_1h_input_tokens":
					return num(line[cs:ce], &h1)
				case "ephemeral_5m_input_tokens":
					return num(line[cs:ce], &e5)
				}
				return true
			})
		}
		return okAll
	})
	if !ok || !okAll {
		return spend.Buckets{}, false
	}
	if !hasWrite && hasBreak {
		write = spend.SatAdd(e5, h1)
	}
	h1 = min(h1, write)
	return spend.Buckets{UncachedInput: in, CacheRead: read, CacheWrite5m: write - h1, CacheWrite1h: h1, Output: out}, true
}
