package spend

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ReadDirFunc lists a directory as os.ReadDir does. Parsers take one as a seam: tests run as root, who can list
// every directory, so they simulate an unreadable one through it.
type ReadDirFunc func(name string) ([]fs.DirEntry, error)

// WalkFiles walks dir (symbolic links are not followed) and calls file with the absolute path of every
// non-directory whose name ends in suffix, and unreadable with every directory (dir included) that exists but
// could not be listed: the files in it are unknown, and a parser reports it as a SourceFile with Err so that it is
// counted, not silently dropped. A dir that does not exist, or a subdirectory that vanishes during the walk, yields
// nothing. readDir nil means os.ReadDir.
func WalkFiles(dir, suffix string, readDir ReadDirFunc, file func(path, name string), unreadable func(path string, err error)) error {
	if readDir == nil {
		readDir = os.ReadDir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("spend: resolve %s: %w", dir, err)
	}
	var walk func(string)
	walk = func(path string) {
		entries, err := readDir(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			unreadable(path, err)
		}
		for _, e := range entries { // what was listed before an error still counts
			p := filepath.Join(path, e.Name())
			switch {
			case e.IsDir():
				walk(p)
			case strings.HasSuffix(e.Name(), suffix):
				file(p, e.Name())
			}
		}
	}
	walk(abs)
	return nil
}

// UnreadableDir is the SourceFile reporting a directory WalkFiles could not list.
func UnreadableDir(path string, err error) SourceFile {
	return SourceFile{Path: path, Key: "\x00unreadable-dir\x00" + path, Err: fmt.Errorf("spend: list folder %s: %w", path, err)}
}
