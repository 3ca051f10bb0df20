// Package budget is the agent spend budget: a token bucket in micro-USD that accrues at spec.budget.usdPerHour,
// charged from measured conversation spend and tool-call costs, and the durable ledger that holds messages the
// bucket cannot cover yet (docs/budget.md).
package budget
