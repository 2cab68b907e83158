//go:build unix

package fetch

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// freeSpace returns the bytes available to this user in dir.
func freeSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	avail := uint64(st.Bavail) * uint64(st.Bsize)
	if avail > 1<<62 {
		avail = 1 << 62
	}
	return int64(avail), nil
}

// linkCount returns the number of hard links to the file, or 1 when unknown.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
