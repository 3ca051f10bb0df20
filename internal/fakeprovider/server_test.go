package fakeprovider

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type sseEvent struct {
	name string
	data map[string]any
	at   time.Time
}

// readSSE parses a server-sent event stream, stamping each event's arrival.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("bad data %q: %v", line, err)
			}
			cur.at = time.Now()
		case line == "" && cur.data != nil:
			out = append(out, cur)
			cur = sseEvent{}
		}
	}
	return out
}

func num(v any) int { f, _ := v.(float64); return int(f) }

func TestAnthropicStreamingCarriesHistoryAndUsage(t *testing.T) {
	s := start(t, Options{Usage: &Usage{InputTokens: 11, OutputTokens: 7, CacheReadTokens: 5, CacheCreationTokens: 3}})
	resp := post(t, s.URL()+"/v1/messages?beta=true", `{"model":"claude-x","stream":true,"max_tokens":100,
		"system":[{"type":"text","text":"be brief"}],
		"messages":[{"role":"user","content":"first question"},
		{"role":"assistant","content":[{"type":"text","text":"first answer"}]},
		{"role":"user","content":[{"type":"text","text":"<system-reminder>ctx</system-reminder>"},{"type":"text","text":"second question"}]}]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := readSSE(t, resp.Body)
	var names []string
	var text strings.Builder
	for _, e := range evs {
		if e.name != e.data["type"] {
			t.Errorf("event %q carries type %v", e.name, e.data["type"])
		}
		if len(names) == 0 || names[len(names)-1] != e.name {
			names = append(names, e.name)
		}
		if e.name == "content_block_delta" {
			text.WriteString(e.data["delta"].(map[string]any)["text"].(string))
		}
	}
	wantNames := "message_start content_block_start ping content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != wantNames {
		t.Fatalf("events %v, want %s", names, wantNames)
	}
	if text.String() != "echo: second question" {
		t.Fatalf("streamed text %q", text.String())
	}
	var md map[string]any
	for _, e := range evs {
		if e.name == "message_delta" {
			md = e.data
		}
	}
	u := md["usage"].(map[string]any)
	if num(u["input_tokens"]) != 11 || num(u["output_tokens"]) != 7 || num(u["cache_read_input_tokens"]) != 5 ||
		num(u["cache_creation_input_tokens"]) != 3 {
		t.Fatalf("usage %v", u)
	}
	reqs := s.Conversations()
	if len(reqs) != 1 {
		t.Fatalf("%d requests logged", len(reqs))
	}
	r := reqs[0]
	if r.API != APIAnthropic || r.Model != "claude-x" || !r.Stream || r.System != "be brief" {
		t.Fatalf("logged %+v", r)
	}
	if len(r.Messages) != 3 || r.Messages[1] != (Message{"assistant", "first answer"}) || !r.HasText("first question") ||
		r.LastUserText() != "second question" {
		t.Fatalf("history %+v", r.Messages)
	}
}

func TestAnthropicNonStreamingAndCountTokens(t *testing.T) {
	s := start(t, Options{Reply: func(r Request) string { return "scripted for " + r.Model }})
	resp := post(t, s.URL()+"/v1/messages", `{"model":"m1","messages":[{"role":"user","content":"hi there you"}]}`)
	var msg struct {
		Type    string `json:"type"`
		Content []struct{ Type, Text string }
		Usage   map[string]int
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || len(msg.Content) != 1 || msg.Content[0].Text != "scripted for m1" {
		t.Fatalf("reply %+v", msg)
	}
	if msg.Usage["input_tokens"] != 3 || msg.Usage["output_tokens"] != 3 {
		t.Fatalf("estimated usage %v, want 3 in (words) / 3 out (tokens)", msg.Usage)
	}
	resp = post(t, s.URL()+"/v1/messages/count_tokens", `{"model":"m1","messages":[{"role":"user","content":"a b c d"}]}`)
	var ct map[string]int
	_ = json.NewDecoder(resp.Body).Decode(&ct)
	if ct["input_tokens"] != 4 {
		t.Fatalf("count_tokens %v", ct)
	}
	if got := len(s.Conversations()); got != 1 {
		t.Fatalf("count_tokens counted as a conversation: %d", got)
	}
	if got := len(s.Requests()); got != 2 {
		t.Fatalf("%d requests logged, want 2", got)
	}
	resp = post(t, s.URL()+"/v1/messages", `{not json`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad body: %d", resp.StatusCode)
	}
}

func TestOpenAIResponsesStreaming(t *testing.T) {
	s := start(t, Options{Usage: &Usage{InputTokens: 100, OutputTokens: 4, CacheReadTokens: 60}})
	resp := post(t, s.URL()+"/v1/responses", `{"model":"gpt-x","stream":true,"instructions":"sys",
		"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"perms"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"one"}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"echo: one"}]},
		{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"},
		{"type":"function_call_output","call_id":"c1","output":"ok"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"two"}]}]}`)
	evs := readSSE(t, resp.Body)
	var names []string
	var text strings.Builder
	for i, e := range evs {
		if num(e.data["sequence_number"]) != i {
			t.Errorf("event %d sequence_number %v", i, e.data["sequence_number"])
		}
		if len(names) == 0 || names[len(names)-1] != e.name {
			names = append(names, e.name)
		}
		if e.name == "response.output_text.delta" {
			text.WriteString(e.data["delta"].(string))
		}
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.done response.content_part.done response.output_item.done " +
		"response.completed"
	if strings.Join(names, " ") != want {
		t.Fatalf("events %v", names)
	}
	if text.String() != "echo: two" {
		t.Fatalf("text %q", text.String())
	}
	done := evs[len(evs)-1].data["response"].(map[string]any)
	u := done["usage"].(map[string]any)
	if num(u["input_tokens"]) != 160 || num(u["input_tokens_details"].(map[string]any)["cached_tokens"]) != 60 ||
		num(u["output_tokens"]) != 4 || num(u["total_tokens"]) != 164 {
		t.Fatalf("usage %v", u)
	}
	out := done["output"].([]any)[0].(map[string]any)
	if out["role"] != "assistant" || out["content"].([]any)[0].(map[string]any)["text"] != "echo: two" {
		t.Fatalf("completed output %v", out)
	}
	r := s.Conversations()[0]
	roles := []string{}
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,assistant,tool,user" || r.System != "sys" ||
		!r.HasText("echo: one") {
		t.Fatalf("history %+v", r.Messages)
	}
}

func TestStructuredOutputMatchesSchema(t *testing.T) {
	s := start(t, Options{})
	resp := post(t, s.URL()+"/v1/responses", `{"model":"gpt-x","input":"name this",
		"text":{"format":{"type":"json_schema","schema":{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}}}}`)
	var r struct {
		Output []struct{ Content []struct{ Text string } }
	}
	_ = json.NewDecoder(resp.Body).Decode(&r)
	var v struct{ Title string }
	if err := json.Unmarshal([]byte(r.Output[0].Content[0].Text), &v); err != nil || v.Title != "echo: name this" {
		t.Fatalf("structured reply %q: %v", r.Output[0].Content[0].Text, err)
	}

	// Gemini's side calls use the OpenAPI subset with upper-case types and enums.
	resp = post(t, s.URL()+"/v1beta/models/gemini-x:generateContent", `{"contents":[{"role":"user","parts":[{"text":"who next"}]}],
		"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT","properties":{
		"reasoning":{"type":"STRING"},"next_speaker":{"type":"STRING","enum":["user","model"]},
		"score":{"type":"INTEGER","minimum":1},"tags":{"type":"ARRAY","minItems":1,"items":{"type":"STRING"}},
		"ok":{"type":"BOOLEAN"}},"required":["reasoning","next_speaker"]}}}`)
	var g struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string }
			}
			FinishReason string
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&g)
	var gv map[string]any
	if err := json.Unmarshal([]byte(g.Candidates[0].Content.Parts[0].Text), &gv); err != nil {
		t.Fatal(err)
	}
	if gv["next_speaker"] != "user" || gv["reasoning"] != "echo: who next" || num(gv["score"]) != 1 ||
		len(gv["tags"].([]any)) != 1 || gv["ok"] != false || g.Candidates[0].FinishReason != "STOP" {
		t.Fatalf("gemini structured reply %v", gv)
	}
	if raw := ValueForSchema(json.RawMessage(`not json`), "t"); string(raw) != `{"text":"t"}` {
		t.Fatalf("unreadable schema gave %s", raw)
	}
}

func TestGeminiStreamGenerateContent(t *testing.T) {
	s := start(t, Options{Usage: &Usage{InputTokens: 9, OutputTokens: 2, CacheReadTokens: 1}})
	resp := post(t, s.URL()+"/v1beta/models/gemini-x:streamGenerateContent?alt=sse", `{
		"systemInstruction":{"parts":[{"text":"sys"}]},
		"contents":[{"role":"user","parts":[{"text":"alpha"}]},{"role":"model","parts":[{"text":"echo: alpha"}]},
		{"role":"user","parts":[{"text":"<session_context>\nThis is the Gemini CLI.</session_context>"},{"text":"beta gamma"}]}]}`)
	evs := readSSE(t, resp.Body)
	if len(evs) != 3 {
		t.Fatalf("%d chunks, want one per token (3)", len(evs))
	}
	var text strings.Builder
	for i, e := range evs {
		c := e.data["candidates"].([]any)[0].(map[string]any)
		text.WriteString(c["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string))
		_, hasFinish := c["finishReason"]
		if last := i == len(evs)-1; hasFinish != last {
			t.Errorf("chunk %d finishReason present=%v", i, hasFinish)
		}
	}
	if text.String() != "echo: beta gamma" {
		t.Fatalf("text %q", text.String())
	}
	um := evs[2].data["usageMetadata"].(map[string]any)
	if num(um["promptTokenCount"]) != 10 || num(um["candidatesTokenCount"]) != 2 || num(um["cachedContentTokenCount"]) != 1 {
		t.Fatalf("usage %v", um)
	}
	r := s.Conversations()[0]
	if r.API != APIGemini || r.Op != "streamGenerateContent" || r.Model != "gemini-x" || r.System != "sys" ||
		len(r.Messages) != 3 || r.Messages[1].Role != "assistant" {
		t.Fatalf("logged %+v", r)
	}
	resp = post(t, s.URL()+"/v1beta/models/gemini-x:countTokens", `{"contents":[{"parts":[{"text":"a b"}]}]}`)
	var ct map[string]int
	_ = json.NewDecoder(resp.Body).Decode(&ct)
	if ct["totalTokens"] != 9 {
		t.Fatalf("countTokens %v (configured usage wins)", ct)
	}
}

func TestTokenDelayStreamsIncrementally(t *testing.T) {
	const delay = 60 * time.Millisecond
	s := start(t, Options{Reply: func(Request) string { return "one two three four five" }})
	s.SetTokenDelay(delay)
	resp := post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	var deltas []time.Time
	for _, e := range readSSE(t, resp.Body) {
		if e.name == "content_block_delta" {
			deltas = append(deltas, e.at)
		}
	}
	if len(deltas) != 5 {
		t.Fatalf("%d deltas, want 5", len(deltas))
	}
	// Each token arrives on its own, not buffered to the end.
	for i := 1; i < len(deltas); i++ {
		if gap := deltas[i].Sub(deltas[i-1]); gap < delay/2 {
			t.Errorf("delta %d arrived %v after the previous one, want ≈%v", i, gap, delay)
		}
	}
	// The log knows when the stream ended: after the last token was sent.
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Ended.Before(reqs[0].Time.Add(4*delay)) || reqs[0].Ended.After(time.Now()) {
		t.Fatalf("request %v … ended %v, want after its four delays and before now", reqs[0].Time, reqs[0].Ended)
	}
}

func TestUnknownPathsAreLoggedAnd404(t *testing.T) {
	s := start(t, Options{})
	resp := post(t, s.URL()+"/v1/chat/completions", `{}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("status %d", resp.StatusCode)
	}
	resp2, err := http.Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	var list struct{ Data []struct{ ID string } }
	_ = json.NewDecoder(resp2.Body).Decode(&list)
	if len(list.Data) == 0 {
		t.Fatal("empty model list")
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Op != "unknown" || reqs[0].Path != "/v1/chat/completions" || reqs[1].Op != "models" {
		t.Fatalf("log %+v", reqs)
	}
	if !bytes.Equal(reqs[0].Body, []byte(`{}`)) {
		t.Fatalf("body %q", reqs[0].Body)
	}
}

