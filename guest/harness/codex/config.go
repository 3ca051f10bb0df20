package codex

import (
	"fmt"
	"strconv"
	"strings"

	"aicli.dev/aicli/guest/harness"
)

// ConfigPath is config.toml relative to the home.
const ConfigPath = ".codex/config.toml"

// SeedFiles implements harness.Adapter: CODEX_HOME/config.toml with the
// provider (when the request names a base URL), the working directory trusted,
// the app-server daemon off, the update check off, the screen-reader and
// model-migration notices answered, and analytics off. The seeded keys are rewritten on every launch;
// tables the CLI or a user added are kept.
func (a *Adapter) SeedFiles(req harness.LaunchRequest) ([]harness.SeedFile, error) {
	seed := seedConfig(req)
	return []harness.SeedFile{{
		Path: ConfigPath,
		Data: []byte(seed.String()),
		Mode: 0o600,
		Merge: func(existing []byte) ([]byte, error) {
			return []byte(mergeConfig(string(existing), seed)), nil
		},
	}}, nil
}

// tomlDoc is a TOML document as root keys plus ordered tables, each holding
// raw "key = value" lines. It covers the flat config the adapter writes.
type tomlDoc struct {
	root   []kv
	tables []table
}

type kv struct{ key, value string }

type table struct {
	header string // e.g. projects."/workspace"
	keys   []kv
}

func (d tomlDoc) String() string {
	var b strings.Builder
	for _, e := range d.root {
		fmt.Fprintf(&b, "%s = %s\n", e.key, e.value)
	}
	for _, t := range d.tables {
		fmt.Fprintf(&b, "\n[%s]\n", t.header)
		for _, e := range t.keys {
			fmt.Fprintf(&b, "%s = %s\n", e.key, e.value)
		}
	}
	return b.String()
}

func quote(s string) string { return strconv.Quote(s) }

func seedConfig(req harness.LaunchRequest) tomlDoc {
	var d tomlDoc
	if req.Model != "" {
		d.root = append(d.root, kv{"model", quote(req.Model)})
	}
	d.root = append(d.root, kv{"check_for_update_on_startup", "false"})
	if base := req.Env[BaseURLEnv]; base != "" {
		d.root = append(d.root, kv{"model_provider", quote(ProviderID)})
		d.tables = append(d.tables, table{header: "model_providers." + ProviderID, keys: []kv{
			{"name", quote(ProviderID)},
			{"base_url", quote(strings.TrimRight(base, "/"))},
			{"env_key", quote(APIKeyEnv)},
			{"wire_api", quote("responses")},
		}})
	}
	if req.WorkDir != "" {
		d.tables = append(d.tables, table{header: "projects." + quote(req.WorkDir),
			keys: []kv{{"trust_level", quote("trusted")}}})
	}
	d.tables = append(d.tables,
		table{header: "features", keys: []kv{{"daemon_auto_start", "false"}}},
		table{header: "tui", keys: []kv{{"screen_reader_detection_done", "true"}}},
		table{header: "analytics", keys: []kv{{"enabled", "false"}}},
	)
	if req.Model != "" {
		d.tables = append(d.tables, table{header: "notice.model_migrations",
			keys: []kv{{quote(req.Model), quote(req.Model)}}})
	}
	return d
}

// parseConfig splits a TOML file into root lines and tables by header lines.
// Values spanning lines (arrays, multi-line strings) stay attached to their
// key's table because only "[header]" lines at column 0 start a new table.
func parseConfig(s string) (root []string, tables []rawTable) {
	cur := -1
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(t, "]") && !strings.HasPrefix(t, "[[") {
			tables = append(tables, rawTable{header: strings.TrimSpace(t[1 : len(t)-1])})
			cur = len(tables) - 1
			continue
		}
		if cur < 0 {
			root = append(root, line)
		} else {
			tables[cur].lines = append(tables[cur].lines, line)
		}
	}
	return root, tables
}

type rawTable struct {
	header string
	lines  []string
}

// keyOf returns the key of a "key = value" line, or "".
func keyOf(line string) string {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(t, "#") {
		return ""
	}
	k, _, ok := strings.Cut(t, "=")
	if !ok {
		return ""
	}
	return strings.TrimSpace(k)
}

// mergeLines drops the lines that set one of the seeded keys and appends the seeded ones.
func mergeLines(lines []string, seeded []kv) []string {
	drop := map[string]bool{}
	for _, e := range seeded {
		drop[e.key] = true
	}
	var out []string
	for _, l := range lines {
		if !drop[keyOf(l)] {
			out = append(out, l)
		}
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	for _, e := range seeded {
		out = append(out, e.key+" = "+e.value)
	}
	return out
}

// mergeConfig rewrites the seeded keys in existing and keeps everything else.
func mergeConfig(existing string, seed tomlDoc) string {
	root, tables := parseConfig(existing)
	var b strings.Builder
	for _, l := range mergeLines(root, seed.root) {
		if strings.TrimSpace(l) != "" || b.Len() > 0 {
			b.WriteString(l + "\n")
		}
	}
	byHeader := map[string]int{}
	for i, t := range tables {
		byHeader[t.header] = i
	}
	for _, t := range seed.tables {
		if i, ok := byHeader[t.header]; ok {
			tables[i].lines = mergeLines(tables[i].lines, t.keys)
			continue
		}
		tables = append(tables, rawTable{header: t.header, lines: mergeLines(nil, t.keys)})
	}
	for _, t := range tables {
		fmt.Fprintf(&b, "\n[%s]\n", t.header)
		lines := t.lines
		for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
			lines = lines[:len(lines)-1]
		}
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
