// Package match finds a monitor's trigger keywords in transcript text: one
// Aho–Corasick automaton per compiled trigger, so a delta is scanned once
// whatever the number of keywords (docs/decisions/0025-monitor-matching.md).
//
// A Matcher is compiled once per MonitorAttachment generation with Compile,
// is immutable afterwards and safe for concurrent use. Match reports every
// keyword occurrence with byte offsets into the text it was given; Speaks
// applies the trigger's speaker filter; Excerpt cuts the text around a hit
// for the monitor's wake message. Validate is the same check as Compile's,
// as a field.ErrorList for admission.
package match
