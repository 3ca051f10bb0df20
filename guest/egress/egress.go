package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/internal/connset"
)

// Defaults for Options.
const (
	DefaultMaxConns      = 192
	DefaultOpenTimeout   = 30 * time.Second
	DefaultHeaderTimeout = 10 * time.Second
	// maxRequestHeader bounds the proxy request line and headers a client may send before the tunnel starts.
	maxRequestHeader = 16 << 10
)

// Opener opens a stream to the supervisor; *sidechannel.Outbound implements it.
type Opener interface {
	Open(ctx context.Context) (net.Conn, error)
}

// Options configure a Proxy.
type Options struct {
	// Streams opens side-channel streams to the supervisor. Required.
	Streams Opener
	// ProviderAddr is the provider port's listen address (default egresswire.DefaultProviderAddr).
	ProviderAddr string
	// ProxyAddr is the forward proxy's listen address (default egresswire.DefaultProxyAddr).
	ProxyAddr string
	// MaxConns bounds concurrent client connections over both listeners (default 192, below the gateway's
	// 256 streams per guest); more are closed at once.
	MaxConns int
	// OpenTimeout bounds opening a stream and reading the supervisor's reply (default 30s).
	OpenTimeout time.Duration
	// HeaderTimeout bounds reading a proxy client's request head (default 10s).
	HeaderTimeout time.Duration
	// Logger receives connection logs (default slog.Default()).
	Logger *slog.Logger
}

// Proxy is the pair of loopback listeners. Create it with Listen, run it with Serve.
type Proxy struct {
	opts     Options
	log      *slog.Logger
	provider net.Listener
	proxy    net.Listener
	slots    chan struct{}
	conns    connset.Set
}

// Listen binds both listeners.
func Listen(opts Options) (*Proxy, error) {
	if opts.Streams == nil {
		return nil, errors.New("egress: Streams is required")
	}
	if opts.ProviderAddr == "" {
		opts.ProviderAddr = egresswire.DefaultProviderAddr
	}
	if opts.ProxyAddr == "" {
		opts.ProxyAddr = egresswire.DefaultProxyAddr
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = DefaultOpenTimeout
	}
	if opts.HeaderTimeout <= 0 {
		opts.HeaderTimeout = DefaultHeaderTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	pl, err := net.Listen("tcp", opts.ProviderAddr)
	if err != nil {
		return nil, fmt.Errorf("egress: provider listener: %w", err)
	}
	xl, err := net.Listen("tcp", opts.ProxyAddr)
	if err != nil {
		_ = pl.Close()
		return nil, fmt.Errorf("egress: proxy listener: %w", err)
	}
	return &Proxy{
		opts: opts, log: opts.Logger.With("component", "egress"), provider: pl, proxy: xl,
		slots: make(chan struct{}, opts.MaxConns),
	}, nil
}

// ProviderAddr is the provider port's bound address.
func (p *Proxy) ProviderAddr() net.Addr { return p.provider.Addr() }

// ProxyAddr is the forward proxy's bound address.
func (p *Proxy) ProxyAddr() net.Addr { return p.proxy.Addr() }

// Serve accepts on both listeners until ctx ends, then closes them and every client connection and returns nil.
func (p *Proxy) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.acceptLoop(ctx, p.provider, p.handleProvider) }()
	go func() { defer wg.Done(); p.acceptLoop(ctx, p.proxy, p.handleProxy) }()
	<-ctx.Done()
	_ = p.provider.Close()
	_ = p.proxy.Close()
	p.conns.CloseAll()
	wg.Wait()
	return nil
}

// acceptLoop accepts connections and serves each on its own goroutine within the MaxConns bound.
func (p *Proxy) acceptLoop(ctx context.Context, ln net.Listener, handle func(context.Context, net.Conn)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			p.log.Warn("egress: accept failed", "addr", ln.Addr().String(), "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond): // e.g. EMFILE: do not spin
			}
			continue
		}
		select {
		case p.slots <- struct{}{}:
		default:
			p.log.Warn("egress: too many client connections; closing one", "max", p.opts.MaxConns)
			_ = c.Close()
			continue
		}
		if !p.conns.Track(c) {
			<-p.slots
			_ = c.Close()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-p.slots }()
			defer p.conns.Untrack(c)
			handle(ctx, c)
		}()
	}
}

// open opens a stream, sends h and reads the supervisor's reply. On a refusal the stream is closed and the
// returned reply says why; err is set only when the supervisor could not be asked.
func (p *Proxy) open(ctx context.Context, h egresswire.Header) (net.Conn, egresswire.Reply, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.OpenTimeout)
	defer cancel()
	st, err := p.opts.Streams.Open(ctx)
	if err != nil {
		return nil, egresswire.Reply{}, fmt.Errorf("open egress stream: %w", err)
	}
	dl, _ := ctx.Deadline()
	_ = st.SetDeadline(dl)
	if err := egresswire.WriteFrame(st, h); err != nil {
		_ = st.Close()
		return nil, egresswire.Reply{}, err
	}
	var rep egresswire.Reply
	if err := egresswire.ReadFrame(st, &rep); err != nil {
		_ = st.Close()
		return nil, egresswire.Reply{}, fmt.Errorf("read egress reply: %w", err)
	}
	if !rep.OK {
		_ = st.Close()
		return nil, rep, nil
	}
	_ = st.SetDeadline(time.Time{})
	return st, rep, nil
}

// handleProvider pipes one provider-port connection to a provider stream.
func (p *Proxy) handleProvider(ctx context.Context, c net.Conn) {
	st, rep, err := p.open(ctx, egresswire.Header{Kind: egresswire.KindProvider})
	if err != nil {
		p.log.Warn("egress: provider stream failed", "err", err)
		p.awaitRequest(c)
		writeRefusal(c, http.StatusBadGateway, "Bad Gateway", "egress: supervisor unreachable: "+err.Error())
		return
	}
	if !rep.OK {
		p.log.Info("egress: provider refused", "reason", rep.Reason, "message", rep.Message)
		p.awaitRequest(c)
		writeRefusal(c, http.StatusForbidden, "Forbidden", refusalText(rep))
		return
	}
	splice(c, c, st)
}

// awaitRequest reads (and drops) the client's request head, best effort, so a refusal is an answer to a request:
// an HTTP client treats a response that arrives before its request as an error, not as the response.
func (p *Proxy) awaitRequest(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(p.opts.HeaderTimeout))
	_, _ = http.ReadRequest(bufio.NewReader(&budgetReader{r: c, n: maxRequestHeader}))
	_ = c.SetReadDeadline(time.Time{})
}

// refusalText is the body a client sees for a refusal.
func refusalText(rep egresswire.Reply) string {
	return fmt.Sprintf("egress denied (%s): %s", rep.Reason, rep.Message)
}

// writeRefusal answers an HTTP client with a short error response and closes its write side, then discards what
// it already sent (briefly), so the client reads the response instead of a connection reset.
func writeRefusal(c net.Conn, code int, status, msg string) {
	msg = strings.ReplaceAll(msg, "\n", " ") + "\n"
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"+
		"Connection: close\r\n\r\n%s", code, status, len(msg), msg)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}
