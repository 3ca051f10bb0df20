package ptyhost

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// The outbox makes an accepted message durable (docs/decisions/0036-accepted-messages-outlive-the-container.md).
// SendMessage appends the message to a file on the agent's durable home, synced, before it answers; the message is
// then queued in memory as before. The container may die while the message waits in that queue (the CLI is busy),
// while it is typed, or before the CLI has written it to its session store: when the same session is started again
// (a resume, or a fresh start under the same pre-assigned id), the guest delivers every such message again, first
// and in order. A message the CLI has recorded is never delivered again: before each message is typed the outbox
// notes how many entries the session store holds, and the message counts as recorded once a user entry with its
// text appears at or after that index. While the CLI runs, a watcher marks recorded messages done, and the file is
// emptied whenever nothing is pending, so it holds about one queue's worth of messages.

// outboxFile is the outbox, relative to the home, in a directory of the guest's own (0700).
const (
	outboxDir  = ".aicli-guest"
	outboxFile = outboxDir + "/outbox.jsonl"
	// maxOutboxBytes bounds what is read back at a start (the outbox holds one queue's worth of messages).
	maxOutboxBytes = 256 << 20
)

// Record operations of the outbox file.
const (
	opSession = "session" // the records that follow belong to Session
	opAccept  = "accept"  // message ID with Text was accepted
	opTyped   = "typed"   // message ID is about to be typed; the session store held Before entries
	opDone    = "done"    // message ID was recorded by the CLI (or withdrawn)
)

// outboxRecord is one line of the outbox file.
type outboxRecord struct {
	Op      string `json:"op"`
	Session string `json:"session,omitempty"`
	ID      uint64 `json:"id,omitempty"`
	Text    string `json:"text,omitempty"`
	Before  int    `json:"before,omitempty"`
}

// outMsg is an accepted message the CLI is not known to have recorded.
type outMsg struct {
	id     uint64
	text   string
	typed  bool
	before int // session store entries before it was typed
}

// queued is a message in the delivery queue; id 0 when there is no outbox.
type queued struct {
	id   uint64
	text string
}

// outbox is the durable record of a run's accepted messages. A nil outbox records nothing.
type outbox struct {
	mu      sync.Mutex
	root    *os.Root // the home
	f       *os.File // the file, open for appending; nil until the first write
	session string
	log     *slog.Logger
	nextID  uint64
	pending []*outMsg
	// read is the host's reader of the session store (Host.readTranscript); path and tail are where the outbox
	// stands in it, count the number of entries read.
	read  storeRead
	path  string
	tail  storeTail
	count int
}

// storeRead parses the complete lines appended to a session file since t, handing their entries to fn and advancing
// t (Host.readTranscript).
type storeRead func(path string, t *storeTail, fn func(ptyapi.TranscriptEntry) error) (bool, error)

// readStore reads what the CLI appended to its session store since the last read; a store truncated or replaced
// is read again from its start, its entries counted from 0.
func (o *outbox) readStore(fn func(ptyapi.TranscriptEntry) error) error {
	if st, err := os.Stat(o.path); err == nil && st.Size() < o.tail.offset {
		o.count = 0
	}
	_, err := o.read(o.path, &o.tail, fn)
	return err
}

