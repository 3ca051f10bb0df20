package capability

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"aicli.dev/aicli/internal/atomicfile"
)

const (
	rootKeyLen = 32 // bytes of a root key
	keyIDBytes = 8  // random bytes of a key id; the id is their hex
	fileSuffix = ".json"
	lockName   = ".lock"
	// rescanEvery bounds how often a token naming an unknown key makes
	// Verify look for key files written by another process.
	rescanEvery = time.Second
)

// KeyInfo describes a root key; it never holds the key itself.
type KeyInfo struct {
	ID      string
	Created time.Time
	// RetiresAt is when a rotated-out key stops verifying; nil for a key
	// that is not retiring.
	RetiresAt *time.Time
	// Current marks the key new tokens are minted with.
	Current bool
}

// keyFile is the JSON form of <dir>/<namespace>.json.
type keyFile struct {
	Current string      `json:"current"`
	Keys    []storedKey `json:"keys"`
}

type storedKey struct {
	ID        string     `json:"id"`
	Key       []byte     `json:"key"`
	Created   time.Time  `json:"created"`
	RetiresAt *time.Time `json:"retiresAt,omitempty"`
}

// rootKey is a loaded key; immutable once built.
type rootKey struct {
	namespace string
	id        string
	key       []byte
	retiresAt time.Time // zero when not retiring
}

// usableAt reports whether the key still verifies at now.
func (r *rootKey) usableAt(now time.Time) bool {
	return r.retiresAt.IsZero() || now.Before(r.retiresAt)
}

// loadedNamespace is a namespace's key file as last read.
type loadedNamespace struct {
	stat    os.FileInfo // of the file that was read
	file    keyFile
	current *rootKey
	byID    map[string]*rootKey
}

// Keyring holds one root key per namespace in <dir>/<namespace>.json (mode
// 0600, dir 0700). Key files may be changed by another process (the capkey
// command): Mint, Verify and List notice a replaced file and reload it. Every
// method is safe for concurrent use.
type Keyring struct {
	dir string
	now func() time.Time

	writeMu sync.Mutex // serialises this process's writers; the lock file serialises processes

	mu       sync.RWMutex
	ns       map[string]*loadedNamespace
	lastScan time.Time
}

// OpenKeyring opens (creating it when absent) the key directory dir and
// loads every namespace's key file.
func OpenKeyring(dir string) (*Keyring, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	k := &Keyring{dir: dir, now: time.Now, ns: map[string]*loadedNamespace{}}
	for _, ns := range k.ListNamespaces() {
		if err := k.refresh(ns); err != nil {
			return nil, err
		}
	}
	k.lastScan = k.now()
	return k, nil
}

// ListNamespaces returns the namespaces that have a key file, sorted.
func (k *Keyring) ListNamespaces() []string {
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		ns, ok := strings.CutSuffix(e.Name(), fileSuffix)
		if ok && e.Type().IsRegular() && validNamespace(ns) == nil {
			out = append(out, ns)
		}
	}
	return out // ReadDir sorts by name
}

