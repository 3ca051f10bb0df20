package client

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
)

// maxChanges bounds how many changed fields one history line lists.
const maxChanges = 3

// SummarizeChange describes what an event changed relative to the previous one.
func SummarizeChange(typ string, prev, cur *unstructured.Unstructured) string {
	switch {
	case typ == "ADDED" && cur != nil:
		return fmt.Sprintf("created (generation %d)", cur.GetGeneration())
	case typ == "DELETED":
		return "removed"
	case prev == nil || cur == nil:
		return ""
	}
	// Conditions first (Ready leading), then field changes, each sorted.
	changes := conditionChanges(prev, cur)
	sort.Slice(changes, func(i, j int) bool {
		ri, rj := strings.HasPrefix(changes[i], v1alpha1.ConditionReady+"="), strings.HasPrefix(changes[j], v1alpha1.ConditionReady+"=")
		if ri != rj {
			return ri
		}
		return changes[i] < changes[j]
	})
	var fields []string
	before, after := map[string]string{}, map[string]string{}
	flattenFields("", prev.Object, before)
	flattenFields("", cur.Object, after)
	for k, v := range after {
		if old, ok := before[k]; !ok {
			fields = append(fields, fmt.Sprintf("%s: %s", k, v))
		} else if old != v {
			fields = append(fields, fmt.Sprintf("%s: %s → %s", k, old, v))
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			fields = append(fields, k+" removed")
		}
	}
	sort.Strings(fields)
	changes = append(changes, fields...)
	if len(changes) == 0 {
		return "no field changes"
	}
	if len(changes) > maxChanges {
		return strings.Join(changes[:maxChanges], "; ") + fmt.Sprintf("; +%d more", len(changes)-maxChanges)
	}
	return strings.Join(changes, "; ")
}

// conditionChanges describes changed conditions as "Ready=True (Reason, generation 2)".
func conditionChanges(prev, cur *unstructured.Unstructured) []string {
	old := conditionsByType(prev)
	var out []string
	for typ, c := range conditionsByType(cur) {
		o, existed := old[typ]
		if existed && o["status"] == c["status"] && o["reason"] == c["reason"] &&
			fmt.Sprint(o["observedGeneration"]) == fmt.Sprint(c["observedGeneration"]) && o["message"] == c["message"] {
			continue
		}
		s := fmt.Sprintf("%s=%s (%s", typ, str(c["status"]), str(c["reason"]))
		if g, ok := c["observedGeneration"]; ok {
			s += fmt.Sprintf(", generation %v", g)
		}
		out = append(out, s+")")
	}
	for typ := range old {
		if _, ok := conditionsByType(cur)[typ]; !ok {
			out = append(out, typ+" condition removed")
		}
	}
	return out
}

func conditionsByType(obj *unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok {
			out[str(m["type"])] = m
		}
	}
	return out
}

// noisyFields change on every write and would hide the real change;
// conditions are summarised separately.
var noisyFields = map[string]bool{
	"metadata.resourceVersion": true, "metadata.managedFields": true, "metadata.generation": true,
	"status.conditions": true,
}

// flattenFields maps leaf paths to compact JSON values; lists of objects with
// a "type" or "name" key are keyed by it (status.conditions[Ready].status).
func flattenFields(prefix string, v any, out map[string]string) {
	if noisyFields[prefix] || strings.HasSuffix(prefix, ".lastTransitionTime") {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flattenFields(p, child, out)
		}
		return
	case []any:
		keyed := true
		for _, it := range x {
			if listKey(it) == "" {
				keyed = false
				break
			}
		}
		if keyed && len(x) > 0 {
			for _, it := range x {
				flattenFields(prefix+"["+listKey(it)+"]", it, out)
			}
			return
		}
	}
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	out[prefix] = s
}

func listKey(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	for _, k := range []string{"type", "name"} {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}
