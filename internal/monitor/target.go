package monitor

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/transcript/transcriptwire"
)

// TargetConversation is one watched conversation on its supervisor: its
// name, and its uid where the side needs it (the local transcript log).
type TargetConversation struct {
	Name, UID string
}

// TargetSide is the supervisor homing an attachment's target conversations,
// bound to their namespace: this supervisor (localTarget) or another one
// reached through its public API (internal/monitor/remote).
type TargetSide interface {
	// Follow delivers the conversation's attributed transcript entries with
	// Cursor >= from, the backlog first, until ctx ends. A remote side
	// reconnects by itself when the stream breaks.
	Follow(ctx context.Context, c TargetConversation, from int64) (<-chan transcriptwire.Entry, error)
	// Last is the cursor of the last committed entry (0: none).
	Last(ctx context.Context, c TargetConversation) (int64, error)
	// Inject delivers text as monitor's advice: transcriptwire.Advice (the
	// prefix, the text framed), attributed to injected:<monitor>, one
	// atomic message. A conversation that is not live is a *Refusal (local)
	// or the server's 409 (remote).
	Inject(ctx context.Context, c TargetConversation, monitor, text string) error
	// Pause sets the conversation's spec.desiredState to Paused (a breaker trip).
	Pause(ctx context.Context, c TargetConversation) error
}

// RemoteTargets opens the target side of an attachment whose target is on
// another supervisor; namespace is the attachment's.
type RemoteTargets func(namespace string, rs *v1alpha1.RemoteSupervisor) (TargetSide, error)

// side returns the target side of attachment a.
func (s *Service) side(a *v1alpha1.MonitorAttachment) (TargetSide, error) {
	rs := a.Spec.Target.Supervisor
	if rs == nil {
		return &localTarget{s: s, ns: a.Namespace}, nil
	}
	if s.Remote == nil {
		return nil, fmt.Errorf("spec.target.supervisor: this supervisor serves no remote targets")
	}
	return s.Remote(a.Namespace, rs)
}

// injectError turns a failed injection into a Refusal when the target
// refused it (not live, gone, too large), so the advise built-in reports it.
func injectError(target string, err error) error {
	var r *Refusal
	switch {
	case errors.As(err, &r):
		return err
	case apierrors.IsConflict(err):
		return refuse("refused: target conversation %q is not live: %v", target, err)
	case apierrors.IsNotFound(err):
		return refuse("refused: target conversation %q no longer exists", target)
	case apierrors.IsForbidden(err):
		// The target's supervisor does not let this credential speak as the monitor (a token minted without --monitor).
		return refuse("refused: the target's supervisor does not authorize this advice: %v", err)
	case statusCode(err) == http.StatusRequestEntityTooLarge:
		return refuse("refused: the advice is too large: %v", err)
	}
	return fmt.Errorf("delivering the advice to %s: %w", target, err)
}

func statusCode(err error) int32 {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return se.Status().Code
	}
	return 0
}

// localTarget is a target on this supervisor: the store's transcript log,
// the live guests and the attribution of the transcript pump.
type localTarget struct {
	s  *Service
	ns string
}

func (l *localTarget) Follow(ctx context.Context, c TargetConversation, from int64) (<-chan transcriptwire.Entry, error) {
	return l.s.Transcripts.Subscribe(ctx, c.UID, from)
}

func (l *localTarget) Last(ctx context.Context, c TargetConversation) (int64, error) {
	return l.s.Transcripts.Last(ctx, c.UID)
}

func (l *localTarget) Inject(ctx context.Context, c TargetConversation, monitor, text string) error {
	conv := &v1alpha1.Conversation{}
	err := l.s.Client.Get(ctx, l.ns, c.Name, conv)
	if apierrors.IsNotFound(err) {
		return refuse("refused: target conversation %q no longer exists", c.Name)
	} else if err != nil {
		return err
	}
	pty, live := l.s.Guests.PTY(string(conv.UID))
	if conv.Spec.DesiredState != v1alpha1.ConversationActive || !live {
		return refuse("refused: target conversation %q is not live (it is %s): advice is delivered only into a running conversation",
			c.Name, conv.Spec.DesiredState)
	}
	msg := transcriptwire.Advice(monitor, text)
	if len(msg) > ptyapi.MaxMessageBytes {
		return refuse("refused: the advice exceeds %d bytes", ptyapi.MaxMessageBytes-len(transcriptwire.AdvicePrefix(monitor)))
	}
	uid := string(conv.UID)
	if l.s.Attribution != nil {
		l.s.Attribution.Expect(uid, transcriptwire.SpeakerInjectedPrefix+monitor, msg)
	}
	if err := pty.SendMessage(ctx, msg); err != nil {
		return err
	}
	l.s.markBusy(uid)
	return nil
}

func (l *localTarget) Pause(ctx context.Context, c TargetConversation) error {
	return l.s.pause(ctx, l.ns, c.Name)
}

// targetConversation is target as its side knows it: the uid the reconciler
// recorded (a local side reads it afresh where it needs it).
func targetConversation(a *v1alpha1.MonitorAttachment, target string) TargetConversation {
	for _, mc := range a.Status.Conversations {
		if mc.Target == target {
			return TargetConversation{Name: target, UID: mc.UID}
		}
	}
	return TargetConversation{Name: target}
}

// pageReader is a target side that reads transcript pages (remote.Side).
type pageReader interface {
	Read(ctx context.Context, c TargetConversation, from int64, limit int) ([]transcriptwire.Entry, error)
}

// ReadRemote reads a page of conversation's transcript when it is a target
// conversation of a MonitorAttachment in ns whose monitor is agent and whose
// target is on another supervisor (the transcript-read built-in of a remote
// monitor: may-observe through the attachment). ok is false when it is none.
func (s *Service) ReadRemote(ctx context.Context, ns, agent, conversation string, from int64, limit int) ([]transcriptwire.Entry, bool, error) {
	var list v1alpha1.MonitorAttachmentList
	if err := s.Client.List(ctx, ns, &list, nil); err != nil {
		return nil, false, err
	}
	for i := range list.Items {
		a := &list.Items[i]
		if a.Spec.Monitor != agent || a.Spec.Target.Supervisor == nil || a.DeletionTimestamp != nil {
			continue
		}
		for _, mc := range a.Status.Conversations {
			if mc.Target != conversation {
				continue
			}
			side, err := s.side(a)
			if err != nil {
				return nil, true, err
			}
			r, ok := side.(pageReader)
			if !ok {
				return nil, true, fmt.Errorf("the target side of %s reads no transcripts", a.Name)
			}
			entries, err := r.Read(ctx, TargetConversation{Name: mc.Target, UID: mc.UID}, from, limit)
			if err != nil {
				return nil, true, fmt.Errorf("reading %s on supervisor %s: %w", conversation, a.Spec.Target.Supervisor.Address, err)
			}
			return entries, true, nil
		}
	}
	return nil, false, nil
}
