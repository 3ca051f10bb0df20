package convapi_test

import (
	"net/http"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/convapi/convapitest"
	"aicli.dev/aicli/internal/convapi/wire"
)

func TestStartCreatesThenContinues(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "team", "coder")
	path := convapitest.Path("agents", "team", "coder", wire.SubStart)

	code, body := env.Do(t, http.MethodPost, path, "", nil)
	if code != http.StatusCreated {
		t.Fatalf("first start: HTTP %d, want 201: %s", code, body)
	}
	first := decodeObject(t, body)
	if first.GetKind() != "Conversation" || first.GetNamespace() != "team" {
		t.Fatalf("start returned %s %s/%s", first.GetKind(), first.GetNamespace(), first.GetName())
	}
	if got := first.GetName(); len(got) <= len("coder-") || got[:len("coder-")] != "coder-" {
		t.Errorf("name %q does not start with the agent's name and a dash", got)
	}
	agent, _, _ := unstructured.NestedString(first.Object, "spec", "agentRef")
	desired, _, _ := unstructured.NestedString(first.Object, "spec", "desiredState")
	if agent != "coder" || desired != string(v1alpha1.ConversationActive) {
		t.Errorf("spec = agentRef %q desiredState %q, want coder Active", agent, desired)
	}
	if first.GetUID() == "" || first.GetResourceVersion() == "" {
		t.Errorf("the returned conversation is not the stored one: uid %q rv %q", first.GetUID(), first.GetResourceVersion())
	}

	code, body = env.Do(t, http.MethodPost, path, "", nil)
	if code != http.StatusOK {
		t.Fatalf("second start: HTTP %d, want 200 (continue): %s", code, body)
	}
	if again := decodeObject(t, body); again.GetName() != first.GetName() || again.GetUID() != first.GetUID() {
		t.Errorf("second start returned %s, want the live %s", again.GetName(), first.GetName())
	}
	if names := env.Conversations(t, "team", "coder"); len(names) != 1 {
		t.Errorf("conversations of coder = %v, want exactly one", names)
	}
}

func TestStartAfterPauseStartsANewOne(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "old", "coder", v1alpha1.ConversationPaused)
	env.CreateConversation(t, "default", "older", "coder", v1alpha1.ConversationArchived)

	code, body := env.Do(t, http.MethodPost, convapitest.Path("agents", "default", "coder", wire.SubStart), "", nil)
	if code != http.StatusCreated {
		t.Fatalf("start with only paused/archived conversations: HTTP %d, want 201: %s", code, body)
	}
	if name := decodeObject(t, body).GetName(); name == "old" || name == "older" {
		t.Errorf("start returned the %s conversation", name)
	}
	if names := env.Conversations(t, "default", "coder"); len(names) != 3 {
		t.Errorf("conversations = %v, want old, older and one new", names)
	}
}

func TestStartContinuesAConversationCreatedDirectly(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	env.CreateConversation(t, "default", "mine", "coder", v1alpha1.ConversationActive)
	code, body := env.Do(t, http.MethodPost, convapitest.Path("agents", "default", "coder", wire.SubStart), "", nil)
	if code != http.StatusOK || decodeObject(t, body).GetName() != "mine" {
		t.Fatalf("start: HTTP %d %s, want 200 with conversation mine", code, body)
	}
}

func TestStartMissingAgentIs404(t *testing.T) {
	env := convapitest.Start(t)
	code, body := env.Do(t, http.MethodPost, convapitest.Path("agents", "default", "ghost", wire.SubStart), "", nil)
	wantStatus(t, code, body, http.StatusNotFound, "ghost")
	if names := env.Conversations(t, "default", "ghost"); len(names) != 0 {
		t.Errorf("a conversation was created for a missing agent: %v", names)
	}
}

func TestStartWrongMethod(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	code, body := env.Do(t, http.MethodGet, convapitest.Path("agents", "default", "coder", wire.SubStart), "", nil)
	wantStatus(t, code, body, http.StatusMethodNotAllowed)
	if names := env.Conversations(t, "default", "coder"); len(names) != 0 {
		t.Errorf("GET start created %v", names)
	}
}

