package monitor

import (
	"context"
	"fmt"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/monitor/breaker"
)

// Refusal is an advise call the supervisor refuses; the message says why.
type Refusal struct{ Msg string }

func (r *Refusal) Error() string { return r.Msg }

// Refused marks the error as a refusal (the advise built-in exits 126).
func (r *Refusal) Refused() bool { return true }

func refuse(format string, args ...any) error { return &Refusal{Msg: fmt.Sprintf(format, args...)} }

// Advise delivers text from the monitor agent's conversation into the target
// conversation that conversation watches: prefixed, attributed to
// injected:<monitor>, through the target's live guest (one atomic message).
// It is refused when the conversation is no monitor conversation, the
// attachment is WatchOnly, its breaker is open, or the target is not live.
// The injection completes a wake→inject cycle (breaker.Inject); a trip
// pauses both conversations.
func (s *Service) Advise(ctx context.Context, ns, monitor, conversation, text string) (string, error) {
	var list v1alpha1.MonitorAttachmentList
	if err := s.Client.List(ctx, ns, &list, nil); err != nil {
		return "", err
	}
	var a *v1alpha1.MonitorAttachment
	var target string
	for i := range list.Items {
		if list.Items[i].Spec.Monitor != monitor {
			continue
		}
		for _, mc := range list.Items[i].Status.Conversations {
			if mc.Monitor == conversation {
				a, target = &list.Items[i], mc.Target
			}
		}
	}
	switch {
	case a == nil:
		return "", refuse("refused: conversation %q is not a monitor conversation of agent %q: advice goes from the conversation a trigger woke",
			conversation, monitor)
	case a.Spec.Mode == v1alpha1.MonitorWatchOnly:
		return "", refuse("refused: monitor attachment %q is WatchOnly: it may observe %q but not inject (no may-inject)", a.Name, target)
	case !breaker.Closed(&a.Status):
		return "", refuse("refused: the breaker of monitor attachment %q is open (%s); only a human re-arms it: aictl monitor rearm %s",
			a.Name, a.Status.TrippedReason, a.Name)
	}
	side, err := s.side(a)
	if err != nil {
		return "", err
	}
	if err := side.Inject(ctx, targetConversation(a, target), monitor, text); err != nil {
		return "", injectError(target, err)
	}
	st := s.stateOf(a)
	tripped := false
	a, err = s.mutate(ctx, st, ns, a.Name, func(a *v1alpha1.MonitorAttachment) error {
		closed := breaker.Closed(&a.Status)
		tripped = breaker.Inject(a, s.now())
		if tripped && closed {
			a.Status.PausesPending = &v1alpha1.TripPauses{Target: target, Monitor: conversation}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("advice delivered to %s, but recording it failed: %w", target, err)
	}
	if tripped {
		s.trip(ctx, st, a)
		return fmt.Sprintf("advice delivered to %s; the breaker of %s tripped (%s): both conversations are paused",
			target, a.Name, a.Status.TrippedReason), nil
	}
	return fmt.Sprintf("advice delivered to %s (%d human-less cycle(s))", target, a.Status.ConsecutiveHumanless), nil
}

// stateOf returns the service's state of a, or nil when it does not follow it.
func (s *Service) stateOf(a *v1alpha1.MonitorAttachment) *attState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.atts[a.UID]
}
