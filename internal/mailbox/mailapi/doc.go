// Package mailapi serves the agents' mailbox to the namespace's owner: send
// mail as one of its agents (through the post office, so the sender's peer
// permissions apply), read an inbox page by page, and advance its read cursor.
package mailapi
