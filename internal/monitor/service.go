package monitor

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/monitor/breaker"
	"aicli.dev/aicli/internal/monitor/match"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/transcript"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
	"aicli.dev/aicli/internal/watchfilter"
)

// Transcripts follows committed transcripts (transcript.StoreLog).
type Transcripts interface {
	Subscribe(ctx context.Context, uid string, from int64) (<-chan transcriptwire.Entry, error)
	// Last is the cursor of the last committed entry (0: none).
	Last(ctx context.Context, uid string) (int64, error)
}

// Guests reaches live conversations' guests (liveguest.Registry).
type Guests interface {
	PTY(uid string) (ptyapi.PTY, bool)
}

// Watcher is the event store's watch (optional: without it the service
// looks again every Resync).
type Watcher interface {
	Watch(ctx context.Context, resource, namespace string, opts store.WatchOptions) (watch.Interface, error)
}

// Defaults of the service's timing.
const (
	DefaultFlushInterval = 500 * time.Millisecond
	DefaultMaxFlushDelay = 10 * time.Second
	DefaultResync        = 2 * time.Second
	DefaultPoll          = 50 * time.Millisecond
	// busyWait bounds how long a delivered wake waits for its conversation to
	// show BUSY before it waits for IDLE (a turn that ended at once).
	busyWait = 2 * time.Second
)

// Service is the watch loop of every MonitorAttachment on this supervisor.
type Service struct {
	Client      *storeclient.Client
	Watch       Watcher
	Transcripts Transcripts
	Guests      Guests
	// Attribution learns the speakers of the messages the service sends:
	// trigger:<attachment> in monitor conversations, injected:<monitor> in
	// target conversations.
	Attribution *transcript.Attribution
	// Remote opens the target side of attachments with
	// spec.target.supervisor (nil: such attachments are not served).
	Remote RemoteTargets
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// FlushInterval is how often evaluated cursors are looked at (default
	// 500ms): a cursor that moved is written once its target has been quiet
	// for a whole interval, or MaxFlushDelay (default 10s) after it first
	// moved past the written one, whichever comes first. A wake and a human
	// entry write their cursor at once.
	FlushInterval time.Duration
	// MaxFlushDelay bounds how long a moving cursor stays unwritten (default 10s).
	MaxFlushDelay time.Duration
	// Resync is the period of the full re-read of attachments (default 2s).
	Resync time.Duration
	// Poll is how often a wake looks at its monitor conversation's state (default 50ms).
	Poll time.Duration

	mu      sync.Mutex
	atts    map[types.UID]*attState
	follows map[string]*follow
	queues  map[string]*agentQueue
	// tripLocks serialise finishing each attachment's trip pauses.
	tripLocks map[types.UID]*sync.Mutex
	ctx       context.Context
	kick      chan struct{}
}

// attState is the service's view of one attachment: its latest object, its
// compiled trigger, and per target conversation the evaluated cursor and the
// pending (coalesced, not yet delivered) wake.
type attState struct {
	mu         sync.Mutex
	obj        *v1alpha1.MonitorAttachment
	generation int64
	matcher    *match.Matcher
	evaluated  map[string]int64
	flushed    map[string]int64
	pending    map[string]*pendingWake

	// ticked is each target's safe cursor at the previous flush tick;
	// unflushedSince when it first moved past flushed (absent: it has not).
	ticked         map[string]int64
	unflushedSince map[string]time.Time
}

// follow is one running transcript subscription.
type follow struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Service) poll() time.Duration {
	if s.Poll > 0 {
		return s.Poll
	}
	return DefaultPoll
}

// Run runs the watch loop until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.atts, s.follows, s.queues = map[types.UID]*attState{}, map[string]*follow{}, map[string]*agentQueue{}
	s.kick = make(chan struct{}, 1)
	s.mu.Unlock()
	if s.Watch != nil {
		// sync reads neither its own cursor writes nor conversations' status.
		go s.watch(ctx, "monitorattachments", OnlyCursorsMoved)
		go s.watch(ctx, "conversations", watchfilter.SameSpec)
	}
	flush := s.FlushInterval
	if flush <= 0 {
		flush = DefaultFlushInterval
	}
	resync := s.Resync
	if resync <= 0 {
		resync = DefaultResync
	}
	flushT, resyncT := time.NewTicker(flush), time.NewTicker(resync)
	defer flushT.Stop()
	defer resyncT.Stop()
	s.sync(ctx)
	for {
		select {
		case <-ctx.Done():
			s.stopAll()
			s.flush(context.Background(), true)
			return nil
		case <-s.kick:
			s.sync(ctx)
		case <-resyncT.C:
			s.sync(ctx)
		case <-flushT.C:
			s.flush(ctx, false)
		}
	}
}

