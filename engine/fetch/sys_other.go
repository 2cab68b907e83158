//go:build !unix && !windows

package fetch

import (
	"errors"
	"io/fs"
)

// freeSpace is unknown on this platform; the check is skipped.
func freeSpace(string) (int64, error) { return 0, errors.ErrUnsupported }

// linkCount is unknown on this platform.
func linkCount(fs.FileInfo) uint64 { return 1 }

// openFileLimit is unknown on this platform.
func openFileLimit() int { return 0 }
