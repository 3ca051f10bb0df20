package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/hashicorp/yamux"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

// serveConn runs the handshake on one accepted connection and, when the guest is admitted, installs its
// GuestConn. Every refusal is logged (without secrets) and counted.
func (g *Gateway) serveConn(c *conversation, raw net.Conn) {
	admitted := false
	defer func() {
		g.mu.Lock()
		delete(c.pending, raw)
		g.mu.Unlock()
		if !admitted {
			_ = raw.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(g.ctx, g.opts.HandshakeTimeout)
	defer cancel()
	if err := raw.SetDeadline(time.Now().Add(g.opts.HandshakeTimeout)); err != nil {
		g.refused(c.id, "", refuse(wire.ReasonDisconnected, "set deadline", err))
		return
	}
	under := wire.NewRecordBatcher(raw)
	tc := tls.Server(under, g.tlsConf)
	if err := tc.HandshakeContext(ctx); err != nil {
		g.refused(c.id, "", refuse(classify(err), "TLS handshake failed", err))
		return
	}
	cs := tc.ConnectionState()
	fp, err := wire.PeerFingerprint(cs)
	if err != nil { // VerifyConnection already enforced this; keep the check next to its use
		g.refused(c.id, "", refuse(classify(err), "bad client certificate", err))
		return
	}
	if cs.NegotiatedProtocol != wire.ALPN {
		g.refused(c.id, fp, refuse(wire.ReasonProtocol, "client did not negotiate "+wire.ALPN, nil))
		return
	}
	var hello wire.Hello
	if err := wire.ReadFrame(tc, &hello); err != nil {
		r := classify(err)
		if r == wire.ReasonTLSHandshake { // the connection is fine, its content is not
			r = wire.ReasonMalformedHello
		}
		g.refused(c.id, fp, refuse(r, "reading hello failed", err)) // counted before the guest learns of it
		if r == wire.ReasonMalformedHello {
			g.reply(tc, wire.Reply{Reason: r, Message: "malformed hello"})
		}
		return
	}
	reconnect := hello.ReconnectSecret != ""
	gc, ref := g.admit(ctx, c, hello, fp, tc, under)
	if ref != nil {
		g.refused(c.id, fp, ref) // counted before the guest learns of it
		g.reply(tc, wire.Reply{Reason: ref.reason, Message: ref.msg})
		return
	}
	admitted = true
	g.log.Info("guest admitted", "conversation", c.id, "guestFingerprint", fp, "reconnect", reconnect)
	go g.watch(c, gc)
	go g.acceptGuestStreams(c.id, gc)
}

// acceptGuestStreams hands every stream the guest opens to Options.GuestStreams until the connection ends. A
// stream must be accepted even without a handler: yamux ends the whole session when a stream open is not
// acknowledged within StreamOpenTimeout.
func (g *Gateway) acceptGuestStreams(convID string, gc *GuestConn) {
	for {
		st, err := gc.mux.AcceptStream()
		if err != nil {
			return // the session ended
		}
		if n := gc.mux.NumStreams(); n > g.opts.MaxGuestStreams {
			g.log.Warn("guest holds too many streams; closing its connection", "conversation", convID,
				"reason", string(wire.ReasonStreamLimit),
				"guestFingerprint", gc.fp, "streams", n, "max", g.opts.MaxGuestStreams)
			g.metrics.refuse(wire.ReasonStreamLimit)
			_ = st.Close()
			_ = gc.Close()
			return
		}
		if g.opts.GuestStreams == nil {
			_ = st.Close()
			continue
		}
		go g.opts.GuestStreams.ServeGuestStream(GuestStream{ConversationID: convID, GuestFingerprint: gc.fp}, st)
	}
}

// admit validates the hello under the conversation's admission lock, records the binding, replies OK (with the
// reconnect secret) and installs the new GuestConn, closing a previous one.
func (g *Gateway) admit(ctx context.Context, c *conversation, hello wire.Hello, fp string, tc *tls.Conn, under *wire.RecordBatcher) (*GuestConn, *refusal) {
	if (hello.LaunchToken == "") == (hello.ReconnectSecret == "") {
		return nil, refuse(wire.ReasonMalformedHello, "hello must carry exactly one of token and reconnectSecret", nil)
	}
	c.admitMu.Lock()
	defer c.admitMu.Unlock()
	g.mu.Lock()
	released := c.released
	g.mu.Unlock()
	if released {
		return nil, refuse(wire.ReasonTokenUnknown, "conversation is no longer prepared", nil)
	}
	var secret string
	if hello.LaunchToken != "" {
		ref := g.spendLaunchToken(ctx, c.id, hello.LaunchToken)
		g.mu.Lock()
		delete(c.tokens, hashSecret(hello.LaunchToken))
		g.mu.Unlock()
		if ref == nil && hello.ConversationID != c.id {
			ref = refuse(wire.ReasonConversationMismatch, "hello names another conversation than this socket's", nil)
		}
		if ref != nil {
			return nil, ref
		}
		if secret, ref = g.bindGuest(ctx, c.id, fp); ref != nil {
			return nil, ref
		}
	} else {
		if hello.ConversationID != c.id {
			return nil, refuse(wire.ReasonConversationMismatch, "hello names another conversation than this socket's", nil)
		}
		if ref := g.checkReconnect(ctx, c.id, fp, hello.ReconnectSecret); ref != nil {
			return nil, ref
		}
		secret = hello.ReconnectSecret
	}
	if err := wire.WriteFrame(tc, wire.Reply{OK: true, ReconnectSecret: secret, GuestFingerprint: fp}); err != nil {
		return nil, refuse(classify(err), "sending the admission reply failed", err)
	}
	if err := under.SetDeadline(time.Time{}); err != nil {
		return nil, refuse(wire.ReasonDisconnected, "clear deadline", err)
	}
	mux, err := yamux.Client(wire.NewMuxConn(tc, under), wire.MuxConfig(g.log.With("conversation", c.id)))
	if err != nil {
		return nil, refuse(wire.ReasonUnavailable, "start yamux", err)
	}
	gc := newGuestConn(c.id, fp, under, tc, mux)
	g.mu.Lock()
	if c.released {
		g.mu.Unlock()
		_ = gc.Close()
		return nil, refuse(wire.ReasonTokenUnknown, "conversation released during the handshake", nil)
	}
	g.metrics.admit(hello.ReconnectSecret != "")
	prev := c.guest
	c.guest = gc
	c.notifyLocked()
	g.mu.Unlock()
	if prev != nil {
		g.log.Info("replacing previous guest connection", "conversation", c.id, "previousFingerprint", prev.fp)
		_ = prev.Close()
	}
	return gc, nil
}

// watch clears the conversation's guest when its connection ends.
func (g *Gateway) watch(c *conversation, gc *GuestConn) {
	select {
	case <-gc.Done():
	case <-g.ctx.Done():
		_ = gc.Close()
		return
	}
	g.mu.Lock()
	current := c.guest == gc
	if current {
		c.guest = nil
		c.notifyLocked()
	}
	g.mu.Unlock()
	if current {
		g.log.Warn("guest disconnected", "conversation", c.id, "guestFingerprint", gc.fp)
	}
}

// reply sends a refusal frame, best effort: the peer may already be gone.
func (g *Gateway) reply(tc *tls.Conn, r wire.Reply) {
	_ = wire.WriteFrame(tc, r)
}

// refused logs and counts one refusal.
func (g *Gateway) refused(convID, fp string, r *refusal) {
	g.metrics.refuse(r.reason)
	attrs := []any{"conversation", convID, "reason", string(r.reason), "detail", r.msg}
	if fp != "" {
		attrs = append(attrs, "guestFingerprint", fp)
	}
	if r.err != nil {
		attrs = append(attrs, "err", r.err.Error())
	}
	g.log.Warn("guest refused", attrs...)
}

// classify maps a transport or TLS error to a refusal reason.
func classify(err error) wire.Reason {
	var ne net.Error
	switch {
	case errors.Is(err, wire.ErrNoPeerCert):
		return wire.ReasonNoClientCert
	case errors.Is(err, wire.ErrBadPeerCert):
		return wire.ReasonBadClientCert
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return wire.ReasonTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed), errors.Is(err, context.Canceled):
		return wire.ReasonDisconnected
	case errors.Is(err, wire.ErrFrameTooLarge):
		return wire.ReasonMalformedHello
	}
	return wire.ReasonTLSHandshake
}
