package opencode

import (
	"encoding/json"
	"io"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/harness/opencode/ocdb"
)

// OpenCode keeps sessions in SQLite (opencode.db). Its transcript line format
// is ocdb's row line: one JSON object per part row joined with its message
// row, as ocdb.DB.Dump writes it.

// Row is one row of the message or part table.
type Row = ocdb.Row

// RowLine is one transcript line: a part and the message it belongs to.
type RowLine = ocdb.RowLine

// MessageComplete reports whether a message row will not change any more (see
// ocdb.MessageComplete).
func MessageComplete(data json.RawMessage) bool { return ocdb.MessageComplete(data) }

// ParseTranscript implements harness.Adapter over RowLine lines (see
// ocdb.Parse): one entry per user or assistant text part and per tool part,
// ids being the part ids. Input that is not a JSON object yields nothing and
// no error.
func (a *Adapter) ParseTranscript(r io.Reader) ([]harness.TranscriptEntry, error) {
	return ocdb.Parse(r)
}
