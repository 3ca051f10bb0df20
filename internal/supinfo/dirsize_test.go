package supinfo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// cancelAfter is a context whose Err turns to Canceled after n calls: a deadline that expires at a known point of
// the walk.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestDirSizeStopsInsideAHugeFolder: a container can fill a folder with millions of empty files (no disk, only
// inodes). The walk checks its deadline between batches of entries, so once the deadline has passed it stops
// within one batch, instead of first listing the whole folder into memory.
func TestDirSizeStopsInsideAHugeFolder(t *testing.T) {
	root := t.TempDir()
	big := filepath.Join(root, "ns", "a", "home", "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	const files = 2_000
	for i := range files {
		fh, err := os.Create(filepath.Join(big, fmt.Sprintf("f%06d", i)))
		if err != nil {
			t.Fatal(err)
		}
		_ = fh.Close()
	}
	// Whole, the walk takes more than 5 context checks; the deadline passes after the 5th.
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(5)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := dirSize(ctx, root)
	runtime.ReadMemStats(&after)
	if err != context.Canceled {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 128<<10 {
		t.Fatalf("the walk allocated %d KiB after its deadline in a folder of %d entries, want at most 128 KiB", n>>10, files)
	}
}

// TestDirSizeBoundsDepth: folders nested deeper than maxDiskDepth are not entered (one descriptor per level),
// and the error says so; what is above them counts.
func TestDirSizeBoundsDepth(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "top"), make([]byte, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(root, strings.Repeat("d/", maxDiskDepth+5))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "bottom"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := dirSize(context.Background(), root)
	if n != 10 || err == nil || !strings.Contains(err.Error(), "deeper than") {
		t.Fatalf("dirSize = %d, %v; want 10 and an error naming the depth bound", n, err)
	}
}

// TestDirSizeDoesNotFollowLinks: a link to a folder or file outside is not measured.
func TestDirSizeDoesNotFollowLinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "big"), make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "own"), make([]byte, 7), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"dirlink": outside, "filelink": filepath.Join(outside, "big")} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := dirSize(context.Background(), root); n != 7 || err != nil {
		t.Fatalf("dirSize = %d, %v; want 7", n, err)
	}
}