// openOutbox opens the home's outbox for a run of session (known at launch) and returns the messages of an
// earlier run of the same session that its CLI never recorded, to be delivered first. An outbox left by another
// session is dropped (its messages belong to a run that is not continued). It returns a nil outbox, and nothing to
// deliver, when the session store cannot be read as lines (harness.StoreFollower) or the session id is not known at
// launch.
func openOutbox(home, workDir, session string, a harness.Adapter, read storeRead, log *slog.Logger) (*outbox, []queued, error) {
	if _, ok := a.(harness.StoreFollower); ok || session == "" {
		return nil, nil, nil
	}
	path, err := a.SessionFile(home, workDir, session)
	if err != nil {
		return nil, nil, err
	}
	root, err := os.OpenRoot(home)
	if err != nil {
		return nil, nil, err
	}
	o := &outbox{root: root, session: session, log: log, nextID: 1, read: read, path: path}
	prevSession, prev, err := o.load()
	if err != nil {
		log.Warn("outbox unreadable: messages of an earlier run are not delivered again", "err", err)
		prev = nil
	}
	// The whole session store, as it is before the CLI starts: what an earlier run's CLI recorded (only its user
	// entries are kept, and only when there is something to look for).
	var users []indexedText
	keep := len(prev) > 0 && prevSession == session
	for {
		at := o.tail.offset
		if err := o.readStore(func(e ptyapi.TranscriptEntry) error {
			if keep && e.Role == ptyapi.RoleUser {
				users = append(users, indexedText{o.count, e.Text})
			}
			o.count++
			return nil
		}); err != nil {
			_ = root.Close()
			return nil, nil, fmt.Errorf("outbox: reading the session store: %w", err)
		}
		if o.tail.offset == at { // read to its end (one read takes at most 64 MiB)
			break
		}
	}
	var again []queued
	switch {
	case len(prev) == 0:
	case prevSession != session:
		log.Warn("dropping accepted messages of another session's run", "session", prevSession, "messages", len(prev))
	default:
		for _, m := range unrecorded(prev, users) {
			again = append(again, queued{id: o.nextID, text: m.text})
			o.pending = append(o.pending, &outMsg{id: o.nextID, text: m.text})
			o.nextID++
		}
		if n := len(prev) - len(again); n > 0 {
			log.Info("outbox: the CLI recorded messages of the earlier run", "messages", n)
		}
	}
	if err := o.rewrite(); err != nil {
		_ = root.Close()
		return nil, nil, err
	}
	if len(again) > 0 {
		log.Info("delivering again the accepted messages the CLI never recorded", "session", session, "messages", len(again))
	}
	return o, again, nil
}

// load reads the outbox file: the session it belongs to and its pending messages, in acceptance order.
func (o *outbox) load() (string, []*outMsg, error) {
	f, err := o.root.Open(outboxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	var session string
	var order []*outMsg
	byID := map[uint64]*outMsg{}
	sc := bufio.NewScanner(&limitedFile{f: f, left: maxOutboxBytes})
	sc.Buffer(make([]byte, 64<<10), 6*ptyapi.MaxMessageBytes+1024) // a message with every byte escaped
	for sc.Scan() {
		var r outboxRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // a line cut by a crash
		}
		switch r.Op {
		case opSession:
			session, order, byID = r.Session, nil, map[uint64]*outMsg{}
		case opAccept:
			m := &outMsg{id: r.ID, text: r.Text}
			byID[r.ID] = m
			order = append(order, m)
		case opTyped:
			if m := byID[r.ID]; m != nil {
				m.typed, m.before = true, r.Before
			}
		case opDone:
			delete(byID, r.ID)
		}
	}
	if err := sc.Err(); err != nil {
		return "", nil, err
	}
	var pending []*outMsg
	for _, m := range order {
		if byID[m.id] == m {
			pending = append(pending, m)
		}
	}
	return session, pending, nil
}

// indexedText is a user entry of the session store and its index among all its entries.
type indexedText struct {
	index int
	text  string
}

// unrecorded returns the messages of prev the session store's user entries do not show: every one not typed yet,
// and every typed one without a user entry of its text at or after the index it was typed at (each entry stands for
// at most one message, taken in order).
func unrecorded(prev []*outMsg, users []indexedText) []*outMsg {
	var out []*outMsg
	next := 0 // entries before it stand for earlier messages
	for _, m := range prev {
		if !m.typed {
			out = append(out, m)
			continue
		}
		found := -1
		for _, u := range users {
			if u.index >= max(m.before, next) && sameText(u.text, m.text) {
				found = u.index
				break
			}
		}
		if found < 0 {
			out = append(out, m)
			continue
		}
		next = found + 1
	}
	return out
}

// sameText compares a message with a session store entry as the transcript attribution does.
func sameText(a, b string) bool {
	norm := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }
	return norm(a) == norm(b)
}

// rewrite replaces the file with the session header and the pending messages (their typed marks dropped: they are
// typed again), or removes it when none is pending. Called before the CLI runs, or with o.mu held.
func (o *outbox) rewrite() error {
	if o.f != nil {
		_ = o.f.Close()
		o.f = nil
	}
	if len(o.pending) == 0 {
		if err := o.root.Remove(outboxFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("outbox: %w", err)
		}
		return nil
	}
	return o.create()
}

