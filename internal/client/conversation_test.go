package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver/apiservertest"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/store"
)

// convServer serves the real API server with agent "coder" and conversation
// "c1" desiring state.
func convServer(t *testing.T, state v1alpha1.ConversationState) (*apiservertest.Server, *client.Client) {
	t.Helper()
	srv, url := unixServer(t)
	c := newClient(t, client.Config{Server: url})
	if _, err := c.Create(ctx(t), agent("coder", map[string]any{"harness": "fake"}), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	conv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "aicli.dev/v1alpha1", "kind": "Conversation",
		"metadata": map[string]any{"name": "c1", "namespace": "default"},
		"spec":     map[string]any{"agentRef": "coder", "desiredState": string(state)},
	}}
	if _, err := c.Create(ctx(t), conv, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// setCondition writes one condition of c1 as the controller does, for
// generation gen (0: the current one).
func setCondition(t *testing.T, srv *apiservertest.Server, typ, status, reason, msg string, gen int64) {
	t.Helper()
	srv.Mutate(t, "conversations", "default", "c1", func(o *unstructured.Unstructured) {
		if gen == 0 {
			gen = o.GetGeneration()
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
		conds = append(conds, map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
			"observedGeneration": gen, "lastTransitionTime": "2026-12-04T00:00:00Z"})
		_ = unstructured.SetNestedSlice(o.Object, conds, "status", "conditions")
	})
}

func notLive(t *testing.T, err error) *client.NotLiveError {
	t.Helper()
	var nl *client.NotLiveError
	if !errors.As(err, &nl) {
		t.Fatalf("want a *NotLiveError, got %T %v", err, err)
	}
	return nl
}

func TestWaitConversationLiveReturnsOnCurrentReady(t *testing.T) {
	srv, c := convServer(t, v1alpha1.ConversationActive)
	setCondition(t, srv, "Ready", "True", "Succeeded", "all dependencies are ready", 0)
	obj, err := c.WaitConversationLive(ctx(t), "default", "c1")
	if err != nil || obj.GetName() != "c1" {
		t.Fatalf("live conversation: %v %v", obj, err)
	}
	if n := srv.Watches(); n != 0 {
		t.Errorf("%d watches for a conversation that was already live", n)
	}
}

func TestWaitConversationLiveIgnoresReadyOfAnOlderGeneration(t *testing.T) {
	srv, c := convServer(t, v1alpha1.ConversationPaused)
	setCondition(t, srv, "Ready", "True", "Succeeded", "paused and resumable", 0)
	// Resume: generation 2, while Ready still describes generation 1.
	if _, err := c.Patch(ctx(t), "conversations", "default", "c1", []byte(`{"spec":{"desiredState":"Active"}}`), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx(t), 300*time.Millisecond)
	defer cancel()
	_, err := c.WaitConversationLive(wctx, "default", "c1")
	nl := notLive(t, err)
	if !errors.Is(err, context.DeadlineExceeded) || nl.Generation != 2 ||
		nl.ReadySummary() != "Ready is True (Succeeded) for generation 1, not yet observed for 2: paused and resumable" {
		t.Fatalf("stale Ready: %v (%s)", err, nl.ReadySummary())
	}
	if !strings.HasPrefix(err.Error(), "timed out waiting for conversation c1 to be live (Ready=True for generation 2); ") {
		t.Fatalf("message %q", err)
	}
}

func TestWaitConversationLiveGivesUpWhenOnlyAUserCanHelp(t *testing.T) {
	t.Run("stalled", func(t *testing.T) {
		srv, c := convServer(t, v1alpha1.ConversationActive)
		setCondition(t, srv, "Stalled", "True", "SecretNotFound", `secret "anthropic" does not exist`, 0)
		_, err := c.WaitConversationLive(ctx(t), "default", "c1")
		if nl := notLive(t, err); nl.Err != nil || nl.Stalled == nil ||
			err.Error() != `conversation c1 is stalled (SecretNotFound): secret "anthropic" does not exist` {
			t.Fatalf("stalled: %v", err)
		}
	})
	t.Run("archived", func(t *testing.T) {
		_, c := convServer(t, v1alpha1.ConversationArchived)
		_, err := c.WaitConversationLive(ctx(t), "default", "c1")
		if nl := notLive(t, err); nl.Err != nil || nl.Desired != v1alpha1.ConversationArchived || nl.Agent != "coder" {
			t.Fatalf("archived: %+v", nl)
		}
	})
	t.Run("paused while waiting", func(t *testing.T) {
		srv, c := convServer(t, v1alpha1.ConversationActive)
		done := waitLiveInBackground(t, srv, c)
		if _, err := c.Patch(ctx(t), "conversations", "default", "c1", []byte(`{"spec":{"desiredState":"Paused"}}`), client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := <-done
		if nl := notLive(t, err); nl.Err != nil || nl.Desired != v1alpha1.ConversationPaused ||
			!strings.HasPrefix(err.Error(), "conversation c1 is Paused, not Active") {
			t.Fatalf("paused: %v", err)
		}
	})
	t.Run("deleted while waiting", func(t *testing.T) {
		srv, c := convServer(t, v1alpha1.ConversationActive)
		done := waitLiveInBackground(t, srv, c)
		if _, err := srv.Store.Delete(context.Background(), "conversations", "default", "c1", store.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err := <-done
		if nl := notLive(t, err); !nl.Deleted || err.Error() != "conversation c1 was deleted while waiting for it to be live" {
			t.Fatalf("deleted: %v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		_, c := convServer(t, v1alpha1.ConversationActive)
		if _, err := c.WaitConversationLive(ctx(t), "default", "ghost"); !apierrors.IsNotFound(err) {
			t.Fatalf("missing: want NotFound, got %v", err)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		_, c := convServer(t, v1alpha1.ConversationActive)
		cctx, cancel := context.WithCancel(ctx(t))
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := c.WaitConversationLive(cctx, "default", "c1")
		if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "interrupted while waiting for conversation c1") {
			t.Fatalf("interrupted: %v", err)
		}
	})
}

// waitLiveInBackground waits for c1 to be live in a goroutine, returning
// once its watch is open; the wait's error arrives on the channel.
func waitLiveInBackground(t *testing.T, srv *apiservertest.Server, c *client.Client) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := c.WaitConversationLive(ctx(t), "default", "c1"); done <- err }()
	eventually(t, func() bool { return srv.Watches() == 1 })
	return done
}

// eventually polls cond every 10ms, failing the test after 10s.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
