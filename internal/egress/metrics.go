package egress

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// promMetrics are the server's Prometheus collectors (registered only when Options.Registerer is set).
type promMetrics struct {
	reg      prometheus.Registerer
	admitted *prometheus.CounterVec
	refused  *prometheus.CounterVec
	active   prometheus.GaugeFunc
}

func newPromMetrics(reg prometheus.Registerer, active func() int) (*promMetrics, error) {
	m := &promMetrics{
		reg: reg,
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aicli_egress_admitted_total",
			Help: "Guest egress streams admitted, by kind (provider or proxy).",
		}, []string{"kind"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aicli_egress_refused_total",
			Help: "Guest egress streams refused, by reason.",
		}, []string{"reason"}),
		active: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "aicli_egress_active_streams",
			Help: "Guest egress streams being served, over all conversations.",
		}, func() float64 { return float64(active()) }),
	}
	if reg == nil {
		return m, nil
	}
	var done []prometheus.Collector
	for _, c := range []prometheus.Collector{m.admitted, m.refused, m.active} {
		if err := reg.Register(c); err != nil {
			for _, d := range done { // only what this call registered (Unregister matches by descriptor)
				reg.Unregister(d)
			}
			return nil, fmt.Errorf("egress: register metrics: %w", err)
		}
		done = append(done, c)
	}
	return m, nil
}

func (m *promMetrics) unregister() {
	if m.reg != nil {
		m.reg.Unregister(m.admitted)
		m.reg.Unregister(m.refused)
		m.reg.Unregister(m.active)
	}
}