func (s *Service) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// watch pokes the loop on every change of resource that unchanged does not
// report.
func (s *Service) watch(ctx context.Context, resource string, unchanged watchfilter.Unchanged) {
	filter := watchfilter.New(unchanged)
	rv := ""
	for ctx.Err() == nil {
		w, err := s.Watch.Watch(ctx, resource, "", store.WatchOptions{ResourceVersion: rv})
		if err != nil {
			rv = ""
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				rv = ""
				break
			}
			if o, ok := ev.Object.(interface{ GetResourceVersion() string }); ok {
				rv = o.GetResourceVersion()
			}
			if filter.Pass(ev) {
				s.poke()
			}
		}
		w.Stop()
	}
}

// eligible reports whether the loop serves the attachment: references
// resolved and the trigger compiled for its generation (a remote target
// keeps being followed while it is unreachable: the follows retry).
func eligible(a *v1alpha1.MonitorAttachment) bool {
	if a.DeletionTimestamp != nil {
		return false
	}
	for _, t := range []string{v1alpha1.ConditionReferencesResolved, v1alpha1.ConditionTriggerReady} {
		c := meta.FindStatusCondition(a.Status.Conditions, t)
		if c == nil || c.Status != "True" || c.ObservedGeneration != a.Generation {
			return false
		}
	}
	return true
}

// sync starts and stops the transcript follows to match the attachments.
func (s *Service) sync(ctx context.Context) {
	var atts v1alpha1.MonitorAttachmentList
	if err := s.Client.List(ctx, "", &atts, nil); err != nil {
		s.log().Warn("monitor: listing attachments", "err", err)
		return
	}
	var convs v1alpha1.ConversationList
	if err := s.Client.List(ctx, "", &convs, nil); err != nil {
		s.log().Warn("monitor: listing conversations", "err", err)
		return
	}
	byName := map[string]*v1alpha1.Conversation{}
	for i := range convs.Items {
		c := &convs.Items[i]
		byName[c.Namespace+"/"+c.Name] = c
	}
	want := map[string]func(){}
	seen := map[types.UID]bool{}
	for i := range atts.Items {
		a := &atts.Items[i]
		if a.Status.PausesPending != nil {
			s.retryTripPauses(ctx, a)
		}
		if !eligible(a) {
			continue
		}
		st, err := s.state(a)
		if err != nil {
			s.log().Warn("monitor: trigger does not compile", "namespace", a.Namespace, "attachment", a.Name, "err", err)
			continue
		}
		seen[a.UID] = true
		if a.Spec.Target.Supervisor != nil {
			s.wantRemote(ctx, a, st, want)
			continue
		}
		for _, mc := range a.Status.Conversations {
			conv := byName[a.Namespace+"/"+mc.Target]
			if conv == nil || conv.Spec.DesiredState == v1alpha1.ConversationArchived {
				continue
			}
			key := string(a.UID) + "/" + string(conv.UID)
			uid, target, from := string(conv.UID), mc.Target, mc.Cursor
			// A conversation already running when the attachment was made is
			// watched from then on, not from its beginning.
			fromNow := from == 0 && mc.LastWake == nil && !conv.CreationTimestamp.After(a.CreationTimestamp.Time)
			want[key] = func() { s.startFollow(ctx, key, st, target, uid, from, fromNow) }
		}
	}
	s.mu.Lock()
	var stop []*follow
	for key, f := range s.follows {
		if want[key] == nil {
			stop = append(stop, f)
			delete(s.follows, key)
		}
	}
	var start []func()
	for key, fn := range want {
		if s.follows[key] == nil {
			start = append(start, fn)
		}
	}
	for uid := range s.atts {
		if !seen[uid] {
			delete(s.atts, uid)
		}
	}
	s.mu.Unlock()
	for _, f := range stop {
		f.cancel()
		<-f.done
	}
	for _, fn := range start {
		fn()
	}
}

