// Package fake is the harness adapter for aicli-fake-cli, the test double of a
// real AI CLI. It is the reference implementation of harness.Adapter.
package fake
