//go:build !linux

package storage

import (
	"io"
	"path/filepath"
)

// lockDatabase locks "<db>.lock" beside the database, named after its real path (symlinks
// resolved), so that a second Open through a symlink is refused too. The database file itself
// is not locked here: on Windows its byte-range locks are mandatory and would stop SQLite's own
// reads, and on the BSDs and macOS flock and SQLite's fcntl locks may meet.
func lockDatabase(path string) (io.Closer, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	return lockFile(path + ".lock")
}
