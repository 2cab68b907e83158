//go:build windows

package storage

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive, non-blocking LockFileEx lock on path, creating it if needed.
// Windows releases the lock when the handle is closed or the process ends.
func lockFile(path string) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: lock file: %w", ErrUnreadable, err)
	}
	ol := new(windows.Overlapped)
	err = windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err != nil {
		f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, fmt.Errorf("%w (lock %s is held)", ErrLocked, path)
		}
		return nil, fmt.Errorf("%w: lock %s: %w", ErrUnreadable, path, err)
	}
	return f, nil // closing the handle releases the lock
}
