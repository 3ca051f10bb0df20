// Package state is the console's only durable state: one small JSON file of
// thin metadata — the console password's hash, the configured supervisors,
// aliases and preferences. No agent, conversation, transcript or mail is ever
// kept here: those live on their home supervisors, so deleting the file loses
// none of them (a new password is set at the next start).
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"aicli.dev/aicli/internal/atomicfile"
)

// FileName is the state file's name in the console's data dir.
const FileName = "console.json"

// Supervisor is one supervisor the console talks to.
type Supervisor struct {
	// Name is how the console refers to it (settings page, URLs).
	Name string `json:"name"`
	// Server is unix:///path/to/supervisor.sock or https://host:port.
	Server string `json:"server"`
	// TokenFile holds the bearer token for an https server (read at start;
	// the token itself is never stored here nor sent to a browser).
	TokenFile string `json:"tokenFile,omitempty"`
	// CAFile is a PEM bundle that verifies an https server's certificate.
	CAFile string `json:"caFile,omitempty"`
}

// Data is the file's content.
type Data struct {
	// PasswordHash is the bcrypt hash of the console password.
	PasswordHash string `json:"passwordHash,omitempty"`
	// Supervisors are the configured supervisors, in order.
	Supervisors []Supervisor `json:"supervisors,omitempty"`
	// Aliases are display names, by "supervisor/namespace/agent".
	Aliases map[string]string `json:"aliases,omitempty"`
	// Preferences are the console's user preferences.
	Preferences map[string]string `json:"preferences,omitempty"`
}

// File is the state file, read once and rewritten whole (atomically, synced)
// on every change.
type File struct {
	path string
	mu   sync.Mutex
	data Data
}

// Open reads dir's state file; a missing file is empty state.
func Open(dir string) (*File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("console data dir: %w", err)
	}
	f := &File{path: filepath.Join(dir, FileName)}
	raw, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", f.path, err)
	}
	if err := json.Unmarshal(raw, &f.data); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON (%v): fix it or delete it (it holds no agent state)", f.path, err)
	}
	return f, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Get returns a copy of the data.
func (f *File) Get() Data {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.data.clone()
}

// clone is a deep copy of d.
func (d Data) clone() Data {
	d.Supervisors = append([]Supervisor(nil), d.Supervisors...)
	d.Aliases = maps.Clone(d.Aliases)
	d.Preferences = maps.Clone(d.Preferences)
	return d
}

// Update applies fn to the data and writes the file.
func (f *File) Update(fn func(*Data)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.data.clone()
	fn(&d)
	raw, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(f.path, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	f.data = d
	return nil
}
