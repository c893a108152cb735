//go:build unix

package privatefile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// secret says why fi must not hold a secret: not a regular file, a mode
// that lets others read or change it, or another user's.
func secret(fi fs.FileInfo) *problem {
	if !fi.Mode().IsRegular() {
		return &problem{what: "is not a regular file"}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return &problem{what: fmt.Sprintf("has mode %04o: others may read or change it", perm), chmod: true}
	}
	if uid, ok := owner(fi); ok && uid != os.Getuid() {
		return &problem{what: fmt.Sprintf("belongs to user %d, not to this process's user %d", uid, os.Getuid()), chown: true}
	}
	return nil
}

// trusted says why fi must not be trusted: neither a regular file nor a
// directory, a mode that lets group or others change it, or a user's
// other than this process's and root.
func trusted(fi fs.FileInfo) *problem {
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return &problem{what: "is neither a regular file nor a directory"}
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return &problem{what: fmt.Sprintf("has mode %04o: group or others may change it", perm), chmod: true}
	}
	if uid, ok := owner(fi); ok && uid != os.Getuid() && uid != 0 {
		return &problem{what: fmt.Sprintf("belongs to user %d, neither this process's user %d nor root", uid, os.Getuid()), chown: true}
	}
	return nil
}

// owner returns the user fi belongs to.
func owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
