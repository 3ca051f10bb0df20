package ocdb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// OpenCode keeps sessions in SQLite (opencode.db: tables session, message,
// part; each row's "data" column is JSON). The row line format is one JSON
// object per part row joined with its message row — what Dump writes — so
// every line stands on its own:
//
//	{"message":{"id":…,"session_id":…,"time_created":<ms>,"data":{"role":…}},
//	 "part":{"id":…,"message_id":…,"time_created":<ms>,"data":{"type":"text","text":…}}}

// Row is one row of the message or part table.
type Row struct {
	ID          string          `json:"id"`
	SessionID   string          `json:"session_id"`
	MessageID   string          `json:"message_id,omitempty"`
	TimeCreated int64           `json:"time_created"`
	Data        json.RawMessage `json:"data"`
}

// RowLine is one transcript line: a part and the message it belongs to.
type RowLine struct {
	Message Row `json:"message"`
	Part    Row `json:"part"`
}

type messageData struct {
	Role    string `json:"role"`
	ModelID string `json:"modelID"`
	Time    struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	Finish string `json:"finish"`
	Error  *struct {
		Name string `json:"name"`
	} `json:"error"`
}

// MessageComplete reports whether a message row will not change any more: a
// user message as soon as it exists, an assistant message once it has a
// completion time or an error. Dumps for following leave out the parts of
// incomplete messages (their text parts grow while the reply streams).
func MessageComplete(data json.RawMessage) bool {
	var m messageData
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	return m.Role == "user" || m.Time.Completed != 0 || m.Error != nil
}

type partData struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	Ignored   bool   `json:"ignored"`
	Tool      string `json:"tool"`
	CallID    string `json:"callID"`
	State     struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output string          `json:"output"`
		Error  string          `json:"error"`
	} `json:"state"`
}

// Parse reads RowLine lines into attributed entries: one entry per user or
// assistant text part and per tool part (the call, and its output once
// completed). Synthetic parts (text OpenCode adds itself), reasoning, step
// markers, snapshots and patches are left out. Ids are the part ids. Input
// that is not a JSON object (e.g. the bytes of opencode.db itself) yields
// nothing and no error.
func Parse(r io.Reader) ([]harness.TranscriptEntry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var out []harness.TranscriptEntry
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 || b[0] != '{' {
			continue // not a row line
		}
		var l RowLine
		if err := json.Unmarshal(b, &l); err != nil {
			return out, fmt.Errorf("opencode row line %d: %w", n, err)
		}
		es, err := lineEntries(l)
		if err != nil {
			return out, fmt.Errorf("opencode row line %d: %w", n, err)
		}
		out = append(out, es...)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("read opencode rows: %w", err)
	}
	return out, nil
}

func lineEntries(l RowLine) ([]harness.TranscriptEntry, error) {
	if l.Part.ID == "" || l.Message.ID == "" {
		return nil, fmt.Errorf("line without part or message id")
	}
	var m messageData
	if err := json.Unmarshal(l.Message.Data, &m); err != nil {
		return nil, fmt.Errorf("message data: %w", err)
	}
	var p partData
	if err := json.Unmarshal(l.Part.Data, &p); err != nil {
		return nil, fmt.Errorf("part data: %w", err)
	}
	ts := time.UnixMilli(l.Part.TimeCreated).UTC()
	entry := func(id, role, text string) harness.TranscriptEntry {
		e := harness.TranscriptEntry{TranscriptEntry: ptyapi.TranscriptEntry{ID: id, Role: role,
			Text: strings.TrimSpace(text), Timestamp: ts}, MessageID: l.Message.ID}
		if m.Role == "assistant" {
			e.Model = m.ModelID
		}
		return e
	}
	var out []harness.TranscriptEntry
	switch p.Type {
	case "text":
		if p.Synthetic || p.Ignored || strings.TrimSpace(p.Text) == "" {
			return nil, nil
		}
		switch m.Role {
		case "user":
			out = append(out, entry(l.Part.ID, ptyapi.RoleUser, p.Text))
		case "assistant":
			out = append(out, entry(l.Part.ID, ptyapi.RoleAssistant, p.Text))
		}
	case "tool":
		out = append(out, entry(l.Part.ID, ptyapi.RoleTool, strings.TrimSpace(p.Tool+" "+compactJSON(p.State.Input))))
		switch p.State.Status {
		case "completed":
			if strings.TrimSpace(p.State.Output) != "" {
				out = append(out, entry(l.Part.ID+":output", ptyapi.RoleTool, p.State.Output))
			}
		case "error":
			out = append(out, entry(l.Part.ID+":output", ptyapi.RoleTool, p.State.Error))
		}
	}
	return out, nil
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
