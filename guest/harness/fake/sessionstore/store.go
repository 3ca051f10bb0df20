package sessionstore

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Dir is the store directory relative to HOME.
const Dir = ".fake/sessions"

// Record is one JSONL line, shaped like Claude Code's session lines.
type Record struct {
	Type       string    `json:"type"` // "user" or "assistant"
	UUID       string    `json:"uuid"`
	ParentUUID string    `json:"parentUuid,omitempty"`
	SessionID  string    `json:"sessionId"`
	Timestamp  time.Time `json:"timestamp"`
	Cwd        string    `json:"cwd,omitempty"`
	RequestID  string    `json:"requestId,omitempty"`
	Turn       int       `json:"turn"`
	Message    Message   `json:"message"`
}

// Message is the provider-shaped message inside a record.
type Message struct {
	ID      string    `json:"id,omitempty"`
	Type    string    `json:"type,omitempty"`
	Role    string    `json:"role"`
	Model   string    `json:"model,omitempty"`
	Content []Content `json:"content"`
	Usage   *Usage    `json:"usage,omitempty"`
}

// Content is one content block.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Usage is Claude-shaped token usage.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Text joins the record's text blocks.
func (r Record) Text() string {
	s := ""
	for _, c := range r.Message.Content {
		if c.Type == "text" {
			s += c.Text
		}
	}
	return s
}

// Path is the store file of sessionID under home.
func Path(home, sessionID string) string {
	return filepath.Join(home, Dir, sessionID+".jsonl")
}

// Append writes one record as a line and syncs the file.
func Append(path string, rec Record) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create session dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open session store: %w", err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("encode record: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("append record: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync session store: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close session store: %w", err)
	}
	return nil
}

// Read decodes all records from r. A truncated last line (a crash mid-write)
// is ignored; a malformed line elsewhere is an error.
func Read(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var pendingErr error
	line := 0
	for sc.Scan() {
		line++
		if pendingErr != nil {
			return nil, pendingErr
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			pendingErr = fmt.Errorf("session store line %d: %w", line, err)
			continue
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read session store: %w", err)
	}
	return out, nil
}

// ReadFile reads the records of one store file.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open session store: %w", err)
	}
	defer f.Close()
	return Read(f)
}

// ErrNoSession is returned when a resume names a session with no store file.
var ErrNoSession = errors.New("no such session")
