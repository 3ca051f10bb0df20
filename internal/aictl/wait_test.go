package aictl

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseFor(t *testing.T) {
	for in, want := range map[string]string{
		"condition=Ready": "condition=Ready=True", "condition=Ready=False": "condition=Ready=False", "delete": "delete",
	} {
		c, err := parseFor(in)
		if err != nil || c.String() != want {
			t.Errorf("parseFor(%q) = %v, %v; want %s", in, c, err, want)
		}
	}
	for _, in := range []string{"", "ready", "condition=", "condition==True", "jsonpath={.x}"} {
		if _, err := parseFor(in); err == nil {
			t.Errorf("parseFor(%q): want error", in)
		}
	}
}

func TestWaitIgnoresStaleReadyThenSucceeds(t *testing.T) {
	srv := unixServer(t)
	dir := t.TempDir()
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "w", "one"))), 0)
	setReady(t, srv, "agents", "default", "w", "True", 1, 1)
	// The spec changes: generation 2, while Ready=True still describes generation 1.
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "w", "two"))), 0)

	// A stale Ready does not satisfy: the wait times out, with a clear message.
	r := aictl(t, srv.URL, "wait", "--for=condition=Ready", "agent/w", "--timeout", "300ms")
	wantCode(t, r, 1)
	if r.err != "error: timed out waiting for condition=Ready=True on agents/w\n" {
		t.Fatalf("timeout message: %q", r.err)
	}

	// A stale Ready arriving through the watch does not satisfy either.
	const watches = "/apis/aicli.dev/v1alpha1/namespaces/default/agents"
	setReady(t, srv, "agents", "default", "w", "False", 2, 2)
	base := srv.Requests("GET", watches)
	_, _, wait := started(t, srv.URL, "wait", "--for=condition=Ready", "agents", "w", "--timeout", "1s")
	eventually(t, "the wait watches", func() bool { return srv.Requests("GET", watches) > base })
	setReady(t, srv, "agents", "default", "w", "True", 1, 2)
	r = wait()
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "timed out") {
		t.Fatalf("stale Ready through the watch: %q", r.err)
	}

	// The current generation's Ready ends the wait, seen through the watch
	// (one read of the object, no polling).
	gets := srv.Requests("GET", watches+"/w")
	base = srv.Requests("GET", watches)
	_, _, wait = started(t, srv.URL, "wait", "--for=condition=Ready", "agents", "w", "--timeout", "10s")
	eventually(t, "the wait watches", func() bool { return srv.Requests("GET", watches) > base })
	setReady(t, srv, "agents", "default", "w", "True", 2, 2)
	r = wait()
	wantCode(t, r, 0)
	if r.out != "agent.aicli.dev/w condition met\n" {
		t.Fatalf("wait output %q", r.out)
	}
	if n := srv.Requests("GET", watches+"/w") - gets; n != 1 {
		t.Fatalf("wait read the object %d times, want 1", n)
	}
}

func TestWaitForDeleteAndMissingObjects(t *testing.T) {
	srv := unixServer(t)
	r := aictl(t, srv.URL, "wait", "--for=delete", "agent/none", "--timeout", "5s")
	wantCode(t, r, 0)

	r = aictl(t, srv.URL, "wait", "--for=condition=Ready", "agent/none", "--timeout", "5s")
	wantCode(t, r, 1)
	if !strings.Contains(r.err, "(NotFound)") {
		t.Fatalf("waiting on a missing object: %q", r.err)
	}

	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, t.TempDir(), "a.yaml", fmt.Sprintf(agentYAML, "doomed", "m"))), 0)
	_, _, wait := started(t, srv.URL, "wait", "--for=condition=Ready", "agent/doomed", "--timeout", "10s")
	eventually(t, "the wait watches", func() bool {
		return srv.Requests("GET", "/apis/aicli.dev/v1alpha1/namespaces/default/agents") >= 1
	})
	wantCode(t, aictl(t, srv.URL, "delete", "agent", "doomed"), 0)
	r = wait()
	wantCode(t, r, 1)
	if !strings.Contains(r.err, `agent.aicli.dev "doomed" was deleted while waiting`) {
		t.Fatalf("deleted while waiting: %q", r.err)
	}
}

