package monitor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/monitor/breaker"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// agentQueue serialises the wakes of one monitor agent: one live
// conversation per agent holds, so a monitor watching several targets
// activates their monitor conversations one after the other, oldest pending
// wake first.
type agentQueue struct {
	ns, agent string
	kick      chan struct{}
}

func (q *agentQueue) poke() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// queue returns the monitor agent's queue, starting it on first use.
func (s *Service) queue(ns, agent string) *agentQueue {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := ns + "/" + agent
	q := s.queues[key]
	if q == nil {
		q = &agentQueue{ns: ns, agent: agent, kick: make(chan struct{}, 1)}
		s.queues[key] = q
		go s.runQueue(s.ctx, q)
	}
	return q
}

func (s *Service) runQueue(ctx context.Context, q *agentQueue) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.kick:
		case <-time.After(DefaultResync):
		}
		for ctx.Err() == nil {
			st, target := s.next(q.ns, q.agent)
			if st == nil {
				break
			}
			if err := s.deliver(ctx, st, target); err != nil {
				if ctx.Err() == nil {
					s.log().Warn("monitor: wake not delivered; trying again", "namespace", q.ns, "monitor", q.agent, "target", target, "err", err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				break
			}
		}
	}
}

// next is the oldest pending wake of the monitor agent's attachments whose
// breaker is closed (an open breaker's pending hits are dropped).
func (s *Service) next(ns, agent string) (*attState, string) {
	s.mu.Lock()
	sts := make([]*attState, 0, len(s.atts))
	for _, st := range s.atts {
		sts = append(sts, st)
	}
	s.mu.Unlock()
	var best *attState
	var bestTarget string
	var bestSince time.Time
	for _, st := range sts {
		st.mu.Lock()
		if st.obj.Namespace == ns && st.obj.Spec.Monitor == agent {
			if !st.closed() {
				clear(st.pending)
			}
			for t, p := range st.pending {
				if best == nil || p.since.Before(bestSince) {
					best, bestTarget, bestSince = st, t, p.since
				}
			}
		}
		st.mu.Unlock()
	}
	return best, bestTarget
}

// deliver wakes the monitor for target's pending hits: it activates the
// monitor conversation of that target (pausing the agent's other, idle,
// monitor conversation), waits until its CLI is IDLE, takes every hit
// pending by then (coalesced), records the wake with the cursor it covers
// — before it is sent, so a crash never wakes twice for the same hits —
// sends one trigger message, and waits for the monitor's turn to end.
func (s *Service) deliver(ctx context.Context, st *attState, target string) error {
	st.mu.Lock()
	a := st.obj.DeepCopy()
	st.mu.Unlock()
	ns := a.Namespace
	conv, err := s.activate(ctx, st, a, target)
	if err != nil {
		return err
	}
	pty, err := s.waitIdle(ctx, ns, conv.Name)
	if err != nil {
		return err
	}
	st.mu.Lock()
	p, covered := st.take(target)
	st.mu.Unlock()
	if p == nil {
		return nil
	}
	now := s.now()
	tripped := false
	a, err = s.mutate(ctx, st, ns, a.Name, func(a *v1alpha1.MonitorAttachment) error {
		closed := breaker.Closed(&a.Status)
		tripped = breaker.Wake(a, now)
		mc := setCursor(a, target, covered)
		mc.Monitor = conv.Name
		if tripped && closed {
			a.Status.PausesPending = &v1alpha1.TripPauses{Target: target, Monitor: conv.Name}
		}
		if !tripped {
			t := metav1.NewTime(now)
			mc.LastWake = &t
		}
		return nil
	})
	if err != nil {
		st.mu.Lock()
		st.restore(p)
		st.mu.Unlock()
		return err
	}
	st.mu.Lock()
	st.flushed[target] = max(st.flushed[target], covered)
	st.mu.Unlock()
	if tripped {
		s.trip(ctx, st, a)
		return nil
	}
	msg := TriggerMessage(a, p, covered)
	if s.Attribution != nil {
		s.Attribution.Expect(string(conv.UID), transcriptwire.SpeakerTriggerPrefix+a.Name, msg)
	}
	if err := pty.SendMessage(ctx, msg); err != nil {
		// Recorded, not delivered: at most once (the hits are not evaluated again).
		return fmt.Errorf("sending the trigger message to %s: %w", conv.Name, err)
	}
	s.markBusy(string(conv.UID))
	s.log().Info("monitor woke", "namespace", ns, "attachment", a.Name, "target", target, "monitorConversation", conv.Name,
		"hits", p.hits, "cursor", covered)
	return s.awaitTurn(ctx, ns, conv.Name)
}

