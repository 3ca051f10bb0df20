package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"aicli.dev/aicli/guest/toolwire"
)

// errTimeout is the cause of a call stopped at its timeout.
var errTimeout = errors.New("timed out")

// past is a deadline that has already expired.
var past = time.Unix(1, 0)

// call is one stream being served.
type call struct {
	s        *Server
	st       net.Conn
	rec      CallRecord
	exited   bool
	recorded bool
	secrets  map[string][]byte
}

// exit records the call, then sends the Exit frame (once, best effort): a caller that saw its exit code finds the
// call on its grant.
func (c *call) exit(e toolwire.Exit) {
	if c.exited {
		return
	}
	c.exited = true
	c.rec.ExitCode, c.rec.Refused = e.Code, e.Refused
	c.record()
	if len(c.secrets) > 0 && e.Message != "" {
		sc := newScrubber(c.secrets)
		e.Message = string(append(sc.push([]byte(e.Message)), sc.flush()...))
	}
	_ = c.st.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_ = toolwire.WriteJSON(c.st, toolwire.TypeExit, e)
}

// finish closes the stream and records a call that ended without an exit sent (the caller went away).
func (c *call) finish() {
	_ = c.st.SetDeadline(past) // unblocks a stdin pump still reading
	_ = c.st.Close()
	if !c.exited {
		c.rec.ExitCode = -1
	}
	c.record()
}

// record hands the call's record to the recorder, once.
func (c *call) record() {
	if c.recorded {
		return
	}
	c.recorded = true
	c.rec.Duration = time.Since(c.rec.At)
	if c.rec.Refused != "" {
		c.s.log.Info("tool call refused", "conversation", c.rec.Caller.ConversationUID, "tool", c.rec.Tool,
			"reason", c.rec.Refused)
	}
	if c.s.opts.Recorder != nil {
		c.s.opts.Recorder.Record(c.rec)
	}
}

// refuse answers an authorizer's error.
func (c *call) refuse(req toolwire.Request, err error) {
	var r *Refusal
	if !errors.As(err, &r) {
		c.s.log.Error("tool authorization failed", "conversation", c.rec.Caller.ConversationUID, "tool", req.Tool, "err", err)
		r = &Refusal{Reason: toolwire.RefusedInternal, Message: "internal error"}
	}
	c.rec.Namespace, c.rec.Grant, c.rec.Conversation = r.Namespace, r.Grant, r.Conversation
	c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: r.Reason, Message: fmt.Sprintf("%s: refused (%s): %s", req.Tool, r.Reason, r.Message)})
}

// help prints the tool's usage.
func (c *call) help(auth *Authorization) {
	usage := auth.Tool.Usage
	if usage == "" {
		usage = auth.Tool.Name + ": no usage given"
	}
	_ = c.st.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := toolwire.WriteData(c.st, toolwire.TypeStdout, []byte(usage+"\n")); err == nil {
		c.rec.BytesOut = int64(len(usage) + 1)
	}
	c.exit(toolwire.Exit{Code: 0})
}

// delegate serves a delegate request.
func (c *call) delegate(ctx context.Context, req toolwire.Request) {
	d := c.s.opts.Delegator
	if d == nil {
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedUnavailable, Message: "delegation is not available on this supervisor"})
		return
	}
	msg, err := d.Delegate(ctx, c.rec.Caller, req.Token, req.Tool, *req.Delegate)
	if err != nil {
		c.refuse(req, err)
		return
	}
	if msg != "" {
		_ = c.st.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_ = toolwire.WriteData(c.st, toolwire.TypeStdout, []byte(msg+"\n"))
		c.rec.BytesOut = int64(len(msg) + 1)
	}
	c.exit(toolwire.Exit{Code: 0})
}

// run runs an authorised call's backend with the caller's stdin, streaming its output, and answers its exit.
func (c *call) run(ctx context.Context, req toolwire.Request, auth *Authorization) {
	c.secrets = auth.Secrets
	timeout := c.s.opts.DefaultTimeout
	if auth.Tool.TimeoutSeconds > 0 {
		timeout = time.Duration(auth.Tool.TimeoutSeconds) * time.Second
	}
	base, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cctx, cancel := context.WithTimeoutCause(base, timeout, errTimeout)
	defer cancel()

	pr, pw := io.Pipe()
	stdinN := make(chan int64, 1)
	go func() { stdinN <- pumpStdin(c.st, pw, stop) }()
	out := newSink(c.st, auth.Secrets, toolwire.MaxOutput, func() { stop(errOutputLimit) })

	var code int
	var err error
	b := auth.Tool.Backend
	switch {
	case auth.Builtin && c.s.opts.Builtins != nil:
		code, err = c.s.opts.Builtins.Run(cctx, auth, pr, out.Stdout(), out.Stderr())
	case auth.Builtin:
		err = errors.New("this supervisor serves no built-in tools")
	case b.Exec != nil:
		code, err = runExec(cctx, b.Exec, auth, pr, out.Stdout(), out.Stderr())
	case b.HTTP != nil:
		code, err = runHTTP(cctx, c.s.opts.HTTPClient, b.HTTP, auth, pr, out.Stdout(), out.Stderr())
	default:
		err = errors.New("the grant names no backend")
	}
	_ = pr.CloseWithError(io.ErrClosedPipe)
	out.flush()
	c.rec.BytesOut = out.Sent()
	cause := context.Cause(cctx)
	// The stdin count belongs in the record, which is written before the exit goes out.
	_ = c.st.SetReadDeadline(past)
	c.rec.BytesIn += <-stdinN
	switch {
	case errors.Is(cause, errCallerGone) || out.Err() != nil:
		c.exited = true // nobody to tell: recorded as a call that did not run to an exit
		c.rec.ExitCode = -1
	case errors.Is(cause, errStdinLimit):
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedStdinTooLarge, Message: req.Tool + ": " + cause.Error()})
	case errors.Is(cause, errOutputLimit):
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedOutputLimit,
			Message: fmt.Sprintf("%s: output exceeds %d bytes; the call was stopped", req.Tool, toolwire.MaxOutput)})
	case errors.Is(cause, errBadFrame):
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedMalformed, Message: req.Tool + ": " + cause.Error()})
	case errors.Is(cause, errTimeout):
		c.exit(toolwire.Exit{Code: toolwire.ExitTimeout, Message: fmt.Sprintf("%s: timed out after %s and was killed", req.Tool, timeout)})
	case cause != nil:
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: toolwire.RefusedUnavailable, Message: req.Tool + ": the supervisor is shutting down"})
	case err != nil:
		c.s.log.Warn("tool backend failed", "conversation", c.rec.Caller.ConversationUID, "tool", req.Tool, "err", err)
		c.exit(toolwire.Exit{Code: toolwire.ExitRefused, Refused: "backend_failed", Message: req.Tool + ": backend failed: " + err.Error()})
	default:
		c.exit(toolwire.Exit{Code: code})
	}
}
