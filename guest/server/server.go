package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"aicli.dev/aicli/guest/ptyapi"
)

// Routes of the wire protocol. JSON bodies are the ptyapi types or the
// request types below; every error is an ErrorBody with a code.
const (
	PathStart       = "/v1/start"        // POST ptyapi.StartRequest → ptyapi.StartResponse
	PathSendString  = "/v1/send-string"  // POST TextRequest
	PathSendKeys    = "/v1/send-keys"    // POST KeysRequest
	PathSendMessage = "/v1/send-message" // POST TextRequest
	PathScreen      = "/v1/screen"       // GET → ptyapi.Screen
	PathResize      = "/v1/resize"       // POST ResizeRequest
	PathStatus      = "/v1/status"       // GET → ptyapi.StatusInfo
	PathQuota       = "/v1/quota"        // GET → ptyapi.Quota
	PathStream      = "/v1/stream"       // GET → application/octet-stream, raw PTY bytes until EOF
	PathStop        = "/v1/stop"         // POST
	PathTranscript  = "/v1/transcript"   // GET → application/x-ndjson, one ptyapi.TranscriptEntry per line
	PathStatusWatch = "/v1/status/watch" // GET → application/x-ndjson, one ptyapi.StatusInfo per line
	PathHealth      = "/v1/healthz"      // GET → 200
	// PathCapabilities replaces the guest's capability set (PUT ptyapi.Capabilities → 204). There is no GET:
	// tokens are never read back.
	PathCapabilities = "/v1/capabilities"
)

// TrailerStreamError is the HTTP trailer that ends a stream cut short by an
// error; its value is the ErrorCode (e.g. slow_subscriber). Absent on a clean end.
const TrailerStreamError = "Aicli-Stream-Error"

// maxBodyBytes bounds request bodies: a maximal message JSON-escaped at worst
// six bytes per input byte, plus room for the envelope.
const maxBodyBytes = 6*ptyapi.MaxMessageBytes + 64<<10

// TextRequest carries text for send-string and send-message.
type TextRequest struct {
	Text string `json:"text"`
}

// KeysRequest carries named keys for send-keys.
type KeysRequest struct {
	Keys []ptyapi.Key `json:"keys"`
}

// ResizeRequest carries a new terminal size.
type ResizeRequest struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail names the contract error code and a human message.
type ErrorDetail struct {
	Code    ptyapi.ErrorCode `json:"code"`
	Message string           `json:"message"`
}

// Handler serves p with no logging.
func Handler(p ptyapi.PTY) http.Handler { return NewHandler(p, nil) }

// Option configures NewHandler.
type Option func(*srv)

// WithCapabilities serves PUT PathCapabilities into cs; without it the route answers unsupported.
func WithCapabilities(cs ptyapi.CapabilitySetter) Option { return func(s *srv) { s.caps = cs } }

// NewHandler serves p, logging failures to log (nil: discard).
func NewHandler(p ptyapi.PTY, log *slog.Logger, opts ...Option) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &srv{p: p, log: log}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathStart, s.start)
	mux.HandleFunc("POST "+PathSendString, s.sendString)
	mux.HandleFunc("POST "+PathSendKeys, s.sendKeys)
	mux.HandleFunc("POST "+PathSendMessage, s.sendMessage)
	mux.HandleFunc("GET "+PathScreen, s.screen)
	mux.HandleFunc("POST "+PathResize, s.resize)
	mux.HandleFunc("GET "+PathStatus, s.status)
	mux.HandleFunc("GET "+PathQuota, s.quota)
	mux.HandleFunc("GET "+PathStream, s.stream)
	mux.HandleFunc("POST "+PathStop, s.stop)
	mux.HandleFunc("GET "+PathTranscript, s.transcript)
	mux.HandleFunc("GET "+PathStatusWatch, s.statusWatch)
	mux.HandleFunc("PUT "+PathCapabilities, s.setCapabilities)
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return mux
}

type srv struct {
	p    ptyapi.PTY
	log  *slog.Logger
	caps ptyapi.CapabilitySetter
}

// HTTPStatus maps a contract error code to its HTTP status.
func HTTPStatus(code ptyapi.ErrorCode) int {
	switch code {
	case ptyapi.CodeMessageTooLarge:
		return http.StatusRequestEntityTooLarge
	case ptyapi.CodeNotStarted, ptyapi.CodeAlreadyStarted:
		return http.StatusConflict
	case ptyapi.CodeExited:
		return http.StatusGone
	case ptyapi.CodeUnknownHarness, ptyapi.CodeInvalidArgument:
		return http.StatusBadRequest
	case ptyapi.CodeUnsupported:
		return http.StatusNotImplemented
	}
	return http.StatusInternalServerError
}

