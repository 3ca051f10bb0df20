package gateway

import (
	"fmt"
	"maps"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"aicli.dev/aicli/guest/sidechannel/wire"
)

// metrics counts admissions and refusals, in memory for Stats and optionally as Prometheus counters.
type metrics struct {
	mu          sync.Mutex
	admitted    uint64
	reconnected uint64
	refused     map[wire.Reason]uint64

	reg          prometheus.Registerer
	promAdmitted *prometheus.CounterVec
	promRefused  *prometheus.CounterVec
	promLive     prometheus.GaugeFunc
}

func newMetrics(reg prometheus.Registerer, live func() int) (*metrics, error) {
	m := &metrics{
		refused: make(map[wire.Reason]uint64),
		reg:     reg,
		promAdmitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aicli_gateway_admitted_total",
			Help: "Guests admitted on the side channel, by credential kind (launch or reconnect).",
		}, []string{"kind"}),
		promRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aicli_gateway_refused_total",
			Help: "Side-channel connections refused, by reason.",
		}, []string{"reason"}),
		promLive: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "aicli_gateway_live_guests",
			Help: "Conversations with a connected, admitted guest.",
		}, func() float64 { return float64(live()) }),
	}
	if reg != nil {
		var done []prometheus.Collector
		for _, c := range []prometheus.Collector{m.promAdmitted, m.promRefused, m.promLive} {
			if err := reg.Register(c); err != nil {
				// Unregister only what this call registered: Unregister matches by descriptor, so touching the
				// collector that failed would remove another gateway's equal collector.
				for _, d := range done {
					reg.Unregister(d)
				}
				return nil, fmt.Errorf("register metrics: %w", err)
			}
			done = append(done, c)
		}
	}
	return m, nil
}

func (m *metrics) unregister() {
	if m.reg != nil {
		m.reg.Unregister(m.promAdmitted)
		m.reg.Unregister(m.promRefused)
		m.reg.Unregister(m.promLive)
	}
}

func (m *metrics) admit(reconnect bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if reconnect {
		m.reconnected++
		m.promAdmitted.WithLabelValues("reconnect").Inc()
	} else {
		m.admitted++
		m.promAdmitted.WithLabelValues("launch").Inc()
	}
}

func (m *metrics) refuse(r wire.Reason) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refused[r]++
	m.promRefused.WithLabelValues(string(r)).Inc()
}

func (m *metrics) snapshot() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Stats{Admitted: m.admitted, Reconnected: m.reconnected, Refused: maps.Clone(m.refused)}
}
