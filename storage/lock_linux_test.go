package storage

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// S6: refusing a second Open of a database this process holds must not touch SQLite's own locks
// on it. Closing any descriptor of the file would drop them, and another SQLite program would
// then take itself for the last user and delete the -wal file Heed is writing.
func TestOpen_S6_RefusedOpenKeepsSQLitesLocks(t *testing.T) {
	db, path := openTest(t)
	enqueueURLs(t, db, "a.example", "https://a.example/1") // SQLite holds its locks now
	before := posixLocksOn(t, path)
	require.NotZero(t, before, "SQLite holds a lock on the database file")

	_, err := Open(path)
	require.ErrorIs(t, err, ErrLocked)
	assert.Equal(t, before, posixLocksOn(t, path), "the refused Open left SQLite's locks alone")
}

// posixLocksOn counts the POSIX (fcntl) locks /proc/locks lists on path's inode.
func posixLocksOn(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	locks, err := os.ReadFile("/proc/locks")
	require.NoError(t, err)
	suffix := fmt.Sprintf(":%d", st.Ino)
	n := 0
	for _, l := range strings.Split(string(locks), "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 && f[1] == "POSIX" && strings.HasSuffix(f[5], suffix) {
			n++
		}
	}
	return n
}
