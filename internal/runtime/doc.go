// Package runtime is the narrow seam between the supervisor and the container engine: value-type container specs,
// observed container states, lifecycle events, and a label-based orphan reaper that works over any Runtime.
package runtime
