package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/monitor/monitorwire"
)

const (
	agentsPlural             = "agents"
	monitorAttachmentsPlural = "monitorattachments"
)

// MonitorRequest describes a monitor: agent Name made from the advisor
// persona, and MonitorAttachment Name that makes it watch Target (docs/monitors.md).
type MonitorRequest struct {
	// Name names both the monitor agent and its attachment.
	Name string
	// Target is the agent to watch; Conversation, when set, narrows it to one conversation.
	Target, Conversation string
	// Keywords wake the monitor; each is matched with Match (default substring).
	Keywords []string
	Match    v1alpha1.MatchMode
	// CaseSensitive matches case (default: case-insensitive).
	CaseSensitive bool
	// Harness is the monitor's CLI; "" uses the target's. Model "" is the harness's default.
	Harness, Model string
	// WatchOnly analyses without advising (no may-inject).
	WatchOnly bool
	// Breaker is the circuit breaker; zero fields take the API defaults.
	Breaker v1alpha1.BreakerSpec
}

// MonitorError says which step of CreateMonitor failed on which object.
type MonitorError struct {
	// Step is what was being done, e.g. "creating agent watchdog".
	Step string
	// Created lists what was created before the failure ("agent/NAME"), to delete or keep.
	Created []string
	Err     error
}

func (e *MonitorError) Error() string {
	msg := e.Step + ": " + e.Err.Error()
	if len(e.Created) > 0 {
		msg += " (already created: " + strings.Join(e.Created, ", ") + ")"
	}
	return msg
}

func (e *MonitorError) Unwrap() error { return e.Err }

// CreateMonitor creates the monitor agent and its attachment in namespace.
// The attachment is dry-run first, so a trigger the server refuses (a blank
// or duplicate keyword) leaves nothing behind. An existing agent or
// attachment of that name is an AlreadyExists error naming it. It returns
// the names created, as "agent/NAME" and "monitorattachment/NAME".
func (c *Client) CreateMonitor(ctx context.Context, namespace string, req MonitorRequest) ([]string, error) {
	if req.Name == "" || req.Target == "" {
		return nil, errors.New("a monitor needs a name and a target agent")
	}
	if len(req.Keywords) == 0 {
		return nil, errors.New("a monitor needs at least one keyword")
	}
	mode := req.Match
	if mode == "" {
		mode = v1alpha1.MatchSubstring
	}
	kws := make([]v1alpha1.Keyword, 0, len(req.Keywords))
	for _, k := range req.Keywords {
		if k = strings.TrimSpace(k); k == "" {
			return nil, errors.New("keywords: an empty keyword matches everything")
		}
		kws = append(kws, v1alpha1.Keyword{Text: k, Mode: mode})
	}
	harness := req.Harness
	if harness == "" {
		t, err := c.Get(ctx, agentsPlural, namespace, req.Target)
		if err != nil {
			return nil, &MonitorError{Step: "reading target agent " + req.Target, Err: err}
		}
		harness, _, _ = unstructured.NestedString(t.Object, "spec", "harness")
	}
	agent := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{Harness: v1alpha1.Harness(harness), Model: req.Model,
		Persona: monitorwire.AdvisorPersona}}
	agent.Namespace, agent.Name = namespace, req.Name
	att := &v1alpha1.MonitorAttachment{Spec: v1alpha1.MonitorAttachmentSpec{Monitor: req.Name,
		Target:  v1alpha1.MonitorTarget{Agent: req.Target, Conversation: req.Conversation},
		Trigger: v1alpha1.TriggerSpec{Keywords: kws, CaseSensitive: req.CaseSensitive}, Mode: v1alpha1.MonitorAdvise,
		Breaker: req.Breaker}}
	if req.WatchOnly {
		att.Spec.Mode = v1alpha1.MonitorWatchOnly
	}
	att.Namespace, att.Name = namespace, req.Name
	u, err := c.FromTyped(att)
	if err != nil {
		return nil, err
	}
	// The server judges the trigger before anything is created: no agent without its attachment.
	if _, err := c.Create(ctx, u, WriteOptions{DryRun: true}); err != nil {
		return nil, &MonitorError{Step: "checking monitorattachment " + req.Name, Err: err}
	}
	var created []string
	for _, obj := range []struct {
		kind string
		o    runtime.Object
	}{{"agent", agent}, {"monitorattachment", att}} {
		u, err := c.FromTyped(obj.o)
		if err != nil {
			return created, err
		}
		if _, err := c.Create(ctx, u, WriteOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				err = fmt.Errorf("%s %q already exists in namespace %q: pick another name: %w", obj.kind, req.Name, namespace, err)
			}
			return created, &MonitorError{Step: "creating " + obj.kind + " " + req.Name, Created: created, Err: err}
		}
		created = append(created, obj.kind+"/"+req.Name)
	}
	return created, nil
}

// RearmMonitor closes the tripped breaker of MonitorAttachment namespace/name
// and restarts its counts (POST …/monitorattachments/{name}/rearm). It
// returns the attachment after the re-arm and whether it was tripped before;
// re-arming a closed breaker is not an error.
func (c *Client) RearmMonitor(ctx context.Context, namespace, name string) (*v1alpha1.MonitorAttachment, bool, error) {
	before, err := c.Get(ctx, monitorAttachmentsPlural, namespace, name)
	if err != nil {
		return nil, false, err
	}
	tripped, _, _ := unstructured.NestedString(before.Object, "status", "trippedAt")
	data, err := c.DoRaw(ctx, http.MethodPost, ResourcePath(monitorAttachmentsPlural, namespace, name, monitorwire.SubRearm), "", nil)
	if err != nil {
		return nil, false, err
	}
	var a v1alpha1.MonitorAttachment
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, false, fmt.Errorf("decoding the re-armed attachment %s: %w", name, err)
	}
	return &a, tripped != "", nil
}
