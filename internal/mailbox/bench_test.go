package mailbox_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"aicli.dev/aicli/internal/mailbox"
)

// BenchmarkAppend measures one synced append at a time (the send path) and
// reports its p50 and p99.
func BenchmarkAppend(b *testing.B) {
	m, _, _ := open(b)
	ctx := ctxT(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := m.Append(ctx, mailbox.Message{Namespace: ns, From: "alice", To: "bob", Body: fmt.Sprint("hello ", i)}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkOpenReplay100k measures Open replaying a log holding an inbox of
// 100,000 messages (the store already open).
func BenchmarkOpenReplay100k(b *testing.B) {
	const n = 100_000
	_, s, _ := open(b)
	if err := mailbox.SeedLog(ctxT(b), s, ns, "bob", n); err != nil {
		b.Fatal(err)
	}
	ctx := ctxT(b)
	b.ResetTimer()
	for b.Loop() {
		m, err := mailbox.Open(ctx, s, mailbox.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if u, err := m.Unread(ctx, ns, "bob"); err != nil || u != n {
			b.Fatalf("unread after replay = %d, %v", u, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
}

// BenchmarkOpenReplay100kCold is BenchmarkOpenReplay100k including reopening
// the store (a supervisor restart).
func BenchmarkOpenReplay100kCold(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	s := openStore(b, dir)
	if err := mailbox.SeedLog(ctxT(b), s, ns, "bob", n); err != nil {
		b.Fatal(err)
	}
	_ = s.Close()
	ctx := ctxT(b)
	b.ResetTimer()
	for b.Loop() {
		s := openStore(b, dir)
		m, err := mailbox.Open(ctx, s, mailbox.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if u, err := m.Unread(ctx, ns, "bob"); err != nil || u != n {
			b.Fatalf("unread after replay = %d, %v", u, err)
		}
		b.StopTimer()
		_ = s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
}

// BenchmarkInboxPage100 measures reading a page of 100 unread messages from an
// inbox of 10,000.
func BenchmarkInboxPage100(b *testing.B) {
	_, s, _ := open(b)
	ctx := ctxT(b)
	if err := mailbox.SeedLog(ctx, s, ns, "bob", 10_000); err != nil {
		b.Fatal(err)
	}
	m, err := mailbox.Open(ctx, s, mailbox.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		got, err := m.Inbox(ctx, ns, "bob", mailbox.InboxOptions{UnreadOnly: true, After: 5000, Limit: 100})
		if err != nil || len(got) != 100 {
			b.Fatalf("page = %d, %v", len(got), err)
		}
	}
}
