package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// responsesRequest is the part of a Responses API request the fake reads.
type responsesRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Text         *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
	Name    string          `json:"name"`
	Args    string          `json:"arguments"`
}

type responsesPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []responsesPart
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

func parseResponses(req *Request) (responsesRequest, error) {
	var rr responsesRequest
	if err := json.Unmarshal(req.Body, &rr); err != nil {
		return rr, fmt.Errorf("decode responses request: %w", err)
	}
	req.Model, req.Stream, req.System = rr.Model, rr.Stream, rr.Instructions
	if rr.Text != nil && rr.Text.Format != nil && rr.Text.Format.Type == "json_schema" {
		req.JSONSchema = rr.Text.Format.Schema
	}
	var s string
	if json.Unmarshal(rr.Input, &s) == nil {
		req.Messages = append(req.Messages, Message{Role: "user", Text: s})
		return rr, nil
	}
	var items []responsesItem
	if len(rr.Input) > 0 {
		if err := json.Unmarshal(rr.Input, &items); err != nil {
			return rr, fmt.Errorf("decode responses input: %w", err)
		}
	}
	for _, it := range items {
		switch it.Type {
		case "message", "":
			role := it.Role
			if role == "developer" {
				role = "system"
			}
			req.Messages = append(req.Messages, Message{Role: role, Text: partsText(it.Content)})
		case "function_call", "custom_tool_call", "local_shell_call":
			req.Messages = append(req.Messages, Message{Role: "assistant",
				Text: fmt.Sprintf("[%s %s %s]", it.Type, it.Name, it.Args)})
		case "function_call_output", "custom_tool_call_output":
			req.Messages = append(req.Messages, Message{Role: "tool", Text: partsText(it.Output)})
		}
	}
	return rr, nil
}

func responsesUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":          u.InputTokens + u.CacheReadTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheReadTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          u.InputTokens + u.CacheReadTokens + u.OutputTokens,
	}
}

func (s *Server) openaiResponses(w http.ResponseWriter, r *http.Request) {
	req, err := newRequest(APIOpenAI, "responses", r)
	if err != nil {
		badRequest(w, err)
		return
	}
	if _, err := parseResponses(&req); err != nil {
		s.record(req)
		badRequest(w, err)
		return
	}
	o := s.settings()
	if o.ToolCall != nil && len(req.JSONSchema) == 0 {
		if tc := o.ToolCall(req); tc != nil {
			req.Reply = fmt.Sprintf("[function_call %s %s]", tc.Name, tc.Input)
			s.openaiFunctionCall(w, r, s.record(req), req, o, tc)
			return
		}
	}
	req.Reply = o.Reply(req)
	if len(req.JSONSchema) > 0 {
		req.Reply = string(ValueForSchema(req.JSONSchema, req.Reply))
	}
	n := s.record(req)
	respID, itemID := "resp_fake"+n, "msg_fake"+n
	toks := tokens(req.Reply)
	u := usageFor(o, req, len(toks))
	done := map[string]any{"id": itemID, "type": "message", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": req.Reply, "annotations": []any{}}}}
	resp := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(),
			"status": status, "model": req.Model, "output": output, "usage": usage}
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp("completed", []any{done}, responsesUsage(u)))
		return
	}
	e := newSSE(w, r, o.TokenDelay)
	seq := 0
	ev := func(name string, body map[string]any) error {
		body["type"] = name
		body["sequence_number"] = seq
		seq++
		return e.event(name, body)
	}
	if ev("response.created", map[string]any{"response": resp("in_progress", []any{}, nil)}) != nil ||
		ev("response.in_progress", map[string]any{"response": resp("in_progress", []any{}, nil)}) != nil ||
		ev("response.output_item.added", map[string]any{"output_index": 0, "item": map[string]any{
			"id": itemID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}}) != nil ||
		ev("response.content_part.added", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}) != nil {
		return
	}
	for i, t := range toks {
		if e.pause(i) != nil {
			return
		}
		if ev("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": 0,
			"content_index": 0, "delta": t}) != nil {
			return
		}
	}
	_ = ev("response.output_text.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0,
		"text": req.Reply})
	_ = ev("response.content_part.done", map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "output_text", "text": req.Reply, "annotations": []any{}}})
	_ = ev("response.output_item.done", map[string]any{"output_index": 0, "item": done})
	_ = ev("response.completed", map[string]any{"response": resp("completed", []any{done}, responsesUsage(u))})
}

// openaiModels answers a model listing with one entry per model seen so far
// (at least "fake-model"), in both the OpenAI list shape and Codex's shape.
func (s *Server) openaiModels(w http.ResponseWriter, r *http.Request) {
	req, _ := newRequest(APIOpenAI, "models", r)
	s.record(req)
	seen := map[string]bool{"fake-model": true}
	for _, q := range s.Requests() {
		if q.Model != "" {
			seen[q.Model] = true
		}
	}
	data := []any{}
	for m := range seen {
		data = append(data, map[string]any{"id": m, "object": "model", "owned_by": "fake"})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// openaiFunctionCall answers with one function_call output item.
func (s *Server) openaiFunctionCall(w http.ResponseWriter, r *http.Request, n string, req Request, o Options, tc *ToolCall) {
	respID, itemID, callID := "resp_fake"+n, "fc_fake"+n, "call_fake"+n
	u := usageFor(o, req, 1)
	item := func(status, args string) map[string]any {
		return map[string]any{"id": itemID, "type": "function_call", "status": status, "name": tc.Name,
			"call_id": callID, "arguments": args}
	}
	done := item("completed", string(tc.Input))
	resp := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(),
			"status": status, "model": req.Model, "output": output, "usage": usage}
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp("completed", []any{done}, responsesUsage(u)))
		return
	}
	e := newSSE(w, r, 0)
	seq := 0
	ev := func(name string, body map[string]any) {
		body["type"] = name
		body["sequence_number"] = seq
		seq++
		_ = e.event(name, body)
	}
	ev("response.created", map[string]any{"response": resp("in_progress", []any{}, nil)})
	ev("response.in_progress", map[string]any{"response": resp("in_progress", []any{}, nil)})
	ev("response.output_item.added", map[string]any{"output_index": 0, "item": item("in_progress", "")})
	ev("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": 0,
		"delta": string(tc.Input)})
	ev("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": 0,
		"arguments": string(tc.Input)})
	ev("response.output_item.done", map[string]any{"output_index": 0, "item": done})
	ev("response.completed", map[string]any{"response": resp("completed", []any{done}, responsesUsage(u))})
}
