// Package fake is an in-memory, instance-scoped runtime.Runtime for unit tests: it records specs, simulates
// container state and lifecycle events, and can run a caller-supplied function as each container's main process.
package fake
