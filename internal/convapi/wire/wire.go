// Package wire holds the request and response shapes of the conversation
// subresources, shared by the server (convapi) and its clients (aictl,
// consoles) without pulling the server into them.
package wire

import "aicli.dev/aicli/internal/transcript/transcriptwire"

// Subresource names under /namespaces/{ns}/agents/{name}/ and
// /namespaces/{ns}/conversations/{name}/.
const (
	// SubStart (agents): start or continue the agent's live conversation.
	SubStart = "start"
	// SubSend (conversations): deliver one message atomically.
	SubSend = "send"
	// SubScreen (conversations): the rendered screen.
	SubScreen = "screen"
	// SubAttach (conversations): interactive websocket.
	SubAttach = "attach"
	// SubTranscript (conversations): cursored read or NDJSON follow.
	SubTranscript = "transcript"
	// SubBudget (agents): GET shows the budget; POST …/budget/topup (BudgetTopUp) adds funds or changes the rate.
	SubBudget = "budget"
	// BudgetTopUp is the path below SubBudget that tops a budget up.
	BudgetTopUp = "topup"
)

// TopUpRequest is the JSON body of POST agents/{name}/budget/topup. Amounts are decimal dollar strings; at least
// one is set.
type TopUpRequest struct {
	// USD is added to the agent's bucket.
	USD string `json:"usd,omitempty"`
	// USDPerHour, when set, becomes spec.budget.usdPerHour.
	USDPerHour string `json:"usdPerHour,omitempty"`
}

// BudgetView is the reply of GET agents/{name}/budget and of a top-up.
type BudgetView struct {
	Agent          string `json:"agent"`
	USDPerHour     string `json:"usdPerHour"`
	BurstUSD       string `json:"burstUSD"`
	MaxWaitSeconds int64  `json:"maxWaitSeconds"`
	AvailableUSD   string `json:"availableUSD"`
	AsOf           string `json:"asOf"`
	SpentUSD       string `json:"spentUSD"`
	ToppedUpUSD    string `json:"toppedUpUSD"`
	// Resumed names the conversations a top-up resumed (they were paused with BudgetExhausted).
	Resumed []string `json:"resumed,omitempty"`
}

// SendRequest is the JSON body of POST …/send. A text/plain body is the text itself.
type SendRequest struct {
	// Text is the whole message; it is delivered as one atomic submission.
	Text string `json:"text"`
	// Monitor, when set, sends the text as advice of that monitor agent (a
	// DNS-1123 label): this supervisor prefixes it with
	// transcriptwire.AdvicePrefix and attributes it to speaker
	// injected:<monitor> instead of human (cross-supervisor monitors,
	// docs/monitors.md). The size limit applies to prefix and text together.
	Monitor string `json:"monitor,omitempty"`
}

// SendResponse is the 202 reply of POST …/send.
type SendResponse struct {
	// Accepted is true once the guest has queued the message for delivery.
	Accepted bool `json:"accepted"`
	// Held is true when the agent's budget holds the message: it is stored durably and delivered, in order, once
	// the budget covers it (the conversation's BudgetAvailable condition says when).
	Held bool `json:"held,omitempty"`
}

// TranscriptPage is the reply of GET …/transcript without follow.
type TranscriptPage struct {
	// Items are entries with Cursor >= the requested from (with ?before=C:
	// the up to limit entries just before C), oldest first.
	Items []transcriptwire.Entry `json:"items"`
	// NextCursor is the from of the next page: one past the last item, or the
	// requested from (before) when the page is empty.
	NextCursor int64 `json:"nextCursor"`
	// PrevCursor (only with ?before) is the before of the next older page:
	// the first item's cursor; 0 (omitted) when no older entry exists.
	PrevCursor int64 `json:"prevCursor,omitempty"`
}

// Transcript paging limits.
const (
	// DefaultTranscriptLimit is the page size when ?limit is absent.
	DefaultTranscriptLimit = 500
	// MaxTranscriptLimit is the largest ?limit accepted.
	MaxTranscriptLimit = 5000
)

// ControlTypeResize is the Type of a resize control message.
const ControlTypeResize = "resize"

// ControlMessage is a text frame sent by an attach client. Binary frames are
// raw keystrokes (client → server) and raw PTY output (server → client).
type ControlMessage struct {
	// Type is ControlTypeResize.
	Type string `json:"type"`
	// Cols and Rows are the new terminal size.
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}
