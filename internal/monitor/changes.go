package monitor

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// OnlyCursorsMoved reports whether a MonitorAttachment changed only in the
// cursors of status.conversations: the watch loop's progress, written up to
// every flush interval per attachment, which neither the controller nor the
// loop's sync reads (the loop's other status writes — wakes, breaker counts,
// monitor conversations — are changes).
func OnlyCursorsMoved(old, new *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(withoutCursors(old), withoutCursors(new))
}

// withoutCursors is a shallow copy of u without its resourceVersion and the
// cursors of status.conversations (u itself is not changed).
func withoutCursors(u *unstructured.Unstructured) map[string]any {
	o := maps.Clone(u.Object)
	if md, ok := o["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		delete(md, "resourceVersion")
		o["metadata"] = md
	}
	st, ok := o["status"].(map[string]any)
	if !ok {
		return o
	}
	st = maps.Clone(st)
	if convs, ok := st["conversations"].([]any); ok {
		out := make([]any, len(convs))
		for i, c := range convs {
			if m, ok := c.(map[string]any); ok {
				m = maps.Clone(m)
				delete(m, "cursor")
				c = m
			}
			out[i] = c
		}
		st["conversations"] = out
	}
	o["status"] = st
	return o
}
