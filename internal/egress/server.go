package egress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/internal/gateway"
)

// Defaults for Options.
const (
	DefaultMaxStreamsPerConversation = 64
	DefaultHeaderTimeout             = 10 * time.Second
	DefaultDialTimeout               = 10 * time.Second
	DefaultIdleTimeout               = 10 * time.Minute
	DefaultReportInterval            = time.Minute
	// maxReportHistory bounds the (conversation, target, reason) keys remembered for coalescing.
	maxReportHistory = 4096
)

// DeniedFunc receives a refused egress attempt: the conversation, the target ("host:port", "provider", or empty
// when the header was unreadable) and a reason ("<reason>: <message>"). It is called at most once per
// (conversation, target, reason) per Options.ReportInterval; repeats in between are only counted in Stats. It runs
// synchronously before the guest receives the refusal, so it must not block for long.
type DeniedFunc func(conversationUID, target, reason string)

// Options configure a Server.
type Options struct {
	// Denied receives refusals (optional).
	Denied DeniedFunc
	// Logger receives stream logs (default slog.Default()).
	Logger *slog.Logger
	// MaxStreamsPerConversation bounds concurrent egress streams of one conversation (default 64); more are
	// refused with too_many_streams.
	MaxStreamsPerConversation int
	// HeaderTimeout bounds reading a stream's header (default 10s).
	HeaderTimeout time.Duration
	// DialTimeout bounds dialing an allowed target (default 10s).
	DialTimeout time.Duration
	// IdleTimeout closes a tunnel or provider connection with no traffic in either direction (default 10m).
	IdleTimeout time.Duration
	// ReportInterval coalesces repeated Denied reports (default 1m).
	ReportInterval time.Duration
	// Dial connects to an allowed target (default a net.Dialer with DialTimeout). A seam for tests.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Resolver resolves an allowed domain before a tunnel dials it (default net.DefaultResolver). A seam for tests.
	Resolver interface {
		LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	}
	// ProviderTransport carries provider requests (default: a transport with no proxy and the dial and TLS
	// timeouts above).
	ProviderTransport http.RoundTripper
	// Registerer, when set, receives the server's Prometheus collectors (unregistered by Close).
	Registerer prometheus.Registerer
}

// Stats is a snapshot of the server's counters.
type Stats struct {
	// Admitted counts streams that were allowed (provider or tunnel).
	Admitted uint64
	// Refused counts refused streams by reason.
	Refused map[egresswire.Reason]uint64
	// Reported counts calls of the Denied callback.
	Reported uint64
	// Active is the number of streams being served now, over all conversations.
	Active int
}

// Server serves guest-opened egress streams; it implements gateway.GuestStreamHandler. Policies are set per
// conversation with SetPolicy; a conversation without one is denied everything.
type Server struct {
	opts      Options
	log       *slog.Logger
	transport http.RoundTripper
	prom      *promMetrics

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	policies map[string]Policy
	active   map[string]int          // conversation → streams being served
	streams  map[*killConn]struct{}  // every stream being served, killed by Close
	reported map[reportKey]time.Time // last Denied call per key
	stats    Stats
}

type reportKey struct{ conv, target, reason string }

