package liveguest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/guest/ptyclient"
	"aicli.dev/aicli/internal/gateway"
)

// Gateway is the part of the side-channel gateway the registry uses.
type Gateway interface {
	Prepare(ctx context.Context, conversationID string) (*gateway.Launch, error)
	WaitGuest(ctx context.Context, conversationID string) (*gateway.GuestConn, error)
	Guest(conversationID string) (*gateway.GuestConn, bool)
	Release(conversationID string) error
}

// A live guest pushes its status changes (ptyapi.StatusWatcher); when the
// stream ends on a live connection it is watched again after a pause that
// grows from rewatchMin to rewatchMax (back to rewatchMin once a stream has
// lasted rewatchMax). Only a guest that does not push (one from before the
// stream) has its status read every statusPollInterval instead.
const (
	rewatchMin         = 50 * time.Millisecond
	rewatchMax         = 2 * time.Second
	statusPollInterval = 200 * time.Millisecond
)

// DefaultDialTimeout bounds the wait for a prepared or adopted container's
// guest to complete its handshake.
const DefaultDialTimeout = 20 * time.Second

// Registry tracks the live guest connection of every running conversation:
// it waits for guests to dial in, follows the execution status each guest
// pushes over the side channel (reading it only from a guest too old to
// push), and asks for a reconcile whenever something changes. It never
// writes the store. The conversation controller drives it; the API's send,
// screen and attach read live PTYs from it.
type Registry struct {
	Gateway Gateway
	// DialTimeout bounds a background wait for a guest (default DefaultDialTimeout).
	DialTimeout time.Duration
	// Changed asks for a reconcile of a conversation.
	Changed func(types.NamespacedName)
	Logger  *slog.Logger
	// Ctx bounds every background goroutine.
	Ctx context.Context
	// OnConnect, when set, runs once per new guest connection (e.g. the transcript pump).
	OnConnect func(ctx context.Context, key types.NamespacedName, uid string, pty ptyapi.PTY)

	mu sync.Mutex
	m  map[string]*session // by conversation uid
	// startedAt is when this process started; adopted containers get until
	// startedAt+DialTimeout to re-dial.
	startedAt time.Time
	once      sync.Once
}

type session struct {
	denials  []v1alpha1.EgressDenial
	key      types.NamespacedName
	prepared bool
	waiting  bool
	conn     *gateway.GuestConn
	pty      ptyapi.PTY
	info     ptyapi.StatusInfo
	hasInfo  bool
	// busyUnread latches a BUSY the controller has not read yet, so a turn
	// that goes BUSY and back to IDLE between two reconciles is still
	// written as BUSY once.
	busyUnread bool
	cancel     context.CancelFunc
}

func (s *Registry) init() {
	s.once.Do(func() {
		s.m = map[string]*session{}
		s.startedAt = time.Now()
		if s.Ctx == nil {
			s.Ctx = context.Background()
		}
	})
}

func (s *Registry) dialTimeout() time.Duration {
	if s.DialTimeout > 0 {
		return s.DialTimeout
	}
	return DefaultDialTimeout
}

// StartedAt is when the session registry started (the supervisor's start).
func (s *Registry) StartedAt() time.Time {
	s.init()
	return s.startedAt
}

func (s *Registry) get(key types.NamespacedName, uid string) *session {
	s.init()
	sess := s.m[uid]
	if sess == nil {
		sess = &session{key: key}
		s.m[uid] = sess
	}
	return sess
}

// Prepare readies the gateway for a new container's guest.
func (s *Registry) Prepare(ctx context.Context, key types.NamespacedName, uid string) (*gateway.Launch, error) {
	launch, err := s.Gateway.Prepare(ctx, uid)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.get(key, uid).prepared = true
	s.mu.Unlock()
	return launch, nil
}

// Adopt makes the gateway listen for the guest of a container that was
// already running when this supervisor started, so the guest can re-dial with
// its reconnect secret. Idempotent.
func (s *Registry) Adopt(ctx context.Context, key types.NamespacedName, uid string) error {
	s.mu.Lock()
	prepared := s.get(key, uid).prepared
	s.mu.Unlock()
	if prepared {
		return nil
	}
	_, err := s.Prepare(ctx, key, uid)
	return err
}

