package convapi

import (
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/ptyapi"
)

// defaultNamespace is the namespace aictl uses without -n; hints only add
// "-n NS" for the others.
const defaultNamespace = "default"

// aictlHint is the aictl command line for verb on the target conversation.
func (t *target) aictlHint(verb, arg string) string {
	s := "aictl " + verb + " " + arg
	if t.ns != defaultNamespace {
		s += " -n " + t.ns
	}
	return s
}

// desiredState is spec.desiredState, Active when unset (the API default).
func desiredState(obj *unstructured.Unstructured) v1alpha1.ConversationState {
	d, _, _ := unstructured.NestedString(obj.Object, "spec", "desiredState")
	if d == "" {
		return v1alpha1.ConversationActive
	}
	return v1alpha1.ConversationState(d)
}

// livePTY returns the conversation's live PTY, or a 409 Status that says why
// there is none and what to do about it.
func (a *API) livePTY(t *target) (ptyapi.PTY, error) {
	agent, _, _ := unstructured.NestedString(t.obj.Object, "spec", "agentRef")
	switch desiredState(t.obj) {
	case v1alpha1.ConversationPaused:
		return nil, conversationError(http.StatusConflict, metav1.StatusReasonConflict, t.name,
			fmt.Sprintf("conversation %s is Paused: resume it first (%s)", t.name, t.aictlHint("resume", t.name)))
	case v1alpha1.ConversationArchived:
		return nil, conversationError(http.StatusConflict, metav1.StatusReasonConflict, t.name,
			fmt.Sprintf("conversation %s is Archived and read-only: start a new conversation for agent %s (%s)",
				t.name, agent, t.aictlHint("start", agent)))
	}
	if t.obj.GetDeletionTimestamp() != nil {
		return nil, conversationError(http.StatusConflict, metav1.StatusReasonConflict, t.name,
			fmt.Sprintf("conversation %s is being deleted", t.name))
	}
	pty, ok := a.opts.Sessions.PTY(string(t.obj.GetUID()))
	if !ok {
		observed, _, _ := unstructured.NestedString(t.obj.Object, "status", "state")
		if observed == "" {
			observed = "not yet observed"
		}
		return nil, conversationError(http.StatusConflict, metav1.StatusReasonConflict, t.name,
			fmt.Sprintf("conversation %s is not live (desired Active, observed state: %s): its guest is not connected; "+
				"wait until it is Ready (%s)", t.name, observed, t.aictlHint("wait --for=condition=Ready", "conversation/"+t.name)))
	}
	return pty, nil
}

// guestError maps an error of a guest call to a Status: contract errors keep
// their meaning, anything else (the guest did not answer) is a 503.
func (a *API) guestError(t *target, op string, err error) error {
	a.log.Warn("guest call failed", "op", op, "namespace", t.ns, "conversation", t.name, "error", err.Error())
	switch {
	case errors.Is(err, ptyapi.ErrMessageTooLarge):
		return conversationError(http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, t.name,
			fmt.Sprintf("conversation %s: the message exceeds %d bytes", t.name, ptyapi.MaxMessageBytes))
	case errors.Is(err, ptyapi.ErrExited):
		return conversationError(http.StatusConflict, metav1.StatusReasonConflict, t.name,
			fmt.Sprintf("conversation %s: its CLI has exited, nothing was delivered; once it shows Paused, resume it (%s)",
				t.name, t.aictlHint("resume", t.name)))
	case errors.Is(err, ptyapi.ErrNotStarted):
		return conversationError(http.StatusConflict, metav1.StatusReasonConflict, t.name,
			fmt.Sprintf("conversation %s: its CLI has not started yet, nothing was delivered; try again shortly", t.name))
	case errors.Is(err, ptyapi.ErrInvalidArgument):
		return conversationError(http.StatusBadRequest, metav1.StatusReasonBadRequest, t.name,
			fmt.Sprintf("conversation %s: %s: %v", t.name, op, err))
	}
	var coded *ptyapi.CodedError
	if errors.As(err, &coded) {
		return conversationError(http.StatusInternalServerError, metav1.StatusReasonInternalError, t.name,
			fmt.Sprintf("conversation %s: %s failed in the guest: %v", t.name, op, err))
	}
	return conversationError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, t.name,
		fmt.Sprintf("conversation %s: the guest did not answer %s: %v", t.name, op, err))
}