func (s *srv) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := ptyapi.CodeOf(err)
	if code == ptyapi.CodeInternal {
		s.log.Error("pty request failed", "path", r.URL.Path, "err", err)
	}
	writeJSON(w, HTTPStatus(code), ErrorBody{Error: ErrorDetail{Code: code, Message: err.Error()}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body into v, rejecting unknown fields and oversize bodies.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return ptyapi.Errorf(ptyapi.ErrMessageTooLarge, "request body over %d bytes", maxBodyBytes)
		}
		return ptyapi.Errorf(ptyapi.ErrInvalidArgument, "decode request: %v", err)
	}
	if dec.More() {
		return ptyapi.Errorf(ptyapi.ErrInvalidArgument, "trailing data after the JSON body")
	}
	return nil
}

func (s *srv) start(w http.ResponseWriter, r *http.Request) {
	var req ptyapi.StartRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	resp, err := s.p.Start(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *srv) sendString(w http.ResponseWriter, r *http.Request) {
	var req TextRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	s.done(w, r, s.p.SendString(r.Context(), req.Text))
}

func (s *srv) sendKeys(w http.ResponseWriter, r *http.Request) {
	var req KeysRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	s.done(w, r, s.p.SendKeys(r.Context(), req.Keys...))
}

func (s *srv) sendMessage(w http.ResponseWriter, r *http.Request) {
	var req TextRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	s.done(w, r, s.p.SendMessage(r.Context(), req.Text))
}

func (s *srv) resize(w http.ResponseWriter, r *http.Request) {
	var req ResizeRequest
	if err := decode(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	s.done(w, r, s.p.Resize(r.Context(), req.Cols, req.Rows))
}

func (s *srv) stop(w http.ResponseWriter, r *http.Request) {
	s.done(w, r, s.p.Stop(r.Context()))
}

// done answers 204 on success or the error body.
func (s *srv) done(w http.ResponseWriter, r *http.Request, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *srv) screen(w http.ResponseWriter, r *http.Request) {
	v, err := s.p.RenderScreen(r.Context())
	s.reply(w, r, v, err)
}

func (s *srv) status(w http.ResponseWriter, r *http.Request) {
	v, err := s.p.Status(r.Context())
	s.reply(w, r, v, err)
}

func (s *srv) quota(w http.ResponseWriter, r *http.Request) {
	v, err := s.p.Quota(r.Context())
	s.reply(w, r, v, err)
}

func (s *srv) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// transcript streams the CLI's native transcript as NDJSON, one entry per line.
func (s *srv) transcript(w http.ResponseWriter, r *http.Request) {
	f, ok := s.p.(ptyapi.TranscriptFollower)
	if !ok {
		s.fail(w, r, ptyapi.Errorf(ptyapi.ErrUnsupported, "this PTY does not follow transcripts"))
		return
	}
	serveNDJSON(s, w, r, "transcript", f.FollowTranscript)
}

// statusWatch streams the CLI's status as NDJSON: the current one, then one
// line per change.
func (s *srv) statusWatch(w http.ResponseWriter, r *http.Request) {
	sw, ok := s.p.(ptyapi.StatusWatcher)
	if !ok {
		s.fail(w, r, ptyapi.Errorf(ptyapi.ErrUnsupported, "this PTY does not push status changes"))
		return
	}
	serveNDJSON(s, w, r, "status", sw.WatchStatus)
}

// serveNDJSON streams the values follow hands its callback as NDJSON, one per
// line, each flushed at once. Headers are sent with the first value, so an
// immediate failure (e.g. unsupported) is still a JSON error reply; a failure
// after that ends the stream with the TrailerStreamError trailer.
func serveNDJSON[T any](s *srv, w http.ResponseWriter, r *http.Request, what string,
	follow func(context.Context, func(T) error) error) {
	rctl := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	started := false
	start := func() error {
		if started {
			return nil
		}
		started = true
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Trailer", TrailerStreamError)
		w.WriteHeader(http.StatusOK)
		return rctl.Flush()
	}
	err := follow(r.Context(), func(v T) error {
		if err := start(); err != nil {
			return err
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
		return rctl.Flush()
	})
	if err == nil || r.Context().Err() != nil {
		_ = start()
		return
	}
	if !started {
		s.fail(w, r, err)
		return
	}
	s.log.Info(what+" stream cut", "err", err)
	w.Header().Set(TrailerStreamError, string(ptyapi.CodeOf(err)))
}

// ErrorFromBody decodes an error response into a contract error usable with
// errors.Is against the ptyapi sentinels.
func ErrorFromBody(status int, body []byte) error {
	var eb ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code == "" {
		return &ptyapi.CodedError{Code: ptyapi.CodeInternal,
			Message: fmt.Sprintf("http %d: %s", status, truncate(string(body), 200))}
	}
	return &ptyapi.CodedError{Code: eb.Error.Code, Message: eb.Error.Message}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