// NewServer returns a Server with no policies. It fails only when registering its metrics fails.
func NewServer(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxStreamsPerConversation <= 0 {
		opts.MaxStreamsPerConversation = DefaultMaxStreamsPerConversation
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.ReportInterval <= 0 {
		opts.ReportInterval = DefaultReportInterval
	}
	if opts.Dial == nil {
		d := &net.Dialer{Timeout: opts.DialTimeout}
		opts.Dial = d.DialContext
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	s := &Server{
		opts: opts, log: opts.Logger.With("component", "egress"),
		policies: map[string]Policy{}, active: map[string]int{}, streams: map[*killConn]struct{}{},
		reported: map[reportKey]time.Time{}, stats: Stats{Refused: map[egresswire.Reason]uint64{}},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.transport = opts.ProviderTransport
	if s.transport == nil {
		s.transport = &http.Transport{
			Proxy:                 nil,
			DialContext:           opts.Dial,
			TLSHandshakeTimeout:   opts.DialTimeout,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          64,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			DisableCompression:    true, // pass the client's Accept-Encoding and the provider's bytes through as they are
		}
	}
	prom, err := newPromMetrics(opts.Registerer, func() int { return s.Stats().Active })
	if err != nil {
		s.cancel()
		return nil, err
	}
	s.prom = prom
	return s, nil
}

// SetPolicy sets (or replaces) a conversation's policy; it applies to streams opened from now on.
func (s *Server) SetPolicy(conversationUID string, p Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policies[conversationUID] = p
}

// RemovePolicy forgets a conversation's policy (its later streams are denied) and its report history.
func (s *Server) RemovePolicy(conversationUID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.policies, conversationUID)
	for k := range s.reported {
		if k.conv == conversationUID {
			delete(s.reported, k)
		}
	}
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stats
	out.Refused = make(map[egresswire.Reason]uint64, len(s.stats.Refused))
	for k, v := range s.stats.Refused {
		out.Refused[k] = v
	}
	out.Active = len(s.streams)
	return out
}

// Close refuses new streams, closes every stream being served and waits for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c := range s.streams {
		c.kill()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if t, ok := s.transport.(*http.Transport); ok && s.opts.ProviderTransport == nil {
		t.CloseIdleConnections()
	}
	s.prom.unregister()
	return nil
}

// ServeGuestStream implements gateway.GuestStreamHandler: it bounds, reads the header, checks the policy and
// serves or refuses the stream. It closes the stream before returning.
func (s *Server) ServeGuestStream(g gateway.GuestStream, raw net.Conn) {
	conversationUID := g.ConversationID
	stream := &killConn{Conn: raw}
	defer func() { _ = stream.Close() }()
	if reason, ok := s.acquire(conversationUID, stream); !ok {
		s.refuse(conversationUID, stream, "", &Denial{reason, "egress stream limit reached"})
		return
	}
	defer s.release(conversationUID, stream)

	_ = stream.SetDeadline(time.Now().Add(s.opts.HeaderTimeout))
	var h egresswire.Header
	if err := egresswire.ReadFrame(stream, &h); err != nil {
		s.refuse(conversationUID, stream, "", &Denial{egresswire.ReasonMalformedHeader, err.Error()})
		return
	}
	s.mu.Lock()
	p, ok := s.policies[conversationUID]
	s.mu.Unlock()
	target := h.Target
	if h.Kind == egresswire.KindProvider {
		target = "provider"
	}
	if !ok {
		s.refuse(conversationUID, stream, target, &Denial{egresswire.ReasonNoPolicy, "no egress policy for this conversation"})
		return
	}
	switch h.Kind {
	case egresswire.KindProvider:
		if h.Target != "" {
			s.refuse(conversationUID, stream, target, &Denial{egresswire.ReasonMalformedHeader, "a provider stream names no target"})
			return
		}
		if p.Provider == nil {
			s.refuse(conversationUID, stream, target, &Denial{egresswire.ReasonNoProvider, "the agent names no provider endpoint"})
			return
		}
		if !s.admit(stream, h.Kind) {
			return
		}
		s.serveProvider(conversationUID, stream, p.Provider)
	case egresswire.KindProxy:
		host, port, err := p.CheckTarget(h.Target)
		if err != nil {
			var d *Denial
			if !errors.As(err, &d) {
				d = &Denial{egresswire.ReasonMalformedHeader, err.Error()}
			}
			s.refuse(conversationUID, stream, target, d)
			return
		}
		s.serveTunnel(conversationUID, stream, net.JoinHostPort(host, fmt.Sprint(port)))
	default:
		s.refuse(conversationUID, stream, target, &Denial{egresswire.ReasonMalformedHeader, fmt.Sprintf("unknown stream kind %q", h.Kind)})
	}
}

// acquire takes one of the conversation's stream slots and registers the stream for Close.
func (s *Server) acquire(conv string, st *killConn) (egresswire.Reason, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return egresswire.ReasonShuttingDown, false
	}
	if s.active[conv] >= s.opts.MaxStreamsPerConversation {
		return egresswire.ReasonTooManyStreams, false
	}
	s.active[conv]++
	s.streams[st] = struct{}{}
	s.wg.Add(1)
	return "", true
}

func (s *Server) release(conv string, st *killConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active[conv]--; s.active[conv] <= 0 {
		delete(s.active, conv)
	}
	delete(s.streams, st)
	s.wg.Done()
}

// admit counts the stream as admitted, sends the OK reply and clears the header deadline. It counts first, so an
// admission the guest has seen is always counted.
func (s *Server) admit(st net.Conn, kind egresswire.Kind) bool {
	s.mu.Lock()
	s.stats.Admitted++
	s.mu.Unlock()
	s.prom.admitted.WithLabelValues(string(kind)).Inc()
	if err := egresswire.WriteFrame(st, egresswire.Reply{OK: true}); err != nil {
		return false
	}
	_ = st.SetDeadline(time.Time{})
	return true
}

// refuse counts, logs and reports the denial (coalesced), then answers the guest (best effort). The report comes
// first, so a refusal the guest has seen has always been reported.
func (s *Server) refuse(conv string, st net.Conn, target string, d *Denial) {
	now := time.Now()
	key := reportKey{conv, target, string(d.Reason)}
	s.prom.refused.WithLabelValues(string(d.Reason)).Inc()
	s.mu.Lock()
	s.stats.Refused[d.Reason]++
	report := d.Reason != egresswire.ReasonDialFailed && d.Reason != egresswire.ReasonShuttingDown
	if last, ok := s.reported[key]; report && ok && now.Sub(last) < s.opts.ReportInterval {
		report = false
	}
	if report && len(s.reported) >= maxReportHistory { // bound the history: drop expired entries
		for k, t := range s.reported {
			if now.Sub(t) >= s.opts.ReportInterval {
				delete(s.reported, k)
			}
		}
		report = len(s.reported) < maxReportHistory // a flood of distinct targets is counted, not reported
	}
	if report {
		s.reported[key] = now
		s.stats.Reported++
	}
	s.mu.Unlock()
	s.log.Info("egress refused", "conversation", conv, "target", target, "reason", string(d.Reason), "message", d.Message)
	if report && s.opts.Denied != nil {
		s.opts.Denied(conv, target, string(d.Reason)+": "+d.Message)
	}
	_ = st.SetWriteDeadline(time.Now().Add(time.Second))
	_ = egresswire.WriteFrame(st, egresswire.Reply{Reason: d.Reason, Message: d.Message})
}
