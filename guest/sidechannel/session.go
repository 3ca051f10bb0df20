package sidechannel

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/yamux"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

// HandshakeTimeout bounds one dial: connect, TLS handshake, hello and reply.
const HandshakeTimeout = 10 * time.Second

// ErrSupervisorMismatch means the server's key does not match the pinned supervisor fingerprint; the guest
// refuses to talk to it.
var ErrSupervisorMismatch = errors.New("side channel: server key does not match the pinned supervisor fingerprint")

// RefusedError is the supervisor's refusal of a hello.
type RefusedError struct {
	// Reason is the supervisor's machine-readable reason.
	Reason wire.Reason
	// Message is the supervisor's explanation.
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("side channel: supervisor refused the guest (%s): %s", e.Reason, e.Message)
}

// identity is the guest's ephemeral key and certificate; it lives only in memory.
type identity struct {
	cert        tls.Certificate
	fingerprint string
}

func newIdentity() (*identity, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate guest key: %w", err)
	}
	cert, err := wire.SelfSigned(key, "aicli-guest")
	if err != nil {
		return nil, err
	}
	fp, err := wire.KeyFingerprint(key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	return &identity{cert: cert, fingerprint: fp}, nil
}

// Session is one authenticated side-channel connection. It is a net.Listener whose Accept returns the next
// stream the supervisor opens, so http.Serve(session, handler) serves the supervisor.
type Session struct {
	boot   Bootstrap // LaunchToken cleared once admitted
	id     *identity
	secret string
	conn   net.Conn // the TLS connection under mux; referenced so it stays reachable
	mux    *yamux.Session
	log    *slog.Logger
}

// Dial mints a fresh ephemeral key, connects to the supervisor socket, verifies the supervisor's pinned
// fingerprint, presents the conversation id and launch token, and returns the admitted session. A supervisor
// refusal is a *RefusedError; a fingerprint mismatch wraps ErrSupervisorMismatch.
func Dial(ctx context.Context, b Bootstrap, log *slog.Logger) (*Session, error) {
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("side channel: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	id, err := newIdentity()
	if err != nil {
		return nil, fmt.Errorf("side channel: %w", err)
	}
	return dial(ctx, b, id, wire.Hello{ConversationID: b.ConversationID, LaunchToken: b.LaunchToken}, log)
}

// Redial connects again with the same key and the reconnect secret this session received, for use after the
// session ended. The launch token is never presented again.
func (s *Session) Redial(ctx context.Context) (*Session, error) {
	return dial(ctx, s.boot, s.id, wire.Hello{ConversationID: s.boot.ConversationID, ReconnectSecret: s.secret}, s.log)
}

func dial(ctx context.Context, b Bootstrap, id *identity, hello wire.Hello, log *slog.Logger) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "unix", b.SocketPath)
	if err != nil {
		return nil, fmt.Errorf("side channel: dial %s: %w", b.SocketPath, err)
	}
	s, err := handshake(ctx, raw, b, id, hello, log)
	if err != nil {
		_ = raw.Close()
		return nil, err
	}
	return s, nil
}

func handshake(ctx context.Context, raw net.Conn, b Bootstrap, id *identity, hello wire.Hello, log *slog.Logger) (*Session, error) {
	if dl, ok := ctx.Deadline(); ok {
		if err := raw.SetDeadline(dl); err != nil {
			return nil, fmt.Errorf("side channel: set deadline: %w", err)
		}
	}
	pinned := b.SupervisorFingerprint
	conf := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		MaxVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		NextProtos:   []string{wire.ALPN},
		ServerName:   "aicli-supervisor",
		// The supervisor's certificate is self-signed: chain verification is replaced by pinning its key in
		// VerifyConnection, which runs during the handshake before any application data is sent.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			fp, err := wire.PeerFingerprint(cs)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrSupervisorMismatch, err)
			}
			if !wire.SameFingerprint(fp, pinned) {
				return fmt.Errorf("%w: got %s", ErrSupervisorMismatch, fp)
			}
			return nil
		},
	}
	under := wire.NewRecordBatcher(raw)
	tc := tls.Client(under, conf)
	if err := tc.HandshakeContext(ctx); err != nil {
		log.Warn("side channel: TLS handshake failed", "conversation", b.ConversationID, "err", err)
		return nil, fmt.Errorf("side channel: TLS handshake: %w", err)
	}
	if got := tc.ConnectionState().NegotiatedProtocol; got != wire.ALPN {
		return nil, fmt.Errorf("side channel: supervisor speaks %q, want %q", got, wire.ALPN)
	}
	if err := wire.WriteFrame(tc, hello); err != nil {
		return nil, fmt.Errorf("side channel: send hello: %w", err)
	}
	var reply wire.Reply
	if err := wire.ReadFrame(tc, &reply); err != nil {
		return nil, fmt.Errorf("side channel: read reply: %w", err)
	}
	if !reply.OK {
		err := &RefusedError{Reason: reply.Reason, Message: reply.Message}
		log.Warn("side channel: supervisor refused the guest", "conversation", b.ConversationID, "reason", reply.Reason,
			"message", reply.Message)
		return nil, err
	}
	if reply.ReconnectSecret == "" {
		return nil, fmt.Errorf("side channel: supervisor admitted the guest without a reconnect secret")
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("side channel: clear deadline: %w", err)
	}
	mux, err := yamux.Server(wire.NewMuxConn(tc, under), wire.MuxConfig(log))
	if err != nil {
		return nil, fmt.Errorf("side channel: start yamux: %w", err)
	}
	b.LaunchToken = ""
	log.Info("side channel: connected to supervisor", "conversation", b.ConversationID, "guestFingerprint", id.fingerprint,
		"reconnect", hello.ReconnectSecret != "")
	return &Session{boot: b, id: id, secret: reply.ReconnectSecret, conn: tc, mux: mux, log: log}, nil
}

// Accept returns the next stream the supervisor opened. It implements net.Listener.
func (s *Session) Accept() (net.Conn, error) { return s.mux.Accept() }

// Close ends the session and its connection. It is idempotent.
func (s *Session) Close() error { return s.mux.Close() }

// Addr implements net.Listener.
func (s *Session) Addr() net.Addr { return s.mux.Addr() }

// Done is closed when the session has ended, for any reason.
func (s *Session) Done() <-chan struct{} { return s.mux.CloseChan() }

// Fingerprint is the "sha256:<hex>" fingerprint of this guest's ephemeral key.
func (s *Session) Fingerprint() string { return s.id.fingerprint }

// ConversationID is the conversation this session was admitted for.
func (s *Session) ConversationID() string { return s.boot.ConversationID }
