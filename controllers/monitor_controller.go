package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/monitor/breaker"
	"aicli.dev/aicli/internal/monitor/match"
	"aicli.dev/aicli/internal/storeclient"
)

// MonitorAttachmentReconciler reports a MonitorAttachment's state: the
// monitor agent and the target exist and which target conversations it
// watches (ReferencesResolved, status.conversations), the trigger compiles
// (TriggerReady) and the breaker is closed (BreakerClosed). It archives the
// monitor conversation of an archived target conversation. The watch loop
// (internal/monitor) evaluates, wakes and injects; it writes the cursors and
// the breaker's counts into the same status.
type MonitorAttachmentReconciler struct {
	Client *storeclient.Client
	// Now is the clock (default time.Now).
	Now func() time.Time

	// compiled remembers, per attachment uid, the generation whose trigger
	// compiled (compiled once per generation).
	mu       sync.Mutex
	compiled map[types.UID]int64
}

type monitorScope struct {
	att *v1alpha1.MonitorAttachment
}

func (r *MonitorAttachmentReconciler) phases() []phase[*monitorScope] {
	return []phase[*monitorScope]{
		{condition: v1alpha1.ConditionReferencesResolved, run: r.reconcileReferences},
		{condition: v1alpha1.ConditionTriggerReady, run: r.reconcileTrigger},
		{condition: v1alpha1.ConditionBreakerClosed, run: r.reconcileBreaker, always: true},
	}
}

func (r *MonitorAttachmentReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile implements reconcile.Reconciler.
func (r *MonitorAttachmentReconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ reconcile.Result, retErr error) {
	a := &v1alpha1.MonitorAttachment{}
	if err := r.Client.Get(ctx, req.Namespace, req.Name, a); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if a.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	before := a.Status.DeepCopy()
	var out phaseOutcome
	defer func() {
		markProgress(&a.Status.Conditions, a.Generation, out)
		retErr = errors.Join(retErr, r.writeStatus(ctx, a, before))
	}()
	out = runPhases(ctx, &monitorScope{att: a}, &a.Status.Conditions, a.Generation, false, r.phases())
	return out.result, out.err
}

// reconcileReferences: the monitor agent, the target agent and (when named)
// the target conversation exist; status.conversations lists the watched
// target conversations. A remote target is not served yet.
func (r *MonitorAttachmentReconciler) reconcileReferences(ctx context.Context, s *monitorScope) (reconcile.Result, error) {
	a := s.att
	if a.Spec.Target.Supervisor != nil {
		return reconcile.Result{}, stalled(v1alpha1.ReasonNotImplemented,
			"spec.target.supervisor: remote targets are not served yet")
	}
	for _, ref := range []struct{ field, name, reason string }{
		{"spec.monitor", a.Spec.Monitor, v1alpha1.ReasonAgentNotFound},
		{"spec.target.agent", a.Spec.Target.Agent, v1alpha1.ReasonTargetNotFound},
	} {
		err := r.Client.Get(ctx, a.Namespace, ref.name, &v1alpha1.Agent{})
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, stalled(ref.reason, "%s: agent %q does not exist in namespace %q", ref.field, ref.name, a.Namespace)
		} else if err != nil {
			return reconcile.Result{}, err
		}
	}
	if a.Spec.Monitor == a.Spec.Target.Agent {
		return reconcile.Result{}, stalled(v1alpha1.ReasonInvalidSpec, "spec.monitor: agent %q cannot monitor itself", a.Spec.Monitor)
	}
	var list v1alpha1.ConversationList
	if err := r.Client.List(ctx, a.Namespace, &list, nil); err != nil {
		return reconcile.Result{}, err
	}
	targets := map[string]*v1alpha1.Conversation{}
	for i := range list.Items {
		c := &list.Items[i]
		if c.Spec.AgentRef == a.Spec.Target.Agent && (a.Spec.Target.Conversation == "" || c.Name == a.Spec.Target.Conversation) {
			targets[c.Name] = c
		}
	}
	if name := a.Spec.Target.Conversation; name != "" && targets[name] == nil {
		return reconcile.Result{}, stalled(v1alpha1.ReasonTargetNotFound,
			"spec.target.conversation: conversation %q of agent %q does not exist in namespace %q", name, a.Spec.Target.Agent, a.Namespace)
	}
	if err := r.archiveMonitorConversations(ctx, a, targets); err != nil {
		return reconcile.Result{}, err
	}
	a.Status.Conversations = watched(a.Status.Conversations, targets)
	live := 0
	for _, c := range targets {
		if c.Spec.DesiredState != v1alpha1.ConversationArchived {
			live++
		}
	}
	setCondition(&a.Status.Conditions, a.Generation, v1alpha1.ConditionReferencesResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("monitor %q watches agent %q: %d conversation(s), %d not archived", a.Spec.Monitor, a.Spec.Target.Agent, len(targets), live))
	return reconcile.Result{}, nil
}

