package storage

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage/storetest"
)

// sqliteStore opens the SQLite store for storetest: a fresh file per test, opened again at the
// same path.
var sqliteStore = storetest.Opener{
	New: func(t *testing.T) (engine.Store, func() engine.Store) {
		path := filepath.Join(t.TempDir(), "heed.db")
		open := func() engine.Store {
			t.Helper()
			db, err := Open(path)
			require.NoError(t, err)
			return db
		}
		return open(), open
	},
	Close: func(s engine.Store) error { return s.(*DB).Close() },
}

// TestStore runs the engine's Store contract on SQLite (storetest holds the tests every
// implementation of engine.Store passes).
func TestStore(t *testing.T) { storetest.Run(t, sqliteStore) }

// TestCrash_S2_KillNineKeepsAcknowledged runs storetest's crash test on SQLite: a child Heed (this
// test binary again, see TestMain) killed 20 times over one file. Besides what every store must
// keep, SQLite's own checks: PRAGMA integrity_check passes after every kill, Open recovers exactly
// the jobs the kill left active, as read from the file before Open, and no key is stored twice.
func TestCrash_S2_KillNineKeepsAcknowledged(t *testing.T) {
	storetest.Crash(t, storetest.CrashOpener{
		DSN: func(t *testing.T) string { return filepath.Join(t.TempDir(), "heed.db") },
		Child: func(t *testing.T, path string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envChild+"=crash", envDB+"="+path)
			return cmd
		},
		Open: func(t *testing.T, path string) engine.Store {
			db, err := Open(path)
			require.NoError(t, err)
			return db
		},
		Close: sqliteStore.Close,
		// What the kill left active, read without Open (read-only: nothing is checkpointed).
		Left: func(t *testing.T, path string) map[int64]storetest.Left {
			raw := rawOpenRO(t, path)
			rows, err := raw.Query(`SELECT id, part, bytes, attempts FROM jobs WHERE state = 'active'`)
			require.NoError(t, err)
			left := map[int64]storetest.Left{}
			for rows.Next() {
				var id int64
				var l storetest.Left
				require.NoError(t, rows.Scan(&id, &l.Part, &l.Bytes, &l.Attempts))
				left[id] = l
			}
			require.NoError(t, rows.Err())
			require.NoError(t, raw.Close())
			return left
		},
		Check: func(t *testing.T, s engine.Store, round int, left map[int64]storetest.Left) {
			db := s.(*DB)
			var ok string
			require.NoError(t, db.r.QueryRow(`PRAGMA integrity_check`).Scan(&ok))
			assert.Equal(t, "ok", ok, "round %d", round)
			assert.Equal(t, int64(len(left)), db.Recovered(), "round %d: every active job is recovered", round)
			var keys, distinct int
			require.NoError(t, db.r.QueryRow(`SELECT count(*), count(DISTINCT key) FROM jobs`).Scan(&keys, &distinct))
			assert.Equal(t, keys, distinct, "round %d: no key stored twice", round)
		},
	})
}
