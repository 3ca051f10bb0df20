package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"aicli.dev/aicli/apis/v1alpha1"
)

// phase is one ordered sub-reconciler. It owns exactly one condition: on
// success it sets it True itself; when it returns a *blockedError (or a
// transient error wrapping one) the runner sets it False with the error's
// reason and message. No other code writes that condition.
type phase[S any] struct {
	// condition is the condition type the phase owns.
	condition string
	run       func(ctx context.Context, s S) (reconcile.Result, error)
	// always runs the phase even after an earlier one blocked: a phase that
	// only reports (it acts on nothing the blocked phase provides).
	always bool
}

// blockKind says how a phase is blocked, and so whether to requeue.
type blockKind int

const (
	// blockWaiting: a dependency is not ready yet; requeue after the hint (or
	// on the event that ends the wait). Reconciling=True.
	blockWaiting blockKind = iota
	// blockStalled: only the user can fix it; no requeue (a spec change or
	// the referenced object appearing triggers the next reconcile). Stalled=True.
	blockStalled
	// blockTransient: an operation failed; the error is returned so the
	// workqueue retries with backoff. Reconciling=True.
	blockTransient
)

// blockedError is a phase's typed verdict that it cannot proceed.
type blockedError struct {
	kind   blockKind
	reason string
	msg    string
	after  time.Duration
	err    error
}

func (e *blockedError) Error() string {
	if e.err != nil && e.err.Error() != e.msg {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *blockedError) Unwrap() error { return e.err }

// waiting reports a dependency that is not ready; after (optional) is when to look again.
func waiting(reason string, after time.Duration, format string, args ...any) error {
	return &blockedError{kind: blockWaiting, reason: reason, after: after, msg: fmt.Sprintf(format, args...)}
}

// stalled reports a problem only the user can fix; the message names the field.
func stalled(reason string, format string, args ...any) error {
	return &blockedError{kind: blockStalled, reason: reason, msg: fmt.Sprintf(format, args...)}
}

// transient reports a failed operation to retry with backoff under reason.
func transient(reason string, err error) error {
	return &blockedError{kind: blockTransient, reason: reason, msg: err.Error(), err: err}
}

// phaseOutcome is what running a phase list produced.
type phaseOutcome struct {
	result reconcile.Result
	// blocked is the first blocking verdict, nil when every phase passed;
	// blockedBy is the condition of the phase that gave it.
	blocked   *blockedError
	blockedBy string
	// err is the error to return to the workqueue (transient failures).
	err error
}

// runPhases runs phases in order on s, writing owned conditions of blocked
// phases into conds (stamped with generation). After the first phase that is
// blocked only phases marked always run, unless keepGoing is set, in which
// case waiting and stalled verdicts are recorded and every phase still runs
// (the teardown pass of a conversation that must not run). A transient
// failure or a plain error ends the pass at once. Results are merged: the
// shortest RequeueAfter wins.
func runPhases[S any](ctx context.Context, s S, conds *[]metav1.Condition, generation int64, keepGoing bool, phases []phase[S]) phaseOutcome {
	var out phaseOutcome
	for _, p := range phases {
		if out.blocked != nil && !keepGoing && !p.always {
			// Not evaluated this pass: what an earlier pass left there would
			// claim more than is known now.
			if meta.FindStatusCondition(*conds, p.condition) != nil {
				setCondition(conds, generation, p.condition, metav1.ConditionUnknown, v1alpha1.ReasonDependencyNotReady,
					"waiting for "+out.blockedBy)
			}
			continue
		}
		res, err := p.run(ctx, s)
		out.result = mergeResults(out.result, res)
		if err == nil {
			continue
		}
		var b *blockedError
		if !errors.As(err, &b) {
			out.err = err
			return out
		}
		setCondition(conds, generation, p.condition, metav1.ConditionFalse, b.reason, b.msg)
		if b.after > 0 {
			out.result = mergeResults(out.result, reconcile.Result{RequeueAfter: b.after})
		}
		if out.blocked == nil {
			out.blocked, out.blockedBy = b, p.condition
		}
		if b.kind == blockTransient {
			out.err = err
			return out
		}
	}
	return out
}

func mergeResults(a, b reconcile.Result) reconcile.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter < b.RequeueAfter:
		return a
	default:
		return b
	}
}

// markProgress sets Reconciling and Stalled from a pass's verdict; each is
// present only while true.
func markProgress(conds *[]metav1.Condition, generation int64, out phaseOutcome) {
	meta.RemoveStatusCondition(conds, v1alpha1.ConditionStalled)
	meta.RemoveStatusCondition(conds, v1alpha1.ConditionReconciling)
	switch b := out.blocked; {
	case b != nil && b.kind == blockStalled:
		setCondition(conds, generation, v1alpha1.ConditionStalled, metav1.ConditionTrue, b.reason, b.msg)
	case b != nil:
		setCondition(conds, generation, v1alpha1.ConditionReconciling, metav1.ConditionTrue, b.reason, b.msg)
	case out.err != nil:
		setCondition(conds, generation, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonRetrying, out.err.Error())
	}
}
