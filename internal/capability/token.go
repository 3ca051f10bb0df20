package capability

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/macaroon.v2"
)

const (
	// MaxTokenLen is the longest token Verify and Attenuate accept.
	MaxTokenLen = 16 << 10
	nonceBytes  = 16
	// idLen is the length of a macaroon id: the key id's hex, then the nonce's.
	idLen = 2*keyIDBytes + 2*nonceBytes
)

// The caveat names (first-party caveats are "name value").
const (
	caveatNamespace    = "ns"
	caveatAgent        = "agent"
	caveatConversation = "conv"
	caveatHolder       = "holder"
	caveatGrant        = "grant"
	caveatGeneration   = "gen"
	caveatTool         = "tool"
	caveatParam        = "param"
	caveatExpires      = "expires"
	caveatCallsPerHour = "calls-per-hour"
)

var encoding = base64.RawURLEncoding.Strict()

// Claims is what a token grants. Mint needs every string field but Params,
// and a non-zero Expires.
type Claims struct {
	Namespace string
	Agent     string
	// Conversation is the conversation's UID.
	Conversation string
	// Holder is the guest key's fingerprint (compared as a string).
	Holder          string
	Grant           string
	GrantGeneration int64
	Tool            string
	// Params are pinned parameters: a call passing one with another value is
	// refused; the server injects them into calls that omit them.
	Params map[string]string
	// Expires is the end of the lease.
	Expires time.Time
	// CallsPerHour caps the calls; 0 means no cap.
	CallsPerHour int
}

// Presentation is what the supervisor knows of a call: the connection it
// arrived on (namespace, conversation, guest key), the tool and parameters
// the caller asked for, and the time.
type Presentation struct {
	Namespace    string
	Conversation string
	Holder       string
	Tool         string
	// Params are the --k=v parameters the caller passed.
	Params map[string]string
	// Now is the time of the call; zero means time.Now().
	Now time.Time
}

// Verified is an accepted token.
type Verified struct {
	// ID identifies the root macaroon: attenuated tokens share it, a re-mint
	// (lease renewal) gets a new one. A calls-per-hour cap meant to outlive
	// renewals is better counted per grant, generation, conversation and tool.
	ID string
	// Claims are the effective claims: the most restrictive of every caveat
	// (earliest expiry, smallest calls-per-hour, union of pins).
	Claims Claims
}

// Attenuation narrows a token; zero fields add nothing.
type Attenuation struct {
	Expires      time.Time
	CallsPerHour int
	Params       map[string]string
}

// Mint makes a token for c under the namespace's current key (creating the
// namespace's first key when it has none).
func (k *Keyring) Mint(c Claims) (string, error) {
	if err := c.validate(); err != nil {
		return "", err
	}
	rk, err := k.currentKey(c.Namespace)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, nonceBytes)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	id := make([]byte, 0, idLen)
	id = append(id, rk.id...)
	id = hex.AppendEncode(id, nonce)
	m, err := macaroon.New(rk.key, id, "", macaroon.V2)
	if err != nil {
		return "", err
	}
	for _, cav := range c.caveats() {
		if err := m.AddFirstPartyCaveat([]byte(cav)); err != nil {
			return "", err
		}
	}
	return encode(m)
}

func (c Claims) validate() error {
	if err := validNamespace(c.Namespace); err != nil {
		return fmt.Errorf("mint: %w", err)
	}
	for what, v := range map[string]string{"agent": c.Agent, "conversation": c.Conversation, "holder": c.Holder,
		"grant": c.Grant, "tool": c.Tool} {
		if v == "" {
			return fmt.Errorf("mint: empty %s", what)
		}
	}
	if c.GrantGeneration < 0 {
		return fmt.Errorf("mint: negative grant generation %d", c.GrantGeneration)
	}
	if c.Expires.IsZero() {
		return errors.New("mint: no expiry")
	}
	return validNarrowing(c.CallsPerHour, c.Params)
}

func validNarrowing(callsPerHour int, params map[string]string) error {
	if callsPerHour < 0 {
		return fmt.Errorf("negative calls per hour %d", callsPerHour)
	}
	for name := range params {
		if name == "" || strings.Contains(name, "=") {
			return fmt.Errorf("parameter name %q: empty or holding '='", name)
		}
	}
	return nil
}

