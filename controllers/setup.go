package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"aicli.dev/aicli/internal/liveguest"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/authority"
	"aicli.dev/aicli/internal/budget"
	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/monitor"
	"aicli.dev/aicli/internal/monitor/remote"
	"aicli.dev/aicli/internal/runtime"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/transcript"
	"aicli.dev/aicli/internal/watchfilter"
)

// maxBackoff caps the per-object retry delay after failed reconciles.
const maxBackoff = 30 * time.Second

// Options configures the controllers.
type Options struct {
	Store interface {
		storeclient.Store
		Watcher
	}
	DataDir      layout.Dir
	SupervisorID string
	Logger       *slog.Logger
	// SkipNameValidation lets tests start controllers more than once per process.
	SkipNameValidation bool

	// Runtime, Images and Gateway drive conversations. Without a Runtime the
	// conversation controller only reports NotImplemented (unit tests of the
	// other kinds).
	Runtime runtime.Runtime
	Images  ImageEnsurer
	Gateway liveguest.Gateway
	// Sessions, when set, is the live-guest registry to use (the API's send,
	// screen and attach read it); Start fills in its Gateway, Changed and Ctx.
	Sessions *liveguest.Registry
	// Egress and Secrets serve conversations' network reach and model
	// credentials (optional).
	Egress  EgressPolicies
	Secrets SecretReader
	// ToolBinary is the aicli-tool binary mounted into conversations with
	// granted tools; Leases mints and renews their capabilities (optional:
	// without them an agent with tools waits, ToolsReady=False).
	ToolBinary string
	Leases     *authority.Manager
	// Budget, when set, is the agents' budget ledger: conversations hold and release messages under it and agents
	// show it in status.budget. Start sets its Changed hook to re-reconcile the agent and its conversations.
	Budget *budget.Ledger
	// Mail, when set, is the agents' mailbox: agents show status.inboxUnread and live conversations receive their
	// agent's unread mail (MailDelivered). MailChanged is the hook the mailbox calls after an append or an ack
	// (mailbox.Options.Changed): Start connects it to the agent's reconcile and its conversations'.
	Mail        Mailbox
	MailChanged *ChangeHook
	// Attribution, when set, learns the speaker (mail:<agent>) of the mail delivered into conversations.
	Attribution *transcript.Attribution
	// Remote reaches the supervisors of monitors' remote targets through their public API.
	Remote *remote.Dialer
}

// Start builds every controller and runs them until ctx ends.
func Start(ctx context.Context, opts Options) error {
	c := storeclient.New(opts.Store)
	log := opts.Logger
	type spec struct {
		name     string
		resource string
		r        reconcile.Reconciler
		mappers  []MapFunc
		// unchanged, when set, drops the updates of the controller's own
		// resource it reports.
		unchanged watchfilter.Unchanged
	}
	convReconciler, convSource, convTrigger := conversationController(ctx, c, opts)
	grantTrigger, grantSource := triggerSource(ctx)
	grantReconciler := &GrantReconciler{Client: c}
	if opts.Leases != nil {
		grantReconciler.Leases = opts.Leases
		opts.Leases.Changed = func(namespace, grant string) {
			grantTrigger(types.NamespacedName{Namespace: namespace, Name: grant})
		}
	}
	agentReconciler := &AgentReconciler{Client: c, DataDir: opts.DataDir, SupervisorID: opts.SupervisorID, Logger: log}
	if opts.Budget != nil {
		agentReconciler.Budget = opts.Budget
	}
	agentTrigger, agentSource := triggerSource(ctx)
	if opts.Mail != nil {
		agentReconciler.Mail = opts.Mail
		if opts.MailChanged != nil {
			// New mail or a read-advance: the agent recounts its unread mail and its conversations deliver.
			opts.MailChanged.Set(ctx, func(ns, agent string) {
				agentTrigger(types.NamespacedName{Namespace: ns, Name: agent})
				triggerConversationsOf(ctx, c, convTrigger, ns, agent)
			})
		}
	}
	specs := []spec{
		{"agent", "agents", agentReconciler, []MapFunc{peerReferrers(c)}, nil},
		{"conversation", "conversations", convReconciler, nil, nil},
		{"grant", "grants", grantReconciler, []MapFunc{grantsOfSameSubject(c)}, nil},
		{"monitorattachment", "monitorattachments", &MonitorAttachmentReconciler{Client: c, Remote: opts.Remote}, nil, monitor.OnlyCursorsMoved},
	}
	skip := opts.SkipNameValidation
	for _, s := range specs {
		ctrl, err := controller.NewTypedUnmanaged(s.name, controller.TypedOptions[reconcile.Request]{
			Reconciler: s.r,
			// Conflicts are routine here (status and spec writers race); cap the
			// per-object backoff so a retried object is never parked for minutes.
			RateLimiter:        workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, maxBackoff),
			Logger:             logr.FromSlogHandler(log.Handler()).WithValues("controller", s.name),
			SkipNameValidation: &skip,
		})
		if err != nil {
			return fmt.Errorf("controller %s: %w", s.name, err)
		}
		if err := ctrl.Watch(FilteredStoreSource(opts.Store, s.resource, log, s.unchanged, s.mappers...)); err != nil {
			return fmt.Errorf("controller %s: %w", s.name, err)
		}
		var extra []source.Source
		switch {
		case s.name == "conversation" && convSource != nil:
			// Out-of-band triggers, agent edits (image, env, egress) and
			// grant edits (tools, capabilities) that must reach the agent's
			// conversations.
			extra = []source.Source{convSource, StoreSource(opts.Store, "agents", log, conversationsOfAgent(c)),
				StoreSource(opts.Store, "grants", log, conversationsOfGrantSubjects(c)),
				StoreSource(opts.Store, "toolclasses", log, conversationsOfClass(c)),
				// The built-ins an attachment mounts depend on its spec alone.
				FilteredStoreSource(opts.Store, "monitorattachments", log, watchfilter.SameSpec, conversationsOfMonitor(c))}
		case s.name == "agent":
			extra = []source.Source{agentSource}
		case s.name == "monitorattachment":
			// Monitor and target agents appearing or going; target conversations started, archived or deleted.
			// Their status writes (a live conversation's BUSY/IDLE, an agent's counts) change nothing here.
			extra = []source.Source{
				FilteredStoreSource(opts.Store, "agents", log, watchfilter.SameSpec, attachmentsOfAgent(c, (*unstructured.Unstructured).GetName)),
				FilteredStoreSource(opts.Store, "conversations", log, watchfilter.SameSpec, attachmentsOfAgent(c, func(o *unstructured.Unstructured) string {
					a, _, _ := unstructured.NestedString(o.Object, "spec", "agentRef")
					return a
				}))}
		case s.name == "grant":
			// Leases taken and lost, and subjects appearing or going.
			extra = []source.Source{grantSource, StoreSource(opts.Store, "agents", log, grantsOfSubject(c)),
				StoreSource(opts.Store, "toolclasses", log, grantsOfClass(c))}
		}
		for _, src := range extra {
			if err := ctrl.Watch(src); err != nil {
				return fmt.Errorf("controller %s: %w", s.name, err)
			}
		}
		go func() {
			if err := ctrl.Start(ctx); err != nil && ctx.Err() == nil {
				log.Error("controller stopped", "controller", s.name, "err", err)
			}
		}()
	}
	return nil
}

