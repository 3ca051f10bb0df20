package auth

import (
	"container/list"
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Limiter slows password guessing at the console's login.
//
// Per client (an IPv4 address, or the /64 of an IPv6 one: what one attacker
// usually holds) it counts failed logins: after FreeFailures of them the
// client is locked out for Lockout, and every further failure doubles that,
// up to MaxLockout. A successful login forgets the client's failures, and so
// does Forget without a failure. The table of clients is bounded: when it
// holds MaxClients, the client whose last failure is the oldest is dropped.
//
// All clients together get Rate password checks a second (after a burst of
// Burst), so guesses spread over many addresses run no faster and neither
// does the CPU bcrypt costs. An attempt refused for either reason is not
// checked (no bcrypt) and does not count as a failure.
//
// The zero value has the defaults below; settings are read at the first use.
type Limiter struct {
	// FreeFailures is how many failed logins a client has before its first
	// lockout (default 5).
	FreeFailures int
	// Lockout is the first lockout (default 30s).
	Lockout time.Duration
	// MaxLockout caps a lockout (default 15 minutes).
	MaxLockout time.Duration
	// Forget is how long after its last failure a client's record is dropped
	// (default 1 hour; never less than MaxLockout).
	Forget time.Duration
	// MaxClients bounds the table of clients (default 10,000).
	MaxClients int
	// Rate is how many password checks a second all clients together may run
	// (default 5), after a burst of Burst (default 10).
	Rate  float64
	Burst int

	mu      sync.Mutex
	clients map[netip.Prefix]*list.Element // of *record
	order   list.List                      // the records, latest failure first
	tokens  float64                        // the global bucket, as of filled
	filled  time.Time
}

// The Limiter's defaults.
const (
	DefaultFreeFailures = 5
	DefaultLockout      = 30 * time.Second
	DefaultMaxLockout   = 15 * time.Minute
	DefaultForget       = time.Hour
	DefaultMaxClients   = 10000
	DefaultRate         = 5
	DefaultBurst        = 10
)

// record is one client's failed logins.
type record struct {
	key      netip.Prefix
	failures int
	last     time.Time // the latest failure
	until    time.Time // locked out until
}

// ThrottledError is a login attempt refused without checking the password.
type ThrottledError struct {
	// RetryAfter is how long until an attempt will be checked again.
	RetryAfter time.Duration
	// Global: all clients together are over the rate (otherwise this client
	// is locked out).
	Global bool
}

func (e *ThrottledError) Error() string {
	if e.Global {
		return fmt.Sprintf("too many login attempts on this console: retry in %ds", e.Seconds())
	}
	return fmt.Sprintf("too many failed logins from this address: retry in %ds", e.Seconds())
}

// Seconds is RetryAfter in whole seconds, rounded up (at least 1): the
// Retry-After header's value.
func (e *ThrottledError) Seconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}

// clientKey is the table key of a client address.
func clientKey(a netip.Addr) netip.Prefix {
	if !a.IsValid() {
		return netip.Prefix{}
	}
	a = a.Unmap()
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

func (l *Limiter) defaults() {
	if l.clients != nil {
		return
	}
	l.clients = map[netip.Prefix]*list.Element{}
	if l.FreeFailures <= 0 {
		l.FreeFailures = DefaultFreeFailures
	}
	if l.Lockout <= 0 {
		l.Lockout = DefaultLockout
	}
	if l.MaxLockout <= 0 {
		l.MaxLockout = DefaultMaxLockout
	}
	l.MaxLockout = max(l.MaxLockout, l.Lockout)
	if l.Forget <= 0 {
		l.Forget = DefaultForget
	}
	l.Forget = max(l.Forget, l.MaxLockout)
	if l.MaxClients <= 0 {
		l.MaxClients = DefaultMaxClients
	}
	if l.Rate <= 0 {
		l.Rate = DefaultRate
	}
	if l.Burst <= 0 {
		l.Burst = DefaultBurst
	}
}

// begin asks to check a password from client at now. It refuses with a
// *ThrottledError, or takes a token from the global bucket and counts the
// attempt as a failure in advance (so concurrent guesses cannot slip past a
// lockout): it returns the client's failures and the lockout they started
// (0: none). When the password turns out right, call succeeded.
func (l *Limiter) begin(client netip.Addr, now time.Time) (failures int, locked time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.defaults()
	key := clientKey(client)
	e := l.clients[key]
	if e != nil && !now.Before(e.Value.(*record).last.Add(l.Forget)) {
		l.remove(e)
		e = nil
	}
	if e != nil {
		if rec := e.Value.(*record); now.Before(rec.until) {
			return 0, 0, &ThrottledError{RetryAfter: rec.until.Sub(now)}
		}
	}
	l.refill(now)
	if l.tokens < 1 {
		wait := time.Duration((1 - l.tokens) / l.Rate * float64(time.Second))
		return 0, 0, &ThrottledError{RetryAfter: wait, Global: true}
	}
	l.tokens--
	if e == nil {
		e = l.insert(key, now)
	} else {
		l.order.MoveToFront(e)
	}
	rec := e.Value.(*record)
	rec.failures++
	rec.last = now
	if rec.failures >= l.FreeFailures {
		locked = l.lockout(rec.failures)
		rec.until = now.Add(locked)
	}
	return rec.failures, locked, nil
}

// succeeded forgets client's failures and gives back the global token its
// attempt took: right passwords do not count against the rate.
func (l *Limiter) succeeded(client netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.defaults()
	if e := l.clients[clientKey(client)]; e != nil {
		l.remove(e)
	}
	l.tokens = min(float64(l.Burst), l.tokens+1)
}

// lockout is the lockout after failures failed logins (at least FreeFailures).
func (l *Limiter) lockout(failures int) time.Duration {
	d := l.Lockout
	for i := l.FreeFailures; i < failures && d < l.MaxLockout; i++ {
		d *= 2
	}
	return min(d, l.MaxLockout)
}

// refill adds the tokens earned since the last refill.
func (l *Limiter) refill(now time.Time) {
	if l.filled.IsZero() {
		l.tokens, l.filled = float64(l.Burst), now
		return
	}
	if dt := now.Sub(l.filled); dt > 0 {
		l.tokens = min(float64(l.Burst), l.tokens+dt.Seconds()*l.Rate)
		l.filled = now
	}
}

// insert adds a record for key, first dropping the expired records and then,
// when the table is full, the ones whose last failure is the oldest.
func (l *Limiter) insert(key netip.Prefix, now time.Time) *list.Element {
	for back := l.order.Back(); back != nil; back = l.order.Back() {
		if len(l.clients) < l.MaxClients && now.Before(back.Value.(*record).last.Add(l.Forget)) {
			break
		}
		l.remove(back)
	}
	e := l.order.PushFront(&record{key: key})
	l.clients[key] = e
	return e
}

func (l *Limiter) remove(e *list.Element) {
	delete(l.clients, e.Value.(*record).key)
	l.order.Remove(e)
}

// Clients is how many clients the table holds.
func (l *Limiter) Clients() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}
