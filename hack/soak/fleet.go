package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/client"
	"aicli.dev/aicli/internal/convapi/wire"
)

// namespace holds every object the soak makes (the supervisor is its own, on its own data dir).
const namespace = "default"

// keyword wakes the monitors; only monitor-wake sends carry it.
const keyword = "soakwake"

// fleet is what the soak set up: worker agents with one conversation each, and the monitors.
type fleet struct {
	workers []string          // agent names
	convs   map[string]string // agent → its conversation
	// watched maps a watched worker to its monitor agent.
	watched  map[string]string
	monitors []string // monitor agent names
	// attachments are the MonitorAttachments' names.
	attachments []string

	// mu guards resumes.
	mu      sync.Mutex
	resumes int
}

func workerName(i int) string { return fmt.Sprintf("w%02d", i) }

// setUp creates the agents (mail allowed among the workers), their tool grants and the monitors, then starts one
// conversation per worker and waits until all are live.
func setUp(ctx context.Context, c *client.Client, n int, invocationLog string) (*fleet, error) {
	f := &fleet{convs: map[string]string{}, watched: map[string]string{}}
	for i := range n {
		f.workers = append(f.workers, workerName(i))
	}
	for _, name := range f.workers {
		a := &v1alpha1.Agent{Spec: v1alpha1.AgentSpec{
			Harness: v1alpha1.HarnessFake,
			Persona: "You are soak worker " + name + ".",
			Env:     []v1alpha1.EnvVar{{Name: "AICLI_FAKE_DELAY", Value: "50ms"}},
			Peers: &v1alpha1.PeerPolicy{SendTo: &v1alpha1.PeerSet{Agents: without(f.workers, name)},
				Delivery: v1alpha1.MailInline},
		}}
		a.Namespace, a.Name = namespace, name
		if err := create(ctx, c, a); err != nil {
			return nil, err
		}
	}
	for _, obj := range toolObjects(f.workers, invocationLog) {
		if err := create(ctx, c, obj); err != nil {
			return nil, err
		}
	}
	if err := f.setUpMonitors(ctx, c); err != nil {
		return nil, err
	}
	for _, name := range f.workers {
		conv, err := startConversation(ctx, c, name)
		if err != nil {
			return nil, err
		}
		f.convs[name] = conv
	}
	return f, f.waitLive(ctx, c, 3*time.Minute)
}

// setUpMonitors makes two monitor agents in Advise mode, each watching two workers for the keyword, with a breaker
// that a soak's wake rate does not trip.
func (f *fleet) setUpMonitors(ctx context.Context, c *client.Client) error {
	if len(f.workers) < 4 {
		return nil
	}
	breaker := v1alpha1.BreakerSpec{MaxConsecutiveHumanless: 1000, RateBackstop: v1alpha1.RateBackstop{Wakes: 10000, WindowMinutes: 1}}
	for i, mon := range []string{"mon-a", "mon-b"} {
		first, second := f.workers[i], f.workers[i+2]
		if _, err := c.CreateMonitor(ctx, namespace, client.MonitorRequest{Name: mon, Target: first,
			Keywords: []string{keyword}, Breaker: breaker}); err != nil {
			return err
		}
		// A second attachment of the same monitor agent: it then juggles two monitor conversations.
		att := &v1alpha1.MonitorAttachment{Spec: v1alpha1.MonitorAttachmentSpec{Monitor: mon,
			Target:  v1alpha1.MonitorTarget{Agent: second},
			Trigger: v1alpha1.TriggerSpec{Keywords: []v1alpha1.Keyword{{Text: keyword, Mode: v1alpha1.MatchSubstring}}},
			Mode:    v1alpha1.MonitorAdvise, Breaker: breaker}}
		att.Namespace, att.Name = namespace, mon+"-2"
		if err := create(ctx, c, att); err != nil {
			return err
		}
		f.monitors = append(f.monitors, mon)
		f.attachments = append(f.attachments, mon, mon+"-2")
		f.watched[first], f.watched[second] = mon, mon
	}
	return nil
}

func without(list []string, drop string) []string {
	out := make([]string, 0, len(list))
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

func create(ctx context.Context, c *client.Client, obj runtime.Object) error {
	u, err := c.FromTyped(obj)
	if err != nil {
		return err
	}
	if _, err := c.Create(ctx, u, client.WriteOptions{}); err != nil {
		return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// startConversation is "start or continue" for agent; it returns the conversation's name.
func startConversation(ctx context.Context, c *client.Client, agent string) (string, error) {
	data, err := c.DoRaw(ctx, http.MethodPost, client.ResourcePath("agents", namespace, agent, wire.SubStart), "", nil)
	if err != nil {
		return "", fmt.Errorf("starting a conversation of %s: %w", agent, err)
	}
	var conv metav1.PartialObjectMetadata
	if err := json.Unmarshal(data, &conv); err != nil {
		return "", err
	}
	return conv.Name, nil
}

// conversations lists every conversation of the namespace, typed.
func conversations(ctx context.Context, c *client.Client) ([]v1alpha1.Conversation, error) {
	list, err := c.List(ctx, "conversations", namespace, client.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]v1alpha1.Conversation, 0, len(list.Items))
	for i := range list.Items {
		var conv v1alpha1.Conversation
		if err := client.ToTyped(&list.Items[i], &conv); err != nil {
			return nil, err
		}
		out = append(out, conv)
	}
	return out, nil
}

// isWorkerConv reports whether name is one of the workers' conversations.
func (f *fleet) isWorkerConv(name string) bool {
	for _, c := range f.convs {
		if c == name {
			return true
		}
	}
	return false
}

// resumePaused sets every worker conversation that a fault paused back to Active (what a user would do after an
// unplanned pause); it returns how many it resumed. Monitor conversations are the monitor controller's to resume.
func (f *fleet) resumePaused(ctx context.Context, c *client.Client) (int, error) {
	convs, err := conversations(ctx, c)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, conv := range convs {
		if !f.isWorkerConv(conv.Name) || conv.Spec.DesiredState != v1alpha1.ConversationPaused {
			continue
		}
		patch := []byte(`{"spec":{"desiredState":"Active"}}`)
		if _, err := c.Patch(ctx, "conversations", namespace, conv.Name, patch, client.WriteOptions{}); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue
			}
			return n, err
		}
		n++
	}
	f.mu.Lock()
	f.resumes += n
	f.mu.Unlock()
	return n, nil
}

// keep resumes paused worker conversations every second until ctx ends (errors while the supervisor is down are
// expected and ignored).
func (f *fleet) keep(ctx context.Context, c *client.Client) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = f.resumePaused(ctx, c)
		}
	}
}

// waitLive resumes and waits until every worker conversation is Ready, or fails after timeout naming the ones
// that are not.
func (f *fleet) waitLive(ctx context.Context, c *client.Client, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, _ = f.resumePaused(ctx, c)
		convs, err := conversations(ctx, c)
		var notLive []string
		if err == nil {
			ready := map[string]bool{}
			for _, conv := range convs {
				ready[conv.Name] = meta(conv.Status.Conditions, v1alpha1.ConditionReady) == metav1.ConditionTrue
			}
			for _, w := range f.workers {
				if !ready[f.convs[w]] {
					notLive = append(notLive, f.convs[w])
				}
			}
			if len(notLive) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("conversations not live after %s: %v (last error: %v)", timeout, notLive, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// meta is the status of condition typ, "" when absent.
func meta(conds []metav1.Condition, typ string) metav1.ConditionStatus {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
