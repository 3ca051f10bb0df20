package treegen

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"
)

var claudeModels = []string{"claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"}

type claudeMsg struct {
	lines []string
}

// Claude writes <dir>/projects/... and returns the bytes written.
func Claude(dir string, o Options) (int64, error) {
	o.defaults()
	r := rand.New(rand.NewPCG(o.Seed, 1))
	pool := newPool(r)
	var total int64
	var previous []string // assistant lines of the last session, copied into a resumed one
	for s := 0; total < o.Bytes; s++ {
		project := fmt.Sprintf("-work-proj%d", s%5)
		sid := uuid(r)
		path := filepath.Join(dir, "projects", project, sid+".jsonl")
		w, err := create(path)
		if err != nil {
			return total, err
		}
		day := o.Start.Add(time.Duration(r.IntN(o.Days*24*3600)) * time.Second)
		if s%7 == 3 && len(previous) > 0 {
			for _, l := range previous { // resumed session: earlier lines copied verbatim
				w.line(l)
			}
		}
		var kept []string
		turns := 6 + r.IntN(10)
		t := day
		parent := "null"
		for turn := 0; turn < turns && w.written < o.Bytes-total; turn++ {
			t = t.Add(time.Duration(5+r.IntN(60)) * time.Second)
			u := uuid(r)
			w.line(fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"userType":"external","cwd":"/work","sessionId":"%s","version":"2.1.3","gitBranch":"main","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_%d","type":"tool_result","content":%s}]},"uuid":"%s","timestamp":"%s"}`,
				parent, sid, turn, pool.text(r, r.IntN(2*o.BigContent)), u, ts(t)))
			parent = `"` + u + `"`
			msgs := claudeAssistant(r, pool, o, sid, &parent, &t, false)
			for _, m := range msgs {
				for _, l := range m.lines {
					w.line(l)
				}
				kept = append(kept, m.lines...)
			}
			if r.IntN(15) == 0 {
				w.line(fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"userType":"external","cwd":"/work","sessionId":"%s","version":"2.1.3","type":"assistant","message":{"id":"%s","type":"message","role":"assistant","model":"<synthetic>","content":[{"type":"text","text":"API Error"}],"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},"uuid":"%s","timestamp":"%s","isApiErrorMessage":true}`,
					parent, sid, uuid(r), uuid(r), ts(t)))
			}
		}
		if err := w.close(); err != nil {
			return total, err
		}
		total += w.written
		if len(kept) > 4 {
			previous = kept[:4]
		}
		if s%4 == 1 { // subagent transcript with its own requests and a replayed copy of a parent request
			sw, err := create(filepath.Join(dir, "projects", project, sid, "subagents", "agent-"+uuid(r)[:8]+".jsonl"))
			if err != nil {
				return total, err
			}
			if len(kept) > 0 {
				sw.line(sidechainCopy(kept[len(kept)-1]))
			}
			sp := "null"
			st := t
			for k := 0; k < 3; k++ {
				for _, m := range claudeAssistant(r, pool, o, sid, &sp, &st, true) {
					for _, l := range m.lines {
						sw.line(l)
					}
				}
			}
			if err := sw.close(); err != nil {
				return total, err
			}
			total += sw.written
		}
	}
	return total, nil
}

// sidechainCopy turns a parent line into the replayed sidechain copy Claude Code writes: same message, another
// request id, isSidechain true.
func sidechainCopy(line string) string {
	out := []byte(line)
	copyLine := string(out)
	copyLine = replaceOnce(copyLine, `"isSidechain":false`, `"isSidechain":true`)
	copyLine = replaceOnce(copyLine, `"requestId":"req_`, `"requestId":"req_side`)
	return copyLine
}

func replaceOnce(s, old, repl string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + repl + s[i+len(old):]
		}
	}
	return s
}

// claudeAssistant writes one request streamed as several content-block lines sharing message id and request id;
// earlier lines carry a placeholder output count.
func claudeAssistant(r *rand.Rand, pool *textPool, o Options, sid string, parent *string, t *time.Time, side bool) []claudeMsg {
	model := claudeModels[r.IntN(len(claudeModels))]
	msgID := "msg_" + uuid(r)
	reqID := "req_" + uuid(r)
	in := int64(1 + r.IntN(20))
	read := int64(r.IntN(180_000))
	if r.IntN(40) == 0 {
		read = 200_000 + int64(r.IntN(100_000)) // long-context request
	}
	write := int64(r.IntN(20_000))
	out := int64(50 + r.IntN(4000))
	h1 := int64(0)
	cacheDetail := ""
	switch r.IntN(3) {
	case 0:
		h1 = write / 3
		cacheDetail = fmt.Sprintf(`,"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":%d}`, write-h1, h1)
	case 1:
		cacheDetail = fmt.Sprintf(`,"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":0}`, write)
	}
	blocks := 1 + r.IntN(3)
	var m claudeMsg
	for b := 0; b < blocks; b++ {
		*t = t.Add(time.Duration(1+r.IntN(3)) * time.Second)
		o2 := int64(1 + r.IntN(8)) // placeholder while streaming
		if b == blocks-1 {
			o2 = out
		}
		content := fmt.Sprintf(`[{"type":"text","text":%s}]`, pool.text(r, r.IntN(o.BigContent/4)))
		if b%2 == 1 {
			content = fmt.Sprintf(`[{"type":"tool_use","id":"toolu_%s","name":"Write","input":{"file_path":"/work/x.go","content":%s}}]`, uuid(r)[:8], pool.text(r, r.IntN(o.BigContent/2)))
		}
		u := uuid(r)
		m.lines = append(m.lines, fmt.Sprintf(`{"parentUuid":%s,"isSidechain":%t,"userType":"external","cwd":"/work","sessionId":"%s","version":"2.1.3","gitBranch":"main","message":{"id":"%s","type":"message","role":"assistant","model":"%s","content":%s,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d,"service_tier":"standard"%s}},"requestId":"%s","type":"assistant","uuid":"%s","timestamp":"%s"}`,
			*parent, side, sid, msgID, model, content, in, write, read, o2, cacheDetail, reqID, u, ts(*t)))
		*parent = `"` + u + `"`
	}
	return []claudeMsg{m}
}
