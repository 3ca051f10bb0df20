// Package toolcallstest seeds a store with grants and recorded tool calls,
// as the tool server writes them, for tests of the toolcalls read model.
package toolcallstest
