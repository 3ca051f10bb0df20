package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/authority"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/storeclient"
)

// GrantReconciler reports a Grant's state: its subject exists, a delegated
// grant stays within its parent, its tools are not claimed by an older grant
// of the same agent (Ready), and which live conversations hold a lease on it
// (LeaseHeld; not part of Ready — a grant is ready whether or not its agent
// runs). Minting and renewing happen in the conversation controller's lease
// phase; the calls are written by the tool server's recorder.
type GrantReconciler struct {
	Client *storeclient.Client
	// Leases, when set, reports held leases.
	Leases CapabilityLeases
	// Now is the clock (default metav1.Now).
	Now func() metav1.Time
}

// leaseRecheckSlack is added to a lease's expiry before the grant looks again.
const leaseRecheckSlack = 250 * time.Millisecond

type grantScope struct {
	grant   *v1alpha1.Grant
	all     []v1alpha1.Grant
	classes map[string]*v1alpha1.ToolClass
}

func (r *GrantReconciler) phases() []phase[*grantScope] {
	return []phase[*grantScope]{
		{condition: v1alpha1.ConditionReferencesResolved, run: r.reconcileReferences},
		{condition: v1alpha1.ConditionToolsReady, run: r.reconcileTools},
		{condition: v1alpha1.ConditionLeaseHeld, run: r.reconcileLeases, always: true},
	}
}

func (r *GrantReconciler) now() metav1.Time {
	if r.Now != nil {
		return r.Now()
	}
	return metav1.Now()
}

// Reconcile implements reconcile.Reconciler.
func (r *GrantReconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ reconcile.Result, retErr error) {
	g := &v1alpha1.Grant{}
	if err := r.Client.Get(ctx, req.Namespace, req.Name, g); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if g.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	var list v1alpha1.GrantList
	if err := r.Client.List(ctx, g.Namespace, &list, nil); err != nil {
		return reconcile.Result{}, err
	}
	var classes v1alpha1.ToolClassList
	if err := r.Client.List(ctx, "", &classes, nil); err != nil {
		return reconcile.Result{}, err
	}
	before := g.Status.DeepCopy()
	var out phaseOutcome
	defer func() {
		markProgress(&g.Status.Conditions, g.Generation, out)
		retErr = errors.Join(retErr, r.writeStatus(ctx, g, before))
	}()
	if g.Status.ObservedGeneration != 0 && g.Status.ObservedGeneration != g.Generation {
		// Tokens name the generation: everything issued before is refused now.
		now := r.now()
		g.Status.RevokedAt = &now
	}
	out = runPhases(ctx, &grantScope{grant: g, all: list.Items, classes: grants.ClassIndex(classes.Items)}, &g.Status.Conditions, g.Generation, false, r.phases())
	return out.result, out.err
}

// reconcileReferences: the subject exists; a delegated grant stays within
// its parent. A missing subject stalls until it is created (the agent watch
// re-reconciles); a delegation wider than or orphaned from its parent is
// revoked (its tools are not mounted, its tokens refused).
func (r *GrantReconciler) reconcileReferences(ctx context.Context, s *grantScope) (reconcile.Result, error) {
	g := s.grant
	err := r.Client.Get(ctx, g.Namespace, g.Spec.Subject, &v1alpha1.Agent{})
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, stalled(v1alpha1.ReasonAgentNotFound,
			"spec.subject: agent %q does not exist in namespace %q", g.Spec.Subject, g.Namespace)
	case err != nil:
		return reconcile.Result{}, err
	}
	if err := grants.DelegationValid(g, s.all); err != nil {
		return reconcile.Result{}, stalled(v1alpha1.ReasonParentRevoked, "spec.delegation: %v", err)
	}
	setCondition(&g.Status.Conditions, g.Generation, v1alpha1.ConditionReferencesResolved, metav1.ConditionTrue,
		v1alpha1.ReasonSucceeded, "the subject exists")
	return reconcile.Result{}, nil
}

// reconcileTools reports tools that do not resolve onto their ToolClass
// (missing, not admitting the namespace, narrower than the grant, or a tool
// still defining its own backend) and tools an older grant of the same
// subject already holds. Either stalls: the subject runs without those tools.
func (r *GrantReconciler) reconcileTools(_ context.Context, s *grantScope) (reconcile.Result, error) {
	g := s.grant
	if errs := grants.Validate(&g.Spec); len(errs) > 0 {
		reason := v1alpha1.ReasonInvalidSpec
		if strings.Contains(errs.ToAggregate().Error(), grants.InlineBackendMessage) {
			reason = v1alpha1.ReasonInlineBackend
		}
		return reconcile.Result{}, stalled(reason, "%s", errs.ToAggregate().Error())
	}
	_, conflicts, unresolved := grants.Effective(s.all, s.classes, g.Spec.Subject)
	for _, u := range unresolved {
		if u.Grant == g.Name {
			return reconcile.Result{}, stalled(u.Reason, "spec.tools: %s; the agent runs without it", u.Message)
		}
	}
	var lost []string
	for _, c := range conflicts {
		for _, l := range c.Losers {
			if l == g.Name {
				lost = append(lost, fmt.Sprintf("%s (held by grant %s)", c.Tool, c.Kept))
			}
		}
	}
	if len(lost) > 0 {
		return reconcile.Result{}, stalled(v1alpha1.ReasonToolConflict,
			"spec.tools: an older grant of agent %q already holds %s", g.Spec.Subject, strings.Join(lost, ", "))
	}
	setCondition(&g.Status.Conditions, g.Generation, v1alpha1.ConditionToolsReady, metav1.ConditionTrue,
		v1alpha1.ReasonSucceeded, fmt.Sprintf("%d tools granted", len(g.Spec.Tools)))
	return reconcile.Result{}, nil
}

