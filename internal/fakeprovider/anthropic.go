package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropicRequest is the part of a Messages API request the fake reads.
type anthropicRequest struct {
	Model     string          `json:"model"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []anthropicMsg  `json:"messages"`
	MaxTokens int             `json:"max_tokens"`
}

type anthropicMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
}

// anthropicText flattens a string-or-blocks content value. Blocks of
// CLI-injected context (<system-reminder>) are left out: nobody typed them. It reports whether the content was tool results only.
func anthropicText(raw json.RawMessage) (text string, toolOnly bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var blocks []anthropicBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var parts []string
	toolOnly = len(blocks) > 0
	for _, b := range blocks {
		switch b.Type {
		case "text":
			toolOnly = false
			if isHarnessContext(b.Text) {
				continue
			}
			parts = append(parts, b.Text)
		case "tool_result":
			if t, _ := anthropicText(b.Content); t != "" {
				parts = append(parts, t)
			}
		case "tool_use":
			toolOnly = false
			parts = append(parts, fmt.Sprintf("[tool_use %s %s]", b.Name, b.Input))
		default:
			toolOnly = false
		}
	}
	return strings.Join(parts, "\n"), toolOnly
}

func parseAnthropic(req *Request) (anthropicRequest, error) {
	var ar anthropicRequest
	if err := json.Unmarshal(req.Body, &ar); err != nil {
		return ar, fmt.Errorf("decode messages request: %w", err)
	}
	req.Model, req.Stream = ar.Model, ar.Stream
	req.System, _ = anthropicText(ar.System)
	for _, m := range ar.Messages {
		text, toolOnly := anthropicText(m.Content)
		role := m.Role
		if toolOnly {
			role = "tool"
		}
		req.Messages = append(req.Messages, Message{Role: role, Text: text})
	}
	return ar, nil
}

func anthropicUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":                u.InputTokens,
		"output_tokens":               u.OutputTokens,
		"cache_read_input_tokens":     u.CacheReadTokens,
		"cache_creation_input_tokens": u.CacheCreationTokens,
	}
}

func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	req, err := newRequest(APIAnthropic, "messages", r)
	if err != nil {
		badRequest(w, err)
		return
	}
	if _, err := parseAnthropic(&req); err != nil {
		s.record(req)
		badRequest(w, err)
		return
	}
	o := s.settings()
	var tc *ToolCall
	if o.ToolCall != nil {
		tc = o.ToolCall(req)
	}
	if tc != nil {
		req.Reply = fmt.Sprintf("[tool_use %s %s]", tc.Name, tc.Input)
		s.anthropicToolUse(w, r, "msg_fake"+s.record(req), req, o, tc)
		return
	}
	req.Reply = o.Reply(req)
	id := "msg_fake" + s.record(req)
	toks := tokens(req.Reply)
	u := usageFor(o, req, len(toks))
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content":     []any{map[string]any{"type": "text", "text": req.Reply}},
			"stop_reason": "end_turn", "stop_sequence": nil, "usage": anthropicUsage(u),
		})
		return
	}
	e := newSSE(w, r, o.TokenDelay)
	start := u
	start.OutputTokens = 1
	steps := []func() error{
		func() error {
			return e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
				"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
				"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(start)}})
		},
		func() error {
			return e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "text", "text": ""}})
		},
		func() error { return e.event("ping", map[string]any{"type": "ping"}) },
	}
	for _, step := range steps {
		if step() != nil {
			return
		}
	}
	for i, t := range toks {
		if e.pause(i) != nil {
			return
		}
		if e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": t}}) != nil {
			return
		}
	}
	_ = e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	_ = e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": anthropicUsage(u)})
	_ = e.event("message_stop", map[string]any{"type": "message_stop"})
}

func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	req, err := newRequest(APIAnthropic, "count_tokens", r)
	if err != nil {
		badRequest(w, err)
		return
	}
	_, perr := parseAnthropic(&req)
	s.record(req)
	if perr != nil {
		badRequest(w, perr)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"input_tokens": usageFor(s.settings(), req, 0).InputTokens})
}

// anthropicToolUse answers with one tool_use block (stop_reason tool_use).
func (s *Server) anthropicToolUse(w http.ResponseWriter, r *http.Request, id string, req Request, o Options, tc *ToolCall) {
	u := usageFor(o, req, 1)
	block := map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": tc.Name, "input": json.RawMessage(tc.Input)}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{block},
			"stop_reason": "tool_use", "stop_sequence": nil, "usage": anthropicUsage(u)})
		return
	}
	e := newSSE(w, r, 0)
	start := u
	start.OutputTokens = 1
	_ = e.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(start)}})
	_ = e.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": tc.Name, "input": map[string]any{}}})
	_ = e.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
		"delta": map[string]any{"type": "input_json_delta", "partial_json": string(tc.Input)}})
	_ = e.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	_ = e.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "tool_use", "stop_sequence": nil}, "usage": anthropicUsage(u)})
	_ = e.event("message_stop", map[string]any{"type": "message_stop"})
}
