package auth_test

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"aicli.dev/aicli/internal/console/auth"
)

const rightPassword = "the-right-console-password"

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// limitedAuth is an Auth with the password rightPassword, a fake clock, lim
// (nil: the defaults) and a password check that counts its calls and compares
// in the clear (bcrypt's cost is not under test).
func limitedAuth(t *testing.T, lim *auth.Limiter) (*auth.Auth, *clock, *atomic.Int64) {
	t.Helper()
	a, _ := newAuth(t)
	if _, err := a.EnsurePassword(rightPassword); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
	checks := &atomic.Int64{}
	a.Now, a.Limiter = clk.Now, lim
	a.Compare = func(hash, password []byte) error {
		checks.Add(1)
		if string(password) != rightPassword {
			return bcrypt.ErrMismatchedHashAndPassword
		}
		return nil
	}
	return a, clk, checks
}

// throttled returns err's *auth.ThrottledError, failing the test when it is not one.
func throttled(t *testing.T, err error, what string) *auth.ThrottledError {
	t.Helper()
	var te *auth.ThrottledError
	if !errors.As(err, &te) {
		t.Fatalf("%s: got %v, want a *ThrottledError", what, err)
	}
	return te
}

func TestLoginLocksAClientOutAfterFailuresWithoutCheckingItsPasswords(t *testing.T) {
	a, clk, checks := limitedAuth(t, nil)
	for i := range auth.DefaultFreeFailures {
		if _, err := a.Login(testClient, "guess"); !errors.Is(err, auth.ErrBadPassword) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	// Locked out: even the right password is refused, and no password is checked.
	for _, pw := range []string{"guess", rightPassword} {
		te := throttled(t, mustFail(a.Login(testClient, pw)), "locked out, "+pw)
		if te.Global || te.RetryAfter != auth.DefaultLockout || te.Seconds() != 30 {
			t.Fatalf("locked out: %+v (Seconds %d), want a 30s lockout of this client", te, te.Seconds())
		}
	}
	if n := checks.Load(); n != auth.DefaultFreeFailures {
		t.Fatalf("%d password checks, want %d (none while locked out)", n, auth.DefaultFreeFailures)
	}
	clk.Advance(auth.DefaultLockout - time.Second)
	if te := throttled(t, mustFail(a.Login(testClient, rightPassword)), "1s before the end"); te.Seconds() != 1 {
		t.Fatalf("1s before the end: retry after %v", te.RetryAfter)
	}
	// When the lockout ends, the right password works and forgets the failures.
	clk.Advance(time.Second)
	if _, err := a.Login(testClient, rightPassword); err != nil {
		t.Fatalf("right password after the lockout: %v", err)
	}
	for i := range auth.DefaultFreeFailures {
		if _, err := a.Login(testClient, "guess"); !errors.Is(err, auth.ErrBadPassword) {
			t.Fatalf("after a login, failure %d: %v", i+1, err)
		}
	}
	throttled(t, mustFail(a.Login(testClient, "guess")), "locked out again")
}

func TestLockoutsDoubleUpToTheMaximumAndAreForgotten(t *testing.T) {
	a, clk, _ := limitedAuth(t, nil)
	for range auth.DefaultFreeFailures {
		_, _ = a.Login(testClient, "guess")
	}
	for _, want := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute,
		8 * time.Minute, 15 * time.Minute, 15 * time.Minute} {
		te := throttled(t, mustFail(a.Login(testClient, "guess")), "locked out")
		if te.RetryAfter != want {
			t.Fatalf("lockout %v, want %v", te.RetryAfter, want)
		}
		clk.Advance(te.RetryAfter)
		if _, err := a.Login(testClient, "guess"); !errors.Is(err, auth.ErrBadPassword) {
			t.Fatalf("after the %v lockout: %v", want, err)
		}
	}
	// An hour without a failure forgets them: the client has its free failures again.
	clk.Advance(auth.DefaultForget)
	for i := range auth.DefaultFreeFailures {
		if _, err := a.Login(testClient, "guess"); !errors.Is(err, auth.ErrBadPassword) {
			t.Fatalf("after an hour, failure %d: %v", i+1, err)
		}
	}
}

