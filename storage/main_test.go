package storage

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Child processes: the test binary re-executes itself with HEED_STORAGE_CHILD set to play a
// second Heed (lock test) or a Heed that gets killed (crash test).
const (
	envChild = "HEED_STORAGE_CHILD"
	envDB    = "HEED_STORAGE_DB"
	envRound = "HEED_STORAGE_ROUND"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case "":
		os.Exit(m.Run())
	case "open":
		os.Exit(childOpen(os.Getenv(envDB)))
	case "crash":
		os.Exit(childCrash(os.Getenv(envDB), os.Getenv(envRound)))
	case "close-late-start":
		os.Exit(childCloseLateStart(os.Getenv(envDB)))
	default:
		fmt.Fprintln(os.Stderr, "unknown child mode")
		os.Exit(2)
	}
}

// childOpen opens the database and reports the outcome the way the CLI would: exit 3 with the
// message when the database is unusable.
func childOpen(path string) int {
	db, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	db.Close()
	return 0
}

var bg = context.Background()

// openTest opens a fresh database under t.TempDir and closes it when the test ends.
func openTest(t testing.TB, opts ...Option) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db, path
}

// rawOpen opens path with plain go-sqlite3, bypassing Open, to build or inspect a file.
func rawOpen(t testing.TB, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", dsn(path, "_busy_timeout=5000"))
	require.NoError(t, err)
	raw.SetMaxOpenConns(1)
	t.Cleanup(func() { raw.Close() })
	return raw
}

// rawOpenRO opens path read-only with plain go-sqlite3, to look at a file without changing it.
func rawOpenRO(t testing.TB, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", dsn(path, "mode=ro"))
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	return raw
}

// enqueueURLs enqueues urls on host h and returns their ids.
func enqueueURLs(t testing.TB, db *DB, host string, urls ...string) []int64 {
	t.Helper()
	jobs := make([]NewJob, len(urls))
	for i, u := range urls {
		jobs[i] = NewJob{URL: u, Host: host}
	}
	res, err := db.Enqueue(bg, jobs)
	require.NoError(t, err)
	ids := make([]int64, len(urls))
	for i, it := range res.Items {
		ids[i] = it.ID
	}
	return ids
}

// openCrash opens a copy crashCopy made, as the next start after the crash would, and closes it
// when the test ends.
func openCrash(t testing.TB, crash string) *DB {
	t.Helper()
	db, err := Open(crash)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// crashCopy copies the database's files — the database, its -wal and its start log, each of
// which must be there — as kill -9 would leave them, and returns the copy's path.
func crashCopy(t testing.TB, path string) string {
	t.Helper()
	crash := filepath.Join(t.TempDir(), "heed.db")
	for _, suffix := range []string{"", "-wal", "-starts"} {
		data, err := os.ReadFile(path + suffix)
		require.NoError(t, err, suffix)
		require.NoError(t, os.WriteFile(crash+suffix, data, 0o644))
	}
	return crash
}
