package authority

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/capability"
	"aicli.dev/aicli/internal/grants"
)

// DefaultTTL is the lease of a capability token: renewed every TTL/3 while
// the conversation's guest connection lives.
const DefaultTTL = 60 * time.Second

// Holder is where a conversation's tokens live: the guest's memory.
type Holder interface {
	SetCapabilities(ctx context.Context, caps ptyapi.Capabilities) error
}

// Lease is what one live conversation holds.
type Lease struct {
	Namespace, Agent, Conversation string
	// UID is the conversation's uid, Fingerprint its guest's key fingerprint
	// (both proven by the side-channel connection a call arrives on).
	UID, Fingerprint string
	// Tools are the agent's effective tools.
	Tools []grants.Tool
	// Holder receives the tokens.
	Holder Holder
}

// LeaseInfo is one held lease, as the grant controller reports it.
type LeaseInfo struct {
	Conversation, UID string
	IssuedAt          time.Time
	ExpiresAt         time.Time
}

// Manager mints, pushes and renews the capability leases of live conversations.
type Manager struct {
	Keys *capability.Keyring
	// TTL is the token lifetime (default DefaultTTL).
	TTL time.Duration
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Changed, when set, is told which grants gained or lost a lease.
	Changed func(namespace, grant string)

	mu     sync.Mutex
	leases map[string]*held
}

type held struct {
	Lease
	signature string
	issuedAt  time.Time
	expiresAt time.Time
	stop      chan struct{}
}

func (m *Manager) ttl() time.Duration {
	if m.TTL > 0 {
		return m.TTL
	}
	return DefaultTTL
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Manager) log() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.Default()
}

// Hold makes the conversation hold exactly l's capabilities: the first call
// (or a changed tool set or guest) mints and pushes them at once and starts
// the renewals; an unchanged one is a no-op. It fails when the push fails.
func (m *Manager) Hold(ctx context.Context, l Lease) error {
	sig := signature(l)
	m.mu.Lock()
	if m.leases == nil {
		m.leases = map[string]*held{}
	}
	cur := m.leases[l.UID]
	if cur != nil && cur.signature == sig && cur.Holder == l.Holder && m.now().Before(cur.expiresAt) {
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()

	now := m.now()
	caps, expires, err := m.mint(l, now)
	if err != nil {
		return err
	}
	if err := l.Holder.SetCapabilities(ctx, caps); err != nil {
		return fmt.Errorf("pushing capabilities to the guest: %w", err)
	}
	m.mu.Lock()
	old := m.leases[l.UID]
	h := &held{Lease: l, signature: sig, issuedAt: now, expiresAt: expires, stop: make(chan struct{})}
	if old != nil {
		close(old.stop)
	}
	m.leases[l.UID] = h
	m.mu.Unlock()
	go m.renew(h)
	m.changed(old, h)
	return nil
}

// Release drops the conversation's lease: no renewal, and calls are refused
// at once (the tokens themselves die within one TTL).
func (m *Manager) Release(uid string) {
	m.mu.Lock()
	h := m.leases[uid]
	if h != nil {
		close(h.stop)
		delete(m.leases, uid)
	}
	m.mu.Unlock()
	if h != nil {
		m.changed(h, nil)
	}
}

// Close releases every lease (the supervisor is stopping).
func (m *Manager) Close() {
	m.mu.Lock()
	uids := make([]string, 0, len(m.leases))
	for uid := range m.leases {
		uids = append(uids, uid)
	}
	m.mu.Unlock()
	for _, uid := range uids {
		m.Release(uid)
	}
}

// Lookup returns the conversation's lease while it is unexpired.
func (m *Manager) Lookup(uid string) (Lease, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.leases[uid]
	if h == nil || !m.now().Before(h.expiresAt) {
		return Lease{}, false
	}
	return h.Lease, true
}

// Held lists the unexpired leases that carry a tool of the grant.
func (m *Manager) Held(namespace, grant string) []LeaseInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var out []LeaseInfo
	for _, h := range m.leases {
		if h.Namespace != namespace || !now.Before(h.expiresAt) || !h.uses(grant) {
			continue
		}
		out = append(out, LeaseInfo{Conversation: h.Conversation, UID: h.UID, IssuedAt: h.issuedAt, ExpiresAt: h.expiresAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Conversation < out[j].Conversation })
	return out
}

func (h *held) uses(grant string) bool {
	for _, t := range h.Tools {
		if t.Grant == grant {
			return true
		}
	}
	return false
}

// renew re-mints and pushes every TTL/3 until the lease is released or
// replaced. A failed push is retried at the next tick; meanwhile the tokens
// run out on their own.
func (m *Manager) renew(h *held) {
	every := m.ttl() / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		now := m.now()
		caps, expires, err := m.mint(h.Lease, now)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), every)
			err = h.Holder.SetCapabilities(ctx, caps)
			cancel()
		}
		if err != nil {
			if m.lapse(h, now) {
				m.log().Warn("a capability lease lapsed: the guest could not be reached for a whole TTL",
					"conversation", h.Namespace+"/"+h.Conversation, "err", err)
				return
			}
			m.log().Warn("renewing a capability lease failed", "conversation", h.Namespace+"/"+h.Conversation, "err", err)
			continue
		}
		m.mu.Lock()
		if m.leases[h.UID] == h {
			h.expiresAt = expires
		}
		m.mu.Unlock()
	}
}

