package toolcalls

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"aicli.dev/aicli/apis/v1alpha1"
)

func grantAt(t *testing.T, uid string, st v1alpha1.GrantStatus) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.Grant{
		ObjectMeta: metav1.ObjectMeta{Name: "g", UID: types.UID(uid)}, Status: st})
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestFromHistory(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	greet := &v1alpha1.ToolCall{Tool: "greet", Conversation: "c-1", At: at, ExitCode: 0, DurationMillis: 12}
	search := &v1alpha1.ToolCall{Tool: "search", Conversation: "c-2", At: at, Refused: "Revoked", ExitCode: -1}
	events := []Event{
		{Type: "ADDED", Object: grantAt(t, "u1", v1alpha1.GrantStatus{})},
		{Type: TypeStatus, Object: grantAt(t, "u1", v1alpha1.GrantStatus{ObservedGeneration: 1})},                    // no call
		{Type: TypeStatus, Object: grantAt(t, "u1", v1alpha1.GrantStatus{Calls: 1, LastCall: greet})},                // call 1
		{Type: TypeStatus, Object: grantAt(t, "u1", v1alpha1.GrantStatus{Calls: 1, LastCall: greet, IssuedAt: &at})}, // lease write
		{Type: TypeStatus, Object: grantAt(t, "u1", v1alpha1.GrantStatus{Calls: 2, LastCall: greet})},                // same call again
		{Type: "MODIFIED", Object: grantAt(t, "u1", v1alpha1.GrantStatus{Calls: 2, LastCall: greet})},                // spec edit
		{Type: TypeStatus, Object: grantAt(t, "u1", v1alpha1.GrantStatus{Calls: 2, Refused: 1, LastCall: search})},
		{Type: "DELETED", Object: grantAt(t, "u1", v1alpha1.GrantStatus{Calls: 2, Refused: 1, LastCall: search})},
		{Type: TypeStatus, Object: grantAt(t, "u2", v1alpha1.GrantStatus{Calls: 1, LastCall: greet})}, // reused name
	}
	calls := FromHistory("g", events)
	var tools []string
	for _, c := range calls {
		if c.Grant != "g" {
			t.Fatalf("grant %q", c.Grant)
		}
		tools = append(tools, c.Tool)
	}
	if len(tools) != 4 || tools[0] != "greet" || tools[1] != "greet" || tools[2] != "search" || tools[3] != "greet" {
		t.Fatalf("calls %v", tools)
	}
	if got := ForConversation(calls, "c-2"); len(got) != 1 || got[0].Refused != "Revoked" {
		t.Fatalf("c-2: %+v", got)
	}
}
