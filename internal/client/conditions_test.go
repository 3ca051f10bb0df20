package client_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/internal/client"
)

func TestConditionMetNeedsCurrentGeneration(t *testing.T) {
	mk := func(gen int64, status string, condGen, statusGen any) *unstructured.Unstructured {
		c := map[string]any{"type": "Ready", "status": status}
		if condGen != nil {
			c["observedGeneration"] = condGen
		}
		st := map[string]any{"conditions": []any{c}}
		if statusGen != nil {
			st["observedGeneration"] = statusGen
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "x", "generation": gen}, "status": st}}
	}
	cases := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"condition observed current generation", mk(2, "True", int64(2), nil), true},
		{"condition observed an older generation", mk(2, "True", int64(1), int64(2)), false},
		{"status.observedGeneration current, condition has none", mk(2, "True", nil, int64(2)), true},
		{"status.observedGeneration stale, condition has none", mk(2, "True", nil, int64(1)), false},
		{"no observedGeneration anywhere", mk(2, "True", nil, nil), false},
		{"current but False", mk(2, "False", int64(2), nil), false},
		{"float generation from a JSON decoder", mk(3, "True", float64(3), nil), true},
		{"no conditions", &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"generation": int64(1)}}}, false},
	}
	for _, c := range cases {
		if got := client.ConditionMet(c.obj, "Ready", "True"); got != c.want {
			t.Errorf("%s: met = %v, want %v", c.name, got, c.want)
		}
	}
	if !client.ConditionMet(mk(2, "False", int64(2), nil), "ready", "false") {
		t.Error("Ready=False (any case) not met by a current False")
	}
	c, ok := client.FindCondition(mk(3, "True", nil, int64(2)), "Ready")
	if !ok || c.ObservedGeneration != 2 || c.Status != "True" {
		t.Errorf("FindCondition resolves status.observedGeneration: %+v %v", c, ok)
	}
}
