package convapi

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
)

const monitorAttachmentsPlural = "monitorattachments"

// authorizeMonitor decides a send that claims to be monitor's advice into
// conversation t. It is allowed when
//   - the caller's credential names the monitor (Principal.Monitors: the
//     token a remote monitor's home supervisor presents), or
//   - the caller is a cluster admin and a MonitorAttachment in t's namespace
//     on this supervisor names the monitor (spec.monitor) and t as its target
//     (spec.target.agent, and spec.target.conversation when set).
//
// Anything else is a 403 naming the monitor and what would authorize it: a
// namespace's tenant cannot make its text read as a monitor's.
func (a *API) authorizeMonitor(ctx context.Context, t *target, monitor string) error {
	p, ok := apiserver.PrincipalFrom(ctx)
	if ok && p.MaySpeakAs(monitor) {
		return nil
	}
	agent, _, _ := unstructured.NestedString(t.obj.Object, "spec", "agentRef")
	if ok && p.IsClusterAdmin() {
		attached, err := a.attachedMonitor(ctx, t, agent, monitor)
		if err != nil || attached {
			return err
		}
	}
	who := "the caller"
	if ok {
		who = fmt.Sprintf("%q", p.Name)
	}
	return conversationError(http.StatusForbidden, metav1.StatusReasonForbidden, t.name, fmt.Sprintf(
		"conversation %s: %s may not send as monitor %q: that takes a MonitorAttachment in namespace %s with "+
			"spec.monitor %q and spec.target agent %q (or conversation %s) on this supervisor, sent by a cluster admin, "+
			"or a bearer token minted for it (aicli-supervisor token create --monitor %s)",
		t.name, who, monitor, t.ns, monitor, agent, t.name, monitor))
}

// attachedMonitor reports whether a local MonitorAttachment in t's namespace
// makes monitor watch conversation t (of agent).
func (a *API) attachedMonitor(ctx context.Context, t *target, agent, monitor string) (bool, error) {
	list, err := a.opts.Store.List(ctx, monitorAttachmentsPlural, t.ns, labels.Everything())
	if err != nil {
		return false, err
	}
	for i := range list.Items {
		var ma v1alpha1.MonitorAttachment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &ma); err != nil {
			continue
		}
		tg := ma.Spec.Target
		if ma.DeletionTimestamp == nil && ma.Spec.Monitor == monitor && tg.Supervisor == nil && tg.Agent == agent &&
			(tg.Conversation == "" || tg.Conversation == t.name) {
			return true, nil
		}
	}
	return false, nil
}
