package claude

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// sessionLine is the part of one session-store line the parser reads. Claude
// Code writes many bookkeeping lines (attachments, file-history snapshots,
// api-request blobs, cost state); only "user" and "assistant" lines carry the
// conversation.
type sessionLine struct {
	Type        string    `json:"type"`
	UUID        string    `json:"uuid"`
	Timestamp   time.Time `json:"timestamp"`
	IsMeta      bool      `json:"isMeta"`
	IsSidechain bool      `json:"isSidechain"`
	RequestID   string    `json:"requestId"`
	Message     struct {
		ID      string          `json:"id"`
		Role    string          `json:"role"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"`
	ToolUseID string          `json:"tool_use_id"`
}

// ParseTranscript implements harness.Adapter: one entry per user text,
// assistant text, tool call and tool result, with the line's uuid as id
// (suffixed "#n" for the n-th further block of one line). Thinking blocks,
// meta lines (local-command caveats), sidechains and system reminders are left out.
func (a *Adapter) ParseTranscript(r io.Reader) ([]harness.TranscriptEntry, error) {
	var out []harness.TranscriptEntry
	err := harness.ScanJSONL(r, "claude session", func(l sessionLine, _ []byte) error {
		out = append(out, lineEntries(l)...)
		return nil
	})
	return out, err
}

func lineEntries(l sessionLine) []harness.TranscriptEntry {
	if (l.Type != "user" && l.Type != "assistant") || l.IsMeta || l.IsSidechain || l.UUID == "" {
		return nil
	}
	var out []harness.TranscriptEntry
	add := func(role, text string) {
		text = strings.TrimSpace(text)
		if text == "" {
			return
		}
		id := l.UUID
		if len(out) > 0 {
			id = fmt.Sprintf("%s#%d", l.UUID, len(out))
		}
		out = append(out, harness.TranscriptEntry{
			TranscriptEntry: ptyapi.TranscriptEntry{ID: id, Role: role, Text: text, Timestamp: l.Timestamp},
			MessageID:       l.Message.ID, RequestID: l.RequestID, Model: l.Message.Model,
		})
	}
	textRole := ptyapi.RoleUser
	if l.Type == "assistant" {
		textRole = ptyapi.RoleAssistant
	}
	var s string
	if json.Unmarshal(l.Message.Content, &s) == nil {
		add(userTextRole(textRole, s), unwrapPastes(textRole, s))
		return out
	}
	var blocks []contentBlock
	if json.Unmarshal(l.Message.Content, &blocks) != nil {
		return nil
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
				continue
			}
			add(userTextRole(textRole, b.Text), unwrapPastes(textRole, b.Text))
		case "tool_use":
			add(ptyapi.RoleTool, fmt.Sprintf("%s %s", b.Name, compactJSON(b.Input)))
		case "tool_result":
			add(ptyapi.RoleTool, blocksText(b.Content))
		}
	}
	return out
}

// userTextRole marks the CLI's own slash-command echo lines as system.
func userTextRole(role, text string) string {
	t := strings.TrimSpace(text)
	if role == ptyapi.RoleUser && (strings.HasPrefix(t, "<command-") || strings.HasPrefix(t, "<local-command-")) {
		return ptyapi.RoleSystem
	}
	return role
}

// unwrapPastes restores the text of a user turn as it was pasted: Claude
// Code 2.1.332 stores a multi-line bracketed paste (every message the guest
// delivers is one) wrapped as `<pasted_content id="3f3f">\n…\n</pasted_content
// id="3f3f">`, which would hide the sent text from attribution (a monitor's
// trigger would read as typed by a human).
func unwrapPastes(role, text string) string {
	if role != ptyapi.RoleUser {
		return text
	}
	const open, closing = `<pasted_content id="`, `</pasted_content id="`
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, open)
		if i < 0 {
			break
		}
		id, after, ok := strings.Cut(rest[i+len(open):], `">`)
		end := closing + id + `">`
		j := strings.Index(after, end)
		if !ok || strings.ContainsAny(id, "\"<>\n") || j < 0 {
			b.WriteString(rest[:i+len(open)])
			rest = rest[i+len(open):]
			continue
		}
		b.WriteString(rest[:i])
		b.WriteString(strings.TrimSuffix(strings.TrimPrefix(after[:j], "\n"), "\n"))
		rest = after[j+len(end):]
	}
	b.WriteString(rest)
	return b.String()
}

// blocksText flattens a tool result's string-or-blocks content.
func blocksText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []contentBlock
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
