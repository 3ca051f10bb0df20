package monitor

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
)

// TestOnlyCursorsMoved: the loop's own cursor writes are ignored, nothing
// else is.
func TestOnlyCursorsMoved(t *testing.T) {
	base := func() *v1alpha1.MonitorAttachment {
		a := &v1alpha1.MonitorAttachment{}
		a.Name, a.ResourceVersion = "watch", "7"
		a.Spec.Monitor = "m"
		a.Status.Conversations = []v1alpha1.MonitoredConversation{{Target: "t-1", Cursor: 4}, {Target: "t-2", Cursor: 9, Monitor: "m-1"}}
		return a
	}
	for _, tc := range []struct {
		name   string
		change func(*v1alpha1.MonitorAttachment)
		want   bool
	}{
		{"cursors and resourceVersion", func(a *v1alpha1.MonitorAttachment) {
			a.ResourceVersion = "8"
			a.Status.Conversations[0].Cursor, a.Status.Conversations[1].Cursor = 5, 12
		}, true},
		{"a monitor conversation named", func(a *v1alpha1.MonitorAttachment) { a.Status.Conversations[0].Monitor = "m-2" }, false},
		{"a target conversation added", func(a *v1alpha1.MonitorAttachment) {
			a.Status.Conversations = append(a.Status.Conversations, v1alpha1.MonitoredConversation{Target: "t-3"})
		}, false},
		{"a wake counted", func(a *v1alpha1.MonitorAttachment) { a.Status.Wakes = 1 }, false},
		{"the breaker's count", func(a *v1alpha1.MonitorAttachment) { a.Status.ConsecutiveHumanless = 2 }, false},
		{"spec", func(a *v1alpha1.MonitorAttachment) { a.Spec.Mode = v1alpha1.MonitorWatchOnly }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, changed := base(), base()
			tc.change(changed)
			o, c := toUnstructured(t, old), toUnstructured(t, changed)
			if got := OnlyCursorsMoved(o, c); got != tc.want {
				t.Fatalf("OnlyCursorsMoved = %v, want %v", got, tc.want)
			}
			if o.GetResourceVersion() != "7" || o.Object["status"].(map[string]any)["conversations"].([]any)[0].(map[string]any)["cursor"] == nil {
				t.Fatal("OnlyCursorsMoved changed its argument")
			}
		})
	}
}

func toUnstructured(t *testing.T, a *v1alpha1.MonitorAttachment) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}
