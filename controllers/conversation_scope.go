package controllers

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/grants"
)

// convScope is one reconcile of one conversation: the object, and what the
// phases found out for the phases after them.
type convScope struct {
	conv *v1alpha1.Conversation
	key  types.NamespacedName

	// stop makes every phase converge toward no run: the desired state is
	// Paused or Archived, the pass stalled, or the run crashed.
	stop bool
	// stopReason and stopWhy explain a stop of an Active conversation that
	// stalled (the blocking phase's reason and message).
	stopReason, stopWhy string
	// crash says why the run ended unplanned during this reconcile.
	crash string

	// Found by the phases, in order.
	agent    *v1alpha1.Agent        // references (nil while missing)
	provider *ptyapi.ProviderAccess // access
	tools    []grants.Tool          // tools
	toolsDir string                 // tools ("" without a tool binary)
	image    string                 // image
	pty      ptyapi.PTY             // guest
	// sent is set once a phase put a message into the CLI this pass (it is busy now).
	sent bool
	// budgetShort says why the budget covers no further message now ("" when it does).
	budgetShort string
	// resumeNote is this run's honest report on resumability, made while
	// launching (home deleted, resume unsupported); reason "" when none.
	resumeNote struct{ reason, msg string }
}

func (s *convScope) desiredActive() bool {
	d := s.conv.Spec.DesiredState
	return d == v1alpha1.ConversationActive || d == ""
}

// stoppedState is the observed state of a conversation with no run.
func (s *convScope) stoppedState() v1alpha1.ConversationState {
	if s.conv.Spec.DesiredState == v1alpha1.ConversationArchived {
		return v1alpha1.ConversationArchived
	}
	return v1alpha1.ConversationPaused
}

// stoppedReason is the reason the run-dependent conditions carry while no run exists.
func (s *convScope) stoppedReason() (string, string) {
	switch {
	case s.stopReason != "":
		return s.stopReason, s.stopWhy
	case s.stoppedState() == v1alpha1.ConversationArchived:
		return v1alpha1.ReasonArchived, "the conversation is Archived"
	default:
		return v1alpha1.ReasonPaused, "the conversation is Paused"
	}
}

func (s *convScope) set(typ string, status metav1.ConditionStatus, reason, msg string) {
	setCondition(&s.conv.Status.Conditions, s.conv.Generation, typ, status, reason, msg)
}