func TestTokens(t *testing.T) {
	got := tokens("echo: a  b\nc")
	if strings.Join(got, "|") != "echo: |a  |b\n|c" {
		t.Fatalf("tokens %q", got)
	}
	if strings.Join(tokens("echo: a  b\nc"), "") != "echo: a  b\nc" {
		t.Fatal("tokens lose text")
	}
}

func TestAnthropicToolCall(t *testing.T) {
	s := start(t, Options{})
	s.SetToolCall(func(r Request) *ToolCall {
		if r.Messages[len(r.Messages)-1].Role == "tool" {
			return nil
		}
		return &ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}
	})
	resp := post(t, s.URL()+"/v1/messages", `{"model":"m","stream":true,"messages":[{"role":"user","content":"list"}]}`)
	evs := readSSE(t, resp.Body)
	var start, delta, md map[string]any
	for _, e := range evs {
		switch e.name {
		case "content_block_start":
			start = e.data["content_block"].(map[string]any)
		case "content_block_delta":
			delta = e.data["delta"].(map[string]any)
		case "message_delta":
			md = e.data["delta"].(map[string]any)
		}
	}
	if start["type"] != "tool_use" || start["name"] != "Bash" || delta["type"] != "input_json_delta" ||
		delta["partial_json"] != `{"command":"ls"}` || md["stop_reason"] != "tool_use" {
		t.Fatalf("tool call events: %v %v %v", start, delta, md)
	}
	// With the tool result in the history the fake answers with text again.
	resp = post(t, s.URL()+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"list"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"}]}]}`)
	var msg struct{ Content []struct{ Type, Text string } }
	_ = json.NewDecoder(resp.Body).Decode(&msg)
	if len(msg.Content) != 1 || msg.Content[0].Type != "text" {
		t.Fatalf("after the tool result: %+v", msg)
	}
	r := s.Conversations()[1]
	if r.Messages[2] != (Message{"tool", "a.txt"}) {
		t.Fatalf("tool result logged as %+v", r.Messages[2])
	}
}

