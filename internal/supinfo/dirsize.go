package supinfo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The agents' directories are written by their containers, so their measurement is bounded by their shape, not
// only by DiskTimeout: a folder is listed dirBatch entries at a time with the deadline checked between batches (a
// folder of millions of entries is not read whole first), and folders deeper than maxDiskDepth are not entered
// (one descriptor is open per level).
const (
	dirBatch     = 256
	maxDiskDepth = 64
)

// dirSize sums the apparent sizes of the regular files under root (a missing root is 0). Below root it never follows
// a symbolic link: each folder is opened relative to its parent's descriptor with O_NOFOLLOW, so a folder swapped for
// a link during the walk cannot lead it elsewhere. Files and folders that vanish or cannot be read are skipped;
// ctx ends the walk early with the size so far and ctx's error; folders too deep are reported in the error.
func dirSize(ctx context.Context, root string) (int64, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", root, err)
	}
	w := sizer{ctx: ctx}
	err = w.dir(fd, root, 0)
	if err == nil && w.deep != "" {
		err = fmt.Errorf("folders deeper than %d levels are not counted (first: %s)", maxDiskDepth, w.deep)
	}
	return w.n, err
}

type sizer struct {
	ctx  context.Context
	n    int64
	deep string
}

// dir adds the sizes under the open folder fd (which it closes) at path, depth levels below the root.
func (w *sizer) dir(fd int, path string, depth int) error {
	f := os.NewFile(uintptr(fd), path)
	defer func() { _ = f.Close() }()
	for {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		entries, err := f.ReadDir(dirBatch)
		for _, e := range entries {
			switch {
			case e.Type().IsRegular():
				var st unix.Stat_t
				if unix.Fstatat(fd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
					w.n += st.Size
				}
			case !e.IsDir():
			case depth == maxDiskDepth:
				if w.deep == "" {
					w.deep = filepath.Join(path, e.Name())
				}
			default:
				cfd, err := unix.Openat(fd, e.Name(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
				if err != nil {
					continue // vanished, unreadable, or swapped for a link
				}
				if err := w.dir(cfd, filepath.Join(path, e.Name()), depth+1); err != nil {
					return err
				}
			}
		}
		if err != nil { // io.EOF: all listed; anything else: the rest of the folder is unreadable, skipped
			return nil
		}
	}
}
