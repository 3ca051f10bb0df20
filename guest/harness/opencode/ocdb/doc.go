// Package ocdb reads OpenCode's SQLite session store (opencode.db) without
// cgo, through the pure-Go modernc.org/sqlite driver: it dumps a session as
// row lines, parses them into transcript entries (the opencode adapter's
// ParseTranscript) and follows a session live (the adapter's FollowStore).
// It does not import the adapter, so the adapter can build on it.
package ocdb
