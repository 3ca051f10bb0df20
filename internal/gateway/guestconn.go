package gateway

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// BaseURL is the URL prefix for requests through GuestConn.HTTPClient; the host part is ignored because every
// connection is a yamux stream to the one guest.
const BaseURL = "http://aicli-guest"

// GuestConn is one admitted guest connection. Requests made with HTTPClient travel as yamux streams to the
// handler the guest serves.
type GuestConn struct {
	convID    string
	fp        string
	raw       net.Conn  // the accepted unix connection; referenced so it stays reachable
	tls       *tls.Conn // the TLS layer under mux
	mux       *yamux.Session
	transport *http.Transport
	client    *http.Client
	closeOnce sync.Once
}

func newGuestConn(convID, fp string, raw net.Conn, tc *tls.Conn, mux *yamux.Session) *GuestConn {
	gc := &GuestConn{convID: convID, fp: fp, raw: raw, tls: tc, mux: mux}
	gc.transport = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return mux.OpenStream()
		},
		Proxy:               nil,
		DisableCompression:  true,
		MaxIdleConns:        8,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     time.Minute,
	}
	gc.client = &http.Client{Transport: gc.transport}
	return gc
}

// ConversationID is the conversation the guest was admitted for.
func (c *GuestConn) ConversationID() string { return c.convID }

// GuestFingerprint is the "sha256:<hex>" fingerprint of the guest's ephemeral key, proven in the TLS handshake.
func (c *GuestConn) GuestFingerprint() string { return c.fp }

// HTTPClient returns a client whose connections are streams to the guest; use BaseURL as the URL prefix.
func (c *GuestConn) HTTPClient() *http.Client { return c.client }

// Done is closed when the connection has ended.
func (c *GuestConn) Done() <-chan struct{} { return c.mux.CloseChan() }

// Ping measures one round trip of a yamux keepalive ping; an error means the connection is unusable.
func (c *GuestConn) Ping() (time.Duration, error) { return c.mux.Ping() }

// Close ends the connection. The guest will try to reconnect with its reconnect secret; use Gateway.Release to
// end the conversation for good.
func (c *GuestConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.transport.CloseIdleConnections()
		err = c.mux.Close()
		_ = c.raw.Close()
	})
	return err
}
