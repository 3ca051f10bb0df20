package controllers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/authority"
	"aicli.dev/aicli/internal/grants"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/toolmount"
)

// toolBinaryRetry is how often a conversation waiting for the tool binary looks again.
const toolBinaryRetry = 30 * time.Second

// CapabilityLeases is the lease manager (authority.Manager) as the
// controllers drive it.
type CapabilityLeases interface {
	Hold(ctx context.Context, l authority.Lease) error
	Release(conversationUID string)
	Held(namespace, grant string) []authority.LeaseInfo
}

// reconcileTools resolves the agent's effective tools from its Grants (and the
// built-ins its peer policy and Grants give it) and
// keeps the conversation's tools directory holding exactly those names (a
// live container sees a change at once: the directory is bind-mounted).
// Without a tool binary configured, an agent with no tools still runs.
func (r *ConversationReconciler) reconcileTools(ctx context.Context, s *convScope) (reconcile.Result, error) {
	if s.stop {
		meta.RemoveStatusCondition(&s.conv.Status.Conditions, v1alpha1.ConditionToolsReady)
		return reconcile.Result{}, nil
	}
	var list v1alpha1.GrantList
	if err := r.Client.List(ctx, s.conv.Namespace, &list, nil); err != nil {
		return reconcile.Result{}, err
	}
	var classes v1alpha1.ToolClassList
	if err := r.Client.List(ctx, "", &classes, nil); err != nil {
		return reconcile.Result{}, err
	}
	tools, _, _ := grants.Effective(list.Items, grants.ClassIndex(classes.Items), s.agent.Name)
	var atts v1alpha1.MonitorAttachmentList
	if err := r.Client.List(ctx, s.conv.Namespace, &atts, nil); err != nil {
		return reconcile.Result{}, err
	}
	tools = append(tools, grants.Builtins(s.agent, list.Items, atts.Items)...)
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	s.tools = tools
	if r.ToolBinary == "" {
		if len(tools) > 0 {
			return reconcile.Result{}, waiting(v1alpha1.ReasonToolBinaryMissing, toolBinaryRetry,
				"%d tools are granted but this supervisor has no tool binary configured", len(tools))
		}
		s.set(v1alpha1.ConditionToolsReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no tools granted")
		return reconcile.Result{}, nil
	}
	dir, err := r.toolDirs().Sync(string(s.conv.UID), grants.Names(tools))
	if errors.Is(err, os.ErrNotExist) {
		return reconcile.Result{}, waiting(v1alpha1.ReasonToolBinaryMissing, toolBinaryRetry, "%v", err)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	s.toolsDir = dir
	msg := "no tools granted"
	if len(tools) > 0 {
		msg = fmt.Sprintf("%d tools mounted at %s: %s", len(tools), toolmount.MountPath, strings.Join(grants.Names(tools), ", "))
	}
	s.set(v1alpha1.ConditionToolsReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg)
	return reconcile.Result{}, nil
}

func (r *ConversationReconciler) toolDirs() toolmount.Dirs {
	return toolmount.Dirs{Root: r.DataDir.Tools(), Binary: r.ToolBinary}
}

// toolInstructions is the instruction-file section telling the CLI its tools.
func toolInstructions(tools []grants.Tool) string {
	if len(tools) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Tools\n\nThese commands are on your PATH; run them from your shell. `TOOL --help` prints a tool's usage; " +
		"a tool's exit code is its result.\n\n")
	for _, t := range tools {
		usage := t.Usage
		if usage == "" {
			usage = "(no usage given)"
		}
		fmt.Fprintf(&b, "- `%s`: %s\n", t.Name, usage)
	}
	return b.String()
}

// reconcileLease makes the live guest hold capabilities for exactly the
// agent's tools, renewed while its connection lives; a stopped conversation
// holds none.
func (r *ConversationReconciler) reconcileLease(ctx context.Context, s *convScope) (reconcile.Result, error) {
	uid := string(s.conv.UID)
	if s.stop || len(s.tools) == 0 {
		if r.Leases != nil {
			r.Leases.Release(uid)
		}
		if s.stop {
			meta.RemoveStatusCondition(&s.conv.Status.Conditions, v1alpha1.ConditionLeaseHeld)
		} else {
			s.set(v1alpha1.ConditionLeaseHeld, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "no capabilities to hold")
		}
		return reconcile.Result{}, nil
	}
	if r.Leases == nil {
		return reconcile.Result{}, waiting(v1alpha1.ReasonNoLiveConversation, toolBinaryRetry, "this supervisor issues no capability leases")
	}
	holder, ok := s.pty.(authority.Holder)
	if !ok {
		return reconcile.Result{}, stalled(v1alpha1.ReasonInvalidSpec, "the guest cannot hold capabilities (an older guest image)")
	}
	err := r.Leases.Hold(ctx, authority.Lease{
		Namespace: s.conv.Namespace, Agent: s.agent.Name, Conversation: s.conv.Name,
		UID: uid, Fingerprint: s.conv.Status.GuestFingerprint, Tools: s.tools, Holder: holder,
	})
	if err != nil {
		return reconcile.Result{}, transient(v1alpha1.ReasonRetrying, err)
	}
	s.set(v1alpha1.ConditionLeaseHeld, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("capabilities for %d tools held, renewed while the container lives", len(s.tools)))
	return reconcile.Result{}, nil
}

// conversationsOfGrantSubjects maps a changed grant to the conversations of
// its subject and of the subjects of grants delegated from it (tools mounted
// and capabilities re-minted at once).
// conversationsOfClass maps a changed ToolClass to the conversations of the
// agents holding a grant that names it.
func conversationsOfClass(c *storeclient.Client) MapFunc {
	subjects := conversationsOfGrantSubjects(c)
	return func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request {
		var reqs []reconcile.Request
		for _, g := range grantsNamingClass(ctx, c, obj.GetName()) {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"subject": g.Spec.Subject}}}
			u.SetNamespace(g.Namespace)
			u.SetName(g.Name)
			reqs = append(reqs, subjects(ctx, u)...)
		}
		return reqs
	}
}

func conversationsOfGrantSubjects(c *storeclient.Client) MapFunc {
	agents := conversationsOfAgent(c)
	return func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request {
		subject, _, _ := unstructured.NestedString(obj.Object, "spec", "subject")
		subjects := nonEmpty(subject)
		var list v1alpha1.GrantList
		if err := c.List(ctx, obj.GetNamespace(), &list, nil); err == nil {
			for _, g := range list.Items {
				if d := g.Spec.Delegation; d != nil && d.Parent == obj.GetName() {
					subjects = append(subjects, g.Spec.Subject)
				}
			}
		}
		var reqs []reconcile.Request
		for _, s := range subjects {
			a := &unstructured.Unstructured{}
			a.SetNamespace(obj.GetNamespace())
			a.SetName(s)
			reqs = append(reqs, agents(ctx, a)...)
		}
		return reqs
	}
}
