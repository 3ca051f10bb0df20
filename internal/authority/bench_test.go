package authority

import (
	"fmt"
	"testing"
	"time"

	"aicli.dev/aicli/internal/capability"
	"aicli.dev/aicli/internal/grants"
)

// BenchmarkLeaseRenewal100 measures one renewal round of 100 live
// conversations holding 3 tools each (mint every token, push to an in-memory
// holder) and reports what the renewals cost as a fraction of one core at
// the default TTL (one round every TTL/3).
func BenchmarkLeaseRenewal100(b *testing.B) {
	keys, err := capability.OpenKeyring(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	m := &Manager{Keys: keys}
	var tools []grants.Tool
	for i := range 3 {
		tools = append(tools, grants.Tool{ResolvedTool: grants.ResolvedTool{Name: fmt.Sprintf("tool-%d", i)}, Grant: "g", Generation: 1})
	}
	leases := make([]Lease, 100)
	for i := range leases {
		leases[i] = Lease{Namespace: "default", Agent: "a", Conversation: fmt.Sprint("c", i), UID: fmt.Sprint("uid-", i),
			Fingerprint: "sha256:fp", Tools: tools, Holder: &memHolder{}}
	}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		for _, l := range leases {
			caps, _, err := m.mint(l, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			_ = l.Holder.SetCapabilities(b.Context(), caps)
		}
	}
	perRound := time.Since(start) / time.Duration(b.N)
	b.ReportMetric(float64(perRound.Microseconds()), "µs/round")
	b.ReportMetric(100*perRound.Seconds()/(DefaultTTL/3).Seconds(), "%core")
}