// conversationController builds the conversation reconciler and the source of
// its out-of-band triggers (guest connected, status changed, image built).
func conversationController(ctx context.Context, c *storeclient.Client, opts Options) (reconcile.Reconciler, source.Source, func(types.NamespacedName)) {
	if opts.Runtime == nil {
		return &PendingReconciler{Client: c, Resource: "conversations", Refs: conversationRefs}, nil, nil
	}
	trigger, src := triggerSource(ctx)
	sessions := opts.Sessions
	if sessions == nil {
		sessions = &liveguest.Registry{DialTimeout: GuestDialTimeout}
	}
	sessions.Gateway, sessions.Changed, sessions.Ctx, sessions.Logger = opts.Gateway, trigger, ctx, opts.Logger
	images := &ImageCache{Ensurer: opts.Images, Logger: opts.Logger, Ctx: ctx, Changed: func(string) {
		var list v1alpha1.ConversationList
		if err := c.List(ctx, "", &list, nil); err != nil {
			return
		}
		for _, conv := range list.Items {
			trigger(types.NamespacedName{Namespace: conv.Namespace, Name: conv.Name})
		}
	}}
	r := &ConversationReconciler{Client: c, Runtime: opts.Runtime, Images: images, Guests: sessions,
		Egress: opts.Egress, Secrets: opts.Secrets, DataDir: opts.DataDir, SupervisorID: opts.SupervisorID, Logger: opts.Logger,
		ToolBinary: opts.ToolBinary, Attribution: opts.Attribution}
	if opts.Mail != nil {
		r.Mail = opts.Mail
	}
	if opts.Leases != nil {
		r.Leases = opts.Leases
	}
	if opts.Budget != nil {
		r.Budget = opts.Budget
		// A top-up or a held message: the agent's conversations decide again. (The agent's own status follows at
		// its next reconcile.)
		opts.Budget.Changed = func(ns, agent string) { triggerConversationsOf(ctx, c, trigger, ns, agent) }
	}
	return r, src, trigger
}

// triggerConversationsOf asks for a reconcile of every conversation of the agent (nil trigger: none).
func triggerConversationsOf(ctx context.Context, c *storeclient.Client, trigger func(types.NamespacedName), ns, agent string) {
	if trigger == nil {
		return
	}
	var list v1alpha1.ConversationList
	if err := c.List(ctx, ns, &list, nil); err != nil {
		return
	}
	for _, conv := range list.Items {
		if conv.Spec.AgentRef == agent {
			trigger(types.NamespacedName{Namespace: conv.Namespace, Name: conv.Name})
		}
	}
}

// triggerSource is a source fed by the returned function: out-of-band
// reasons to reconcile an object (a guest connected, a lease lapsed).
func triggerSource(ctx context.Context) (func(types.NamespacedName), source.Source) {
	triggers := make(chan types.NamespacedName, 1024)
	trigger := func(key types.NamespacedName) {
		select {
		case triggers <- key:
		case <-ctx.Done():
		}
	}
	src := source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case key := <-triggers:
					q.Add(reconcile.Request{NamespacedName: key})
				}
			}
		}()
		return nil
	})
	return trigger, src
}

// conversationsOfAgent maps a changed agent to its conversations. (The
// source also enqueues the agent's own name; reconciling a conversation of
// that name, or finding none, is harmless: reconciles are level-based.)
func conversationsOfAgent(c *storeclient.Client) MapFunc {
	return func(ctx context.Context, obj *unstructured.Unstructured) []reconcile.Request {
		var list v1alpha1.ConversationList
		if err := c.List(ctx, obj.GetNamespace(), &list, nil); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, conv := range list.Items {
			if conv.Spec.AgentRef == obj.GetName() {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: conv.Namespace, Name: conv.Name}})
			}
		}
		return reqs
	}
}