// Concurrent starts, and raw creates racing with them, leave exactly one
// conversation that desires Active; every start returns that one.
func TestConcurrentStartsCreateExactlyOne(t *testing.T) {
	env := convapitest.Start(t)
	env.CreateAgent(t, "default", "coder")
	const starts, raws = 16, 4
	var wg sync.WaitGroup
	type reply struct {
		code int
		name string
	}
	replies := make(chan reply, starts)
	rawCreated := make(chan int, raws)
	for range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body := env.Do(t, http.MethodPost, convapitest.Path("agents", "default", "coder", wire.SubStart), "", nil)
			r := reply{code: code}
			if code == http.StatusOK || code == http.StatusCreated {
				r.name = decodeObject(t, body).GetName()
			}
			replies <- r
		}()
	}
	for i := range raws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := []byte(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Conversation","metadata":{"name":"raw-` +
				string(rune('a'+i)) + `"},"spec":{"agentRef":"coder","desiredState":"Active"}}`)
			code, _ := env.Do(t, http.MethodPost, convapitest.Path("conversations", "default", ""), "application/json", body)
			rawCreated <- code
		}()
	}
	wg.Wait()
	close(replies)
	close(rawCreated)

	names := env.Conversations(t, "default", "coder")
	if len(names) != 1 {
		t.Fatalf("conversations after concurrent starts = %v, want exactly one", names)
	}
	live := names[0]
	created := 0
	for r := range replies {
		switch r.code {
		case http.StatusCreated:
			created++
		case http.StatusOK:
		default:
			t.Errorf("a start failed with HTTP %d", r.code)
		}
		if r.name != live {
			t.Errorf("a start returned %q, want the live %q", r.name, live)
		}
	}
	raw := 0
	for code := range rawCreated {
		switch code {
		case http.StatusCreated:
			raw++
		case http.StatusConflict:
		default:
			t.Errorf("a raw create got HTTP %d, want 201 or 409", code)
		}
	}
	if created+raw != 1 {
		t.Errorf("%d starts and %d raw creates created a conversation, want exactly one in total", created, raw)
	}
}

// Start creates the conversation with the caller's identity: a token bound
// to its namespace can start there and nowhere else.
func TestStartActsAsTheCaller(t *testing.T) {
	env := convapitest.Start(t, convapitest.AsPrincipal(&apiserver.Principal{Name: "team-a", Namespaces: []string{"a"}}))
	env.CreateAgent(t, "a", "coder")
	code, body := env.Do(t, http.MethodPost, convapitest.Path("agents", "a", "coder", wire.SubStart), "", nil)
	if code != http.StatusCreated {
		t.Fatalf("start in the token's namespace: HTTP %d: %s", code, body)
	}
	code, body = env.Do(t, http.MethodPost, convapitest.Path("agents", "b", "coder", wire.SubStart), "", nil)
	wantStatus(t, code, body, http.StatusForbidden)
}

func TestStartForAnAgentBeingDeletedIsRefused(t *testing.T) {
	env := convapitest.Start(t)
	body := []byte(`{"apiVersion":"aicli.dev/v1alpha1","kind":"Agent","metadata":{"name":"leaving","finalizers":["test.aicli.dev/hold"]},"spec":{"harness":"fake"}}`)
	if code, data := env.Do(t, http.MethodPost, convapitest.Path("agents", "default", ""), "application/json", body); code != http.StatusCreated {
		t.Fatalf("create agent: HTTP %d: %s", code, data)
	}
	if code, data := env.Do(t, http.MethodDelete, convapitest.Path("agents", "default", "leaving"), "", nil); code != http.StatusOK {
		t.Fatalf("delete agent: HTTP %d: %s", code, data)
	}
	code, data := env.Do(t, http.MethodPost, convapitest.Path("agents", "default", "leaving", wire.SubStart), "", nil)
	wantStatus(t, code, data, http.StatusConflict, "being deleted")
	if names := env.Conversations(t, "default", "leaving"); len(names) != 0 {
		t.Errorf("a conversation was started for an agent being deleted: %v", names)
	}
}
