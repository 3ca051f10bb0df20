package spend

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// A session root is written by the CLI, so its shape is bounded before it is trusted: WalkFiles lists at most
// MaxWalkEntries entries (files and folders, all names) under one root and descends at most MaxWalkDepth folders
// below it. The CLIs nest three levels deep and a busy year of sessions is some thousands of files.
const (
	MaxWalkEntries = 200_000
	MaxWalkDepth   = 16
)

// ReadDirFunc lists at most n entries of a directory, sorted by name; a directory that does not exist is
// fs.ErrNotExist. Discover is handed one: the Service's lists a home-confined scope's directories through the home
// (see Scope.Home), and tests wrap it to simulate a directory they cannot make unreadable (they run as root).
type ReadDirFunc func(name string, n int) ([]fs.DirEntry, error)

// WalkFiles walks dir (symbolic links are not followed) and calls file with the absolute path of every
// non-directory whose name ends in suffix, and unreadable with every directory (dir included) that exists but
// could not be listed: the files in it are unknown, and a parser reports it as a SourceFile with Err so that it is
// counted, not silently dropped. So is the directory where the walk stopped listing (MaxWalkEntries) and the
// first folder found deeper than MaxWalkDepth (one report stands for all of them). A dir that does not exist, or a subdirectory that vanishes during the walk,
// yields nothing.
func WalkFiles(dir, suffix string, readDir ReadDirFunc, file func(path, name string), unreadable func(path string, err error)) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("spend: resolve %s: %w", dir, err)
	}
	left, exhausted, deep := MaxWalkEntries, false, false
	var walk func(string, int)
	walk = func(path string, depth int) {
		if exhausted {
			return
		}
		entries, err := readDir(path, left+1)
		switch {
		case len(entries) > left:
			entries, exhausted = entries[:left], true
			unreadable(path, fmt.Errorf("more than %d entries under %s: the rest are not read", MaxWalkEntries, abs))
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			unreadable(path, err) // what was listed before the error still counts
		}
		left -= len(entries)
		for _, e := range entries {
			p := filepath.Join(path, e.Name())
			switch {
			case e.IsDir() && depth == MaxWalkDepth:
				if !deep { // once per walk: the count says something is missing, the first path says where
					deep = true
					unreadable(p, fmt.Errorf("deeper than %d folders below %s: not read", MaxWalkDepth, abs))
				}
			case e.IsDir():
				walk(p, depth+1)
			case strings.HasSuffix(e.Name(), suffix):
				file(p, e.Name())
			}
		}
	}
	walk(abs, 0)
	return nil
}

// UnreadableDir is the SourceFile reporting a directory WalkFiles could not list.
func UnreadableDir(path string, err error) SourceFile {
	return SourceFile{Path: path, Key: "\x00unreadable-dir\x00" + path, Err: fmt.Errorf("spend: list folder %s: %w", path, err)}
}
