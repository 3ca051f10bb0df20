package mailapi_test

import (
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"aicli.dev/aicli/internal/mailbox/mailwire"
)

// BenchmarkSendP50 reports the latency of one send through the API (HTTP on
// loopback, permission check, synced append), sequential.
func BenchmarkSendP50(b *testing.B) {
	e := serve(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		e.send("a", mailwire.SendRequest{To: "b", Body: fmt.Sprint("m", i)}, http.StatusCreated)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
