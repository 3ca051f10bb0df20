package breaker

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"aicli.dev/aicli/apis/v1alpha1"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func attachment(max, wakes, window int32) *v1alpha1.MonitorAttachment {
	a := &v1alpha1.MonitorAttachment{Spec: v1alpha1.MonitorAttachmentSpec{Breaker: v1alpha1.BreakerSpec{
		MaxConsecutiveHumanless: max, RateBackstop: v1alpha1.RateBackstop{Wakes: wakes, WindowMinutes: window}}}}
	a.Name = "watch"
	MarkClosed(a, t0)
	return a
}

func TestTripsAfterExactlyMaxHumanlessCycles(t *testing.T) {
	a := attachment(5, 100, 60)
	for i := 1; i <= 4; i++ {
		if Wake(a, t0) || Inject(a, t0) {
			t.Fatalf("tripped at cycle %d", i)
		}
	}
	if Wake(a, t0) || !Inject(a, t0) {
		t.Fatal("the 5th cycle did not trip")
	}
	c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionBreakerClosed)
	if Closed(&a.Status) || c == nil || c.Status != "False" || c.Reason != v1alpha1.ReasonHumanlessCycles ||
		!strings.Contains(c.Message, "aictl monitor rearm watch") || a.Status.TrippedReason == "" {
		t.Fatalf("after trip: %+v %+v", a.Status, c)
	}
	// Open stays open: no wake, no inject, and a human message does not reset the evidence.
	Human(a)
	if !Wake(a, t0.Add(24*time.Hour)) || !Inject(a, t0) || a.Status.ConsecutiveHumanless != 5 {
		t.Fatalf("open breaker let something through: %+v", a.Status)
	}
	Rearm(a, t0)
	if !Closed(&a.Status) || a.Status.ConsecutiveHumanless != 0 || !meta.IsStatusConditionTrue(a.Status.Conditions, v1alpha1.ConditionBreakerClosed) {
		t.Fatalf("after rearm: %+v", a.Status)
	}
}

func TestHumanResetsTheCountWhileClosed(t *testing.T) {
	a := attachment(3, 100, 60)
	for range 10 {
		Wake(a, t0)
		if Inject(a, t0) {
			t.Fatal("tripped")
		}
		Wake(a, t0)
		Inject(a, t0)
		Human(a)
	}
	if !Closed(&a.Status) {
		t.Fatal("two cycles between human messages tripped a breaker of 3")
	}
}

func TestRateBackstopIsASlidingWindow(t *testing.T) {
	a := attachment(1000, 3, 10)
	for _, m := range []int{0, 5, 6} {
		if Wake(a, t0.Add(time.Duration(m)*time.Minute)) {
			t.Fatalf("wake at minute %d tripped", m)
		}
	}
	// 11 minutes after the first wake it has left the window: a 4th wake fits.
	if Wake(a, t0.Add(11*time.Minute)) {
		t.Fatal("a wake after the window slid tripped")
	}
	if a.Status.Wakes != 3 {
		t.Fatalf("wakes in window = %d", a.Status.Wakes)
	}
	if !Wake(a, t0.Add(11*time.Minute+time.Second)) {
		t.Fatal("the 4th wake within 10 minutes did not trip")
	}
	if c := meta.FindStatusCondition(a.Status.Conditions, v1alpha1.ConditionBreakerClosed); c.Reason != v1alpha1.ReasonWakeRate {
		t.Fatalf("reason %s", c.Reason)
	}
}
