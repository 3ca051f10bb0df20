package fakeprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// geminiRequest is the part of a generateContent request the fake reads.
type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	GenerationConfig  *struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

type geminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text             string          `json:"text"`
		Thought          bool            `json:"thought"`
		FunctionCall     json.RawMessage `json:"functionCall"`
		FunctionResponse json.RawMessage `json:"functionResponse"`
	} `json:"parts"`
}

func (c geminiContent) text() (string, bool) {
	var out []string
	toolOnly := len(c.Parts) > 0
	for _, p := range c.Parts {
		switch {
		case p.FunctionResponse != nil:
			out = append(out, string(p.FunctionResponse))
		case p.FunctionCall != nil:
			toolOnly = false
			out = append(out, "[functionCall "+string(p.FunctionCall)+"]")
		case p.Thought:
			toolOnly = false
		default:
			toolOnly = false
			if p.Text != "" && !isHarnessContext(p.Text) {
				out = append(out, p.Text)
			}
		}
	}
	return strings.Join(out, "\n"), toolOnly
}

func parseGemini(req *Request, model string) error {
	var gr geminiRequest
	if err := json.Unmarshal(req.Body, &gr); err != nil {
		return fmt.Errorf("decode generateContent request: %w", err)
	}
	req.Model = model
	if gr.SystemInstruction != nil {
		req.System, _ = gr.SystemInstruction.text()
	}
	for _, c := range gr.Contents {
		text, toolOnly := c.text()
		role := c.Role
		switch {
		case toolOnly:
			role = "tool"
		case role == "model":
			role = "assistant"
		case role == "":
			role = "user"
		}
		req.Messages = append(req.Messages, Message{Role: role, Text: text})
	}
	if g := gr.GenerationConfig; g != nil && strings.Contains(g.ResponseMimeType, "json") {
		switch {
		case len(g.ResponseJSONSchema) > 0:
			req.JSONSchema = g.ResponseJSONSchema
		case len(g.ResponseSchema) > 0:
			req.JSONSchema = g.ResponseSchema
		default:
			req.JSONSchema = json.RawMessage(`{"type":"object"}`)
		}
	}
	return nil
}

func geminiUsage(u Usage) map[string]any {
	return map[string]any{
		"promptTokenCount":        u.InputTokens + u.CacheReadTokens,
		"cachedContentTokenCount": u.CacheReadTokens,
		"candidatesTokenCount":    u.OutputTokens,
		"totalTokenCount":         u.InputTokens + u.CacheReadTokens + u.OutputTokens,
	}
}

func geminiChunk(text string, final bool, u *Usage, model string) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
		"index": 0}
	if final {
		cand["finishReason"] = "STOP"
	}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": model}
	if u != nil {
		out["usageMetadata"] = geminiUsage(*u)
	}
	return out
}

// gemini serves POST /{version}/models/{model}:{method}.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request) {
	model, method, ok := strings.Cut(r.PathValue("call"), ":")
	op := method
	switch method {
	case "generateContent", "streamGenerateContent", "countTokens":
	default:
		ok = false
	}
	if !ok {
		s.unknown(w, r)
		return
	}
	req, err := newRequest(APIGemini, op, r)
	if err != nil {
		badRequest(w, err)
		return
	}
	if err := parseGemini(&req, model); err != nil {
		s.record(req)
		badRequest(w, err)
		return
	}
	o := s.settings()
	if method == "countTokens" {
		s.record(req)
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": usageFor(o, req, 0).InputTokens})
		return
	}
	req.Stream = method == "streamGenerateContent"
	req.Reply = o.Reply(req)
	if len(req.JSONSchema) > 0 {
		req.Reply = string(ValueForSchema(req.JSONSchema, req.Reply))
	}
	s.record(req)
	toks := tokens(req.Reply)
	u := usageFor(o, req, len(toks))
	if !req.Stream {
		writeJSON(w, http.StatusOK, geminiChunk(req.Reply, true, &u, model))
		return
	}
	if r.URL.Query().Get("alt") != "sse" {
		// Without alt=sse the stream is one JSON array of chunks.
		writeJSON(w, http.StatusOK, []any{geminiChunk(req.Reply, true, &u, model)})
		return
	}
	e := newSSE(w, r, o.TokenDelay)
	for i, t := range toks {
		if e.pause(i) != nil {
			return
		}
		last := i == len(toks)-1
		var up *Usage
		if last {
			up = &u
		}
		if e.event("", geminiChunk(t, last, up, model)) != nil {
			return
		}
	}
}
