package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

// Defaults for Options.
const (
	DefaultTokenTTL         = 2 * time.Minute
	DefaultHandshakeTimeout = 10 * time.Second
)

// ErrClosed is returned by every method of a closed Gateway.
var ErrClosed = errors.New("gateway closed")

// ErrNotPrepared is returned by WaitGuest for a conversation that is not prepared (or was released meanwhile).
var ErrNotPrepared = errors.New("conversation not prepared on this gateway")

// Options configure a Gateway.
type Options struct {
	// DataDir is the supervisor's data directory; the key lives in <DataDir>/keys. Required.
	DataDir string
	// Tokens stores launch-token hashes and reconnect records. Required.
	Tokens TokenStore
	// TokenTTL is how long a launch token stays valid (default 2m).
	TokenTTL time.Duration
	// Logger receives handshake and refusal logs (default slog.Default()).
	Logger *slog.Logger
	// RunDir holds the per-conversation socket directories <RunDir>/conv/<id> (default <DataDir>/run).
	RunDir string
	// HandshakeTimeout bounds TLS handshake plus hello for one connection (default 10s).
	HandshakeTimeout time.Duration
	// Clock returns the current time (default time.Now); a seam for token-expiry tests.
	Clock func() time.Time
	// Registerer, when set, receives the gateway's Prometheus collectors.
	Registerer prometheus.Registerer
	// GuestStreams receives the streams a guest opens towards the supervisor (egress). When nil, such streams are
	// accepted and closed at once, so a guest never waits on them.
	GuestStreams GuestStreamHandler
	// MaxGuestStreams bounds the streams one guest connection may hold open, in both directions (default 256).
	// Every stream can buffer up to wire.MaxStreamWindow (1 MiB), so a guest that opens more — the real guest caps
	// its egress clients at 192 — is disconnected: the bound on what it can make the supervisor buffer (256 MiB).
	MaxGuestStreams int
	// MirrorOutput asks every guest to also copy its CLI's raw output to the container's log
	// (wire.EnvMirrorOutput).
	MirrorOutput bool
}

// DefaultMaxGuestStreams is the default of Options.MaxGuestStreams.
const DefaultMaxGuestStreams = 256

// GuestStream says where a guest-opened stream comes from, as the gateway knows it from the connection (never from
// anything the guest sends on the stream).
type GuestStream struct {
	// ConversationID is the conversation the guest connection was admitted for.
	ConversationID string
	// GuestFingerprint is the "sha256:<hex>" fingerprint of the guest key proven in the connection's handshake.
	GuestFingerprint string
}

// GuestStreamHandler serves streams opened by a guest. ServeGuestStream runs on its own goroutine per stream and
// owns stream (it must close it); it should return promptly once the conversation's connection ends (the stream
// then fails every read and write).
type GuestStreamHandler interface {
	ServeGuestStream(g GuestStream, stream net.Conn)
}

// Gateway accepts guest connections for prepared conversations. It is safe for concurrent use.
type Gateway struct {
	opts        Options
	log         *slog.Logger
	fingerprint string
	tlsConf     *tls.Config
	metrics     *metrics

	ctx    context.Context // cancelled by Close; bounds handshakes
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	convs  map[string]*conversation
}

// New loads the supervisor key from <DataDir>/keys (creating it on first start) and returns a Gateway with no
// conversations prepared.
func New(opts Options) (*Gateway, error) {
	if opts.DataDir == "" {
		return nil, errors.New("gateway: DataDir is required")
	}
	if opts.Tokens == nil {
		return nil, errors.New("gateway: Tokens is required")
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = DefaultTokenTTL
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RunDir == "" {
		opts.RunDir = filepath.Join(opts.DataDir, "run")
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.MaxGuestStreams <= 0 {
		opts.MaxGuestStreams = DefaultMaxGuestStreams
	}
	key, err := loadOrCreateKey(filepath.Join(opts.DataDir, "keys"))
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	cert, err := wire.SelfSigned(key, "aicli-supervisor")
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	fp, err := wire.KeyFingerprint(key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gateway{
		opts:        opts,
		log:         opts.Logger.With("component", "gateway"),
		fingerprint: fp,
		ctx:         ctx,
		cancel:      cancel,
		convs:       make(map[string]*conversation),
	}
	g.tlsConf = &tls.Config{
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{wire.ALPN},
		// A client certificate is required; the requirement is enforced in VerifyConnection (not with
		// RequireAnyClientCert) so a missing certificate surfaces as a typed error and a precise refusal reason.
		ClientAuth: tls.RequestClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := wire.PeerFingerprint(cs)
			return err
		},
		SessionTicketsDisabled: true, // every connection proves its key afresh
	}
	if g.metrics, err = newMetrics(opts.Registerer, g.liveGuests); err != nil {
		cancel()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return g, nil
}

// Fingerprint is the supervisor key's "sha256:<hex>" SubjectPublicKeyInfo fingerprint, which guests pin.
func (g *Gateway) Fingerprint() string { return g.fingerprint }

// Close stops every listener and closes every guest connection. It keeps the socket directories and the stored
// reconnect records, so a new Gateway on the same DataDir and token store can re-adopt the conversations.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	convs := g.convs
	g.convs = make(map[string]*conversation)
	var conns []closer
	for _, c := range convs {
		conns = append(conns, c.shutdownLocked()...)
	}
	g.mu.Unlock()
	g.cancel()
	for _, c := range conns {
		_ = c.Close()
	}
	g.wg.Wait()
	g.metrics.unregister()
	return nil
}

// Stats is a snapshot of the gateway's counters.
type Stats struct {
	// Admitted counts guests admitted with a launch token.
	Admitted uint64
	// Reconnected counts guests re-admitted with a reconnect secret.
	Reconnected uint64
	// Refused counts refused connections by reason.
	Refused map[wire.Reason]uint64
	// Live is the number of conversations with a connected guest.
	Live int
}

// Stats returns the current counters.
func (g *Gateway) Stats() Stats {
	s := g.metrics.snapshot()
	s.Live = g.liveGuests()
	return s
}

// liveGuests counts conversations with a connected guest.
func (g *Gateway) liveGuests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.convs {
		if c.guest != nil {
			n++
		}
	}
	return n
}