// create writes a new file, the session header and the pending messages, synced, in place of the old one, and
// keeps it open for appending.
func (o *outbox) create() error {
	if err := o.root.Mkdir(outboxDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("outbox: %w", err)
	}
	if fi, err := o.root.Lstat(outboxDir); err != nil || !fi.IsDir() {
		return fmt.Errorf("outbox: %s is not a directory", filepath.Join(o.root.Name(), outboxDir))
	}
	tmp := outboxFile + ".tmp"
	f, err := o.root.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	o.f = f
	err = o.append(outboxRecord{Op: opSession, Session: o.session})
	for _, m := range o.pending {
		if err == nil {
			err = o.append(outboxRecord{Op: opAccept, ID: m.id, Text: m.text})
		}
	}
	if err == nil {
		err = o.sync()
	}
	if err == nil {
		err = o.root.Rename(tmp, outboxFile)
	}
	if err != nil {
		_ = f.Close()
		o.f = nil
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

func (o *outbox) append(r outboxRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := o.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

func (o *outbox) sync() error {
	if err := o.f.Sync(); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

// accept records text as accepted, synced, and returns its id.
func (o *outbox) accept(text string) (uint64, error) {
	if o == nil {
		return 0, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f == nil {
		if err := o.create(); err != nil {
			return 0, err
		}
	}
	id := o.nextID
	if err := o.append(outboxRecord{Op: opAccept, ID: id, Text: text}); err != nil {
		return 0, err
	}
	if err := o.sync(); err != nil {
		return 0, err
	}
	o.nextID++
	o.pending = append(o.pending, &outMsg{id: id, text: text})
	return id, nil
}

// typed notes, before message id is typed, how many entries the session store holds now.
func (o *outbox) typed(id uint64) {
	if o == nil || id == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.catchUpLocked()
	for _, m := range o.pending {
		if m.id == id {
			m.typed, m.before = true, o.count
			if o.f != nil {
				if err := o.append(outboxRecord{Op: opTyped, ID: id, Before: o.count}); err != nil {
					o.log.Warn("outbox", "err", err)
				}
			}
			return
		}
	}
}

// withdraw drops message id, which was not accepted after all.
func (o *outbox) withdraw(id uint64) {
	if o == nil || id == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.doneLocked(id)
}

// catchUp reads what the CLI appended to its session store and marks the messages it recorded done.
func (o *outbox) catchUp() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.catchUpLocked()
}

func (o *outbox) catchUpLocked() {
	err := o.readStore(func(e ptyapi.TranscriptEntry) error {
		idx := o.count
		o.count++
		if e.Role != ptyapi.RoleUser {
			return nil
		}
		for _, m := range o.pending {
			if m.typed && m.before <= idx && sameText(m.text, e.Text) {
				o.doneLocked(m.id)
				break
			}
		}
		return nil
	})
	if err != nil {
		o.log.Warn("outbox: reading the session store", "err", err)
	}
}

// doneLocked removes message id from the pending ones; with none left the file is removed. Called with o.mu held.
func (o *outbox) doneLocked(id uint64) {
	for i, m := range o.pending {
		if m.id != id {
			continue
		}
		o.pending = append(o.pending[:i], o.pending[i+1:]...)
		if len(o.pending) == 0 {
			if err := o.rewrite(); err != nil {
				o.log.Warn("outbox", "err", err)
			}
			return
		}
		if o.f != nil {
			if err := o.append(outboxRecord{Op: opDone, ID: id}); err != nil {
				o.log.Warn("outbox", "err", err)
			}
		}
		return
	}
}

// close releases the file and the home.
func (o *outbox) close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.f != nil {
		_ = o.f.Close()
		o.f = nil
	}
	_ = o.root.Close()
}

// limitedFile reads at most left bytes of f.
type limitedFile struct {
	f    *os.File
	left int64
}

func (l *limitedFile) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errors.New("outbox file too large")
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.f.Read(p)
	l.left -= int64(n)
	return n, err
}
