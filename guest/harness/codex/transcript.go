package codex

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// rolloutLine is one line of a rollout file: session_meta, turn_context,
// response_item (the model-visible history), event_msg (UI events, which
// repeat the messages) and bookkeeping records.
type rolloutLine struct {
	Timestamp time.Time       `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type responseItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Action    json.RawMessage `json:"action"`
}

// contextPrefixes start user-role items Codex injects itself (environment,
// AGENTS.md, instructions): context, not something anyone typed.
var contextPrefixes = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<INSTRUCTIONS>",
	"<turn_aborted>", "<user_shell_command>"}

// ParseTranscript implements harness.Adapter: one entry per response_item
// message (user, assistant), tool call and tool output. Developer
// instructions, injected context and reasoning are left out. Ids are the
// item's own id (else the call id) qualified by a hash of the line, or the
// line hash alone: stable on re-read, unique within a file.
func (a *Adapter) ParseTranscript(r io.Reader) ([]harness.TranscriptEntry, error) {
	var out []harness.TranscriptEntry
	err := harness.ScanJSONL(r, "codex rollout", func(l rolloutLine, b []byte) error {
		if l.Type != "response_item" {
			return nil
		}
		var it responseItem
		if err := json.Unmarshal(l.Payload, &it); err != nil {
			return err // ScanJSONL adds the line number
		}
		if e, ok := itemEntry(it, l.Timestamp, b); ok {
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

func itemEntry(it responseItem, ts time.Time, raw []byte) (harness.TranscriptEntry, bool) {
	var role, text, id string
	switch it.Type {
	case "message":
		text = strings.TrimSpace(partsText(it.Content))
		switch it.Role {
		case "user":
			if hasAnyPrefix(text, contextPrefixes...) {
				return harness.TranscriptEntry{}, false
			}
			role = ptyapi.RoleUser
		case "assistant":
			role = ptyapi.RoleAssistant
		default: // developer / system instructions
			return harness.TranscriptEntry{}, false
		}
		id = it.ID
	case "function_call", "custom_tool_call":
		args := it.Arguments
		if args == "" {
			args = it.Input
		}
		role, text, id = ptyapi.RoleTool, strings.TrimSpace(it.Name+" "+args), it.ID
		if id == "" && it.CallID != "" {
			id = it.CallID
		}
	case "local_shell_call":
		role, text, id = ptyapi.RoleTool, "shell "+string(it.Action), it.ID
	case "function_call_output", "custom_tool_call_output":
		role, text, id = ptyapi.RoleTool, strings.TrimSpace(outputText(it.Output)), it.ID
		if id == "" && it.CallID != "" {
			id = it.CallID + ":output"
		}
	default:
		return harness.TranscriptEntry{}, false
	}
	if text == "" {
		return harness.TranscriptEntry{}, false
	}
	// The store's ids are not unique on their own (a provider may reuse item
	// ids across processes, tool outputs have none): qualify them with a hash
	// of the line, which never changes once written.
	sum := sha256.Sum256(raw)
	if id == "" {
		id = "line-" + hex.EncodeToString(sum[:12])
	} else {
		id += ":" + hex.EncodeToString(sum[:4])
	}
	e := harness.TranscriptEntry{TranscriptEntry: ptyapi.TranscriptEntry{ID: id, Role: role, Text: text, Timestamp: ts}}
	if role == ptyapi.RoleAssistant {
		e.MessageID = it.ID
	}
	return e, true
}

// partsText joins the text of input_text / output_text parts.
func partsText(raw json.RawMessage) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// outputText reads a tool output: a string, {"content": ...} or content parts.
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil && len(obj.Content) > 0 {
		return outputText(obj.Content)
	}
	return partsText(raw)
}
