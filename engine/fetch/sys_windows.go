//go:build windows

package fetch

import (
	"io/fs"

	"golang.org/x/sys/windows"
)

// freeSpace returns the bytes available to this user in dir.
func freeSpace(dir string) (int64, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, err
	}
	if avail > 1<<62 {
		avail = 1 << 62
	}
	return int64(avail), nil
}

// linkCount is not checked on Windows, where planting hard links needs
// rights an attacker on the same account already has.
func linkCount(fs.FileInfo) uint64 { return 1 }

// openFileLimit is 0: Windows sets no such limit on sockets and files.
func openFileLimit() int { return 0 }
