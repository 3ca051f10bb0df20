// Package breaker is a monitor's circuit breaker over its MonitorAttachment
// status: it counts wake→inject cycles since the last human message and wakes
// within the rate backstop's window, trips into a state only a human re-arm
// clears, and never closes by itself (no timer). It is pure: callers persist
// the status they pass in (a status write, so a trip survives kill -9 and
// shows in the attachment's history).
package breaker

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"aicli.dev/aicli/apis/v1alpha1"
)

// Defaults of an unset BreakerSpec (the schema's defaults).
const (
	DefaultMaxConsecutiveHumanless = 5
	DefaultBackstopWakes           = 20
	DefaultBackstopWindow          = time.Hour
)

// Closed reports whether the breaker lets the monitor evaluate, wake and inject.
func Closed(st *v1alpha1.MonitorAttachmentStatus) bool { return st.TrippedAt == nil }

// Wake records a wake at now. It trips the breaker (and returns true: the wake
// must not happen) when the wake would exceed the rate backstop: more than
// rateBackstop.wakes wakes within rateBackstop.windowMinutes.
func Wake(a *v1alpha1.MonitorAttachment, now time.Time) (tripped bool) {
	st := &a.Status
	if !Closed(st) {
		return true
	}
	wakes, window := backstop(a.Spec.Breaker)
	kept := st.RecentWakes[:0]
	for _, t := range st.RecentWakes {
		if now.Sub(t.Time) < window {
			kept = append(kept, t)
		}
	}
	st.RecentWakes = kept
	if len(kept) >= wakes {
		trip(a, v1alpha1.ReasonWakeRate, fmt.Sprintf("%d wakes within %s: the rate backstop (%d per %s) is reached",
			len(kept)+1, window, wakes, window), now)
		st.Wakes = int32(len(kept))
		return true
	}
	st.RecentWakes = append(st.RecentWakes, metav1.NewTime(now))
	st.Wakes = int32(len(st.RecentWakes))
	t := metav1.NewTime(now)
	st.LastWake = &t
	return false
}

// Inject records one wake→inject cycle at now: the human-less count grows,
// and at maxConsecutiveHumanless the breaker trips (the advice that completed
// the cycle was already delivered). It returns whether it tripped.
func Inject(a *v1alpha1.MonitorAttachment, now time.Time) (tripped bool) {
	st := &a.Status
	if !Closed(st) {
		return true
	}
	st.ConsecutiveHumanless++
	if max := maxHumanless(a.Spec.Breaker); st.ConsecutiveHumanless >= max {
		trip(a, v1alpha1.ReasonHumanlessCycles, fmt.Sprintf("%d consecutive wake→inject cycles without a human message "+
			"(maxConsecutiveHumanless %d)", st.ConsecutiveHumanless, max), now)
		return true
	}
	return false
}

// Human records a human message in a target conversation: the human-less
// count restarts, but only while the breaker is closed (a tripped breaker
// keeps its evidence until re-armed).
func Human(a *v1alpha1.MonitorAttachment) {
	if Closed(&a.Status) {
		a.Status.ConsecutiveHumanless = 0
	}
}

// Rearm closes a tripped breaker: a human's decision on the API. The counts
// and the window start again.
func Rearm(a *v1alpha1.MonitorAttachment, now time.Time) {
	st := &a.Status
	st.TrippedAt, st.TrippedReason, st.PausesPending = nil, "", nil
	st.ConsecutiveHumanless, st.Wakes, st.RecentWakes = 0, 0, nil
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionBreakerClosed,
		Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRearmed, ObservedGeneration: a.Generation,
		LastTransitionTime: metav1.NewTime(now), Message: "re-armed by a human"})
}

// MarkClosed sets BreakerClosed=True on an attachment whose breaker never
// tripped (a new attachment), leaving a tripped one as it is.
func MarkClosed(a *v1alpha1.MonitorAttachment, now time.Time) {
	if !Closed(&a.Status) || meta.IsStatusConditionTrue(a.Status.Conditions, v1alpha1.ConditionBreakerClosed) {
		return
	}
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionBreakerClosed,
		Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, ObservedGeneration: a.Generation,
		LastTransitionTime: metav1.NewTime(now), Message: "closed: the monitor may evaluate, wake and inject"})
}

func trip(a *v1alpha1.MonitorAttachment, reason, msg string, now time.Time) {
	t := metav1.NewTime(now)
	a.Status.TrippedAt, a.Status.TrippedReason = &t, msg
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionBreakerClosed,
		Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: a.Generation, LastTransitionTime: t,
		Message: "tripped: " + msg + "; both conversations are paused; only `aictl monitor rearm " + a.Name + "` closes it"})
}

func maxHumanless(b v1alpha1.BreakerSpec) int32 {
	if b.MaxConsecutiveHumanless > 0 {
		return b.MaxConsecutiveHumanless
	}
	return DefaultMaxConsecutiveHumanless
}

func backstop(b v1alpha1.BreakerSpec) (int, time.Duration) {
	wakes, window := DefaultBackstopWakes, DefaultBackstopWindow
	if b.RateBackstop.Wakes > 0 {
		wakes = int(b.RateBackstop.Wakes)
	}
	if b.RateBackstop.WindowMinutes > 0 {
		window = time.Duration(b.RateBackstop.WindowMinutes) * time.Minute
	}
	return wakes, window
}
