package egress

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
)

// serveProvider serves HTTP on an admitted provider stream, reverse-proxying every request to the provider
// endpoint (scheme, host and base path from provider), streaming responses as they arrive (SSE included), until
// the guest closes the connection or it idles out.
func (s *Server) serveProvider(conv string, st net.Conn, provider *url.URL) {
	errLog := slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(provider) // also sets the outbound Host to the provider's
		},
		Transport:     s.transport,
		FlushInterval: -1, // flush every write: token streams must not wait in a buffer
		ErrorLog:      errLog,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.log.Warn("egress: provider request failed", "conversation", conv, "provider", provider.Host,
				"path", r.URL.Path, "err", err)
			http.Error(w, "egress: provider unreachable", http.StatusBadGateway)
		},
	}
	srv := &http.Server{
		// Full duplex: otherwise, when the proxy writes the response header, the server drains and closes the
		// request body, and the transport's final read of that body (its check for EOF, racing with the
		// provider's early response) fails with "invalid Read on closed Body" and tears the provider connection
		// down mid-response.
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = http.NewResponseController(w).EnableFullDuplex()
			rp.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: s.opts.HeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		ErrorLog:          errLog,
	}
	_ = srv.Serve(newOneConnListener(st))
	_ = srv.Close()
}

// oneConnListener hands out one connection, then blocks Accept until that connection is closed, so
// http.Server.Serve returns exactly when the connection is done.
type oneConnListener struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
	used bool
	mu   sync.Mutex
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{done: make(chan struct{})}
	l.conn = &notifyConn{Conn: c, onClose: func() { l.once.Do(func() { close(l.done) }) }}
	return l
}

// Accept implements net.Listener.
func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if !l.used {
		l.used = true
		l.mu.Unlock()
		return l.conn, nil
	}
	l.mu.Unlock()
	<-l.done
	return nil, net.ErrClosed
}

// Close implements net.Listener; it does not close the handed-out connection.
func (l *oneConnListener) Close() error { return nil }

// Addr implements net.Listener.
func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

// notifyConn calls onClose when closed.
type notifyConn struct {
	net.Conn
	onClose func()
}

func (c *notifyConn) Close() error {
	err := c.Conn.Close()
	c.onClose()
	return err
}
