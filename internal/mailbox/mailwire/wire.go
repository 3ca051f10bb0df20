package mailwire

import (
	"strings"
	"time"
)

// Subresources of agents.
const (
	// SubMail is POST …/namespaces/{ns}/agents/{from}/mail: send one message (SendRequest → SendResponse, 201).
	SubMail = "mail"
	// SubInbox is GET …/agents/{name}/inbox?unread=true&after=SEQ&limit=N: a page of the inbox (Inbox).
	SubInbox = "inbox"
	// InboxAck is the path below SubInbox that advances the read cursor: POST …/inbox/ack (AckRequest → AckResponse).
	InboxAck = "ack"
)

// Paging of GET …/inbox.
// MaxBodyBytes is the largest mail body the supervisor accepts (64 KiB).
const MaxBodyBytes = 64 << 10

const (
	// DefaultLimit is the page size when limit is not given.
	DefaultLimit = 100
	// MaxLimit is the largest page a request may ask for.
	MaxLimit = 1000
)

// Query parameters of GET …/inbox.
const (
	ParamUnread = "unread"
	ParamAfter  = "after"
	ParamLimit  = "limit"
)

// SendRequest is the body of POST …/agents/{from}/mail.
type SendRequest struct {
	// To is the recipient agent, in the sender's namespace.
	To string `json:"to"`
	// Body is the text, 1 byte to 64 KiB.
	Body string `json:"body"`
	// ConversationContext optionally says what the mail is about.
	ConversationContext string `json:"conversationContext,omitempty"`
	// IdempotencyKey makes a retried send return the first result instead of appending again.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// SendResponse answers an appended (synced) send.
type SendResponse struct {
	// Seq is the message's position in its namespace's mail log.
	Seq uint64 `json:"seq"`
	// Time is when it was appended.
	Time time.Time `json:"time"`
	// Replayed is true when a retry with the same idempotency key was answered from the first send.
	Replayed bool `json:"replayed,omitempty"`
}

// Mail is one message of an inbox.
type Mail struct {
	Seq                 uint64    `json:"seq"`
	Time                time.Time `json:"time"`
	From                string    `json:"from"`
	To                  string    `json:"to"`
	ConversationContext string    `json:"conversationContext,omitempty"`
	Body                string    `json:"body"`
}

// Inbox is one page of an agent's inbox, oldest first.
type Inbox struct {
	// Agent is the inbox's owner.
	Agent string `json:"agent"`
	// Items are the page's messages in sequence order.
	Items []Mail `json:"items"`
	// ReadCursor is the agent's read cursor: every message at or below it is read.
	ReadCursor uint64 `json:"readCursor"`
	// Unread counts the agent's messages after ReadCursor (all of them, not only this page's).
	Unread int `json:"unread"`
	// Next, when non-zero, is the after= value of the next page; 0 when this page is the last.
	Next uint64 `json:"next,omitempty"`
}

// AckRequest is the body of POST …/inbox/ack.
type AckRequest struct {
	// UpTo marks every message at or below this sequence read.
	UpTo uint64 `json:"upTo"`
}

// AckResponse is the read cursor after an ack (it only moves forward).
type AckResponse struct {
	Agent      string `json:"agent"`
	ReadCursor uint64 `json:"readCursor"`
	Unread     int    `json:"unread"`
}

// FirstLine is the first line of a body, cut to max runes with "…" when
// anything was left out (for one-line listings).
func FirstLine(body string, max int) string {
	line, rest, more := strings.Cut(strings.TrimSpace(body), "\n")
	line = strings.ReplaceAll(strings.TrimRight(line, "\r"), "\t", " ")
	r := []rune(line)
	if len(r) > max {
		return string(r[:max-1]) + "…"
	}
	if more && strings.TrimSpace(rest) != "" {
		return line + " …"
	}
	return line
}
