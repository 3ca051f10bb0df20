// Package toolmount keeps each live conversation's tools directory: a hard
// link of the aicli-tool multi-call binary plus one symlink to it per granted
// tool name, and nothing else. The conversation controller bind-mounts the
// directory read-only at MountPath, first on the CLI's PATH, so an ungranted
// tool is simply not on the filesystem, and a grant edited while the
// conversation runs shows up (or disappears) at once.
package toolmount

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
)

// MountPath is where the directory appears inside the container.
const MountPath = "/opt/aicli/bin"

// BinaryName is the multi-call binary's name inside the directory.
const BinaryName = "aicli-tool"

// validName is the schema's tool name pattern; Sync re-checks it so that no
// name can escape the directory.
var validName = regexp.MustCompile(`^[a-z0-9][-a-z0-9_.]*$`)

// Dirs manages <Root>/<conversation uid>/ directories.
type Dirs struct {
	// Root holds one directory per conversation.
	Root string
	// Binary is the aicli-tool binary linked into each directory.
	Binary string
}

// Dir is the directory of one conversation.
func (d Dirs) Dir(uid string) string { return filepath.Join(d.Root, uid) }

// Sync makes the conversation's directory hold exactly the binary and one
// symlink per name, and returns the directory.
func (d Dirs) Sync(uid string, names []string) (string, error) {
	if uid == "" || filepath.Base(uid) != uid {
		return "", fmt.Errorf("toolmount: bad conversation uid %q", uid)
	}
	for _, n := range names {
		if !validName.MatchString(n) || n == BinaryName || len(n) > 64 {
			return "", fmt.Errorf("toolmount: bad tool name %q", n)
		}
	}
	dir := d.Dir(uid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	if err := d.linkBinary(dir); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Name() != BinaryName && !slices.Contains(names, e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return "", err
			}
		}
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		if target, err := os.Readlink(p); err == nil && target == BinaryName {
			continue
		}
		_ = os.Remove(p)
		if err := os.Symlink(BinaryName, p); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// linkBinary puts the binary into dir as a hard link (a copy across file
// systems), replacing an older one atomically.
func (d Dirs) linkBinary(dir string) error {
	dst := filepath.Join(dir, BinaryName)
	src, err := os.Stat(d.Binary)
	if err != nil {
		return fmt.Errorf("toolmount: the tool binary: %w", err)
	}
	if cur, err := os.Stat(dst); err == nil && os.SameFile(cur, src) {
		return nil
	}
	tmp := dst + ".new"
	_ = os.Remove(tmp)
	if err := os.Link(d.Binary, tmp); err != nil {
		if err := copyFile(d.Binary, tmp); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// List returns the tool names in the conversation's directory, sorted.
func (d Dirs) List(uid string) ([]string, error) {
	entries, err := os.ReadDir(d.Dir(uid))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Name() != BinaryName && e.Type()&os.ModeSymlink != 0 {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Remove deletes the conversation's directory.
func (d Dirs) Remove(uid string) error {
	if uid == "" || filepath.Base(uid) != uid {
		return fmt.Errorf("toolmount: bad conversation uid %q", uid)
	}
	return os.RemoveAll(d.Dir(uid))
}