// List returns a namespace's keys that still verify, oldest first; none
// (and no error) for a namespace without keys.
func (k *Keyring) List(namespace string) ([]KeyInfo, error) {
	if err := validNamespace(namespace); err != nil {
		return nil, err
	}
	if err := k.refresh(namespace); err != nil {
		return nil, err
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	l := k.ns[namespace]
	if l == nil {
		return nil, nil
	}
	now := k.now()
	var out []KeyInfo
	for _, s := range l.file.Keys {
		if s.RetiresAt != nil && !now.Before(*s.RetiresAt) {
			continue
		}
		out = append(out, keyInfo(s, l.file.Current))
	}
	return out, nil
}

// Rotate makes a new current key for namespace. Older keys keep verifying
// until now+grace (or their earlier retirement) and are then dropped; a
// grace of zero retires them at once.
func (k *Keyring) Rotate(namespace string, grace time.Duration) (KeyInfo, error) {
	if err := validNamespace(namespace); err != nil {
		return KeyInfo{}, err
	}
	if grace < 0 {
		return KeyInfo{}, fmt.Errorf("rotate %s: negative grace %s", namespace, grace)
	}
	var info KeyInfo
	err := k.update(namespace, func(f *keyFile, now time.Time) error {
		retire := now.Add(grace).UTC()
		for i := range f.Keys {
			if r := f.Keys[i].RetiresAt; r == nil || retire.Before(*r) {
				f.Keys[i].RetiresAt = &retire
			}
		}
		s, err := newStoredKey(now)
		if err != nil {
			return err
		}
		f.Keys = append(f.Keys, s)
		f.Current = s.ID
		info = keyInfo(s, s.ID)
		return nil
	})
	return info, err
}

// currentKey returns the key to mint with, creating the namespace's first
// key when it has none.
func (k *Keyring) currentKey(namespace string) (*rootKey, error) {
	if err := k.refresh(namespace); err != nil {
		return nil, err
	}
	if c := k.loadedCurrent(namespace); c != nil {
		return c, nil
	}
	err := k.update(namespace, func(f *keyFile, now time.Time) error {
		if f.current() != nil {
			return nil // another process made one first
		}
		s, err := newStoredKey(now)
		if err != nil {
			return err
		}
		f.Keys = append(f.Keys, s)
		f.Current = s.ID
		return nil
	})
	if err != nil {
		return nil, err
	}
	if c := k.loadedCurrent(namespace); c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("capability keys of %s: no current key after writing one", namespace)
}

func (k *Keyring) loadedCurrent(namespace string) *rootKey {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if l := k.ns[namespace]; l != nil {
		return l.current
	}
	return nil
}

// lookup finds the key a token names. It looks in the presenting namespace
// first (reloading its file when replaced), then in every loaded namespace
// (so that a token of another namespace is told apart from a forged one),
// rescanning the directory at most once per rescanEvery.
func (k *Keyring) lookup(namespace, keyID string) (*rootKey, error) {
	if validNamespace(namespace) == nil {
		if err := k.refresh(namespace); err != nil {
			return nil, err
		}
	}
	if r := k.loadedKey(keyID); r != nil {
		return r, nil
	}
	k.mu.Lock()
	scan := k.now().Sub(k.lastScan) >= rescanEvery
	if scan {
		k.lastScan = k.now()
	}
	k.mu.Unlock()
	if scan {
		for _, ns := range k.ListNamespaces() {
			if err := k.refresh(ns); err != nil {
				return nil, err
			}
		}
		if r := k.loadedKey(keyID); r != nil {
			return r, nil
		}
	}
	return nil, nil
}

func (k *Keyring) loadedKey(keyID string) *rootKey {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, l := range k.ns {
		if r := l.byID[keyID]; r != nil {
			return r
		}
	}
	return nil
}

func (k *Keyring) path(namespace string) string {
	return filepath.Join(k.dir, namespace+fileSuffix)
}

// refresh reloads a namespace's key file when it was replaced, created or
// removed since it was last read.
func (k *Keyring) refresh(namespace string) error {
	st, err := os.Stat(k.path(namespace))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	k.mu.RLock()
	l := k.ns[namespace]
	k.mu.RUnlock()
	if l == nil && st == nil || l != nil && st != nil && sameFile(l.stat, st) {
		return nil
	}
	return k.reload(namespace)
}

func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// reload reads a namespace's key file into memory.
func (k *Keyring) reload(namespace string) error {
	f, st, err := readKeyFile(k.path(namespace))
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if st == nil {
		delete(k.ns, namespace)
		return nil
	}
	l := &loadedNamespace{stat: st, file: f, byID: make(map[string]*rootKey, len(f.Keys))}
	for _, s := range f.Keys {
		r := &rootKey{namespace: namespace, id: s.ID, key: s.Key}
		if s.RetiresAt != nil {
			r.retiresAt = *s.RetiresAt
		}
		l.byID[s.ID] = r
		if s.ID == f.Current && s.RetiresAt == nil {
			l.current = r
		}
	}
	k.ns[namespace] = l
	return nil
}

// readKeyFile reads and checks a key file; a nil FileInfo means it is absent.
func readKeyFile(p string) (keyFile, os.FileInfo, error) {
	var f keyFile
	fd, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil, nil
	}
	if err != nil {
		return f, nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return f, nil, err
	}
	data, err := io.ReadAll(fd)
	if err != nil {
		return f, nil, err
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, nil, fmt.Errorf("capability key file %s: %w", p, err)
	}
	for _, s := range f.Keys {
		if len(s.Key) != rootKeyLen || len(s.ID) != 2*keyIDBytes {
			return f, nil, fmt.Errorf("capability key file %s: key %q is malformed", p, s.ID)
		}
	}
	return f, st, nil
}

// update runs change on the namespace's key file as it is on disk, under the
// directory's lock, drops keys retired by now and writes the result
// atomically (temp file, fsync, rename, fsync of the directory).
func (k *Keyring) update(namespace string, change func(f *keyFile, now time.Time) error) error {
	k.writeMu.Lock()
	defer k.writeMu.Unlock()
	unlock, err := lockDir(k.dir)
	if err != nil {
		return err
	}
	defer unlock()
	p := k.path(namespace)
	f, _, err := readKeyFile(p)
	if err != nil {
		return err
	}
	now := k.now()
	if err := change(&f, now); err != nil {
		return err
	}
	f.Keys = slices.DeleteFunc(f.Keys, func(s storedKey) bool {
		return s.ID != f.Current && s.RetiresAt != nil && !now.Before(*s.RetiresAt)
	})
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(p, data, 0o600); err != nil {
		return err
	}
	return k.reload(namespace)
}

func (f *keyFile) current() *storedKey {
	for i := range f.Keys {
		if f.Keys[i].ID == f.Current && f.Keys[i].RetiresAt == nil {
			return &f.Keys[i]
		}
	}
	return nil
}

func lockDir(dir string) (unlock func(), err error) {
	fd, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX); err != nil {
		fd.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(fd.Fd()), syscall.LOCK_UN)
		fd.Close()
	}, nil
}

func newStoredKey(now time.Time) (storedKey, error) {
	key := make([]byte, rootKeyLen)
	id := make([]byte, keyIDBytes)
	if _, err := rand.Read(key); err != nil {
		return storedKey{}, err
	}
	if _, err := rand.Read(id); err != nil {
		return storedKey{}, err
	}
	return storedKey{ID: hex.EncodeToString(id), Key: key, Created: now.UTC()}, nil
}

func keyInfo(s storedKey, current string) KeyInfo {
	info := KeyInfo{ID: s.ID, Created: s.Created, Current: s.ID == current && s.RetiresAt == nil}
	if s.RetiresAt != nil {
		r := *s.RetiresAt
		info.RetiresAt = &r
	}
	return info
}

func validNamespace(ns string) error {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("namespace %q: %s", ns, strings.Join(msgs, "; "))
	}
	return nil
}
