package toolrelay

import (
	"os"
	"syscall"
)

// ownedByUs reports whether the file belongs to this process's effective user.
func ownedByUs(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}
