package sidechannel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
)

// ErrNoSession is returned by Outbound.Open when no session became available before its context ended.
var ErrNoSession = errors.New("side channel: no session to the supervisor")

// Open opens a new stream to the supervisor over this session (the guest-initiated direction; the supervisor
// accepts it and hands it to its guest-stream handler).
func (s *Session) Open() (net.Conn, error) {
	c, err := s.mux.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("side channel: open stream: %w", err)
	}
	return c, nil
}

// Outbound opens guest-initiated streams over whichever session Serve currently holds, so guest components (the
// egress proxies) keep working across re-dials. Set it as Bootstrap.Outbound before calling Serve. The zero value
// is ready to use; it is safe for concurrent use.
type Outbound struct {
	mu      sync.Mutex
	cur     *Session
	changed chan struct{} // closed and replaced whenever cur changes
}

// set publishes the current session (nil while re-dialing).
func (o *Outbound) set(s *Session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cur = s
	if o.changed != nil {
		close(o.changed)
	}
	o.changed = make(chan struct{})
}

// Open opens a stream to the supervisor, waiting for a session while Serve is (re-)dialing, until ctx ends.
func (o *Outbound) Open(ctx context.Context) (net.Conn, error) {
	for {
		o.mu.Lock()
		s := o.cur
		if o.changed == nil {
			o.changed = make(chan struct{})
		}
		ch := o.changed
		o.mu.Unlock()
		if s != nil {
			select {
			case <-s.Done():
				// Serve has not noticed yet; wait for the next session below.
			default:
				c, err := s.Open()
				if err == nil {
					return c, nil
				}
				select {
				case <-s.Done():
				default:
					return nil, err
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNoSession, ctx.Err())
		case <-ch: // Serve published a new session, or cleared an ended one
		}
	}
}
