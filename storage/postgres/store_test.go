package postgres

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage/postgres/pgtest"
	"heed/storage/storetest"
)

// envCrash names the database a crash test's child writes to (see TestMain).
const envCrash = "HEED_POSTGRES_CRASH"

// pgStore opens the PostgreSQL store for storetest: a database of its own per test, on the
// shared throwaway server, opened again at the same URL. It is one Heed, not a fleet's worker.
// Its text columns hold no NUL byte and only UTF-8 (TextOnly).
var pgStore = storetest.Opener{
	New: func(t *testing.T) (engine.Store, func() engine.Store) {
		dsn := pgtest.Shared(t).DB(t)
		open := func() engine.Store {
			t.Helper()
			db, err := Open(context.Background(), dsn)
			require.NoError(t, err)
			return db
		}
		return open(), open
	},
	Close:    func(s engine.Store) error { return s.(*DB).Close() },
	TextOnly: true,
}

// TestStore runs the engine's Store contract on PostgreSQL: the same tests the SQLite store
// passes.
func TestStore(t *testing.T) { storetest.Run(t, pgStore) }

// TestCrash_S2_KillNineKeepsAcknowledged runs storetest's crash test on PostgreSQL: a child Heed
// (this test binary again, see TestMain) killed 20 times while it writes to one database.
func TestCrash_S2_KillNineKeepsAcknowledged(t *testing.T) {
	storetest.Crash(t, storetest.CrashOpener{
		DSN: func(t *testing.T) string { return pgtest.Shared(t).DB(t) },
		Child: func(t *testing.T, dsn string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envCrash+"="+dsn)
			return cmd
		},
		Open: func(t *testing.T, dsn string) engine.Store {
			db, err := Open(context.Background(), dsn)
			require.NoError(t, err)
			return db
		},
		Close: pgStore.Close,
	})
}
