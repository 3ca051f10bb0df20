// Package convapitest runs the conversation API in-process for tests: a real
// pebble store and API server, with in-memory fakes at the guest, transcript
// and attribution seams.
package convapitest