// Guest returns the conversation's connected guest: its remote PTY and its
// negotiated key's fingerprint. When no guest is connected it starts (once)
// a background wait that requests a reconcile when one connects.
func (s *Registry) Guest(key types.NamespacedName, uid string) (ptyapi.PTY, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.get(key, uid)
	if sess.conn != nil {
		select {
		case <-sess.conn.Done():
			sess.conn, sess.pty, sess.hasInfo = nil, nil, false
		default:
			return sess.pty, sess.conn.GuestFingerprint(), true
		}
	}
	if conn, ok := s.Gateway.Guest(uid); ok {
		s.attachLocked(sess, uid, conn)
		return sess.pty, conn.GuestFingerprint(), true
	}
	if !sess.waiting {
		sess.waiting = true
		go s.waitGuest(key, uid)
	}
	return nil, "", false
}

func (s *Registry) waitGuest(key types.NamespacedName, uid string) {
	ctx, cancel := context.WithTimeout(s.Ctx, s.dialTimeout()+5*time.Second)
	defer cancel()
	_, err := s.Gateway.WaitGuest(ctx, uid)
	s.mu.Lock()
	if sess := s.m[uid]; sess != nil {
		sess.waiting = false
	}
	s.mu.Unlock()
	if err == nil || ctx.Err() != nil {
		s.Changed(key)
	}
}

// attachLocked starts watching a newly connected guest.
func (s *Registry) attachLocked(sess *session, uid string, conn *gateway.GuestConn) {
	if sess.cancel != nil {
		sess.cancel()
	}
	ctx, cancel := context.WithCancel(s.Ctx)
	sess.conn, sess.cancel, sess.hasInfo = conn, cancel, false
	sess.pty = ptyclient.New(conn.HTTPClient(), gateway.BaseURL)
	go s.watch(ctx, sess.key, uid, conn, sess.pty)
	if s.OnConnect != nil {
		go s.OnConnect(ctx, sess.key, uid, sess.pty)
	}
}

// watch follows the guest's pushed status and asks for a reconcile on every
// change, and when the connection drops.
func (s *Registry) watch(ctx context.Context, key types.NamespacedName, uid string, conn *gateway.GuestConn, pty ptyapi.PTY) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
		case <-conn.Done():
			cancel()
		}
	}()
	observe := func(info ptyapi.StatusInfo) error {
		s.observe(key, uid, conn, info)
		return nil
	}
	w, push := pty.(ptyapi.StatusWatcher)
	pause := rewatchMin
	for ctx.Err() == nil {
		if !push {
			pollStatus(ctx, pty, observe)
			break
		}
		began := time.Now()
		err := w.WatchStatus(ctx, observe)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, ptyapi.ErrUnsupported):
			s.log().Info("guest does not push its status: reading it every "+statusPollInterval.String(),
				"conversation", key.String())
			push = false
			continue
		default:
			s.log().Debug("guest status stream ended; watching again", "conversation", key.String(), "err", err)
		}
		if time.Since(began) >= rewatchMax {
			pause = rewatchMin
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, rewatchMax)
	}
	select {
	case <-conn.Done():
		s.Changed(key)
	default:
	}
}

// pollStatus reads the guest's status every statusPollInterval until ctx
// ends: the fallback for a guest that does not push.
func pollStatus(ctx context.Context, pty ptyapi.PTY, fn func(ptyapi.StatusInfo) error) {
	t := time.NewTicker(statusPollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := pty.Status(rctx)
		cancel()
		if err == nil {
			_ = fn(info)
		}
	}
}

// observe records a status the guest reported over conn and asks for a
// reconcile when it changed in a way the conversation's status shows.
func (s *Registry) observe(key types.NamespacedName, uid string, conn *gateway.GuestConn, info ptyapi.StatusInfo) {
	s.mu.Lock()
	sess := s.m[uid]
	current := sess != nil && sess.conn == conn
	changed := current && (!sess.hasInfo || statusChanged(sess.info, info))
	if current {
		if info.Status == ptyapi.StatusBusy && (!sess.hasInfo || sess.info.Status != ptyapi.StatusBusy) {
			sess.busyUnread = true
		}
		sess.info, sess.hasInfo = info, true
	}
	s.mu.Unlock()
	if changed {
		s.Changed(key)
	}
}

