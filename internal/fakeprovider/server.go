package fakeprovider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// API names the wire protocol a request used.
type API string

// The APIs the server speaks.
const (
	APIAnthropic API = "anthropic"
	APIOpenAI    API = "openai-responses"
	APIGemini    API = "gemini"
)

// Message is one turn of the history a request carried, reduced to clean text.
type Message struct {
	// Role is user, assistant, system or tool.
	Role string `json:"role"`
	// Text is the concatenated text of the turn's text parts.
	Text string `json:"text"`
}

// Usage is the token accounting the server reports for a reply.
type Usage struct {
	InputTokens         int `json:"inputTokens"`
	OutputTokens        int `json:"outputTokens"`
	CacheReadTokens     int `json:"cacheReadTokens"`
	CacheCreationTokens int `json:"cacheCreationTokens"`
}

// Request is one logged request.
type Request struct {
	// API is the protocol; Op is the operation (messages, count_tokens,
	// responses, generateContent, streamGenerateContent, countTokens, models)
	// or "unknown" for a path the server does not serve (answered 404).
	API API    `json:"api"`
	Op  string `json:"op"`
	// Method and Path are the HTTP method and URL path (with query).
	Method string `json:"method"`
	Path   string `json:"path"`
	// Model is the model the request named.
	Model string `json:"model,omitempty"`
	// Stream is true for a streamed (SSE) reply.
	Stream bool `json:"stream"`
	// System is the system prompt / instructions text.
	System string `json:"system,omitempty"`
	// Messages is the full message history the request carried, in order.
	Messages []Message `json:"messages,omitempty"`
	// JSONSchema is the response schema a structured-output request asked for.
	JSONSchema json.RawMessage `json:"jsonSchema,omitempty"`
	// Reply is the text the server answered with.
	Reply string `json:"reply,omitempty"`
	// Header and Body are the raw request headers and body.
	Header http.Header `json:"-"`
	Body   []byte      `json:"-"`
	// Time is when the request arrived.
	Time time.Time `json:"time"`
	// Ended is when the server had written the whole reply (for a stream,
	// its last event); zero while the reply is still being written.
	Ended time.Time `json:"ended,omitzero"`

	end *endMark // set by Handler's wrapper when the handler returns
}

// endMark is when one request's handler returned.
type endMark struct {
	mu sync.Mutex
	at time.Time
}

func (m *endMark) set(t time.Time) {
	m.mu.Lock()
	m.at = t
	m.mu.Unlock()
}

func (m *endMark) get() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at
}

type endMarkKey struct{}

// LastUserText returns the text of the last user message, or "".
func (r Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// HasText reports whether any message of the history contains s.
func (r Request) HasText(s string) bool {
	for _, m := range r.Messages {
		if strings.Contains(m.Text, s) {
			return true
		}
	}
	return false
}

// Carries reports whether the request sent s to the model anywhere: in the
// system prompt, a message of the history, or any other text of the body —
// including the CLI-injected context Messages leave out (Claude Code sends a
// user's CLAUDE.md inside a <system-reminder> part). The body is searched
// decoded, so JSON escaping does not hide s.
func (r Request) Carries(s string) bool {
	if strings.Contains(r.System, s) || r.HasText(s) {
		return true
	}
	var body any
	if json.Unmarshal(r.Body, &body) != nil {
		return false
	}
	return jsonContains(body, s)
}

// jsonContains reports whether any string (key or value) in v contains s.
func jsonContains(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case []any:
		for _, e := range v {
			if jsonContains(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, s) || jsonContains(e, s) {
				return true
			}
		}
	}
	return false
}

// ToolCall is a tool invocation the fake answers with.
type ToolCall struct {
	// Name is the tool's name as the CLI declared it (e.g. Bash).
	Name string
	// Input is the tool's JSON arguments.
	Input json.RawMessage
}

// contextPrefixes start text parts a CLI adds to the user's turn on its own
// (reminders, session context): left out of Message.Text.
var contextPrefixes = []string{"<system-reminder>", "<session_context>"}

