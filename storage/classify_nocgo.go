//go:build !cgo

package storage

// classify has nothing to map without cgo: go-sqlite3 then only reports that it needs cgo.
func classify(err error) error { return err }

// tooBig is false: without cgo there is no SQLite to refuse anything.
func tooBig(error) bool { return false }
