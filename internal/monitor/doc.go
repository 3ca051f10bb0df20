// Package monitor is the supervisor's watch loop for MonitorAttachments
// (docs/monitors.md, ADR 0026): it follows every watched target
// conversation's attributed transcript from the attachment's durable cursor,
// matches the trigger's keywords, wakes the monitor agent with one
// structured trigger message per coalesced batch of hits (serially, one live
// conversation per monitor agent), and delivers the monitor's advice (the
// advise built-in) into the target conversation, under the circuit breaker
// of internal/monitor/breaker.
package monitor