// reconcileLeases reports the conversations holding a lease on the grant.
func (r *GrantReconciler) reconcileLeases(_ context.Context, s *grantScope) (reconcile.Result, error) {
	g := s.grant
	var held []authority.LeaseInfo
	if r.Leases != nil {
		held = r.Leases.Held(g.Namespace, g.Name)
	}
	prev := map[string]v1alpha1.GrantConversation{}
	for _, c := range g.Status.Conversations {
		prev[c.Name] = c
	}
	convs := make([]v1alpha1.GrantConversation, 0, len(held))
	for _, h := range held {
		// Renewals are not status writes: a listed lease keeps the expiry
		// recorded when it was taken until it is re-issued or lost.
		exp := metav1.NewTime(h.ExpiresAt)
		if p, ok := prev[h.Conversation]; ok && p.LeaseExpiresAt != nil && g.Status.IssuedAt != nil && !h.IssuedAt.After(g.Status.IssuedAt.Time) {
			exp = *p.LeaseExpiresAt
		}
		convs = append(convs, v1alpha1.GrantConversation{Name: h.Conversation, LeaseExpiresAt: &exp, Calls: prev[h.Conversation].Calls})
	}
	if len(held) == 0 {
		if len(g.Status.Conversations) > 0 {
			now := r.now()
			g.Status.LeaseExpiresAt = &now
		}
		g.Status.Conversations = nil
		// Not a failure: a grant is ready whether or not its agent runs.
		setCondition(&g.Status.Conditions, g.Generation, v1alpha1.ConditionLeaseHeld, metav1.ConditionFalse,
			v1alpha1.ReasonNoLiveConversation, fmt.Sprintf("no live conversation of %q holds a lease", g.Spec.Subject))
		return reconcile.Result{}, nil
	}
	g.Status.Conversations = convs
	latest := held[0]
	for _, h := range held {
		if h.IssuedAt.After(latest.IssuedAt) {
			latest = h
		}
	}
	if g.Status.IssuedAt == nil || latest.IssuedAt.After(g.Status.IssuedAt.Time) {
		issued, exp := metav1.NewTime(latest.IssuedAt), metav1.NewTime(latest.ExpiresAt)
		g.Status.IssuedAt, g.Status.LeaseExpiresAt = &issued, &exp
	}
	setCondition(&g.Status.Conditions, g.Generation, v1alpha1.ConditionLeaseHeld, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("%d live conversations hold a lease, renewed while their containers live", len(held)))
	// Look again when the soonest lease would run out unrenewed (a lapse is
	// also reported by the lease manager; this is the backstop).
	soonest := held[0].ExpiresAt
	for _, h := range held {
		if h.ExpiresAt.Before(soonest) {
			soonest = h.ExpiresAt
		}
	}
	return reconcile.Result{RequeueAfter: max(time.Until(soonest), 0) + leaseRecheckSlack}, nil
}

func (r *GrantReconciler) writeStatus(ctx context.Context, g *v1alpha1.Grant, before *v1alpha1.GrantStatus) error {
	summarizeReady(&g.Status.Conditions, g.Generation, v1alpha1.ConditionReferencesResolved, v1alpha1.ConditionToolsReady)
	g.Status.ObservedGeneration = g.Generation
	if equality.Semantic.DeepEqual(before, &g.Status) {
		return nil
	}
	return r.Client.UpdateStatus(ctx, g)
}

// grantsOfSubject maps a changed agent to the grants naming it.
func grantsOfSubject(c *storeclient.Client) MapFunc {
	return func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request {
		var list v1alpha1.GrantList
		if err := c.List(ctx, obj.GetNamespace(), &list, nil); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, g := range list.Items {
			if g.Spec.Subject == obj.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Name}})
			}
		}
		return reqs
	}
}

// grantsOfClass maps a changed ToolClass to the grants, in every namespace,
// whose tools name it.
func grantsOfClass(c *storeclient.Client) MapFunc {
	return func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request {
		var reqs []reconcile.Request
		for _, g := range grantsNamingClass(ctx, c, obj.GetName()) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Name}})
		}
		return reqs
	}
}

// grantsNamingClass lists the grants, in every namespace, with a tool of class.
func grantsNamingClass(ctx context.Context, c *storeclient.Client, class string) []v1alpha1.Grant {
	var list v1alpha1.GrantList
	if err := c.List(ctx, "", &list, nil); err != nil {
		return nil
	}
	var out []v1alpha1.Grant
	for _, g := range list.Items {
		if slices.ContainsFunc(g.Spec.Tools, func(t v1alpha1.ToolGrant) bool { return t.ClassName == class }) {
			out = append(out, g)
		}
	}
	return out
}

// grantsOfSameSubject maps a changed grant to the other grants of its
// subject (tool conflicts) and to the grants delegated from it.
func grantsOfSameSubject(c *storeclient.Client) MapFunc {
	return func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request {
		subject, _, _ := unstructured.NestedString(obj.Object, "spec", "subject")
		var list v1alpha1.GrantList
		if err := c.List(ctx, obj.GetNamespace(), &list, nil); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, g := range list.Items {
			if g.Name == obj.GetName() {
				continue
			}
			if g.Spec.Subject == subject || (g.Spec.Delegation != nil && g.Spec.Delegation.Parent == obj.GetName()) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Name}})
			}
		}
		return reqs
	}
}
