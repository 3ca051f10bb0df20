package controllers

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/internal/layout"
	"aicli.dev/aicli/internal/storeclient"
)

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
	}
	specs := []spec{
		{"agent", "agents", &AgentReconciler{Client: c, DataDir: opts.DataDir, SupervisorID: opts.SupervisorID, Logger: log},
			[]MapFunc{peerReferrers(c)}},
		{"conversation", "conversations", &PendingReconciler{Client: c, Resource: "conversations", Refs: conversationRefs}, nil},
		{"grant", "grants", &PendingReconciler{Client: c, Resource: "grants", Refs: grantRefs}, nil},
		{"monitorattachment", "monitorattachments", &PendingReconciler{Client: c, Resource: "monitorattachments", Refs: monitorRefs}, nil},
	}
	skip := opts.SkipNameValidation
	for _, s := range specs {
		ctrl, err := controller.NewTypedUnmanaged(s.name, controller.TypedOptions[reconcile.Request]{
			Reconciler:         s.r,
			Logger:             logr.FromSlogHandler(log.Handler()).WithValues("controller", s.name),
			SkipNameValidation: &skip,
		})
		if err != nil {
			return fmt.Errorf("controller %s: %w", s.name, err)
		}
		if err := ctrl.Watch(StoreSource(opts.Store, s.resource, log, s.mappers...)); err != nil {
			return fmt.Errorf("controller %s: %w", s.name, err)
		}
		go func() {
			if err := ctrl.Start(ctx); err != nil && ctx.Err() == nil {
				log.Error("controller stopped", "controller", s.name, "err", err)
			}
		}()
	}
	return nil
}
