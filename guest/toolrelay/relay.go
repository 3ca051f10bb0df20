package toolrelay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/internal/connset"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/toolwire"
)

// Defaults for Options.
const (
	DefaultMaxConns       = 32
	DefaultOpenTimeout    = 30 * time.Second
	DefaultRequestTimeout = 10 * time.Second
)

// Opener opens a stream to the supervisor; *sidechannel.Outbound implements it.
type Opener interface {
	Open(ctx context.Context) (net.Conn, error)
}

// Options configure a Relay.
type Options struct {
	// Streams opens side-channel streams to the supervisor. Required.
	Streams Opener
	// Socket is the unix socket path (default toolwire.DefaultSocketPath). Its directory is created 0755 and the
	// socket is made 0666, so the CLI user (another uid) can connect.
	Socket string
	// MaxConns bounds concurrent calls (default 32: with egress's 192 it stays below the gateway's 256 streams
	// per guest, which would disconnect the guest); more are answered with a refusal at once.
	MaxConns int
	// OpenTimeout bounds opening the side-channel stream (default 30s).
	OpenTimeout time.Duration
	// RequestTimeout bounds reading the caller's request (default 10s).
	RequestTimeout time.Duration
	// Logger receives connection logs (default slog.Default()); tokens are never logged.
	Logger *slog.Logger
}

// Relay is the tool socket. Create it with Listen, run it with Serve.
type Relay struct {
	opts  Options
	log   *slog.Logger
	ln    net.Listener
	slots chan struct{}
	caps  capSet
	conns connset.Set
}

// Listen creates the socket's directory and binds the socket, replacing a stale one.
func Listen(opts Options) (*Relay, error) {
	if opts.Streams == nil {
		return nil, errors.New("toolrelay: Streams is required")
	}
	if opts.Socket == "" {
		opts.Socket = toolwire.DefaultSocketPath
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = DefaultOpenTimeout
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := prepareDir(filepath.Dir(opts.Socket)); err != nil {
		return nil, err
	}
	_ = os.Remove(opts.Socket)
	ln, err := net.Listen("unix", opts.Socket)
	if err != nil {
		return nil, fmt.Errorf("toolrelay: listen: %w", err)
	}
	if err := os.Chmod(opts.Socket, 0o666); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("toolrelay: chmod socket: %w", err)
	}
	return &Relay{
		opts: opts, log: opts.Logger.With("component", "toolrelay"), ln: ln,
		slots: make(chan struct{}, opts.MaxConns),
	}, nil
}

// prepareDir makes dir a real directory of ours, mode 0755: a symlink or another user's directory there (planted
// in a shared /tmp) is refused.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("toolrelay: socket dir: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("toolrelay: socket dir: %w", err)
	}
	if !st.IsDir() || !ownedByUs(st) {
		return fmt.Errorf("toolrelay: socket dir %s is not a directory owned by this process's user", dir)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("toolrelay: socket dir: %w", err)
	}
	return nil
}

// Addr is the socket's path.
func (r *Relay) Addr() string { return r.opts.Socket }

// Serve accepts connections until ctx ends, then closes the listener and every connection and returns nil.
func (r *Relay) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() {
		_ = r.ln.Close()
		r.conns.CloseAll()
	})
	defer stop()
	defer wg.Wait()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			r.log.Warn("toolrelay: accept failed", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		select {
		case r.slots <- struct{}{}:
		default:
			go refuseBusy(c)
			continue
		}
		if !r.conns.Track(c) {
			<-r.slots
			_ = c.Close()
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-r.slots }()
			defer r.conns.Untrack(c)
			r.handle(ctx, c)
		}()
	}
}

// refuseBusy answers a connection over MaxConns without reading its request.
func refuseBusy(c net.Conn) {
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_ = toolwire.WriteJSON(c, toolwire.TypeExit, toolwire.Exit{Code: toolwire.ExitRefused,
		Refused: toolwire.RefusedTooManyCalls, Message: "too many tool calls in progress in this container"})
}

// handle relays one call.
func (r *Relay) handle(ctx context.Context, c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(r.opts.RequestTimeout))
	req, err := toolwire.ReadRequest(c)
	if err != nil {
		exit(c, toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedMalformed, Message: "malformed request: " + err.Error()})
		return
	}
	if err := req.Validate(); err != nil {
		reason := toolwire.RefusedMalformed
		if errors.Is(err, toolwire.ErrArgsTooLarge) {
			reason = toolwire.RefusedArgsTooLarge
		}
		exit(c, toolwire.Exit{Code: toolwire.ExitRefused, Refused: reason, Message: err.Error()})
		return
	}
	tok, ok := r.caps.token(req.Tool)
	if !ok {
		msg := req.Tool + ": not granted to this agent"
		if req.Op == toolwire.OpDelegate {
			msg = "delegate " + req.Tool + ": not granted to this agent"
		}
		exit(c, toolwire.Exit{Code: toolwire.ExitNotGranted, Refused: toolwire.RefusedNotGranted, Message: msg})
		return
	}
	req.Token = tok
	st, err := r.open(ctx, req)
	if err != nil {
		r.log.Warn("toolrelay: supervisor unreachable", "tool", req.Tool, "err", err)
		exit(c, toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedUnavailable,
			Message: "supervisor unreachable: " + err.Error()})
		return
	}
	defer func() { _ = st.Close() }()
	_ = c.SetDeadline(time.Time{})
	pipe(c, st)
}

// open opens the stream and sends the tool header and the request.
func (r *Relay) open(ctx context.Context, req toolwire.Request) (net.Conn, error) {
	octx, cancel := context.WithTimeout(ctx, r.opts.OpenTimeout)
	defer cancel()
	st, err := r.opts.Streams.Open(octx)
	if err != nil {
		return nil, err
	}
	_ = st.SetWriteDeadline(time.Now().Add(r.opts.OpenTimeout))
	if err := egresswire.WriteFrame(st, egresswire.Header{Kind: egresswire.KindTool}); err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := toolwire.WriteJSON(st, toolwire.TypeRequest, req); err != nil {
		_ = st.Close()
		return nil, err
	}
	_ = st.SetWriteDeadline(time.Time{})
	return st, nil
}

// pipe copies both ways until the supervisor ends the stream (after its Exit frame) or the caller goes away
// (which ends the stream, so the supervisor stops the backend).
func pipe(c, st net.Conn) {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(st, c) // the caller's stdin frames
		_ = st.Close()
		close(done)
	}()
	_, _ = io.Copy(c, st) // output frames and the Exit
	_ = c.Close()
	_ = st.Close()
	<-done
}

// exit answers the caller with an Exit frame (best effort).
func exit(c net.Conn, e toolwire.Exit) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_ = toolwire.WriteJSON(c, toolwire.TypeExit, e)
}

var _ ptyapi.CapabilitySetter = (*Relay)(nil)
