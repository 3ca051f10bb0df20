package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
)

// errHeadTooLarge ends reading a proxy request head that exceeds maxRequestHeader.
var errHeadTooLarge = errors.New("egress: proxy request head too large")

// handleProxy serves one forward-proxy client: a CONNECT becomes a tunnel; an absolute-form http:// request is
// forwarded once (Connection: close) and its response relayed.
func (p *Proxy) handleProxy(ctx context.Context, c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(p.opts.HeaderTimeout))
	budget := &budgetReader{r: c, n: maxRequestHeader}
	br := bufio.NewReader(budget)
	req, err := http.ReadRequest(br)
	if err != nil {
		p.log.Info("egress: malformed proxy request", "err", err)
		writeRefusal(c, http.StatusBadRequest, "Bad Request", "egress proxy: malformed request")
		return
	}
	budget.n = -1
	_ = c.SetReadDeadline(time.Time{})
	if req.Method == http.MethodConnect {
		p.connect(ctx, c, br, req.RequestURI)
		return
	}
	p.forward(ctx, c, req)
}

// connect tunnels c to target through the supervisor. br holds whatever the client sent after the request head.
func (p *Proxy) connect(ctx context.Context, c net.Conn, br *bufio.Reader, target string) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		writeRefusal(c, http.StatusBadRequest, "Bad Request", "egress proxy: CONNECT needs host:port")
		return
	}
	st := p.openTunnel(ctx, c, target)
	if st == nil {
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = st.Close()
		return
	}
	splice(c, br, st)
}

// openTunnel asks the supervisor for a proxy stream to target. On failure or refusal it answers the client (502 or
// 403) and returns nil.
func (p *Proxy) openTunnel(ctx context.Context, c net.Conn, target string) net.Conn {
	st, rep, err := p.open(ctx, egresswire.Header{Kind: egresswire.KindProxy, Target: target})
	if err != nil {
		p.log.Warn("egress: proxy stream failed", "target", target, "err", err)
		writeRefusal(c, http.StatusBadGateway, "Bad Gateway", "egress: supervisor unreachable: "+err.Error())
		return nil
	}
	if !rep.OK {
		p.log.Info("egress: proxy target refused", "target", target, "reason", rep.Reason, "message", rep.Message)
		writeRefusal(c, http.StatusForbidden, "Forbidden", refusalText(rep))
		return nil
	}
	return st
}

// forward relays one absolute-form plain-HTTP request to its origin through the supervisor.
func (p *Proxy) forward(ctx context.Context, c net.Conn, req *http.Request) {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		writeRefusal(c, http.StatusBadRequest, "Bad Request",
			"egress proxy: only CONNECT and absolute http:// requests are proxied")
		return
	}
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	target := net.JoinHostPort(req.URL.Hostname(), port)
	st := p.openTunnel(ctx, c, target)
	if st == nil {
		return
	}
	defer func() { _ = st.Close() }()
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	if err := req.Write(st); err != nil { // origin form
		writeRefusal(c, http.StatusBadGateway, "Bad Gateway", "egress proxy: sending the request failed")
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(st), req)
	if err != nil {
		writeRefusal(c, http.StatusBadGateway, "Bad Gateway", "egress proxy: reading the response failed")
		return
	}
	defer func() { _ = resp.Body.Close() }()
	resp.Close = true
	_ = resp.Write(c)
}

// budgetReader fails once more than n bytes were read; n < 0 means unlimited.
type budgetReader struct {
	r io.Reader
	n int64
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.n < 0 {
		return b.r.Read(p)
	}
	if b.n == 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	return n, err
}

// splice copies client → stream (from cr, which reads the client connection, possibly through a buffer) and
// stream → client until both directions end. A clean end of one direction half-closes the other side's write
// direction; an error closes both.
func splice(c net.Conn, cr io.Reader, st net.Conn) {
	errc := make(chan error, 2)
	go func() {
		_, err := io.Copy(st, cr)
		if err == nil {
			err = st.Close() // yamux: FIN, reads stay open
		}
		errc <- err
	}()
	go func() {
		_, err := io.Copy(c, st)
		if err == nil {
			if cw, ok := c.(interface{ CloseWrite() error }); ok {
				err = cw.CloseWrite()
			}
		}
		errc <- err
	}()
	for range 2 {
		if err := <-errc; err != nil {
			break
		}
	}
	_ = c.Close()
	_ = st.SetDeadline(time.Now()) // a yamux Close is a half-close: wake a copy still reading the stream
	_ = st.Close()
}
