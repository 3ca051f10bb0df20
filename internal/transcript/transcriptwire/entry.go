package transcriptwire

import "time"

// Speakers of transcript entries.
const (
	SpeakerHuman = "human"
	SpeakerAgent = "agent"
	SpeakerTool  = "tool"
	// SpeakerUnattributed is a user turn of the CLI's session store that no
	// sender announced: not sent through the API, not typed into an attached
	// terminal, not delivered by the platform. The CLI (or anything running
	// as its user) can write such turns, so they never count as a human's.
	SpeakerUnattributed = "unattributed"
	// SpeakerInjectedPrefix starts the speaker of a monitor's injected message:
	// "injected:<monitor>".
	SpeakerInjectedPrefix = "injected:"
	// SpeakerMailPrefix starts the speaker of mail delivered into a
	// conversation: "mail:<sending agent>".
	SpeakerMailPrefix = "mail:"
	// SpeakerTriggerPrefix starts the speaker of a monitor's trigger message
	// (the wake) in its monitor conversation: "trigger:<attachment>".
	SpeakerTriggerPrefix = "trigger:"
)

// Entry is one attributed transcript event.
type Entry struct {
	// Cursor is the entry's position in its conversation's transcript, from 1.
	Cursor int64 `json:"cursor"`
	// Speaker is human, agent, tool, unattributed, injected:<monitor>,
	// mail:<agent> or trigger:<attachment>.
	Speaker string `json:"speaker"`
	// Text is clean text (never raw PTY bytes).
	Text string `json:"text"`
	// Time is when the utterance happened (the CLI's timestamp when it has one).
	Time time.Time `json:"time"`
	// NativeID is the id of the line in the CLI's native session store; an
	// entry whose NativeID is already committed is never committed again.
	NativeID string `json:"nativeId,omitempty"`
}
