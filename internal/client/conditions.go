package client

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FindCondition returns obj's status condition of type typ (matched without
// regard to case). Its ObservedGeneration is the condition's own, or
// status.observedGeneration when the condition has none, so that comparing
// it with obj.GetGeneration() tells whether it describes the current spec.
func FindCondition(obj *unstructured.Unstructured, typ string) (metav1.Condition, bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, item := range conds {
		m, ok := item.(map[string]any)
		if !ok || !strings.EqualFold(str(m["type"]), typ) {
			continue
		}
		c := metav1.Condition{Type: str(m["type"]), Status: metav1.ConditionStatus(str(m["status"])),
			Reason: str(m["reason"]), Message: str(m["message"])}
		c.ObservedGeneration, _ = asInt64(m["observedGeneration"])
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration, _, _ = unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
		}
		return c, true
	}
	return metav1.Condition{}, false
}

// ConditionMet reports whether obj has condition typ with status (both
// matched without regard to case) observed for its current generation: a
// Ready written for an older spec does not count.
func ConditionMet(obj *unstructured.Unstructured, typ, status string) bool {
	c, ok := FindCondition(obj, typ)
	return ok && strings.EqualFold(string(c.Status), status) && c.ObservedGeneration == obj.GetGeneration()
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// asInt64 reads a JSON number decoded as int64 or float64.
func asInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	}
	return 0, false
}
