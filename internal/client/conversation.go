package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/convapi/wire"
)

const conversations = "conversations"

// NotLiveError says why a conversation is not live when a wait for it ended
// without it: the wait ran out (Err is ctx's error) or the conversation
// cannot become live until someone acts (Err is nil).
type NotLiveError struct {
	Namespace, Name string
	// Agent is spec.agentRef.
	Agent string
	// Desired is spec.desiredState (Active when unset).
	Desired v1alpha1.ConversationState
	// Generation is the conversation's current generation.
	Generation int64
	// Deleting is true while the conversation is being deleted, Deleted once
	// it is gone.
	Deleting, Deleted bool
	// Ready is the last Ready condition seen, nil when none was written yet.
	Ready *metav1.Condition
	// Stalled is the Stalled condition when it holds for the current generation.
	Stalled *metav1.Condition
	// Err is context.DeadlineExceeded or context.Canceled when the wait ended
	// first; nil when the conversation gave up on its own.
	Err error
}

func (e *NotLiveError) Error() string {
	switch {
	case e.Deleted:
		return fmt.Sprintf("conversation %s was deleted while waiting for it to be live", e.Name)
	case e.Deleting:
		return fmt.Sprintf("conversation %s is being deleted", e.Name)
	case e.Desired != v1alpha1.ConversationActive:
		return fmt.Sprintf("conversation %s is %s, not Active: it does not become live on its own (%s)", e.Name, e.Desired, e.ReadySummary())
	case e.Stalled != nil:
		return fmt.Sprintf("conversation %s is stalled (%s): %s", e.Name, e.Stalled.Reason, e.Stalled.Message)
	case errors.Is(e.Err, context.Canceled):
		return fmt.Sprintf("interrupted while waiting for conversation %s to be live (%s)", e.Name, e.ReadySummary())
	default:
		return fmt.Sprintf("timed out waiting for conversation %s to be live (Ready=True for generation %d); %s",
			e.Name, e.Generation, e.ReadySummary())
	}
}

func (e *NotLiveError) Unwrap() error { return e.Err }

// ReadySummary describes the last Ready condition seen: its status, reason
// and message, and whether it describes an older generation.
func (e *NotLiveError) ReadySummary() string {
	r := e.Ready
	switch {
	case r == nil:
		return "Ready is not reported yet"
	case r.ObservedGeneration != e.Generation:
		return fmt.Sprintf("Ready is %s (%s) for generation %d, not yet observed for %d: %s",
			r.Status, r.Reason, r.ObservedGeneration, e.Generation, r.Message)
	default:
		return fmt.Sprintf("Ready is %s (%s): %s", r.Status, r.Reason, r.Message)
	}
}

// notLive fills a NotLiveError from the last state of the conversation.
func notLive(namespace, name string, obj *unstructured.Unstructured) *NotLiveError {
	e := &NotLiveError{Namespace: namespace, Name: name, Deleted: obj == nil}
	if obj == nil {
		return e
	}
	e.Agent, _, _ = unstructured.NestedString(obj.Object, "spec", "agentRef")
	d, _, _ := unstructured.NestedString(obj.Object, "spec", "desiredState")
	e.Desired = v1alpha1.ConversationState(d)
	if e.Desired == "" {
		e.Desired = v1alpha1.ConversationActive
	}
	e.Generation = obj.GetGeneration()
	e.Deleting = obj.GetDeletionTimestamp() != nil
	if c, ok := FindCondition(obj, v1alpha1.ConditionReady); ok {
		e.Ready = &c
	}
	if ConditionMet(obj, v1alpha1.ConditionStalled, string(metav1.ConditionTrue)) {
		c, _ := FindCondition(obj, v1alpha1.ConditionStalled)
		e.Stalled = &c
	}
	return e
}

// WaitConversationLive waits until conversation namespace/name is live: its
// Ready condition is True for its current generation (container running,
// guest connected, CLI up), and returns it. It follows the conversation
// through the API's watch. It gives up at once with a *NotLiveError (Err
// nil) when the conversation cannot become live without someone acting: it
// does not desire Active, is being deleted or gone, or is Stalled. When ctx
// ends first the *NotLiveError carries ctx's error and the last Ready seen.
// A conversation that does not exist is the server's NotFound.
func (c *Client) WaitConversationLive(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	var stop *NotLiveError
	obj, err := c.WaitFor(ctx, conversations, namespace, name, func(obj *unstructured.Unstructured) (bool, error) {
		if obj == nil {
			return false, nil
		}
		if ConditionMet(obj, v1alpha1.ConditionReady, string(metav1.ConditionTrue)) && obj.GetDeletionTimestamp() == nil {
			return true, nil
		}
		if e := notLive(namespace, name, obj); e.Deleting || e.Desired != v1alpha1.ConversationActive || e.Stalled != nil {
			stop = e
			return false, e
		}
		return false, nil
	})
	switch {
	case err == nil:
		return obj, nil
	case stop != nil && errors.Is(err, stop):
		return obj, stop
	case errors.Is(err, ErrDeleted):
		return nil, notLive(namespace, name, nil)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		if obj == nil {
			return nil, err
		}
		e := notLive(namespace, name, obj)
		e.Err = err
		return obj, e
	default:
		return obj, err
	}
}

