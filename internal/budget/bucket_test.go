package budget

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestBucketAccrue(t *testing.T) {
	tests := []struct {
		name  string
		b     Bucket
		now   time.Time
		level Micro
	}{
		{"half hour at 1 USD/h", Bucket{Rate: MicroPerUSD, Capacity: 10 * MicroPerUSD, AsOf: t0}, t0.Add(30 * time.Minute), 500_000},
		{"capped at capacity", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD, Level: 900_000, AsOf: t0}, t0.Add(time.Hour), MicroPerUSD},
		{"debt is paid back first", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD, Level: -2 * MicroPerUSD, AsOf: t0}, t0.Add(time.Hour), -MicroPerUSD},
		{"clock went back", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD, Level: 7, AsOf: t0}, t0.Add(-time.Hour), 7},
		{"zero rate", Bucket{Capacity: MicroPerUSD, Level: 7, AsOf: t0}, t0.Add(time.Hour), 7},
		{"zero asOf starts now", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD, Level: 3}, t0, 3},
		{"above capacity after a top-up stays", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD, Level: 5 * MicroPerUSD, AsOf: t0}, t0.Add(time.Hour), 5 * MicroPerUSD},
		{"one second at 3.6 USD/h", Bucket{Rate: 3_600_000, Capacity: MicroPerUSD, AsOf: t0}, t0.Add(time.Second), 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			b.Accrue(tt.now)
			if b.Level != tt.level {
				t.Fatalf("level = %d, want %d", b.Level, tt.level)
			}
			if tt.now.After(tt.b.AsOf) && !b.AsOf.Equal(tt.now) {
				t.Fatalf("asOf = %v, want %v", b.AsOf, tt.now)
			}
		})
	}
}

func TestBucketChargeAndAdd(t *testing.T) {
	b := Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD, Level: 100, AsOf: t0}
	b.Charge(300)
	b.Charge(-50) // ignored
	if b.Level != -200 {
		t.Fatalf("level after charge = %d, want -200", b.Level)
	}
	b.Add(5 * MicroPerUSD)
	if b.Level != 5*MicroPerUSD-200 {
		t.Fatalf("level after add = %d", b.Level)
	}
}

func TestBucketTimeUntil(t *testing.T) {
	const maxWait = 10 * time.Minute
	tests := []struct {
		name string
		b    Bucket
		need Micro
		wait time.Duration
		ok   bool
	}{
		{"covered now", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD, Level: 500}, 500, 0, true},
		{"zero need, zero level", Bucket{Rate: 0, Capacity: MicroPerUSD}, 0, 0, true},
		{"six minutes at 1 USD/h", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD}, 100_000, 6 * time.Minute, true},
		{"rounded up to the nanosecond", Bucket{Rate: 3 * MicroPerUSD, Capacity: MicroPerUSD}, 1, 1200 * time.Microsecond, true},
		{"longer than max wait", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD}, 200_000, 12 * time.Minute, false},
		{"zero rate never", Bucket{Capacity: MicroPerUSD, Level: 10}, 11, 0, false},
		{"above capacity never", Bucket{Rate: 100 * MicroPerUSD, Capacity: MicroPerUSD}, 2 * MicroPerUSD, 0, false},
		{"debt adds to the wait", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD, Level: -50_000}, 50_000, 6 * time.Minute, true},
		{"just within max wait", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD}, 166_666, 599_997_600 * time.Microsecond, true},
		{"just past max wait", Bucket{Rate: MicroPerUSD, Capacity: MicroPerUSD}, 166_667, 600_001_200 * time.Microsecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wait, ok := tt.b.TimeUntil(tt.need, maxWait)
			if ok != tt.ok || (tt.wait != 0 && wait != tt.wait) || (tt.wait == 0 && ok && wait != 0) {
				t.Fatalf("TimeUntil(%d) = %v, %v; want %v, %v", tt.need, wait, ok, tt.wait, tt.ok)
			}
		})
	}
}

func TestParseAndFormatUSD(t *testing.T) {
	good := map[string]Micro{"0": 0, "1": MicroPerUSD, "0.25": 250_000, "12.000001": 12_000_001, "3.5": 3_500_000}
	for s, want := range good {
		got, err := ParseUSD(s)
		if err != nil || got != want {
			t.Errorf("ParseUSD(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "-1", "1.", ".5", "1.0000001", "abc", "+1", "1e3", "99999999999999999"} {
		if _, err := ParseUSD(s); err == nil {
			t.Errorf("ParseUSD(%q) accepted", s)
		}
	}
	for m, want := range map[Micro]string{0: "0", MicroPerUSD: "1", 1_500_000: "1.5", 1: "0.000001", -250_000: "-0.25"} {
		if got := m.String(); got != want {
			t.Errorf("Micro(%d).String() = %q, want %q", m, got, want)
		}
	}
	if got := FromUSD(0.0015449999); got != 1545 {
		t.Errorf("FromUSD = %d, want 1545", got)
	}
}

func TestNextMessageCost(t *testing.T) {
	tests := []struct {
		spent     Micro
		delivered int64
		want      Micro
	}{
		{0, 0, 0}, {500, 0, 0}, {0, 3, 0}, {900, 3, 300}, {1000, 3, 334}, {-5, 2, 0},
	}
	for _, tt := range tests {
		if got := NextMessageCost(tt.spent, tt.delivered); got != tt.want {
			t.Errorf("NextMessageCost(%d, %d) = %d, want %d", tt.spent, tt.delivered, got, tt.want)
		}
	}
}
