package treegen

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"
)

var codexModels = []string{"gpt-5-codex", "gpt-5.1-codex", "gpt-5.2-codex", "gpt-5-mini"}

type codexTotals struct{ in, cached, write, out, reason int64 }

func (c codexTotals) json() string {
	return fmt.Sprintf(`{"input_tokens":%d,"cached_input_tokens":%d,"cache_write_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":%d,"total_tokens":%d}`,
		c.in, c.cached, c.write, c.out, c.reason, c.in+c.out)
}

func tokenCount(t time.Time, total, last codexTotals, limits bool) string {
	rl := `null`
	if limits {
		rl = fmt.Sprintf(`{"primary":{"used_percent":%.1f,"window_minutes":300,"resets_in_seconds":%d},"secondary":{"used_percent":%.1f,"window_minutes":10080,"resets_in_seconds":%d}}`,
			float64(total.in%1000)/10, 3600, float64(total.out%1000)/10, 86400)
	}
	return fmt.Sprintf(`{"timestamp":"%s","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":%s,"last_token_usage":%s,"model_context_window":272000},"rate_limits":%s}}`,
		ts(t), total.json(), last.json(), rl)
}

// Codex writes <dir>/sessions/YYYY/MM/DD/rollout-*.jsonl (plus archived copies and forks) and returns the bytes
// written.
func Codex(dir string, o Options) (int64, error) {
	o.defaults()
	r := rand.New(rand.NewPCG(o.Seed, 2))
	pool := newPool(r)
	var total int64
	for s := 0; total < o.Bytes; s++ {
		start := o.Start.Add(time.Duration(r.IntN(o.Days*24*3600)) * time.Second)
		id := uuid(r)
		name := fmt.Sprintf("rollout-%s-%s.jsonl", start.Format("2006-01-02T15-04-05"), id)
		path := filepath.Join(dir, "sessions", start.Format("2006/01/02"), name)
		w, err := create(path)
		if err != nil {
			return total, err
		}
		w.line(fmt.Sprintf(`{"timestamp":"%s","type":"session_meta","payload":{"id":"%s","timestamp":"%s","cwd":"/work","originator":"codex_cli_rs","cli_version":"0.171.0","instructions":null,"source":"cli"}}`,
			ts(start), id, ts(start)))
		t := start
		var tot codexTotals
		var history []string // lines a fork replays
		turns := 5 + r.IntN(10)
		for turn := 0; turn < turns && w.written < o.Bytes-total; turn++ {
			t = t.Add(time.Duration(10+r.IntN(100)) * time.Second)
			model := codexModels[(s+turn/4)%len(codexModels)] // the model can change mid-file
			lines := []string{
				fmt.Sprintf(`{"timestamp":"%s","type":"turn_context","payload":{"cwd":"/work","approval_policy":"on-request","sandbox_policy":{"type":"workspace-write"},"model":"%s","effort":"medium","summary":"auto"}}`, ts(t), model),
				fmt.Sprintf(`{"timestamp":"%s","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}}`, ts(t), pool.text(r, r.IntN(o.BigContent/4))),
				fmt.Sprintf(`{"timestamp":"%s","type":"event_msg","payload":{"type":"user_message","message":%s,"images":[]}}`, ts(t), pool.text(r, r.IntN(512))),
			}
			steps := 1 + r.IntN(4)
			for k := 0; k < steps; k++ {
				t = t.Add(time.Duration(2+r.IntN(20)) * time.Second)
				lines = append(lines,
					fmt.Sprintf(`{"timestamp":"%s","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cat x.go\"]}","call_id":"call_%d"}}`, ts(t), k),
					fmt.Sprintf(`{"timestamp":"%s","type":"response_item","payload":{"type":"function_call_output","call_id":"call_%d","output":%s}}`, ts(t), k, pool.text(r, r.IntN(2*o.BigContent))))
				last := codexTotals{in: 2000 + int64(r.IntN(60_000)), out: 20 + int64(r.IntN(3000))}
				last.cached = last.in * int64(r.IntN(90)) / 100
				if r.IntN(4) == 0 {
					last.write = (last.in - last.cached) / 3
				}
				last.reason = last.out / 2
				tot = codexTotals{tot.in + last.in, tot.cached + last.cached, tot.write + last.write, tot.out + last.out, tot.reason + last.reason}
				lines = append(lines, tokenCount(t, tot, last, true))
				if r.IntN(3) == 0 { // rate-limit refresh re-emits unchanged totals
					lines = append(lines, tokenCount(t.Add(time.Second), tot, last, true))
				}
			}
			if r.IntN(5) == 0 {
				lines = append(lines, fmt.Sprintf(`{"timestamp":"%s","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":null}}`, ts(t)))
			}
			lines = append(lines, fmt.Sprintf(`{"timestamp":"%s","type":"event_msg","payload":{"type":"agent_message","message":%s}}`, ts(t), pool.text(r, r.IntN(o.BigContent/4))))
			for _, l := range lines {
				w.line(l)
			}
			history = append(history, lines...)
		}
		if err := w.close(); err != nil {
			return total, err
		}
		total += w.written
		if s%9 == 4 { // archived copy of the same rollout: must not count twice
			aw, err := create(filepath.Join(dir, "archived_sessions", name))
			if err != nil {
				return total, err
			}
			aw.line(fmt.Sprintf(`{"timestamp":"%s","type":"session_meta","payload":{"id":"%s","timestamp":"%s","cwd":"/work","originator":"codex_cli_rs","cli_version":"0.171.0","source":"cli"}}`, ts(start), id, ts(start)))
			for _, l := range history {
				aw.line(l)
			}
			if err := aw.close(); err != nil {
				return total, err
			}
			total += aw.written
		}
		if s%6 == 2 && len(history) > 0 { // forked subagent: replays the parent's history, then works on its own
			fork := t.Add(30 * time.Second)
			fid := uuid(r)
			fw, err := create(filepath.Join(dir, "sessions", fork.Format("2006/01/02"),
				fmt.Sprintf("rollout-%s-%s.jsonl", fork.Format("2006-01-02T15-04-05"), fid)))
			if err != nil {
				return total, err
			}
			fw.line(fmt.Sprintf(`{"timestamp":"%s","type":"session_meta","payload":{"id":"%s","forked_from_id":"%s","timestamp":"%s","cwd":"/work","originator":"codex_cli_rs","cli_version":"0.171.0","source":{"subagent":{"thread_spawn":{"parent_thread_id":"%s","depth":1}}}}}`,
				ts(fork), fid, id, ts(fork), id))
			for _, l := range history {
				fw.line(l)
			}
			ft := fork
			for k := 0; k < 3; k++ {
				ft = ft.Add(time.Duration(5+r.IntN(20)) * time.Second)
				last := codexTotals{in: 1000 + int64(r.IntN(9000)), out: 10 + int64(r.IntN(500))}
				last.cached = last.in / 2
				tot = codexTotals{tot.in + last.in, tot.cached + last.cached, tot.write, tot.out + last.out, tot.reason}
				fw.line(tokenCount(ft, tot, last, false))
			}
			if err := fw.close(); err != nil {
				return total, err
			}
			total += fw.written
		}
	}
	return total, nil
}