// restore puts a taken wake back (its record failed). st.mu must be held.
func (st *attState) restore(p *pendingWake) {
	if q := st.pending[p.target]; q != nil {
		p.hits += q.hits
		p.lastCursor = q.lastCursor
		for _, k := range q.keywords {
			if !containsString(p.keywords, k) {
				p.keywords = append(p.keywords, k)
			}
		}
		p.excerpts = append(p.excerpts, q.excerpts...)[:min(len(p.excerpts)+len(q.excerpts), MaxExcerpts)]
	}
	st.pending[p.target] = p
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Service) markBusy(uid string) {
	if m, ok := s.Guests.(interface{ MarkBusy(uid string) }); ok {
		m.MarkBusy(uid)
	}
}

// activate makes the monitor conversation of target the monitor agent's one
// Active conversation and returns it, creating it on the first wake. Another
// Active monitor conversation of the agent is paused once its CLI is IDLE; an
// Active conversation that is not a monitor conversation (a human talking to
// the agent) is waited for.
func (s *Service) activate(ctx context.Context, st *attState, a *v1alpha1.MonitorAttachment, target string) (*v1alpha1.Conversation, error) {
	ns, agent := a.Namespace, a.Spec.Monitor
	mine, err := s.monitorConversation(ctx, a, target)
	if err != nil {
		return nil, err
	}
	for {
		var list v1alpha1.ConversationList
		if err := s.Client.List(ctx, ns, &list, nil); err != nil {
			return nil, err
		}
		blocked := false
		for i := range list.Items {
			c := &list.Items[i]
			if c.Spec.AgentRef != agent || c.Spec.DesiredState != v1alpha1.ConversationActive || (mine != nil && c.Name == mine.Name) {
				continue
			}
			_, live := s.Guests.PTY(string(c.UID))
			idle := c.Status.Execution == v1alpha1.ExecutionStatus(ptyapi.StatusIdle) || !live
			if c.Labels[v1alpha1.LabelMonitorAttachment] == "" || !idle {
				blocked = true
				continue
			}
			c.Spec.DesiredState = v1alpha1.ConversationPaused
			if err := s.Client.Update(ctx, c); err != nil && !apierrors.IsConflict(err) {
				return nil, fmt.Errorf("pausing monitor conversation %s: %w", c.Name, err)
			}
			blocked = true // look again: the pause is written
		}
		if !blocked {
			break
		}
		if err := sleep(ctx, s.poll()); err != nil {
			return nil, err
		}
	}
	if mine == nil {
		mine = &v1alpha1.Conversation{}
		mine.Namespace, mine.Name = ns, conversationName(agent)
		mine.Labels = map[string]string{v1alpha1.LabelMonitorAttachment: a.Name, v1alpha1.LabelMonitorTarget: target}
		mine.Spec.AgentRef, mine.Spec.DesiredState = agent, v1alpha1.ConversationActive
		if err := s.Client.Create(ctx, mine); err != nil {
			return nil, fmt.Errorf("creating the monitor conversation for %s: %w", target, err)
		}
		_, err := s.mutate(ctx, st, ns, a.Name, func(a *v1alpha1.MonitorAttachment) error {
			setCursor(a, target, 0).Monitor = mine.Name
			return nil
		})
		return mine, err
	}
	if mine.Spec.DesiredState != v1alpha1.ConversationActive {
		mine.Spec.DesiredState = v1alpha1.ConversationActive
		if err := s.Client.Update(ctx, mine); err != nil {
			return nil, fmt.Errorf("continuing monitor conversation %s: %w", mine.Name, err)
		}
	}
	return mine, nil
}

// monitorConversation finds target's monitor conversation (the status names
// it; its labels find it when that write was lost), or nil.
func (s *Service) monitorConversation(ctx context.Context, a *v1alpha1.MonitorAttachment, target string) (*v1alpha1.Conversation, error) {
	for _, mc := range a.Status.Conversations {
		if mc.Target != target || mc.Monitor == "" {
			continue
		}
		c := &v1alpha1.Conversation{}
		err := s.Client.Get(ctx, a.Namespace, mc.Monitor, c)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		case c.Spec.DesiredState != v1alpha1.ConversationArchived && c.Spec.AgentRef == a.Spec.Monitor:
			return c, nil
		}
	}
	var list v1alpha1.ConversationList
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelMonitorAttachment: a.Name, v1alpha1.LabelMonitorTarget: target})
	if err := s.Client.List(ctx, a.Namespace, &list, sel); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if c := &list.Items[i]; c.Spec.DesiredState != v1alpha1.ConversationArchived && c.Spec.AgentRef == a.Spec.Monitor {
			return c, nil
		}
	}
	return nil, nil
}

// conversationName is a fresh name for a monitor conversation of agent.
func conversationName(agent string) string {
	prefix := agent + "-mon-"
	if len(prefix) > 57 {
		prefix = prefix[:57]
	}
	return prefix + utilrand.String(5)
}