func (s *Registry) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

func statusChanged(a, b ptyapi.StatusInfo) bool {
	return a.Status != b.Status || a.Alive != b.Alive || a.SessionID != b.SessionID || (a.ExitCode == nil) != (b.ExitCode == nil)
}

// Status returns the last observed status of the conversation's guest. A
// BUSY observed since the previous call is returned once even when the guest
// is already back to IDLE (and a reconcile is asked for, which reads the
// current status next), so every turn shows in the conversation's history.
func (s *Registry) Status(uid string) (ptyapi.StatusInfo, bool) {
	s.mu.Lock()
	s.init()
	sess := s.m[uid]
	if sess == nil || !sess.hasInfo {
		s.mu.Unlock()
		return ptyapi.StatusInfo{}, false
	}
	info, again := sess.info, false
	if sess.busyUnread {
		sess.busyUnread = false
		again = info.Status != ptyapi.StatusBusy && info.Alive
		if info.Alive {
			info.Status = ptyapi.StatusBusy
		}
	}
	key := sess.key
	s.mu.Unlock()
	if again {
		s.Changed(key)
	}
	return info, true
}

// MarkBusy records that the guest accepted a message (it reports BUSY from
// that moment until the turn ends) and asks for a reconcile, so the
// conversation shows BUSY without waiting for the pushed status.
func (s *Registry) MarkBusy(uid string) {
	s.mu.Lock()
	s.init()
	sess := s.m[uid]
	if sess == nil {
		s.mu.Unlock()
		return
	}
	sess.busyUnread = true
	key := sess.key
	s.mu.Unlock()
	s.Changed(key)
}

// Record stores a status the reconciler read itself.
func (s *Registry) Record(key types.NamespacedName, uid string, info ptyapi.StatusInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.get(key, uid)
	sess.info, sess.hasInfo = info, true
}

// PTY returns the remote PTY of a live conversation, for the API's send,
// screen and attach operations.
func (s *Registry) PTY(uid string) (ptyapi.PTY, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	sess := s.m[uid]
	if sess == nil || sess.pty == nil {
		return nil, false
	}
	select {
	case <-sess.conn.Done():
		return nil, false
	default:
		return sess.pty, true
	}
}

// Forget stops watching the conversation and releases its gateway state.
func (s *Registry) Forget(uid string) error {
	s.mu.Lock()
	s.init()
	if sess := s.m[uid]; sess != nil {
		if sess.cancel != nil {
			sess.cancel()
		}
		delete(s.m, uid)
	}
	s.mu.Unlock()
	return s.Gateway.Release(uid)
}

// maxPendingDenials bounds the refused egress attempts kept per conversation
// between two reconciles.
const maxPendingDenials = 10

// RecordDenial notes a refused egress attempt of a live conversation and asks
// for a reconcile, which records it on the conversation (an event in its
// history). Unknown conversations are ignored.
func (s *Registry) RecordDenial(uid, target, reason string) {
	s.mu.Lock()
	s.init()
	sess := s.m[uid]
	if sess == nil {
		s.mu.Unlock()
		return
	}
	sess.denials = append(sess.denials, v1alpha1.EgressDenial{Time: metav1.Now(), Target: target, Reason: reason})
	if n := len(sess.denials); n > maxPendingDenials {
		sess.denials = sess.denials[n-maxPendingDenials:]
	}
	key := sess.key
	s.mu.Unlock()
	s.Changed(key)
}

// TakeDenials returns and clears the refused egress attempts noted since the
// last call.
func (s *Registry) TakeDenials(uid string) []v1alpha1.EgressDenial {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	sess := s.m[uid]
	if sess == nil {
		return nil
	}
	d := sess.denials
	sess.denials = nil
	return d
}
