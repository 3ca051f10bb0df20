package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/storeclient"
)

// AgentRefs returns the agent names an object's spec refers to.
type AgentRefs func(obj *unstructured.Unstructured) []string

// PendingReconciler serves a kind whose controller is not built yet: it
// reports honestly that nothing converges it (Ready=False, NotImplemented)
// and whether the agents it names exist. It never reports Ready=True.
type PendingReconciler struct {
	Client   *storeclient.Client
	Resource string
	Refs     AgentRefs
}

// Reconcile implements reconcile.Reconciler.
func (r *PendingReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj, err := r.Client.Store.Get(ctx, r.Resource, req.Namespace, req.Name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if obj.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, nil
	}
	var status struct {
		ObservedGeneration int64              `json:"observedGeneration,omitempty"`
		Conditions         []metav1.Condition `json:"conditions,omitempty"`
	}
	if raw, ok := obj.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
			return reconcile.Result{}, err
		}
	}
	before := status
	before.Conditions = append([]metav1.Condition(nil), status.Conditions...)
	gen := obj.GetGeneration()

	var missing []string
	for _, name := range r.Refs(obj) {
		if _, err := r.Client.Store.Get(ctx, "agents", obj.GetNamespace(), name); apierrors.IsNotFound(err) {
			missing = append(missing, name)
		} else if err != nil {
			return reconcile.Result{}, err
		}
	}
	if len(missing) > 0 {
		setCondition(&status.Conditions, gen, v1alpha1.ConditionReferencesResolved, metav1.ConditionFalse,
			v1alpha1.ReasonAgentNotFound, fmt.Sprintf("agents not found in namespace %q: %v", obj.GetNamespace(), missing))
	} else {
		setCondition(&status.Conditions, gen, v1alpha1.ConditionReferencesResolved, metav1.ConditionTrue,
			v1alpha1.ReasonSucceeded, "every referenced agent exists")
	}
	setCondition(&status.Conditions, gen, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNotImplemented,
		fmt.Sprintf("this supervisor does not converge %s yet", r.Resource))
	status.ObservedGeneration = gen
	if equality.Semantic.DeepEqual(before, status) {
		return reconcile.Result{}, nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return reconcile.Result{}, err
	}
	existing, _ := obj.Object["status"].(map[string]any)
	if existing == nil {
		existing = map[string]any{}
	}
	for k, v := range content {
		existing[k] = v
	}
	obj.Object["status"] = existing
	_, err = r.Client.Store.UpdateStatus(ctx, r.Resource, obj)
	return reconcile.Result{}, err
}

func conversationRefs(obj *unstructured.Unstructured) []string {
	a, _, _ := unstructured.NestedString(obj.Object, "spec", "agentRef")
	return nonEmpty(a)
}

func nonEmpty(names ...string) []string {
	var out []string
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}