// Send delivers text to conversation namespace/name as one atomic message
// and returns once its guest has accepted it (not when the agent answered).
// A conversation that is not live is the server's 409 Conflict, whose
// message names the next step.
func (c *Client) Send(ctx context.Context, namespace, name, text string) error {
	return c.send(ctx, namespace, name, wire.SendRequest{Text: text})
}

// SendAdvice is Send of monitor agent monitor's advice (cross-supervisor
// monitors): the server prefixes text with the advice prefix and attributes
// it to speaker injected:<monitor>. A conversation that is not live is the
// server's 409 Conflict.
func (c *Client) SendAdvice(ctx context.Context, namespace, name, monitor, text string) error {
	return c.send(ctx, namespace, name, wire.SendRequest{Text: text, Monitor: monitor})
}

func (c *Client) send(ctx context.Context, namespace, name string, req wire.SendRequest) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := c.requestContext(ctx)
	defer cancel()
	_, err = c.DoRaw(ctx, http.MethodPost, ResourcePath(conversations, namespace, name, wire.SubSend), ContentTypeJSON, body)
	return err
}

// SendWhenLive is Send to a conversation that may still be starting: when
// the server answers 409 while the conversation desires Active and is not
// live yet, it calls waiting (once, when not nil) with what it observed, waits
// until the conversation is live (WaitConversationLive) and sends again, until
// ctx ends. A conversation that is Paused, Archived or being deleted fails at
// once with the server's 409, which names the next step; a Stalled one with a
// *NotLiveError naming the stall. When ctx ends first the error is a
// *NotLiveError carrying ctx's error and the last Ready seen: nothing was sent.
func (c *Client) SendWhenLive(ctx context.Context, namespace, name, text string, waiting func(*NotLiveError)) error {
	var backoff Backoff
	notified := false
	for {
		err := c.Send(ctx, namespace, name, text)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return c.notLiveAfter(ctx, namespace, name, err)
		case !apierrors.IsConflict(err):
			return err
		}
		obj, gerr := c.Get(ctx, conversations, namespace, name)
		if gerr != nil {
			if ctx.Err() != nil {
				return c.notLiveAfter(ctx, namespace, name, err)
			}
			return gerr
		}
		e := notLive(namespace, name, obj)
		switch {
		case e.Stalled != nil:
			return e
		case e.Deleting || e.Desired != v1alpha1.ConversationActive:
			return err // the server's 409 says what to do
		case ConditionMet(obj, v1alpha1.ConditionReady, string(metav1.ConditionTrue)):
			// Live by its status, yet refused: give the status time to catch up.
			if !backoff.Wait(ctx) {
				return c.notLiveAfter(ctx, namespace, name, err)
			}
			continue
		}
		if waiting != nil && !notified {
			waiting(e)
			notified = true
		}
		_, werr := c.WaitConversationLive(ctx, namespace, name)
		var nl *NotLiveError
		switch {
		case werr == nil, errors.As(werr, &nl) && nl.Err == nil:
			// Live now, or it gave up on its own: the next send says which.
		case ctx.Err() != nil:
			return c.notLiveAfter(ctx, namespace, name, err)
		default:
			return werr
		}
	}
}

// notLiveAfter is the error of a SendWhenLive whose ctx ended: the
// conversation's state read afresh, or sendErr when it cannot be read.
func (c *Client) notLiveAfter(ctx context.Context, namespace, name string, sendErr error) error {
	obj, err := c.Get(context.WithoutCancel(ctx), conversations, namespace, name)
	if err != nil {
		return sendErr
	}
	e := notLive(namespace, name, obj)
	e.Err = ctx.Err()
	return e
}

// requestContext bounds one request by the client's timeout even when ctx
// has a longer deadline (a wait's), unless the timeout is negative.
func (c *Client) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}
