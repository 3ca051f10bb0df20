package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the API server's Prometheus metrics.
type Metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers the API metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aicli_apiserver_requests_total", Help: "API requests by method and response code.",
		}, []string{"method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "aicli_apiserver_request_duration_seconds", Help: "API request latency (watches, follows and websocket upgrades excluded).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"method"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

func (m *Metrics) observe(r *http.Request, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(r.Method, strconv.Itoa(code)).Inc()
	if q := r.URL.Query(); q.Get("watch") == "" && q.Get("follow") == "" && r.Header.Get("Upgrade") == "" {
		m.latency.WithLabelValues(r.Method).Observe(d.Seconds())
	}
}

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
