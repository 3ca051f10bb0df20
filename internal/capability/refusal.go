package capability

import "fmt"

// Reason says why a token was refused.
type Reason string

// The reasons of a Refusal.
const (
	ReasonMalformed         Reason = "malformed"
	ReasonUnknownKey        Reason = "unknown_key"
	ReasonBadSignature      Reason = "bad_signature"
	ReasonWrongNamespace    Reason = "wrong_namespace"
	ReasonWrongConversation Reason = "wrong_conversation"
	ReasonWrongHolder       Reason = "wrong_holder"
	ReasonWrongTool         Reason = "wrong_tool"
	ReasonExpired           Reason = "expired"
	ReasonParamMismatch     Reason = "param_mismatch"
	ReasonUnknownCaveat     Reason = "unknown_caveat"
)

// Refusal is the error of a token that does not authorise a call. Detail is
// for logs; it never holds key material.
type Refusal struct {
	Reason Reason
	Detail string
}

func (r *Refusal) Error() string {
	if r.Detail == "" {
		return "capability refused: " + string(r.Reason)
	}
	return fmt.Sprintf("capability refused: %s: %s", r.Reason, r.Detail)
}

func refuse(reason Reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}
