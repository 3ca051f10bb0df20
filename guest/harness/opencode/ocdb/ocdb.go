package ocdb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver (pure Go)
)

// DB is a read-only handle on an opencode.db.
type DB struct {
	db *sql.DB
}

// Open opens path read-only. OpenCode writes the database in WAL mode while
// it runs; readers see every committed transaction.
func Open(path string) (*DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open opencode db: %w", err)
	}
	q := url.Values{}
	q.Add("mode", "ro")
	q.Add("_pragma", "busy_timeout(2000)")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open opencode db: %w", err)
	}
	db.SetMaxOpenConns(1)
	return &DB{db: db}, nil
}

// Close releases the handle.
func (d *DB) Close() error { return d.db.Close() }

// Session is one row of the session table.
type Session struct {
	ID          string
	Directory   string
	Title       string
	TimeCreated time.Time
}

// Sessions lists the top-level sessions (no parent) of a directory created
// at or after since, newest first.
func (d *DB) Sessions(ctx context.Context, directory string, since time.Time) ([]Session, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, directory, title, time_created FROM session
		WHERE parent_id IS NULL AND directory = ? AND time_created >= ? ORDER BY time_created DESC, id DESC`,
		directory, since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("list opencode sessions: %w", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var s Session
		var ms int64
		if err := rows.Scan(&s.ID, &s.Directory, &s.Title, &ms); err != nil {
			return nil, fmt.Errorf("list opencode sessions: %w", err)
		}
		s.TimeCreated = time.UnixMilli(ms).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list opencode sessions: %w", err)
	}
	return out, nil
}

// ErrIncomplete marks a dump that stopped at a message still being written.
var ErrIncomplete = errors.New("message still being written")

// Dump writes the session's parts, in order, as RowLine JSON lines.
// It stops before the first message that is not complete yet (an assistant
// reply still streaming), so everything written is final and a follower can
// dump again later and skip what it has seen by part id; it then returns the
// number of lines written and an error wrapping ErrIncomplete.
func (d *DB) Dump(ctx context.Context, sessionID string, w io.Writer) (int, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT m.id, m.session_id, m.time_created, m.data,
			p.id, p.message_id, p.session_id, p.time_created, p.data
		FROM message m JOIN part p ON p.message_id = m.id
		WHERE m.session_id = ? ORDER BY m.id, p.id`, sessionID)
	if err != nil {
		return 0, fmt.Errorf("dump opencode session: %w", err)
	}
	defer rows.Close()
	enc := json.NewEncoder(w)
	n := 0
	for rows.Next() {
		var l RowLine
		var mdata, pdata string
		if err := rows.Scan(&l.Message.ID, &l.Message.SessionID, &l.Message.TimeCreated, &mdata,
			&l.Part.ID, &l.Part.MessageID, &l.Part.SessionID, &l.Part.TimeCreated, &pdata); err != nil {
			return n, fmt.Errorf("dump opencode session: %w", err)
		}
		if !MessageComplete(json.RawMessage(mdata)) {
			return n, fmt.Errorf("dump opencode session %s at %s: %w", sessionID, l.Message.ID, ErrIncomplete)
		}
		l.Message.Data, l.Part.Data = json.RawMessage(mdata), json.RawMessage(pdata)
		if err := enc.Encode(l); err != nil {
			return n, fmt.Errorf("dump opencode session: %w", err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("dump opencode session: %w", err)
	}
	return n, nil
}
