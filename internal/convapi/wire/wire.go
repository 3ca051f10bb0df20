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
)

// SendRequest is the JSON body of POST …/send. A text/plain body is the text itself.
type SendRequest struct {
	// Text is the whole message; it is delivered as one atomic submission.
	Text string `json:"text"`
}

// SendResponse is the 202 reply of POST …/send.
type SendResponse struct {
	// Accepted is true once the guest has queued the message for delivery.
	Accepted bool `json:"accepted"`
}

// TranscriptPage is the reply of GET …/transcript without follow.
type TranscriptPage struct {
	// Items are entries with Cursor >= the requested from, oldest first.
	Items []transcriptwire.Entry `json:"items"`
	// NextCursor is the from of the next page: one past the last item, or the
	// requested from when the page is empty.
	NextCursor int64 `json:"nextCursor"`
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