// waitIdle waits until the conversation is live with its CLI IDLE.
func (s *Service) waitIdle(ctx context.Context, ns, name string) (ptyapi.PTY, error) {
	var pty ptyapi.PTY
	err := s.waitConversation(ctx, ns, name, 0, func(c *v1alpha1.Conversation) (bool, error) {
		if c.Spec.DesiredState != v1alpha1.ConversationActive {
			return false, fmt.Errorf("monitor conversation %s is %s", name, c.Spec.DesiredState)
		}
		if c.Status.Execution != v1alpha1.ExecutionStatus(ptyapi.StatusIdle) {
			return false, nil
		}
		p, ok := s.Guests.PTY(string(c.UID))
		pty = p
		return ok, nil
	})
	return pty, err
}

// awaitTurn waits for the monitor's turn to end: BUSY (seen within
// busyWait, or the turn ended at once), then IDLE again, or the conversation
// stops.
func (s *Service) awaitTurn(ctx context.Context, ns, name string) error {
	busySeen := false
	err := s.waitConversation(ctx, ns, name, busyWait, func(c *v1alpha1.Conversation) (bool, error) {
		_, live := s.Guests.PTY(string(c.UID))
		if c.Spec.DesiredState != v1alpha1.ConversationActive || !live {
			return true, nil
		}
		if c.Status.Execution != v1alpha1.ExecutionStatus(ptyapi.StatusIdle) {
			busySeen = true
			return false, nil
		}
		return busySeen, nil
	})
	if errors.Is(err, errNoChange) {
		if busySeen {
			return s.awaitTurnIdle(ctx, ns, name)
		}
		return nil // no BUSY within busyWait: the turn ended at once
	}
	return err
}

// awaitTurnIdle waits, without a bound, until a BUSY conversation is IDLE or stops.
func (s *Service) awaitTurnIdle(ctx context.Context, ns, name string) error {
	return s.waitConversation(ctx, ns, name, 0, func(c *v1alpha1.Conversation) (bool, error) {
		_, live := s.Guests.PTY(string(c.UID))
		return c.Spec.DesiredState != v1alpha1.ConversationActive || !live ||
			c.Status.Execution == v1alpha1.ExecutionStatus(ptyapi.StatusIdle), nil
	})
}

var errNoChange = errors.New("no change within the bound")

// waitConversation calls cond on the conversation now and on every later
// version of it (the store's watch when there is one, so no short-lived
// state is missed; also every Poll) until it returns true or an error. With
// bound > 0 it gives up after bound with errNoChange.
func (s *Service) waitConversation(ctx context.Context, ns, name string, bound time.Duration,
	cond func(*v1alpha1.Conversation) (bool, error)) error {
	if bound > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	c := &v1alpha1.Conversation{}
	if err := s.Client.Get(ctx, ns, name, c); err != nil {
		return boundErr(ctx, bound, err)
	}
	if ok, err := cond(c); ok || err != nil {
		return err
	}
	var events <-chan watch.Event
	if s.Watch != nil {
		w, err := s.Watch.Watch(ctx, "conversations", ns, store.WatchOptions{ResourceVersion: c.ResourceVersion})
		if err == nil {
			defer w.Stop()
			events = w.ResultChan()
		}
	}
	tick := time.NewTicker(s.poll())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return boundErr(ctx, bound, ctx.Err())
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			u, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj || u.GetName() != name || ev.Type == watch.Error || ev.Type == watch.Bookmark {
				continue
			}
			if ev.Type == watch.Deleted {
				return fmt.Errorf("conversation %s was deleted", name)
			}
			c := &v1alpha1.Conversation{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
				continue
			}
			if ok, err := cond(c); ok || err != nil {
				return err
			}
		case <-tick.C:
			c := &v1alpha1.Conversation{}
			if err := s.Client.Get(ctx, ns, name, c); err != nil {
				return boundErr(ctx, bound, err)
			}
			if ok, err := cond(c); ok || err != nil {
				return err
			}
		}
	}
}

// boundErr turns the bound's expiry into errNoChange.
func boundErr(ctx context.Context, bound time.Duration, err error) error {
	if bound > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return errNoChange
	}
	return err
}

// trip follows a trip recorded with its pausesPending: pending wakes are
// dropped and both conversations paused (finishTrip).
func (s *Service) trip(ctx context.Context, st *attState, a *v1alpha1.MonitorAttachment) {
	if st != nil {
		st.mu.Lock()
		clear(st.pending)
		st.mu.Unlock()
	}
	s.log().Warn("monitor breaker tripped; pausing both conversations", "namespace", a.Namespace, "attachment", a.Name,
		"pauses", a.Status.PausesPending, "reason", a.Status.TrippedReason)
	mu := s.tripLock(a.UID)
	mu.Lock()
	defer mu.Unlock()
	s.finishTrip(ctx, st, a.Namespace, a.Name)
}

