//go:build unix && !linux

package storage

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive, non-blocking flock on path, creating it if needed.
func lockFile(path string) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: lock file: %w", ErrUnreadable, err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (lock %s is held)", ErrLocked, path)
		}
		return nil, fmt.Errorf("%w: lock %s: %w", ErrUnreadable, path, err)
	}
	return f, nil // closing the file releases the lock
}
