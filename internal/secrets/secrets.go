// Package secrets keeps supervisor-held secrets (model API keys) in the data
// dir, one file per namespace/name with mode 0600. Secrets for tools and data
// never leave the supervisor; the model credential is the one value handed to
// a CLI (docs/concepts.md#capabilities-and-secrets).
package secrets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"aicli.dev/aicli/internal/atomicfile"
)

// ErrNotFound is returned for a secret that does not exist.
var ErrNotFound = errors.New("secret not found")

// ErrInvalid marks a namespace, name or value the store refuses.
var ErrInvalid = errors.New("invalid secret")

// invalidError is an ErrInvalid with its own message.
type invalidError string

func (e invalidError) Error() string        { return string(e) }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// Info describes a stored secret without its value.
type Info struct {
	Name     string
	Size     int64
	Modified time.Time
}

// Store is a directory of secrets: <Dir>/<namespace>/<name>.
type Store struct {
	Dir string
}

func (s Store) path(namespace, name string) (string, error) {
	for what, v := range map[string]string{"namespace": namespace, "name": name} {
		if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
			return "", invalidError(fmt.Sprintf("secret %s %q: %s", what, v, strings.Join(msgs, "; ")))
		}
	}
	return filepath.Join(s.Dir, namespace, name), nil
}

// Set writes the secret atomically (temp file, fsync, rename), mode 0600.
func (s Store) Set(namespace, name string, value []byte) error {
	p, err := s.path(namespace, name)
	if err != nil {
		return err
	}
	if len(value) == 0 {
		return invalidError(fmt.Sprintf("secret %s/%s: empty value", namespace, name))
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(p, value, 0o600)
}

// Get reads a secret; ErrNotFound when it does not exist.
func (s Store) Get(namespace, name string) ([]byte, error) {
	p, err := s.path(namespace, name)
	if err != nil {
		return nil, err
	}
	v, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s/%s", ErrNotFound, namespace, name)
	}
	return v, err
}

// Delete removes a secret; deleting an absent one is not an error.
func (s Store) Delete(namespace, name string) error {
	p, err := s.path(namespace, name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Stat describes one secret; ErrNotFound when it does not exist.
func (s Store) Stat(namespace, name string) (Info, error) {
	p, err := s.path(namespace, name)
	if err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: %s/%s", ErrNotFound, namespace, name)
	}
	if err != nil {
		return Info{}, err
	}
	return Info{Name: name, Size: fi.Size(), Modified: fi.ModTime()}, nil
}

// List describes the namespace's secrets, sorted by name; never their values.
func (s Store) List(namespace string) ([]Info, error) {
	dir, err := s.path(namespace, "x")
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Dir(dir))
	if errors.Is(err, os.ErrNotExist) {
		return []Info{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []Info{}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue // a Set in progress (.tmp-*) or a stray entry
		}
		fi, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Info{Name: e.Name(), Size: fi.Size(), Modified: fi.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
