package ptyhost

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"aicli.dev/aicli/guest/harness"
	"aicli.dev/aicli/guest/ptyapi"
)

// placeInstructions keeps the request's standing instructions in the file
// where the adapter's CLI reads them (harness.MergeInstructions): written or
// rewritten at every launch, removed when there are none, text that someone
// else put in the file kept (and logged). The file is handled through an
// os.Root on the home, so a symbolic link cannot lead the write out of it,
// and replaced by a rename, so a crash never leaves it half written.
// A file whose guest block is damaged fails the start: the user must repair it.
func (h *Host) placeInstructions(a harness.Adapter, req harness.LaunchRequest) error {
	rel := a.InstructionsFile(h.opts.Home)
	if rel == "" {
		return nil
	}
	rel = filepath.Clean("/" + rel)[1:]
	root, err := os.OpenRoot(h.opts.Home)
	if err != nil {
		return fmt.Errorf("instructions: %w", err)
	}
	defer root.Close()
	existing, err := root.ReadFile(rel)
	var mode fs.FileMode = 0o600
	link := false
	switch {
	case errors.Is(err, fs.ErrNotExist):
		existing = nil
	case err != nil:
		return fmt.Errorf("instructions: read %s: %w", rel, err)
	default:
		if st, err := root.Stat(rel); err == nil {
			mode = st.Mode().Perm()
		}
		if st, err := root.Lstat(rel); err == nil {
			link = st.Mode()&fs.ModeSymlink != 0
		}
	}
	upd, err := harness.MergeInstructions(existing, req.Instructions)
	if err != nil {
		h.log.Error("instructions file damaged: not touched, start refused", "path", rel, "err", err)
		return ptyapi.Errorf(ptyapi.ErrInvalidArgument,
			"instructions file ~/%s: %v; repair or delete the aicli block (the lines from %q to %q)",
			rel, err, harness.InstructionsBeginPrefix+" …", harness.InstructionsEnd)
	}
	if upd.Foreign && req.Instructions != "" {
		h.log.Warn("instructions file holds text aicli did not write: kept as it is, the agent's instructions are "+
			"in a delimited block in it, and the CLI reads both", "path", rel)
	}
	switch {
	case upd.Remove:
		if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("instructions: remove %s: %w", rel, err)
		}
		h.log.Info("instructions removed", "path", rel)
	case upd.Write:
		if err := h.mkdirOwned(filepath.Join(h.opts.Home, filepath.Dir(rel))); err != nil {
			return err
		}
		if link { // a link inside the home (os.Root refuses one leading out): write where it points
			err = root.WriteFile(rel, upd.Data, mode)
		} else {
			err = h.replaceInRoot(root, rel, upd.Data, mode)
		}
		if err != nil {
			return fmt.Errorf("instructions: %w", err)
		}
		h.log.Info("instructions written", "path", rel, "bytes", len(req.Instructions), "foreignText", upd.Foreign)
	}
	return nil
}

// replaceInRoot writes data to a temporary file beside rel, owned by the CLI
// user, and renames it over rel.
func (h *Host) replaceInRoot(root *os.Root, rel string, data []byte, mode fs.FileMode) error {
	tmp := rel + ".aicli-tmp"
	_ = root.Remove(tmp)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Chmod(tmp, mode)
	}
	if err == nil && h.opts.RunAs != nil {
		err = root.Lchown(tmp, int(h.opts.RunAs.UID), int(h.opts.RunAs.GID))
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}
