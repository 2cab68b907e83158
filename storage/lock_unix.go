//go:build unix

package storage

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// lockDatabase takes an exclusive, non-blocking flock on the database file itself, creating it
// empty if needed (SQLite takes an empty file for a new database). The lock is the file's, not
// its name's: a second Open through a symlink or a hard link to the same file is refused too, and
// two Heeds can never write one database through two names, each with its own -wal file. flock
// locks belong to the open file description, so a second lock fails even inside one process;
// the kernel drops it when the process dies, kill -9 included. They are apart from SQLite's own
// (fcntl) locks, and the descriptor is closed only after SQLite's connections, since closing a
// descriptor of the file drops the process's fcntl locks on it.
func lockDatabase(path string) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: not a regular file", ErrUnreadable)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("%w: lock %s: %w", ErrUnreadable, path, err)
	}
	return f, nil // closing the file releases the lock
}
