package spend

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// access reaches the files of one scope. The CLI in an agent's container writes the agent's home, so every name in
// it is the container's choice: a symbolic link to /dev/zero or to the supervisor's secrets, a `projects` that
// links to /, a FIFO where a session file should be. A scope with a Home is therefore confined to it: directories
// are listed and files opened through an os.Root on the home, which refuses any path or symbolic link leading out
// of it. Every open is non-blocking and checked afterwards (a directory to list, a regular file to read), so a FIFO
// or socket never blocks the reader and is never read. A scope without a Home (`aictl spend --local`, the user's
// own folders) follows symbolic links but keeps the other checks.
type access struct {
	home string   // "" for an unconfined scope
	root *os.Root // nil when unconfined or when the home could not be opened (err)
	err  error
}

func openAccess(home string) *access {
	if home == "" {
		return &access{}
	}
	home = filepath.Clean(home)
	root, err := os.OpenRoot(home)
	return &access{home: home, root: root, err: err}
}

func (a *access) close() {
	if a.root != nil {
		_ = a.root.Close()
	}
}

// open opens path read-only without blocking (flag adds e.g. O_DIRECTORY).
func (a *access) open(path string, flag int) (*os.File, error) {
	flag |= os.O_RDONLY | syscall.O_NONBLOCK
	if a.home == "" {
		return os.OpenFile(path, flag, 0)
	}
	if a.err != nil {
		return nil, a.err
	}
	rel, err := a.rel(path)
	if err != nil {
		return nil, err
	}
	return a.root.OpenFile(rel, flag, 0)
}

// rel is path relative to the home; a path outside it is an error.
func (a *access) rel(path string) (string, error) {
	rel, err := filepath.Rel(a.home, path)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("spend: %s is outside the home %s", path, a.home)
	}
	return rel, nil
}

// readDir lists at most n entries of the directory path, sorted by name. A directory that does not exist is
// fs.ErrNotExist; one that is not a directory (a FIFO, a file) is an error, never a blocking open.
func (a *access) readDir(path string, n int) ([]fs.DirEntry, error) {
	fh, err := a.open(path, syscall.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	defer func() { _ = fh.Close() }()
	entries, err := fh.ReadDir(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	slices.SortFunc(entries, func(x, y fs.DirEntry) int { return strings.Compare(x.Name(), y.Name()) })
	return entries, err
}

// stat describes the regular file at path.
func (a *access) stat(path string) (fileStat, error) {
	var fi fs.FileInfo
	var err error
	switch {
	case a.home == "":
		fi, err = os.Stat(path)
	case a.err != nil:
		err = a.err
	default:
		var rel string
		if rel, err = a.rel(path); err == nil {
			fi, err = a.root.Stat(rel)
		}
	}
	if err != nil {
		return fileStat{}, fmt.Errorf("spend: stat %s: %w", path, err)
	}
	return regularStat(path, fi)
}

// openRegular opens the regular file at path for reading; anything else is an error and is not read.
func (a *access) openRegular(path string) (*os.File, fileStat, error) {
	fh, err := a.open(path, 0)
	if err != nil {
		return nil, fileStat{}, fmt.Errorf("spend: open: %w", err)
	}
	fi, err := fh.Stat()
	if err != nil {
		_ = fh.Close()
		return nil, fileStat{}, fmt.Errorf("spend: stat %s: %w", path, err)
	}
	st, err := regularStat(path, fi)
	if err != nil {
		_ = fh.Close()
		return nil, fileStat{}, err
	}
	return fh, st, nil
}

func regularStat(path string, fi fs.FileInfo) (fileStat, error) {
	if !fi.Mode().IsRegular() {
		return fileStat{}, fmt.Errorf("spend: %s is not a regular file", path)
	}
	st := fileStat{Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Ino = sys.Ino
	}
	return st, nil
}

// ReadDir is the ReadDirFunc of a scope without a Home: the directory at name, opened without blocking and without
// confinement.
func ReadDir(name string, n int) ([]fs.DirEntry, error) { return (&access{}).readDir(name, n) }
