package controllers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/guest/egress/egresswire"
	"aicli.dev/aicli/guest/ptyapi"
	"aicli.dev/aicli/internal/egress"
)

// maxEgressDenials is how many refused egress attempts a conversation's
// status keeps.
const maxEgressDenials = 10

// reconcileReferences finds the conversation's agent. A missing agent
// stalls an Active conversation (and so tears down any run): only the user
// can create it, and its creation triggers the next reconcile.
func (r *ConversationReconciler) reconcileReferences(ctx context.Context, s *convScope) (reconcile.Result, error) {
	agent := &v1alpha1.Agent{}
	err := r.Client.Get(ctx, s.conv.Namespace, s.conv.Spec.AgentRef, agent)
	switch {
	case apierrors.IsNotFound(err):
		msg := fmt.Sprintf("spec.agentRef: agent %q does not exist in namespace %q", s.conv.Spec.AgentRef, s.conv.Namespace)
		if !s.desiredActive() {
			s.set(v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.ReasonAgentNotFound, msg)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, stalled(v1alpha1.ReasonAgentNotFound, "%s", msg)
	case err != nil:
		return reconcile.Result{}, err
	}
	s.agent = agent
	s.set(v1alpha1.ConditionReferencesResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, fmt.Sprintf("agent %q exists", agent.Name))
	return reconcile.Result{}, nil
}

// reconcileAccess resolves what the run may reach before anything runs: the
// model credential (a supervisor-held Secret) and the egress policy (the
// provider endpoint and allow-list, everything else denied). It runs on every
// reconcile, so an edited agent applies to the next connection, and a
// deleted Secret stops the run. Refused egress attempts noted since the last
// reconcile are moved into the status here.
func (r *ConversationReconciler) reconcileAccess(_ context.Context, s *convScope) (reconcile.Result, error) {
	uid := string(s.conv.UID)
	r.recordDenials(s.conv)
	if !s.desiredActive() || s.agent == nil {
		if r.Egress != nil {
			r.Egress.RemovePolicy(uid)
		}
		meta.RemoveStatusCondition(&s.conv.Status.Conditions, v1alpha1.ConditionAccessResolved)
		return reconcile.Result{}, nil
	}
	provider, err := r.providerAccess(s.agent)
	if err != nil {
		return reconcile.Result{}, err
	}
	var policy egress.Policy
	if r.Egress != nil {
		if policy, err = egress.AgentPolicy(s.agent.Spec); err != nil {
			return reconcile.Result{}, stalled(v1alpha1.ReasonEgressInvalid, "agent %s: spec.egress: %v", s.agent.Name, err)
		}
	}
	s.provider = provider
	if s.stop {
		return reconcile.Result{}, nil
	}
	if r.Egress != nil {
		r.Egress.SetPolicy(uid, policy)
	}
	msg := "no model credential needed"
	if provider != nil && provider.APIKey != "" {
		msg = fmt.Sprintf("model credential from secret %q", s.agent.Spec.Provider.SecretName)
	}
	if r.Egress != nil {
		msg += "; egress policy installed"
	}
	s.set(v1alpha1.ConditionAccessResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg)
	return reconcile.Result{}, nil
}

// recordDenials moves refused egress attempts noted by the egress server into
// the status (the newest maxEgressDenials), so each lands in the history.
func (r *ConversationReconciler) recordDenials(conv *v1alpha1.Conversation) {
	for _, d := range r.Guests.TakeDenials(string(conv.UID)) {
		r.Logger.Warn("egress denied", "conversation", conv.Namespace+"/"+conv.Name, "target", d.Target, "reason", d.Reason)
		conv.Status.EgressDenials = append(conv.Status.EgressDenials, d)
	}
	if n := len(conv.Status.EgressDenials); n > maxEgressDenials {
		conv.Status.EgressDenials = conv.Status.EgressDenials[n-maxEgressDenials:]
	}
}

// providerAccess is what the CLI gets to reach its model provider: the
// guest's loopback provider port (egress forwards it to spec.provider.endpoint)
// and, for credential Secret, the supervisor-held key. A missing Secret
// stalls (the error names the field and the command that stores it); one
// that cannot be read is retried.
func (r *ConversationReconciler) providerAccess(agent *v1alpha1.Agent) (*ptyapi.ProviderAccess, error) {
	p := agent.Spec.Provider
	if p.Endpoint == "" && p.Credential != v1alpha1.CredentialSecret {
		return nil, nil
	}
	access := &ptyapi.ProviderAccess{}
	if p.Endpoint != "" {
		access.BaseURL = egresswire.ProviderURL(egresswire.DefaultProviderAddr)
	}
	if p.Credential == v1alpha1.CredentialSecret {
		if p.SecretName == "" {
			return nil, stalled(v1alpha1.ReasonSecretNotFound,
				"agent %s: spec.provider.credential is Secret but spec.provider.secretName is empty", agent.Name)
		}
		if r.Secrets == nil {
			return nil, stalled(v1alpha1.ReasonSecretNotFound,
				"agent %s: spec.provider.secretName %q: this supervisor holds no secrets", agent.Name, p.SecretName)
		}
		key, err := r.Secrets.Get(agent.Namespace, p.SecretName)
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			return nil, transient(v1alpha1.ReasonSecretUnreadable, fmt.Errorf("agent %s: reading secret %q: %w", agent.Name, p.SecretName, err))
		}
		if err != nil {
			return nil, stalled(v1alpha1.ReasonSecretNotFound,
				"agent %s: spec.provider.secretName %q: %v (store it with: aicli-supervisor secret set -n %s --name %s)",
				agent.Name, p.SecretName, err, agent.Namespace, p.SecretName)
		}
		access.APIKey = string(key)
	}
	return access, nil
}
