package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
)

// setCondition sets one condition stamped with generation; the transition
// time changes only when the status does.
func setCondition(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: generation,
	})
}

// summarizeReady sets Ready from the dependency conditions listed in deps:
// True when all are True, otherwise False carrying the first failing one's
// reason and message. Reconciling and Stalled are markProgress's.
func summarizeReady(conds *[]metav1.Condition, generation int64, deps ...string) {
	for _, d := range deps {
		c := meta.FindStatusCondition(*conds, d)
		if c == nil {
			setCondition(conds, generation, v1alpha1.ConditionReady, metav1.ConditionUnknown, v1alpha1.ReasonProgressing, d+" not yet observed")
			return
		}
		if c.Status != metav1.ConditionTrue {
			setCondition(conds, generation, v1alpha1.ConditionReady, metav1.ConditionFalse, c.Reason, c.Message)
			return
		}
	}
	setCondition(conds, generation, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "all dependencies are ready")
}
