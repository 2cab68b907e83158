package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockDatabase takes an exclusive, non-blocking flock on the database file itself, creating it
// empty if needed (SQLite takes an empty file for a new database). The lock is the file's, not
// its name's: a second Open through a symlink or a hard link to the same file is refused too, and
// two Heeds can never write one database through two names, each with its own -wal file. On
// Linux flock locks are apart from SQLite's own (fcntl) locks.
//
// Closing any descriptor of a file drops every fcntl lock the process holds on it, SQLite's
// included. So a database this process already holds is refused from a list of the files held
// (device and inode), without opening it again; and the descriptor that holds the lock is closed
// only after SQLite's connections.
func lockDatabase(path string) (io.Closer, error) {
	heldFiles.Lock()
	defer heldFiles.Unlock()
	if id, ok := fileIDOf(path); ok && heldFiles.ids[id] {
		return nil, ErrLocked
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: not a regular file", ErrUnreadable)
	}
	if err := flock(f); err != nil {
		f.Close() // held by another process: this one holds no lock of SQLite's on it
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("%w: lock %s: %w", ErrUnreadable, path, err)
	}
	id := idOf(fi)
	heldFiles.ids[id] = true
	return &heldDB{f: f, id: id}, nil
}

// fileID names a file whatever path reaches it.
type fileID struct{ dev, ino uint64 }

// heldFiles lists the databases this process holds.
var heldFiles = struct {
	sync.Mutex
	ids map[fileID]bool
}{ids: map[fileID]bool{}}

func fileIDOf(path string) (fileID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, false
	}
	return idOf(fi), true
}

func idOf(fi os.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}
}

// heldDB is the lock on one database: closing it releases the flock and takes the file off the
// list.
type heldDB struct {
	f  *os.File
	id fileID
}

func (h *heldDB) Close() error {
	heldFiles.Lock()
	defer heldFiles.Unlock()
	delete(heldFiles.ids, h.id)
	return h.f.Close()
}
