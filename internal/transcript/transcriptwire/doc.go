// Package transcriptwire holds the transcript's wire shapes, the attributed
// entry and its speakers, shared by the server (transcript, convapi) and its
// clients (aictl, consoles) without pulling the store into them.
package transcriptwire
