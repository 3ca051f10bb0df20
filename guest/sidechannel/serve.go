package sidechannel

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

// Backoff bounds between dial attempts of Serve.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Serve dials the supervisor, serves handler on every stream the supervisor opens (publishing each session to
// b.Outbound when set, for streams the guest opens), and re-dials with the
// reconnect secret whenever the session drops, until ctx ends (then it returns nil). Connection failures are
// retried with capped exponential backoff; a refusal by the supervisor or a supervisor key mismatch is permanent
// and returned, so the guest can exit and let the supervisor observe it.
func Serve(ctx context.Context, b Bootstrap, handler http.Handler, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	if err := b.Validate(); err != nil {
		return err
	}
	s, err := retry(ctx, log, b.ConversationID, func(ctx context.Context) (*Session, error) { return Dial(ctx, b, log) })
	if err != nil || s == nil {
		return err
	}
	for {
		if b.Outbound != nil {
			b.Outbound.set(s)
		}
		serveSession(ctx, s, handler, log)
		if b.Outbound != nil {
			b.Outbound.set(nil)
		}
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("side channel: session lost, re-dialing", "conversation", b.ConversationID)
		prev := s
		s, err = retry(ctx, log, b.ConversationID, prev.Redial)
		if err != nil || s == nil {
			return err
		}
	}
}

// serveSession serves handler on s until the session ends or ctx does.
func serveSession(ctx context.Context, s *Session, handler http.Handler, log *slog.Logger) {
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(s) // returns when the session (the listener) ends
	}()
	select {
	case <-ctx.Done():
	case <-s.Done():
	}
	_ = srv.Close() // closes the session and every in-flight stream
	<-done
}

// retry calls dial until it succeeds, fails permanently, or ctx ends (then it returns nil, nil).
func retry(ctx context.Context, log *slog.Logger, conv string, dial func(context.Context) (*Session, error)) (*Session, error) {
	backoff := minBackoff
	for {
		s, err := dial(ctx)
		if err == nil {
			return s, nil
		}
		if permanent(err) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		log.Info("side channel: dial failed, retrying", "conversation", conv, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// permanent reports whether a dial error cannot be cured by retrying.
func permanent(err error) bool {
	if errors.Is(err, ErrSupervisorMismatch) {
		return true
	}
	var refused *RefusedError
	return errors.As(err, &refused) && refused.Reason != wire.ReasonUnavailable
}
