package toolcalls

import (
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
)

// SubToolCalls is the subresource under /namespaces/{ns}/conversations/{name}/.
const SubToolCalls = "toolcalls"

// Call is one recorded tool call and the grant it was made under.
type Call struct {
	// Grant names the grant whose history recorded the call.
	Grant string `json:"grant"`
	v1alpha1.ToolCall
}

// List is the reply of GET …/conversations/{name}/toolcalls: the
// conversation's calls, newest last.
type List struct {
	Items []Call `json:"items"`
}

// TypeStatus is the history type of a status write (the store's TypeStatus).
const TypeStatus = "STATUS"

// Event is one history record of a grant.
type Event struct {
	// Type is the history type (ADDED, MODIFIED, STATUS, …).
	Type string
	// Object is the grant as the event left it.
	Object *unstructured.Unstructured
}

// FromHistory returns the calls a grant's history records, oldest first. A
// status write is a call when it carries a status.lastCall that differs from
// the one before it, or the same lastCall with grown call counters (two
// identical calls in one second).
func FromHistory(grant string, events []Event) []Call {
	var out []Call
	var prev *v1alpha1.ToolCall
	var prevCount int64
	var uid string
	for _, e := range events {
		if e.Object == nil {
			continue
		}
		if u := string(e.Object.GetUID()); u != uid {
			uid, prev, prevCount = u, nil, 0 // the name was reused: a new grant
		}
		st, ok := status(e.Object)
		if !ok {
			continue
		}
		count := st.Calls + st.Refused
		if e.Type == TypeStatus && st.LastCall != nil &&
			(prev == nil || !reflect.DeepEqual(*prev, *st.LastCall) || count > prevCount) {
			out = append(out, Call{Grant: grant, ToolCall: *st.LastCall})
		}
		prev, prevCount = st.LastCall, count
	}
	return out
}

// ForConversation keeps the calls made by conversation name.
func ForConversation(calls []Call, name string) []Call {
	out := calls[:0:0]
	for _, c := range calls {
		if c.Conversation == name {
			out = append(out, c)
		}
	}
	return out
}

func status(obj *unstructured.Unstructured) (v1alpha1.GrantStatus, bool) {
	var st v1alpha1.GrantStatus
	m, ok := obj.Object["status"].(map[string]any)
	if !ok {
		return st, true
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
		return st, false
	}
	return st, true
}
