package supervisor

import (
	"context"
	"log/slog"

	"aicli.dev/aicli/apis/v1alpha1"
	"aicli.dev/aicli/internal/apiserver"
	"aicli.dev/aicli/internal/liveguest"
	"aicli.dev/aicli/internal/monitor"
	"aicli.dev/aicli/internal/monitor/monitorapi"
	"aicli.dev/aicli/internal/monitor/remote"
	"aicli.dev/aicli/internal/store"
	"aicli.dev/aicli/internal/storeclient"
	"aicli.dev/aicli/internal/transcript"
)

// startMonitors runs the monitors' watch loop until ctx ends and serves the
// attachments' rearm on api. The returned service is the advise built-in's Advisor.
// Remote targets are reached through dialer.
func startMonitors(ctx context.Context, st *store.Store, transcripts *transcript.StoreLog, sessions *liveguest.Registry,
	attribution *transcript.Attribution, dialer *remote.Dialer, api *apiserver.Server, log *slog.Logger) *monitor.Service {
	svc := &monitor.Service{Client: storeclient.New(st), Watch: st, Transcripts: transcripts, Guests: sessions,
		Attribution: attribution, Logger: log,
		Remote: func(ns string, rs *v1alpha1.RemoteSupervisor) (monitor.TargetSide, error) {
			side, err := dialer.Side(ns, rs)
			if err != nil {
				return nil, err
			}
			return side, nil
		}}
	go func() { _ = svc.Run(ctx) }()
	monitorapi.Mount(api, st)
	return svc
}
