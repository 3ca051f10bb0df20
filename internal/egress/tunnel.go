package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
)

// serveTunnel dials an allowed target, admits the stream and pipes bytes both ways until both directions end,
// one fails, or the tunnel idles out.
func (s *Server) serveTunnel(conv string, st net.Conn, addr string) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.DialTimeout)
	target, denial := s.resolveTarget(ctx, addr)
	if denial != nil {
		cancel()
		s.refuse(conv, st, addr, denial)
		return
	}
	c, err := s.opts.Dial(ctx, "tcp", target)
	cancel()
	if err != nil {
		s.refuse(conv, st, addr, &Denial{egresswire.ReasonDialFailed, err.Error()})
		return
	}
	defer func() { _ = c.Close() }()
	if !s.admit(st, egresswire.KindProxy) {
		return
	}
	s.log.Debug("egress tunnel open", "conversation", conv, "target", addr)
	pipe(s.ctx, st, c, s.opts.IdleTimeout)
}

// resolveTarget returns the address a tunnel to the allowed host:port dials. An IP literal or localhost, which the
// allow-list names as such, is dialled as named. A domain is resolved here and dialled at its first address that is
// not loopback, link-local (cloud metadata services live there) or unspecified: an allowed domain whose DNS answers
// with the supervisor host's own addresses (a rebinding) is refused, and the check and the dial see the same address.
func (s *Server) resolveTarget(ctx context.Context, addr string) (string, *Denial) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", &Denial{egresswire.ReasonMalformedHeader, err.Error()}
	}
	if net.ParseIP(host) != nil || host == "localhost" {
		return addr, nil
	}
	ips, err := s.opts.Resolver.LookupIPAddr(ctx, host)
	if err != nil {
		return "", &Denial{egresswire.ReasonDialFailed, err.Error()}
	}
	for _, ip := range ips {
		if !internalIP(ip.IP) {
			return net.JoinHostPort(ip.IP.String(), port), nil
		}
	}
	return "", &Denial{egresswire.ReasonHostInternal, fmt.Sprintf("%s resolves only to addresses of the supervisor host or its link (%v)", host, ips)}
}

// internalIP reports whether ip is loopback, link-local, multicast or unspecified.
func internalIP(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified()
}

// errStopped ends a pipe whose context ended.
var errStopped = errors.New("egress: pipe stopped")

// pipe copies a → b and b → a. A clean end of one direction half-closes the destination's write side; an error,
// idleness in both directions for idle, or the end of ctx closes both.
func pipe(ctx context.Context, a, b net.Conn, idle time.Duration) {
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	errc := make(chan error, 2)
	go func() { errc <- copyIdle(ctx, b, a, idle, &last) }()
	go func() { errc <- copyIdle(ctx, a, b, idle, &last) }()
	stop := context.AfterFunc(ctx, func() { // a yamux Close is only a half-close: also cut blocked reads
		_ = a.SetDeadline(time.Now())
		_ = b.SetDeadline(time.Now())
	})
	defer stop()
	for range 2 {
		if err := <-errc; err != nil {
			break
		}
	}
	hardClose(a)
	hardClose(b)
}

// hardClose ends c for both directions: a killConn is killed; anything else gets an expired deadline (which wakes
// a read blocked on a half-closed yamux stream) and is closed.
func hardClose(c net.Conn) {
	if k, ok := c.(*killConn); ok {
		k.kill()
		return
	}
	_ = c.SetDeadline(time.Now())
	_ = c.Close()
}

// copyIdle copies src to dst; a read that times out only ends the copy when neither direction moved a byte for
// idle. On EOF it half-closes dst.
func copyIdle(ctx context.Context, dst, src net.Conn, idle time.Duration, last *atomic.Int64) error {
	buf := make([]byte, 32<<10)
	for {
		if ctx.Err() != nil {
			return errStopped
		}
		_ = src.SetReadDeadline(time.Now().Add(idle))
		n, err := src.Read(buf)
		if n > 0 {
			last.Store(time.Now().UnixNano())
			_ = dst.SetWriteDeadline(time.Now().Add(idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return closeWrite(dst)
		case isTimeout(err) && time.Since(time.Unix(0, last.Load())) < idle:
		default:
			return err
		}
	}
}

// closeWrite half-closes c: TCP CloseWrite, or a yamux stream's Close (which sends FIN and keeps reading).
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// isTimeout reports a deadline error, from a TCP connection or a yamux stream alike.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
