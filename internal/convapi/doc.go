// Package convapi serves the conversation operations of the public API as
// subresources: start-or-continue on agents, and send, screen, attach and
// transcript on conversations.
package convapi
