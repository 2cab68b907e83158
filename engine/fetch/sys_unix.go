//go:build unix

package fetch

import (
	"errors"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// freeSpace returns the bytes available to this user in dir. A file system
// that reports no blocks at all (ramfs, some FUSE ones) does not know its
// size: that is an unknown free space, not a full disk (G41).
func freeSpace(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return spaceOf(uint64(st.Blocks), uint64(st.Bavail), uint64(st.Bsize))
}

// spaceOf is the free space statfs reports: avail blocks of bsize bytes,
// out of blocks; a file system of no blocks knows nothing of its size.
func spaceOf(blocks, avail, bsize uint64) (int64, error) {
	if blocks == 0 {
		return 0, errUnknownSpace
	}
	n := avail * bsize
	if avail != 0 && n/avail != bsize || n > 1<<62 {
		n = 1 << 62
	}
	return int64(n), nil
}

// errUnknownSpace says the file system does not report its free space.
var errUnknownSpace = errors.New("the file system does not report its size")

// linkCount returns the number of hard links to the file, or 1 when unknown.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// openFileLimit is this process's limit on open files (RLIMIT_NOFILE), 0 when unknown.
func openFileLimit() int {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
