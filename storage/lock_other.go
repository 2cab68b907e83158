//go:build !unix && !windows

package storage

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// held records the lock files this process holds. Platforms without advisory locks (wasm,
// plan9) can only be guarded within one process; SQLite's own locking still keeps the file
// consistent if two processes meet.
var held sync.Map

type heldLock struct {
	path string
	f    *os.File
}

func (l *heldLock) Close() error {
	held.Delete(l.path)
	return l.f.Close()
}

func lockFile(path string) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: lock file: %w", ErrUnreadable, err)
	}
	if _, loaded := held.LoadOrStore(path, true); loaded {
		f.Close()
		return nil, fmt.Errorf("%w (lock %s is held)", ErrLocked, path)
	}
	return &heldLock{path: path, f: f}, nil
}