func TestOneClientsFailuresDoNotLockAnotherButTheGlobalRateHolds(t *testing.T) {
	a, clk, checks := limitedAuth(t, nil)
	for range auth.DefaultFreeFailures {
		_, _ = a.Login(testClient, "guess")
	}
	throttled(t, mustFail(a.Login(testClient, rightPassword)), "the guesser")
	other := netip.MustParseAddr("198.51.100.7")
	if _, err := a.Login(other, "typo"); !errors.Is(err, auth.ErrBadPassword) {
		t.Fatalf("another client's typo: %v", err)
	}
	if _, err := a.Login(other, rightPassword); err != nil {
		t.Fatalf("another client: %v", err)
	}
	// Right passwords do not use up the rate.
	for i := range 3 * auth.DefaultBurst {
		if _, err := a.Login(other, rightPassword); err != nil {
			t.Fatalf("login %d of the same instant: %v", i+1, err)
		}
	}

	// A guess spread over many addresses: the bucket (10, of which the guesser
	// and the typo took 6) lets 4 more through at this instant, then 5 a second.
	checks.Store(0)
	guess := func(n int) (checked, refused int) {
		for i := range n {
			addr := netip.AddrFrom4([4]byte{203, 0, byte(i >> 8), byte(i)})
			_, err := a.Login(addr, "guess")
			switch {
			case errors.Is(err, auth.ErrBadPassword):
				checked++
			default:
				te := throttled(t, err, "a distributed guess")
				if !te.Global || te.Seconds() != 1 {
					t.Fatalf("distributed guess refused with %+v, want the global rate with a 1s wait", te)
				}
				refused++
			}
		}
		return checked, refused
	}
	if checked, refused := guess(100); checked != auth.DefaultBurst-6 || refused != 100-checked {
		t.Fatalf("at one instant: %d checked, %d refused", checked, refused)
	}
	clk.Advance(time.Second)
	if checked, _ := guess(100); checked != auth.DefaultRate {
		t.Fatalf("a second later: %d checked, want %d", checked, auth.DefaultRate)
	}
	if n := checks.Load(); n != auth.DefaultBurst-6+auth.DefaultRate {
		t.Fatalf("%d password checks", n)
	}
}

func TestLimiterTableStaysBounded(t *testing.T) {
	lim := &auth.Limiter{Rate: 1e9, Burst: 1e9} // only the table is under test
	a, clk, _ := limitedAuth(t, lim)
	for i := range 100_000 {
		addr := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		if _, err := a.Login(addr, "guess"); !errors.Is(err, auth.ErrBadPassword) {
			t.Fatalf("client %d: %v", i, err)
		}
	}
	if n := lim.Clients(); n != auth.DefaultMaxClients {
		t.Fatalf("the table holds %d clients after 100,000, want its cap %d", n, auth.DefaultMaxClients)
	}
	// IPv6 addresses count per /64: changing the low bits escapes nothing.
	for i := range auth.DefaultFreeFailures {
		addr := netip.MustParseAddr(fmt.Sprintf("2001:db8:1:2::%x", i+1))
		if _, err := a.Login(addr, "guess"); !errors.Is(err, auth.ErrBadPassword) {
			t.Fatalf("IPv6 failure %d: %v", i+1, err)
		}
	}
	throttled(t, mustFail(a.Login(netip.MustParseAddr("2001:db8:1:2:ffff::1"), rightPassword)), "another address of the /64")
	if _, err := a.Login(netip.MustParseAddr("2001:db8:1:3::1"), rightPassword); err != nil {
		t.Fatalf("another /64: %v", err)
	}
	// Records expire: an hour later one new failure leaves one record.
	clk.Advance(auth.DefaultForget)
	_, _ = a.Login(testClient, "guess")
	if n := lim.Clients(); n != 1 {
		t.Fatalf("an hour later the table holds %d clients, want 1", n)
	}
}

func TestFailedLoginsAreLoggedWithoutThePassword(t *testing.T) {
	a, _, _ := limitedAuth(t, nil)
	var logs syncBuffer
	a.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	for range auth.DefaultFreeFailures + 3 {
		_, _ = a.Login(testClient, "secret-guess-42")
	}
	out := logs.String()
	for _, want := range []string{"failed login", "client=192.0.2.10", "failures=5", "lockedOutFor=30s", "refused without a password check"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret-guess-42") {
		t.Errorf("the log holds the password:\n%s", out)
	}
	if n := strings.Count(out, "refused without a password check"); n != 1 {
		t.Errorf("%d lines about refused attempts, want 1 a minute:\n%s", n, out)
	}
}

func mustFail(_ *auth.Session, err error) error { return err }

type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	return len(p), nil
}

func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return string(b.b) }