func TestWaitResumesAfterCompaction(t *testing.T) {
	srv := unixServer(t)
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, t.TempDir(), "a.yaml", fmt.Sprintf(agentYAML, "c", "m"))), 0)
	// The wait's first watch is ended by the server; before its resumed watch
	// is served, the agent turns Ready and the watch log is compacted past the
	// wait's version: the resume gets 410 Gone and wait must read again.
	const agents = "/apis/aicli.dev/v1alpha1/namespaces/default/agents"
	var watchRequests atomic.Int32
	srv.BeforeServe(func(r *http.Request) {
		if r.URL.Path == agents && r.URL.Query().Get("watch") == "true" && watchRequests.Add(1) == 2 {
			setReady(t, srv, "agents", "default", "c", "True", 1, 1)
			srv.Compact(t)
		}
	})
	reads := srv.Requests("GET", agents+"/c")
	_, _, wait := started(t, srv.URL, "wait", "--for=condition=Ready", "agent/c", "--timeout", "10s")
	eventually(t, "the wait watches", func() bool { return srv.Watches() == 1 })
	srv.EndWatches()
	r := wait()
	wantCode(t, r, 0)
	if n := srv.Requests("GET", agents+"/c") - reads; n != 2 || watchRequests.Load() != 2 {
		t.Fatalf("wait read the object %d times over %d watches, want 2 reads (one after the 410) and 2 watches", n, watchRequests.Load())
	}
}

func TestDeleteWaitAndFinalizers(t *testing.T) {
	srv := unixServer(t)
	dir := t.TempDir()
	wantCode(t, aictl(t, srv.URL, "apply", "-f", writeFile(t, dir, "a.yaml", fmt.Sprintf(agentYAML, "kept", "m"))), 0)
	srv.Mutate(t, "agents", "default", "kept", func(o *unstructured.Unstructured) {
		o.SetFinalizers([]string{"aicli.dev/home"})
	})

	// Without the controller releasing the finalizer, --wait times out.
	r := aictl(t, srv.URL, "delete", "agent", "kept", "--wait", "--timeout", "300ms")
	wantCode(t, r, 1)
	if r.out != "agent.aicli.dev \"kept\" deleted\n" || !strings.Contains(r.err, "timed out waiting for delete on agents/kept") {
		t.Fatalf("delete --wait timeout: out %q err %q", r.out, r.err)
	}
	if o := srv.Object(t, "agents", "default", "kept"); o == nil || o.GetDeletionTimestamp() == nil {
		t.Fatal("object should remain, marked for deletion")
	}

	// Deleting again is accepted while it is still terminating; the
	// controller then releases it and --wait returns.
	out, _, wait := started(t, srv.URL, "delete", "-f", dir+"/a.yaml", "--wait", "--timeout", "10s")
	eventually(t, "delete printed", func() bool { return out.String() != "" })
	srv.Mutate(t, "agents", "default", "kept", func(o *unstructured.Unstructured) { o.SetFinalizers(nil) })
	r = wait()
	wantCode(t, r, 0)
	if srv.Object(t, "agents", "default", "kept") != nil {
		t.Fatal("object still present after delete --wait")
	}

	// Deleting an absent object is an error unless --ignore-not-found.
	r = aictl(t, srv.URL, "delete", "agent", "kept")
	wantCode(t, r, 1)
	if r.err != "Error from server (NotFound): agents.aicli.dev \"kept\" not found\n" {
		t.Fatalf("delete twice: %q", r.err)
	}
	wantCode(t, aictl(t, srv.URL, "delete", "agent", "kept", "--ignore-not-found"), 0)
}
