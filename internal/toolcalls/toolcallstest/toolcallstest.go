package toolcallstest

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
)

// Create stores obj (a typed API object with its TypeMeta set) directly, as
// a controller would; admission does not run.
func Create(tb testing.TB, srv *apiservertest.Server, plural string, obj runtime.Object) {
	tb.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := srv.Store.Create(context.Background(), plural, &unstructured.Unstructured{Object: m}); err != nil {
		tb.Fatalf("create %s: %v", plural, err)
	}
}

// Conversation stores conversation ns/name of agent.
func Conversation(tb testing.TB, srv *apiservertest.Server, ns, name, agent string) {
	tb.Helper()
	Create(tb, srv, "conversations", &v1alpha1.Conversation{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Conversation"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.ConversationSpec{AgentRef: agent},
	})
}

// Grant stores a grant of tools to subject.
func Grant(tb testing.TB, srv *apiservertest.Server, ns, name, subject string, tools ...v1alpha1.ToolGrant) {
	tb.Helper()
	Create(tb, srv, "grants", &v1alpha1.Grant{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Grant"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.GrantSpec{Subject: subject, Tools: tools},
	})
}

// Tool is a grant's tool named name, of the ToolClass of the same name.
func Tool(name string) v1alpha1.ToolGrant {
	return v1alpha1.ToolGrant{Name: name, ClassName: name}
}

// Call records one call on grant ns/name as the tool server does: one status
// write that counts it (refused when call.Refused is set) and sets lastCall.
func Call(tb testing.TB, srv *apiservertest.Server, ns, grant string, call v1alpha1.ToolCall) {
	tb.Helper()
	UpdateStatus(tb, srv, ns, grant, func(st *v1alpha1.GrantStatus) {
		if call.Refused != "" {
			st.Refused++
		} else {
			st.Calls++
		}
		c := call
		st.LastCall = &c
		for i := range st.Conversations {
			if st.Conversations[i].Name == call.Conversation {
				st.Conversations[i].Calls++
			}
		}
	})
}

// UpdateStatus writes grant ns/name's status as fn changes it.
func UpdateStatus(tb testing.TB, srv *apiservertest.Server, ns, grant string, fn func(*v1alpha1.GrantStatus)) {
	tb.Helper()
	srv.Mutate(tb, "grants", ns, grant, func(o *unstructured.Unstructured) {
		var g v1alpha1.Grant
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &g); err != nil {
			tb.Fatal(err)
		}
		fn(&g.Status)
		st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&g.Status)
		if err != nil {
			tb.Fatal(err)
		}
		o.Object["status"] = st
	})
}