// watched is status.conversations for the existing target conversations:
// what the watch loop recorded is kept, new ones start at cursor 0, deleted
// ones are dropped. Sorted by target name.
func watched(prev []v1alpha1.MonitoredConversation, targets map[string]*v1alpha1.Conversation) []v1alpha1.MonitoredConversation {
	out := make([]v1alpha1.MonitoredConversation, 0, len(targets))
	seen := map[string]bool{}
	for _, p := range prev {
		if targets[p.Target] != nil && !seen[p.Target] {
			out = append(out, p)
			seen[p.Target] = true
		}
	}
	for name := range targets {
		if !seen[name] {
			out = append(out, v1alpha1.MonitoredConversation{Target: name})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	if len(out) == 0 {
		return nil
	}
	return out
}

// archiveMonitorConversations archives the monitor conversation of every
// archived target conversation.
func (r *MonitorAttachmentReconciler) archiveMonitorConversations(ctx context.Context, a *v1alpha1.MonitorAttachment,
	targets map[string]*v1alpha1.Conversation) error {
	for _, mc := range a.Status.Conversations {
		t := targets[mc.Target]
		if mc.Monitor == "" || (t != nil && t.Spec.DesiredState != v1alpha1.ConversationArchived) {
			continue
		}
		conv := &v1alpha1.Conversation{}
		err := r.Client.Get(ctx, a.Namespace, mc.Monitor, conv)
		if apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}
		if conv.Spec.DesiredState == v1alpha1.ConversationArchived || conv.Labels[v1alpha1.LabelMonitorAttachment] != a.Name {
			continue
		}
		conv.Spec.DesiredState = v1alpha1.ConversationArchived
		if err := r.Client.Update(ctx, conv); err != nil {
			return fmt.Errorf("archiving monitor conversation %s of archived target %s: %w", mc.Monitor, mc.Target, err)
		}
	}
	return nil
}

// reconcileTrigger compiles the trigger once per generation.
func (r *MonitorAttachmentReconciler) reconcileTrigger(_ context.Context, s *monitorScope) (reconcile.Result, error) {
	a := s.att
	r.mu.Lock()
	ok := r.compiled[a.UID] == a.Generation
	r.mu.Unlock()
	if !ok {
		if errs := match.Validate(a.Spec.Trigger); len(errs) > 0 {
			return reconcile.Result{}, stalled(v1alpha1.ReasonInvalidSpec, "%s", errs.ToAggregate().Error())
		}
		if _, err := match.Compile(a.Spec.Trigger); err != nil {
			return reconcile.Result{}, stalled(v1alpha1.ReasonInvalidSpec, "spec.trigger: %v", err)
		}
		r.mu.Lock()
		if r.compiled == nil {
			r.compiled = map[types.UID]int64{}
		}
		r.compiled[a.UID] = a.Generation
		r.mu.Unlock()
	}
	setCondition(&a.Status.Conditions, a.Generation, v1alpha1.ConditionTriggerReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("%d keyword(s) compiled", len(a.Spec.Trigger.Keywords)))
	return reconcile.Result{}, nil
}

// reconcileBreaker reports the breaker: closed (a new attachment's is), or
// tripped with the reason the trip recorded, until a human re-arms it.
func (r *MonitorAttachmentReconciler) reconcileBreaker(_ context.Context, s *monitorScope) (reconcile.Result, error) {
	a := s.att
	if breaker.Closed(&a.Status) {
		breaker.MarkClosed(a, r.now())
		if c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionBreakerClosed); c != nil {
			c.ObservedGeneration = a.Generation
		}
		return reconcile.Result{}, nil
	}
	reason, msg := v1alpha1.ReasonHumanlessCycles, "tripped: "+a.Status.TrippedReason
	if c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionBreakerClosed); c != nil && c.Status == metav1.ConditionFalse {
		reason, msg = c.Reason, c.Message
	}
	return reconcile.Result{}, stalled(reason, "%s", msg)
}

func (r *MonitorAttachmentReconciler) writeStatus(ctx context.Context, a *v1alpha1.MonitorAttachment, before *v1alpha1.MonitorAttachmentStatus) error {
	summarizeReady(&a.Status.Conditions, a.Generation, v1alpha1.ConditionReferencesResolved, v1alpha1.ConditionTriggerReady,
		v1alpha1.ConditionBreakerClosed)
	a.Status.ObservedGeneration = a.Generation
	if equality.Semantic.DeepEqual(before, &a.Status) {
		return nil
	}
	return r.Client.UpdateStatus(ctx, a)
}

// attachmentsOfAgent maps a changed agent or conversation to the attachments
// naming its agent as monitor or target.
func attachmentsOfAgent(c *storeclient.Client, agentOf func(*unstructured.Unstructured) string) MapFunc {
	return func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request {
		agent := agentOf(obj)
		var list v1alpha1.MonitorAttachmentList
		if err := c.List(ctx, obj.GetNamespace(), &list, nil); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, a := range list.Items {
			if a.Spec.Monitor == agent || a.Spec.Target.Agent == agent {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
			}
		}
		return reqs
	}
}

// conversationsOfMonitor maps a changed attachment to the conversations of
// its monitor agent (the advise and transcript built-ins it mounts).
func conversationsOfMonitor(c *storeclient.Client) MapFunc {
	return func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request {
		monitor, _, _ := unstructured.NestedString(obj.Object, "spec", "monitor")
		var list v1alpha1.ConversationList
		if err := c.List(ctx, obj.GetNamespace(), &list, nil); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, conv := range list.Items {
			if conv.Spec.AgentRef == monitor {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: conv.Namespace, Name: conv.Name}})
			}
		}
		return reqs
	}
}