func (c Claims) caveats() []string {
	out := []string{
		caveatNamespace + " " + c.Namespace,
		caveatAgent + " " + c.Agent,
		caveatConversation + " " + c.Conversation,
		caveatHolder + " " + c.Holder,
		caveatGrant + " " + c.Grant,
		caveatGeneration + " " + strconv.FormatInt(c.GrantGeneration, 10),
		caveatTool + " " + c.Tool,
	}
	return append(out, narrowing(c.Expires, c.CallsPerHour, c.Params)...)
}

func narrowing(expires time.Time, callsPerHour int, params map[string]string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(params)) {
		out = append(out, caveatParam+" "+name+"="+params[name])
	}
	if !expires.IsZero() {
		out = append(out, caveatExpires+" "+expires.UTC().Format(time.RFC3339Nano))
	}
	if callsPerHour > 0 {
		out = append(out, caveatCallsPerHour+" "+strconv.Itoa(callsPerHour))
	}
	return out
}

// Attenuate appends first-party caveats to a token; no key is needed, and
// the result can only be narrower.
func Attenuate(token string, a Attenuation) (string, error) {
	if err := validNarrowing(a.CallsPerHour, a.Params); err != nil {
		return "", fmt.Errorf("attenuate: %w", err)
	}
	m, ref := decode(token)
	if ref != nil {
		return "", ref
	}
	for _, cav := range narrowing(a.Expires, a.CallsPerHour, a.Params) {
		if err := m.AddFirstPartyCaveat([]byte(cav)); err != nil {
			return "", err
		}
	}
	out, err := encode(m)
	if err != nil {
		return "", err
	}
	if len(out) > MaxTokenLen {
		return "", refuse(ReasonMalformed, "attenuated token longer than %d bytes", MaxTokenLen)
	}
	return out, nil
}

// Verify checks a token against a call: the signature under the key its id
// names, then every caveat against p. It refuses with a *Refusal.
func (k *Keyring) Verify(token string, p Presentation) (Verified, error) {
	m, ref := decode(token)
	if ref != nil {
		return Verified{}, ref
	}
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	id := m.Id()
	rk, err := k.lookup(p.Namespace, string(id[:2*keyIDBytes]))
	if err != nil {
		return Verified{}, err
	}
	if rk == nil {
		return Verified{}, refuse(ReasonUnknownKey, "no key %s", id[:2*keyIDBytes])
	}
	if !rk.usableAt(p.Now) {
		return Verified{}, refuse(ReasonUnknownKey, "key %s retired at %s", rk.id, rk.retiresAt.Format(time.RFC3339))
	}
	ev := evaluator{p: p}
	// The checker records the first refusal and lets the chain run on, so
	// that a forged token is told as a bad signature, not by its caveats.
	if err := m.Verify(rk.key, ev.check, nil); err != nil {
		return Verified{}, refuse(ReasonBadSignature, "%v", err)
	}
	if rk.namespace != p.Namespace {
		return Verified{}, refuse(ReasonWrongNamespace, "token of namespace %s", rk.namespace)
	}
	if err := ev.finish(); err != nil {
		return Verified{}, err
	}
	return Verified{ID: string(id), Claims: ev.claims}, nil
}

