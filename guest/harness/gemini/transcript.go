package gemini

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// chatLine is one line of a chat file: the header (sessionId, projectHash,
// startTime), a "$set" update of session fields, or one message record.
type chatLine struct {
	ID        string          `json:"id"`
	Timestamp time.Time       `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Model     string          `json:"model"`
	ToolCalls []toolCall      `json:"toolCalls"`
	Set       *struct {
		Messages []chatLine `json:"messages"`
	} `json:"$set"`
}

type toolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
}

// ParseTranscript implements harness.Adapter: one entry per user message,
// model ("gemini") reply, tool call and tool result. The CLI's injected
// <session_context> message and info/error/warning records are left out.
func (a *Adapter) ParseTranscript(r io.Reader) ([]harness.TranscriptEntry, error) {
	var out []harness.TranscriptEntry
	err := harness.ScanJSONL(r, "gemini chat", func(l chatLine, _ []byte) error {
		if l.Set != nil {
			for _, m := range l.Set.Messages {
				out = append(out, messageEntries(m)...)
			}
			return nil
		}
		out = append(out, messageEntries(l)...)
		return nil
	})
	return out, err
}

func messageEntries(m chatLine) []harness.TranscriptEntry {
	if m.ID == "" {
		return nil
	}
	var out []harness.TranscriptEntry
	add := func(id, role, text string) {
		if text = strings.TrimSpace(text); text == "" {
			return
		}
		e := harness.TranscriptEntry{TranscriptEntry: ptyapi.TranscriptEntry{ID: id, Role: role, Text: text,
			Timestamp: m.Timestamp}}
		if role == ptyapi.RoleAssistant {
			e.Model = m.Model
		}
		out = append(out, e)
	}
	switch m.Type {
	case "user":
		text := contentText(m.Content)
		if strings.HasPrefix(strings.TrimSpace(text), "<session_context>") {
			return nil
		}
		add(m.ID, ptyapi.RoleUser, text)
	case "gemini":
		add(m.ID, ptyapi.RoleAssistant, contentText(m.Content))
		for i, tc := range m.ToolCalls {
			id := tc.ID
			if id == "" {
				id = fmt.Sprintf("%s#tool%d", m.ID, i)
			}
			add(id, ptyapi.RoleTool, strings.TrimSpace(tc.Name+" "+compactJSON(tc.Args)))
			if len(tc.Result) > 0 && string(tc.Result) != "null" {
				add(id+":result", ptyapi.RoleTool, resultText(tc.Result))
			}
		}
	}
	return out
}

// contentText reads a message's content: a string or a list of {text} parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// resultText flattens a tool result: function responses' output fields, else the JSON.
func resultText(raw json.RawMessage) string {
	var parts []struct {
		FunctionResponse struct {
			Response struct {
				Output string `json:"output"`
				Error  string `json:"error"`
			} `json:"response"`
		} `json:"functionResponse"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var out []string
		for _, p := range parts {
			if r := p.FunctionResponse.Response; r.Output != "" || r.Error != "" {
				out = append(out, r.Output+r.Error)
			}
		}
		if len(out) > 0 {
			return strings.Join(out, "\n")
		}
	}
	return compactJSON(raw)
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
