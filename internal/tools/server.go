package tools

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/toolwire"
	"aicli.dev/aicli/internal/gateway"
)

// Defaults for Options.
const (
	DefaultMaxCallsPerConversation = 16
	DefaultMaxCalls                = 256
	DefaultRequestTimeout          = 10 * time.Second
	DefaultCallTimeout             = 30 * time.Second
)

// Options configure a Server.
type Options struct {
	// Authorizer decides every call and help request. Required.
	Authorizer Authorizer
	// Recorder receives every call's record (optional).
	Recorder Recorder
	// Delegator serves delegate requests (optional: without one they are refused).
	Delegator Delegator
	// Builtins runs built-in tools (optional: without it they fail).
	Builtins Builtins
	// Logger receives refusals and failures (default slog.Default()); never arguments or secrets.
	Logger *slog.Logger
	// MaxCallsPerConversation bounds one conversation's concurrent calls (default 16).
	MaxCallsPerConversation int
	// MaxCalls bounds concurrent calls over all conversations (default 256).
	MaxCalls int
	// RequestTimeout bounds reading a stream's header and request (default 10s).
	RequestTimeout time.Duration
	// DefaultTimeout bounds a call whose grant sets no timeoutSeconds (default 30s).
	DefaultTimeout time.Duration
	// HTTPClient carries http backends' requests (default: a client without a proxy from the environment).
	HTTPClient *http.Client
}

// Server serves tool streams; it implements gateway.GuestStreamHandler for egresswire.KindTool streams (mount it
// as gateway.StreamRouter.Tools).
type Server struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context // cancelled by Close: stops every call
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	active map[string]int
	total  int
}

var _ gateway.GuestStreamHandler = (*Server)(nil)

// New returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Authorizer == nil {
		return nil, errors.New("tools: Authorizer is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxCallsPerConversation <= 0 {
		opts.MaxCallsPerConversation = DefaultMaxCallsPerConversation
	}
	if opts.MaxCalls <= 0 {
		opts.MaxCalls = DefaultMaxCalls
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultCallTimeout
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConns: 32, IdleConnTimeout: 90 * time.Second}}
	}
	s := &Server{opts: opts, log: opts.Logger.With("component", "tools"), active: map[string]int{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close refuses new calls, stops every running one (killing its backend) and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// acquire takes a call slot of the conversation and of the server.
func (s *Server) acquire(conv string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return "the supervisor is shutting down", false
	case s.active[conv] >= s.opts.MaxCallsPerConversation:
		return "too many concurrent tool calls in this conversation", false
	case s.total >= s.opts.MaxCalls:
		return "too many concurrent tool calls on this supervisor", false
	}
	s.active[conv]++
	s.total++
	s.wg.Add(1)
	return "", true
}

func (s *Server) release(conv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active[conv]--; s.active[conv] <= 0 {
		delete(s.active, conv)
	}
	s.total--
	s.wg.Done()
}

// ServeGuestStream implements gateway.GuestStreamHandler: one stream is one call. It always ends with an Exit
// frame when the caller can still hear it, records the call and closes the stream.
func (s *Server) ServeGuestStream(g gateway.GuestStream, st net.Conn) {
	c := &call{s: s, st: st, rec: CallRecord{Caller: Caller{ConversationUID: g.ConversationID, GuestFingerprint: g.GuestFingerprint}, At: time.Now()}}
	defer c.finish()
	if msg, ok := s.acquire(g.ConversationID); !ok {
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedTooManyCalls, Message: msg})
		return
	}
	defer s.release(g.ConversationID)
	req, ok := c.readRequest()
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	switch req.Op {
	case toolwire.OpDelegate:
		c.delegate(ctx, req)
	default:
		auth, err := s.opts.Authorizer.Authorize(ctx, c.rec.Caller, req)
		if err != nil {
			c.refuse(req, err)
			return
		}
		c.rec.Auth = auth
		if req.Op == toolwire.OpHelp {
			c.help(auth)
			return
		}
		c.run(ctx, req, auth)
	}
}

// readRequest reads the stream's header and request, answering a bad one.
func (c *call) readRequest() (toolwire.Request, bool) {
	_ = c.st.SetReadDeadline(time.Now().Add(c.s.opts.RequestTimeout))
	defer func() { _ = c.st.SetReadDeadline(time.Time{}) }()
	var h egresswire.Header
	if err := egresswire.ReadFrame(c.st, &h); err != nil || h.Kind != egresswire.KindTool {
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedMalformed, Message: "malformed tool stream header"})
		return toolwire.Request{}, false
	}
	req, err := toolwire.ReadRequest(c.st)
	if err != nil {
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedMalformed, Message: "malformed request: " + err.Error()})
		return toolwire.Request{}, false
	}
	c.rec.Tool, c.rec.Op = req.Tool, req.Op
	for _, a := range req.Args {
		c.rec.BytesIn += int64(len(a))
	}
	if err := req.Validate(); err != nil {
		reason := toolwire.RefusedMalformed
		if errors.Is(err, toolwire.ErrArgsTooLarge) {
			reason = toolwire.RefusedArgsTooLarge
		}
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: reason, Message: req.Tool + ": " + err.Error()})
		return toolwire.Request{}, false
	}
	return req, true
}