// decode parses a token into a macaroon, refusing anything but the canonical
// encoding of a V2 macaroon with first-party caveats and our id shape.
func decode(token string) (*macaroon.Macaroon, *Refusal) {
	if len(token) > MaxTokenLen {
		return nil, refuse(ReasonMalformed, "token longer than %d bytes", MaxTokenLen)
	}
	data, err := encoding.DecodeString(token)
	if err != nil {
		return nil, refuse(ReasonMalformed, "base64: %v", err)
	}
	var m macaroon.Macaroon
	if err := m.UnmarshalBinary(data); err != nil {
		return nil, refuse(ReasonMalformed, "%v", err)
	}
	if m.Version() != macaroon.V2 || m.Location() != "" {
		return nil, refuse(ReasonMalformed, "not an aicli macaroon")
	}
	if again, err := m.MarshalBinary(); err != nil || !bytes.Equal(again, data) {
		return nil, refuse(ReasonMalformed, "not a canonical encoding")
	}
	if id := m.Id(); len(id) != idLen || !isHex(id) {
		return nil, refuse(ReasonMalformed, "macaroon id of unknown shape")
	}
	for _, c := range m.Caveats() {
		if len(c.VerificationId) > 0 || c.Location != "" {
			return nil, refuse(ReasonUnknownCaveat, "third-party caveat")
		}
	}
	return &m, nil
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func encode(m *macaroon.Macaroon) (string, error) {
	data, err := m.MarshalBinary()
	if err != nil {
		return "", err
	}
	return encoding.EncodeToString(data), nil
}

// evaluator checks caveats against a presentation and folds them into the
// effective claims.
type evaluator struct {
	p       Presentation
	claims  Claims
	seen    map[string]bool
	refusal *Refusal
}

func (e *evaluator) check(caveat string) error {
	if e.refusal == nil {
		e.refusal = e.apply(caveat)
	}
	return nil
}

func (e *evaluator) apply(caveat string) *Refusal {
	name, value, ok := strings.Cut(caveat, " ")
	if !ok {
		return refuse(ReasonUnknownCaveat, "%.64q", caveat)
	}
	if e.seen == nil {
		e.seen = make(map[string]bool, 10)
	}
	first := !e.seen[name]
	e.seen[name] = true
	same := func(field *string, want string, wrong Reason) *Refusal {
		if want != value {
			return refuse(wrong, "token is for %s %.64q", name, value)
		}
		*field = value
		return nil
	}
	once := func(field *string) *Refusal {
		if !first && *field != value {
			return refuse(ReasonMalformed, "conflicting %s caveats", name)
		}
		*field = value
		return nil
	}
	switch name {
	case caveatNamespace:
		return same(&e.claims.Namespace, e.p.Namespace, ReasonWrongNamespace)
	case caveatConversation:
		return same(&e.claims.Conversation, e.p.Conversation, ReasonWrongConversation)
	case caveatHolder:
		return same(&e.claims.Holder, e.p.Holder, ReasonWrongHolder)
	case caveatTool:
		return same(&e.claims.Tool, e.p.Tool, ReasonWrongTool)
	case caveatAgent:
		return once(&e.claims.Agent)
	case caveatGrant:
		return once(&e.claims.Grant)
	case caveatGeneration:
		g, err := strconv.ParseInt(value, 10, 64)
		if err != nil || g < 0 {
			return refuse(ReasonMalformed, "gen %.64q", value)
		}
		if !first && g != e.claims.GrantGeneration {
			return refuse(ReasonMalformed, "conflicting gen caveats")
		}
		e.claims.GrantGeneration = g
	case caveatParam:
		k, v, ok := strings.Cut(value, "=")
		if !ok || k == "" {
			return refuse(ReasonMalformed, "param %.64q", value)
		}
		if pinned, ok := e.claims.Params[k]; ok && pinned != v {
			return refuse(ReasonParamMismatch, "conflicting pins of %.64q", k)
		}
		if passed, ok := e.p.Params[k]; ok && passed != v {
			return refuse(ReasonParamMismatch, "parameter %.64q is pinned", k)
		}
		if e.claims.Params == nil {
			e.claims.Params = map[string]string{}
		}
		e.claims.Params[k] = v
	case caveatExpires:
		t, err := time.Parse(time.RFC3339Nano, value)
		if err != nil {
			return refuse(ReasonMalformed, "expires %.64q", value)
		}
		if first || t.Before(e.claims.Expires) {
			e.claims.Expires = t
		}
	case caveatCallsPerHour:
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return refuse(ReasonMalformed, "calls-per-hour %.64q", value)
		}
		if first || n < e.claims.CallsPerHour {
			e.claims.CallsPerHour = n
		}
	default:
		return refuse(ReasonUnknownCaveat, "%.64q", name)
	}
	return nil
}

// finish returns the first refusal, or one for a missing caveat or an
// expired lease.
func (e *evaluator) finish() *Refusal {
	if e.refusal != nil {
		return e.refusal
	}
	for _, name := range []string{caveatNamespace, caveatAgent, caveatConversation, caveatHolder, caveatGrant,
		caveatGeneration, caveatTool, caveatExpires} {
		if !e.seen[name] {
			return refuse(ReasonMalformed, "no %s caveat", name)
		}
	}
	if !e.p.Now.Before(e.claims.Expires) {
		return refuse(ReasonExpired, "expired at %s", e.claims.Expires.Format(time.RFC3339Nano))
	}
	return nil
}
