//go:build cgo

package storage

import (
	"errors"
	"fmt"

	"github.com/mattn/go-sqlite3"
)

// classify maps SQLite's own errors to the package's sentinels where one fits.
func classify(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrNotADB:
			return fmt.Errorf("%w: %w", ErrNotDatabase, err)
		case sqlite3.ErrCorrupt:
			return fmt.Errorf("%w: %w", ErrDamaged, err)
		case sqlite3.ErrBusy, sqlite3.ErrLocked:
			// Heed's own lock (lockDatabase) was free, or was not asked for (OpenReader).
			return fmt.Errorf("%w: %w", ErrBusy, err)
		case sqlite3.ErrPerm, sqlite3.ErrCantOpen, sqlite3.ErrAuth, sqlite3.ErrReadonly:
			return fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
	}
	return err
}

// tooBig reports whether err is SQLite's refusal of a string or blob over its length limit.
func tooBig(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrTooBig
}
