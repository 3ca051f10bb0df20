// Package atomicfile writes small files that must survive a crash whole:
// a temporary file in the same directory, fsynced, renamed over the target,
// and the directory fsynced, so a reader sees the old content or the new
// one, never a torn write, and an acknowledged write survives kill -9 and
// power loss.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data, mode perm.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
