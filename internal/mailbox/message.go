package mailbox

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"aicli.dev/aicli/internal/mailbox/mailwire"
)

// Limits of a message.
const (
	// MaxBodyBytes is the largest message body accepted (64 KiB).
	MaxBodyBytes = mailwire.MaxBodyBytes
	// MaxContextBytes is the largest conversation context accepted.
	MaxContextBytes = 1 << 10
	// MaxIdempotencyKeyBytes is the largest idempotency key accepted.
	MaxIdempotencyKeyBytes = 256
)

// Message is a send command.
type Message struct {
	// Namespace is the owner's namespace; sender and recipient both live in it.
	Namespace string
	// From and To name the sending and receiving agents (DNS labels).
	From, To string
	// ConversationContext optionally says what the message is about (e.g. the
	// sender's conversation).
	ConversationContext string
	// Body is the text, 1 to MaxBodyBytes bytes.
	Body string
	// IdempotencyKey, when set, makes a retried Append with the same sender and
	// key return the first result instead of appending again.
	IdempotencyKey string
}

// Sent is the result of an Append.
type Sent struct {
	// Seq is the message's position in its namespace's log.
	Seq uint64
	// Time is when it was appended.
	Time time.Time
	// Replayed is true when the Append was a retry answered from the first
	// result (nothing was appended).
	Replayed bool
}

// Mail is one message in an inbox.
type Mail struct {
	Seq                 uint64
	Time                time.Time
	From, To            string
	ConversationContext string
	Body                string
}

// ValidationError is a refused command; Field names the offending input.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("mailbox: invalid %s: %s", e.Field, e.Reason)
}

// ErrIdempotencyConflict is returned when an idempotency key is reused for a
// different message.
var ErrIdempotencyConflict = errors.New("mailbox: idempotency key already used for a different message")

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

func checkName(field, v string) error {
	if v == "" {
		return invalid(field, "is required")
	}
	if errs := validation.IsDNS1123Label(v); len(errs) > 0 {
		return invalid(field, "%q is not a valid DNS label: %s", v, errs[0])
	}
	return nil
}

// Check validates a message as Append would, without appending it.
func Check(m Message) error { return m.validate() }

func (m *Message) validate() error {
	if err := checkName("namespace", m.Namespace); err != nil {
		return err
	}
	if err := checkName("from", m.From); err != nil {
		return err
	}
	if err := checkName("to", m.To); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(m.Body) == "":
		return invalid("body", "is empty")
	case len(m.Body) > MaxBodyBytes:
		return invalid("body", "is %d bytes, the limit is %d (64 KiB)", len(m.Body), MaxBodyBytes)
	case len(m.ConversationContext) > MaxContextBytes:
		return invalid("conversationContext", "is %d bytes, the limit is %d", len(m.ConversationContext), MaxContextBytes)
	case len(m.IdempotencyKey) > MaxIdempotencyKeyBytes:
		return invalid("idempotencyKey", "is %d bytes, the limit is %d", len(m.IdempotencyKey), MaxIdempotencyKeyBytes)
	}
	return nil
}