// retryTripPauses finishes, in the background, the pauses of a trip that a
// crash (or a failed pause) left pending, unless they are being finished.
func (s *Service) retryTripPauses(ctx context.Context, a *v1alpha1.MonitorAttachment) {
	mu := s.tripLock(a.UID)
	if !mu.TryLock() {
		return
	}
	ns, name, st := a.Namespace, a.Name, s.stateOf(a)
	go func() {
		defer mu.Unlock()
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		s.finishTrip(ctx, st, ns, name)
	}()
}

// tripLock is the lock that serialises finishing uid's trip pauses.
func (s *Service) tripLock(uid types.UID) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tripLocks == nil {
		s.tripLocks = map[types.UID]*sync.Mutex{}
	}
	mu := s.tripLocks[uid]
	if mu == nil {
		mu = &sync.Mutex{}
		s.tripLocks[uid] = mu
	}
	return mu
}

// state returns the attachment's state, updated to a (when a is newer).
func (s *Service) state(a *v1alpha1.MonitorAttachment) (*attState, error) {
	s.mu.Lock()
	st := s.atts[a.UID]
	if st == nil {
		st = &attState{evaluated: map[string]int64{}, flushed: map[string]int64{}, pending: map[string]*pendingWake{},
			ticked: map[string]int64{}, unflushedSince: map[string]time.Time{}}
		s.atts[a.UID] = st
	}
	s.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.observe(a)
	if st.matcher == nil || st.generation != a.Generation {
		m, err := match.Compile(a.Spec.Trigger)
		if err != nil {
			return nil, err
		}
		st.matcher, st.generation = m, a.Generation
	}
	return st, nil
}

// observe keeps the newest version of the attachment. st.mu must be held.
func (st *attState) observe(a *v1alpha1.MonitorAttachment) {
	if st.obj == nil || rv(a) >= rv(st.obj) {
		st.obj = a.DeepCopy()
	}
}

func rv(a *v1alpha1.MonitorAttachment) uint64 {
	n, _ := strconv.ParseUint(a.ResourceVersion, 10, 64)
	return n
}

// wantRemote adds the follows of a remote attachment's target conversations
// (as the reconciler recorded them from the remote catalog) to want.
func (s *Service) wantRemote(ctx context.Context, a *v1alpha1.MonitorAttachment, st *attState, want map[string]func()) {
	for _, mc := range a.Status.Conversations {
		if mc.Archived || mc.UID == "" {
			continue
		}
		key := string(a.UID) + "/" + mc.UID
		uid, target, from := mc.UID, mc.Target, mc.Cursor
		fromNow := from == 0 && mc.LastWake == nil && mc.Created != nil && !mc.Created.After(a.CreationTimestamp.Time)
		want[key] = func() { s.startFollow(ctx, key, st, target, uid, from, fromNow) }
	}
}