// lapse drops h once it has expired (its guest unreachable for a whole TTL:
// the container died and nothing released the lease) and reports it to the
// grants; true when dropped.
func (m *Manager) lapse(h *held, now time.Time) bool {
	m.mu.Lock()
	if now.Before(h.expiresAt) || m.leases[h.UID] != h {
		m.mu.Unlock()
		return false
	}
	delete(m.leases, h.UID)
	m.mu.Unlock()
	m.changed(h, nil)
	return true
}

// mint makes one token per tool that has not expired by attenuation.
func (m *Manager) mint(l Lease, now time.Time) (ptyapi.Capabilities, time.Time, error) {
	expires := now.Add(m.ttl())
	caps := ptyapi.Capabilities{Tools: []ptyapi.ToolCap{}}
	for _, t := range l.Tools {
		c := capability.Claims{
			Namespace: l.Namespace, Agent: l.Agent, Conversation: l.UID, Holder: l.Fingerprint,
			Grant: t.Grant, GrantGeneration: t.Generation, Tool: t.Name, Expires: expires,
		}
		if a := t.Attenuation; a != nil {
			c.Params, c.CallsPerHour = a.PinnedParams, int(a.MaxCallsPerHour)
			if a.ExpiresAt != nil {
				if !now.Before(a.ExpiresAt.Time) {
					continue
				}
				if a.ExpiresAt.Time.Before(c.Expires) {
					c.Expires = a.ExpiresAt.Time
				}
			}
		}
		tok, err := m.Keys.Mint(c)
		if err != nil {
			return ptyapi.Capabilities{}, time.Time{}, fmt.Errorf("minting %s: %w", t.Name, err)
		}
		caps.Tools = append(caps.Tools, ptyapi.ToolCap{Name: t.Name, Usage: t.Usage, Token: tok})
	}
	return caps, expires, nil
}

// changed tells the grant controller about every grant of the old and new lease.
func (m *Manager) changed(old, cur *held) {
	if m.Changed == nil {
		return
	}
	seen := map[string]bool{}
	for _, h := range []*held{old, cur} {
		if h == nil {
			continue
		}
		for _, t := range h.Tools {
			if t.Builtin {
				continue // no Grant object backs a built-in
			}
			if k := h.Namespace + "/" + t.Grant; !seen[k] {
				seen[k] = true
				m.Changed(h.Namespace, t.Grant)
			}
		}
	}
}

// signature identifies a lease's content: the guest and every tool's grant
// generation and attenuation. A change re-mints at once.
func signature(l Lease) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s|", l.Namespace, l.Agent, l.UID, l.Fingerprint)
	for _, t := range l.Tools {
		fmt.Fprintf(&b, "%s:%s:%d:%+v;", t.Name, t.Grant, t.Generation, attenuationKey(t))
	}
	return b.String()
}

func attenuationKey(t grants.Tool) string {
	a := t.Attenuation
	if a == nil {
		return ""
	}
	keys := make([]string, 0, len(a.PinnedParams))
	for k, v := range a.PinnedParams {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	exp := ""
	if a.ExpiresAt != nil {
		exp = a.ExpiresAt.UTC().String()
	}
	return fmt.Sprintf("%v/%d/%s", keys, a.MaxCallsPerHour, exp)
}
