// Package nbwriter provides a bounded, never-blocking writer: writes are queued
// up to a byte limit and copied to the destination by one goroutine; when the
// destination stalls (e.g. a container's stdout while dockerd is down) excess
// output is dropped and counted instead of blocking the writer.
package nbwriter