func TestOpenAIFunctionCall(t *testing.T) {
	s := start(t, Options{ToolCall: func(r Request) *ToolCall {
		return &ToolCall{Name: "exec_command", Input: json.RawMessage(`{"cmd":"ls"}`)}
	}})
	resp := post(t, s.URL()+"/v1/responses", `{"model":"gpt-x","stream":true,"input":"list"}`)
	evs := readSSE(t, resp.Body)
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	want := "response.created response.in_progress response.output_item.added response.function_call_arguments.delta " +
		"response.function_call_arguments.done response.output_item.done response.completed"
	if strings.Join(names, " ") != want {
		t.Fatalf("events %v", names)
	}
	item := evs[5].data["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "exec_command" || item["arguments"] != `{"cmd":"ls"}` ||
		item["call_id"] == "" {
		t.Fatalf("item %v", item)
	}
	// Structured-output side calls still get JSON, not a tool call.
	resp = post(t, s.URL()+"/v1/responses", `{"model":"gpt-x","input":"t","text":{"format":{"type":"json_schema",
		"schema":{"type":"object","properties":{"title":{"type":"string"}}}}}}`)
	var r struct{ Output []struct{ Type string } }
	_ = json.NewDecoder(resp.Body).Decode(&r)
	if len(r.Output) != 1 || r.Output[0].Type != "message" {
		t.Fatalf("side call answered with %+v", r.Output)
	}
}

func TestCarriesFindsTextAnywhereInTheRequest(t *testing.T) {
	s := start(t, Options{})
	post(t, s.URL()+"/v1/messages", `{"model":"m","system":[{"type":"text","text":"You are \"Pete\"."}],
		"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>\nContents of CLAUDE.md:\n\nSpeak like a pirate.\n</system-reminder>"},
		{"type":"text","text":"hello"}]}]}`)
	post(t, s.URL()+"/v1/responses", `{"model":"m","input":[{"type":"message","role":"user",
		"content":[{"type":"input_text","text":"# AGENTS.md instructions\n\n<INSTRUCTIONS>\nBe a quokka.\n</INSTRUCTIONS>"}]}]}`)
	reqs := s.Conversations()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	claude, codex := reqs[0], reqs[1]
	if claude.HasText("pirate") || !claude.Carries("Speak like a pirate.") || !claude.Carries(`You are "Pete".`) {
		t.Errorf("anthropic request: Carries misses the reminder or the system prompt (messages %+v)", claude.Messages)
	}
	if !codex.Carries("Be a quokka.") || codex.Carries("pirate") || claude.Carries("quokka") {
		t.Error("responses request: Carries is wrong")
	}
	if (Request{Body: []byte("not json")}).Carries("json") {
		t.Error("a body that is not JSON carries nothing")
	}
}