// isHarnessContext reports whether a text part is CLI-injected context.
func isHarnessContext(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range contextPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// ReplyFunc computes the reply text for a request.
type ReplyFunc func(Request) string

// EchoReply is the default reply: "echo: " and the last user text.
func EchoReply(r Request) string { return "echo: " + r.LastUserText() }

// Options configure a Server. Zero values mean the defaults.
type Options struct {
	// Addr is the listen address (default 127.0.0.1:0).
	Addr string
	// Reply computes reply text (default EchoReply).
	Reply ReplyFunc
	// TokenDelay is the pause before each streamed token after the first.
	TokenDelay time.Duration
	// ToolCall, when set and returning non-nil, makes the reply a tool call
	// instead of text (Anthropic tool_use, OpenAI Responses function_call;
	// structured-output side calls always get JSON).
	ToolCall func(Request) *ToolCall
	// Usage, when set, is reported for every reply instead of an estimate
	// (input ≈ words of the history, output = streamed tokens).
	Usage *Usage
}

// Server is a running fake provider. Safe for concurrent use.
type Server struct {
	ln  net.Listener
	srv *http.Server
	url string

	tag string // random per server, so provider ids differ across runs

	mu   sync.Mutex
	opts Options
	reqs []Request
	seq  int
}

// Start listens on opts.Addr and serves until Close.
func Start(opts Options) (*Server, error) {
	addr := opts.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakeprovider listen: %w", err)
	}
	var tag [3]byte
	_, _ = rand.Read(tag[:])
	s := &Server{ln: ln, opts: opts, url: "http://" + ln.Addr().String(), tag: hex.EncodeToString(tag[:])}
	s.srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the server's base URL, e.g. http://127.0.0.1:40123 (no trailing slash).
func (s *Server) URL() string { return s.url }

// Close stops the server, cutting open streams.
func (s *Server) Close() error {
	err := s.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// SetReply replaces the reply function (nil restores EchoReply).
func (s *Server) SetReply(f ReplyFunc) {
	s.mu.Lock()
	s.opts.Reply = f
	s.mu.Unlock()
}

// SetTokenDelay changes the per-token streaming delay.
func (s *Server) SetTokenDelay(d time.Duration) {
	s.mu.Lock()
	s.opts.TokenDelay = d
	s.mu.Unlock()
}

// SetToolCall sets the tool-call function (nil: always text).
func (s *Server) SetToolCall(f func(Request) *ToolCall) {
	s.mu.Lock()
	s.opts.ToolCall = f
	s.mu.Unlock()
}

// SetUsage fixes the reported usage (nil restores the estimate).
func (s *Server) SetUsage(u *Usage) {
	s.mu.Lock()
	s.opts.Usage = u
	s.mu.Unlock()
}

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Request(nil), s.reqs...)
	for i := range out {
		if out[i].end != nil {
			out[i].Ended = out[i].end.get()
		}
	}
	return out
}

// Conversations returns the logged requests that carried a conversation (the
// model calls, not token counts or model listings), oldest first.
func (s *Server) Conversations() []Request {
	var out []Request
	for _, r := range s.Requests() {
		switch r.Op {
		case "messages", "responses", "generateContent", "streamGenerateContent":
			out = append(out, r)
		}
	}
	return out
}

// Handler returns the HTTP handler, for mounting the fake under another server.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.anthropicMessages)
	mux.HandleFunc("POST /v1/messages/count_tokens", s.anthropicCountTokens)
	mux.HandleFunc("POST /v1/responses", s.openaiResponses)
	mux.HandleFunc("GET /v1/models", s.openaiModels)
	mux.HandleFunc("POST /{version}/models/{call}", s.gemini)
	mux.HandleFunc("/", s.unknown)
	// Every request's log record learns when its handler returned: the
	// whole reply (every streamed event, each flushed) has been written.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := &endMark{}
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), endMarkKey{}, m)))
		m.set(time.Now())
	})
}

// settings snapshots the mutable options.
func (s *Server) settings() Options {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.opts
	if o.Reply == nil {
		o.Reply = EchoReply
	}
	return o
}

// newRequest starts a log record from an HTTP request and reads its body.
func newRequest(api API, op string, r *http.Request) (Request, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return Request{}, fmt.Errorf("read body: %w", err)
	}
	m, _ := r.Context().Value(endMarkKey{}).(*endMark)
	return Request{API: api, Op: op, Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(),
		Body: body, Time: time.Now(), end: m}, nil
}

// record appends req to the log and returns an id suffix unique to this server
// and run (random tag + sequence number).
func (s *Server) record(req Request) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.reqs = append(s.reqs, req)
	return fmt.Sprintf("%s%06d", s.tag, s.seq)
}

func (s *Server) unknown(w http.ResponseWriter, r *http.Request) {
	req, _ := newRequest("", "unknown", r)
	s.record(req)
	http.Error(w, `{"error":{"message":"not served by the fake provider"}}`, http.StatusNotFound)
}

// usageFor returns the configured usage or an estimate.
func usageFor(o Options, req Request, outTokens int) Usage {
	if o.Usage != nil {
		return *o.Usage
	}
	in := len(strings.Fields(req.System))
	for _, m := range req.Messages {
		in += len(strings.Fields(m.Text))
	}
	return Usage{InputTokens: max(in, 1), OutputTokens: outTokens}
}

// tokens splits text into streaming pieces: words with their trailing space.
func tokens(text string) []string {
	var out []string
	start := 0
	inSpace := false
	for i, r := range text {
		sp := r == ' ' || r == '\n' || r == '\t'
		if !sp && inSpace {
			out = append(out, text[start:i])
			start = i
		}
		inSpace = sp
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	if len(out) == 0 {
		out = []string{""}
	}
	return out
}

// sse writes server-sent events, flushing after each, and paces tokens.
type sse struct {
	w     http.ResponseWriter
	f     http.Flusher
	ctx   context.Context
	delay time.Duration
}

func newSSE(w http.ResponseWriter, r *http.Request, delay time.Duration) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f, ctx: r.Context(), delay: delay}
}

// event writes one event; name may be empty (data-only, as Gemini sends).
func (e *sse) event(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	var sb strings.Builder
	if name != "" {
		sb.WriteString("event: " + name + "\n")
	}
	sb.WriteString("data: ")
	sb.Write(b)
	sb.WriteString("\n\n")
	if _, err := io.WriteString(e.w, sb.String()); err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	if e.f != nil {
		e.f.Flush()
	}
	return nil
}

// pause waits the per-token delay (not before the first token).
func (e *sse) pause(i int) error {
	if i == 0 || e.delay <= 0 {
		return nil
	}
	t := time.NewTimer(e.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-e.ctx.Done():
		return e.ctx.Err()
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func badRequest(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
		"type": "invalid_request_error", "message": err.Error()}})
}