// errUnchanged makes mutate write nothing.
var errUnchanged = errors.New("unchanged")

// finishTrip pauses the conversations a trip recorded in pausesPending and
// then clears it. It runs right after the trip and again from sync while
// pausesPending stays set, so a trip a crash interrupted between its record
// and its pauses still pauses both conversations. Once cleared it never
// pauses again: a human may resume either conversation while tripped.
// Callers hold the attachment's tripLock, and it reads the attachment
// afresh under it, so two callers never both pause.
func (s *Service) finishTrip(ctx context.Context, st *attState, ns, name string) {
	a := &v1alpha1.MonitorAttachment{}
	if err := s.Client.Get(ctx, ns, name, a); err != nil {
		if !apierrors.IsNotFound(err) {
			s.log().Error("monitor: reading a tripped attachment", "namespace", ns, "attachment", name, "err", err)
		}
		return
	}
	p := a.Status.PausesPending
	if p == nil {
		return
	}
	done := true
	if side, err := s.side(a); err != nil {
		s.log().Error("monitor: pausing the target after a trip", "namespace", a.Namespace, "conversation", p.Target, "err", err)
		done = false
	} else if err := side.Pause(ctx, targetConversation(a, p.Target)); err != nil {
		s.log().Error("monitor: pausing the target after a trip", "namespace", a.Namespace, "conversation", p.Target, "err", err)
		done = false
	}
	if p.Monitor != "" {
		if err := s.pause(ctx, a.Namespace, p.Monitor); err != nil {
			s.log().Error("monitor: pausing after a trip", "namespace", a.Namespace, "conversation", p.Monitor, "err", err)
			done = false
		}
	}
	if !done {
		return // the next sync retries
	}
	_, err := s.mutate(ctx, st, a.Namespace, a.Name, func(a *v1alpha1.MonitorAttachment) error {
		if a.Status.PausesPending == nil || *a.Status.PausesPending != *p {
			return errUnchanged
		}
		a.Status.PausesPending = nil
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		s.log().Error("monitor: recording the pauses after a trip", "namespace", a.Namespace, "attachment", a.Name, "err", err)
	}
}

func (s *Service) pause(ctx context.Context, ns, name string) error {
	for attempt := 0; ; attempt++ {
		c := &v1alpha1.Conversation{}
		err := s.Client.Get(ctx, ns, name, c)
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		if c.Spec.DesiredState != v1alpha1.ConversationActive {
			return nil
		}
		c.Spec.DesiredState = v1alpha1.ConversationPaused
		err = s.Client.Update(ctx, c)
		if apierrors.IsConflict(err) && attempt < 20 {
			continue
		}
		return err
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// TriggerMessage is the structured message that wakes the monitor: the
// target conversation, the matched keywords, how to read more and to advise,
// and last the excerpts with speaker and cursor. Every line the platform
// writes starts at the beginning of a line; the text of an excerpt (and of a
// keyword) is transcriptwire.Framed, so no line of the target's transcript
// can pose as a header or as another excerpt.
func TriggerMessage(a *v1alpha1.MonitorAttachment, p *pendingWake, covered int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Monitor trigger: attachment %q]\n", a.Name)
	target := fmt.Sprintf("%s (agent %q", p.target, a.Spec.Target.Agent)
	if rs := a.Spec.Target.Supervisor; rs != nil {
		target += " on supervisor " + rs.Address
	}
	b.WriteString(transcriptwire.Framed("Target conversation: ", target+")"))
	b.WriteString("\n")
	b.WriteString(transcriptwire.Framed("Matched keywords: ", strings.Join(p.keywords, ", ")))
	b.WriteString("\n")
	fmt.Fprintf(&b, "Hits: %d in entries #%d-#%d (evaluated up to #%d)", p.hits, p.firstCursor, p.lastCursor, covered)
	if len(p.excerpts) < p.hits {
		fmt.Fprintf(&b, "; %d excerpts shown", len(p.excerpts))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Read more: transcript-read %s --from %d\n", p.target, max(p.firstCursor-10, 1))
	if a.Spec.Mode == v1alpha1.MonitorWatchOnly {
		b.WriteString("This attachment is watch-only: analyse, do not advise.\n")
	} else {
		fmt.Fprintf(&b, "Advise with: advise TEXT (delivered into %s as monitor advice). Staying silent is fine.\n", p.target)
	}
	b.WriteString("Excerpts:")
	for _, e := range p.excerpts {
		b.WriteString("\n")
		b.WriteString(transcriptwire.Framed(fmt.Sprintf("#%d %s: ", e.cursor, e.speaker), strings.TrimRight(e.text, "\r\n")))
	}
	return b.String()
}
