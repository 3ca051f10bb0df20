// Package metrics pulls in prometheus.
package metrics

import "github.com/prometheus/client_golang/prometheus"

// Use uses prometheus.
func Use() { prometheus.Use() }
