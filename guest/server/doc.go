// Package server serves the AiCliPty contract (ptyapi.PTY) as JSON over HTTP,
// plus the raw PTY byte stream as a streaming response. The guest mounts it on
// the side channel; guest/ptyclient is its client.
package server
