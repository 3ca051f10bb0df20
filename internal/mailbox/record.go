package mailbox

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// bucket is the side-table bucket of the log.
const bucket = "mailbox"

// Event types of the log.
const (
	typeSent = "message_sent"
	typeRead = "inbox_read"
)

// record is one log event; its sequence is in its key.
type record struct {
	Type string    `json:"type"`
	Time time.Time `json:"timestamp"`
	// message_sent
	From                string `json:"from,omitempty"`
	To                  string `json:"to,omitempty"`
	ConversationContext string `json:"conversationContext,omitempty"`
	Body                string `json:"body,omitempty"`
	IdempotencyKey      string `json:"idempotencyKey,omitempty"`
	// inbox_read
	Agent string `json:"agent,omitempty"`
	UpTo  uint64 `json:"upTo,omitempty"`
}

func nsPrefix(ns string) string { return ns + "/" }

func logKey(ns string, seq uint64) string { return fmt.Sprintf("%s/%020d", ns, seq) }

// parseKey splits a log key into namespace and sequence.
func parseKey(key string) (string, uint64, error) {
	ns, s, ok := strings.Cut(key, "/")
	if !ok {
		return "", 0, fmt.Errorf("mailbox: bad log key %q", key)
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("mailbox: bad log key %q: %w", key, err)
	}
	return ns, seq, nil
}

func decode(key string, val []byte) (string, uint64, *record, error) {
	ns, seq, err := parseKey(key)
	if err != nil {
		return "", 0, nil, err
	}
	r := &record{}
	if err := json.Unmarshal(val, r); err != nil {
		return "", 0, nil, fmt.Errorf("mailbox: decode %s: %w", key, err)
	}
	return ns, seq, r, nil
}

func (r *record) mail(seq uint64) Mail {
	return Mail{Seq: seq, Time: r.Time, From: r.From, To: r.To, ConversationContext: r.ConversationContext, Body: r.Body}
}