func (s *Service) startFollow(ctx context.Context, key string, st *attState, target, uid string, cursor int64, fromNow bool) {
	st.mu.Lock()
	side, err := s.side(st.obj)
	st.mu.Unlock()
	if err != nil {
		s.log().Warn("monitor: reaching the target", "conversation", target, "err", err)
		return
	}
	conv := TargetConversation{Name: target, UID: uid}
	if fromNow {
		last, err := side.Last(ctx, conv)
		if err != nil {
			s.log().Warn("monitor: reading a transcript's end", "conversation", target, "err", err)
			return
		}
		if last > 0 {
			// Written at once: a later start must not skip from "now" again.
			st.mu.Lock()
			ns, name := st.obj.Namespace, st.obj.Name
			st.mu.Unlock()
			if _, err := s.mutate(ctx, st, ns, name, func(a *v1alpha1.MonitorAttachment) error {
				setCursor(a, target, last)
				return nil
			}); err != nil {
				s.log().Warn("monitor: writing a starting cursor", "conversation", target, "err", err)
				return
			}
		}
		cursor = last
	}
	ctx, cancel := context.WithCancel(s.ctx)
	f := &follow{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if s.follows[key] != nil {
		s.mu.Unlock()
		cancel()
		return
	}
	s.follows[key] = f
	s.mu.Unlock()
	st.mu.Lock()
	if st.evaluated[target] < cursor {
		st.evaluated[target], st.flushed[target] = cursor, cursor
	}
	from := st.evaluated[target] + 1
	st.mu.Unlock()
	go func() {
		defer close(f.done)
		ch, err := side.Follow(ctx, conv, from)
		if err != nil {
			s.log().Warn("monitor: following a transcript", "conversation", target, "err", err)
			s.mu.Lock()
			if s.follows[key] == f {
				delete(s.follows, key)
			}
			s.mu.Unlock()
			return
		}
		for e := range ch {
			s.evaluate(ctx, st, target, uid, e)
		}
	}()
}

func (s *Service) stopAll() {
	s.mu.Lock()
	fs := make([]*follow, 0, len(s.follows))
	for k, f := range s.follows {
		fs = append(fs, f)
		delete(s.follows, k)
	}
	s.mu.Unlock()
	for _, f := range fs {
		f.cancel()
		<-f.done
	}
}

// safeCursor is the cursor that may be persisted for target: everything
// evaluated, except a pending wake's entries (a crash evaluates them again,
// and they wake then). st.mu must be held.
func (st *attState) safeCursor(target string) int64 {
	c := st.evaluated[target]
	if p := st.pending[target]; p != nil && p.firstCursor-1 < c {
		c = p.firstCursor - 1
	}
	return c
}

// flush writes the evaluated cursors that moved and whose target went quiet
// since the previous tick or has been unwritten for MaxFlushDelay (every one
// that moved when all is set). A cursor is only the bound of what a restart
// evaluates again, and evaluating a hit-less entry again does nothing, so a
// busy target's cursor is written about once per burst rather than on every tick.
func (s *Service) flush(ctx context.Context, all bool) {
	maxDelay := s.MaxFlushDelay
	if maxDelay <= 0 {
		maxDelay = DefaultMaxFlushDelay
	}
	now := s.now()
	s.mu.Lock()
	sts := make([]*attState, 0, len(s.atts))
	for _, st := range s.atts {
		sts = append(sts, st)
	}
	s.mu.Unlock()
	for _, st := range sts {
		st.mu.Lock()
		moved := map[string]int64{}
		for t := range st.evaluated {
			c := st.safeCursor(t)
			quiet := c == st.ticked[t]
			st.ticked[t] = c
			if c <= st.flushed[t] {
				delete(st.unflushedSince, t)
				continue
			}
			since, ok := st.unflushedSince[t]
			if !ok {
				since = now
				st.unflushedSince[t] = now
			}
			if all || quiet || now.Sub(since) >= maxDelay {
				moved[t] = c
			}
		}
		ns, name := st.obj.Namespace, st.obj.Name
		st.mu.Unlock()
		if len(moved) == 0 {
			continue
		}
		_, err := s.mutate(ctx, st, ns, name, func(a *v1alpha1.MonitorAttachment) error {
			for t, c := range moved {
				setCursor(a, t, c)
			}
			return nil
		})
		if err != nil {
			s.log().Warn("monitor: writing cursors", "namespace", ns, "attachment", name, "err", err)
			continue
		}
		st.mu.Lock()
		for t, c := range moved {
			st.flushed[t] = max(st.flushed[t], c)
			delete(st.unflushedSince, t)
		}
		st.mu.Unlock()
	}
}

// setCursor raises the cursor of target in a's status.
func setCursor(a *v1alpha1.MonitorAttachment, target string, cursor int64) *v1alpha1.MonitoredConversation {
	for i := range a.Status.Conversations {
		mc := &a.Status.Conversations[i]
		if mc.Target == target {
			mc.Cursor = max(mc.Cursor, cursor)
			return mc
		}
	}
	a.Status.Conversations = append(a.Status.Conversations, v1alpha1.MonitoredConversation{Target: target, Cursor: cursor})
	return &a.Status.Conversations[len(a.Status.Conversations)-1]
}

// mutate applies fn to the stored attachment's status and writes it,
// retrying on conflicts; the written object becomes st's view.
func (s *Service) mutate(ctx context.Context, st *attState, ns, name string, fn func(*v1alpha1.MonitorAttachment) error) (*v1alpha1.MonitorAttachment, error) {
	for attempt := 0; ; attempt++ {
		a := &v1alpha1.MonitorAttachment{}
		if err := s.Client.Get(ctx, ns, name, a); err != nil {
			return nil, err
		}
		if err := fn(a); err != nil {
			return a, err
		}
		err := s.Client.UpdateStatus(ctx, a)
		if apierrors.IsConflict(err) && attempt < 20 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("writing the status of monitor attachment %s: %w", name, err)
		}
		if st != nil {
			st.mu.Lock()
			st.observe(a)
			st.mu.Unlock()
		}
		return a, nil
	}
}

// closed reports whether st's breaker is closed. st.mu must be held.
func (st *attState) closed() bool { return breaker.Closed(&st.obj.Status) }
