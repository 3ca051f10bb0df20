// Package ocdb reads OpenCode's SQLite session store (opencode.db) without
// cgo, through the pure-Go modernc.org/sqlite driver, and dumps a session as
// the row lines the opencode adapter's ParseTranscript takes. It is a
// separate package so that only what follows OpenCode transcripts pays for
// the SQLite engine (several MB of binary).
package ocdb
