package egress_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"aicli.dev/aicli/internal/egress"
)

// TestMetrics: admitted and refused streams are counted per kind and reason, the active gauge follows open
// tunnels, a second server on the same registry is refused, and Close unregisters.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	ln := echoListener(t)
	e := newEnv(t, egress.Options{Registerer: reg})
	e.policy(t, "", ln.Addr().String())
	if _, err := egress.NewServer(egress.Options{Registerer: reg}); err == nil {
		t.Fatal("a second server registered the same collectors")
	}
	openTunnel(t, e, ln.Addr().String())
	if rep, err := rawStream(t, e, frame(`{"kind":"proxy","target":"elsewhere.test:443"}`)); err != nil || rep.OK {
		t.Fatalf("refusal: %+v %v", rep, err)
	}
	if got := value(t, reg, "aicli_egress_admitted_total", "kind", "proxy"); got != 1 {
		t.Errorf("admitted{proxy} = %v", got)
	}
	if got := value(t, reg, "aicli_egress_refused_total", "reason", "host_not_allowed"); got != 1 {
		t.Errorf("refused{host_not_allowed} = %v", got)
	}
	// The refused stream's handler returns just after the guest has read the refusal.
	waitFor(t, "active = 1 (the open tunnel)", func() bool { return value(t, reg, "aicli_egress_active_streams", "", "") == 1 })
	if err := e.server.Close(); err != nil {
		t.Fatal(err)
	}
	if mfs, _ := reg.Gather(); len(mfs) != 0 {
		t.Fatalf("%d metric families left after Close", len(mfs))
	}
}

// value reads one counter (by label) or an unlabelled gauge (label "") from reg; -1 when absent.
func value(t *testing.T, reg *prometheus.Registry, name, label, want string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" {
				return m.GetGauge().GetValue()
			}
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == want {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}
