package postgres

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage/postgres/pgtest"
	"heed/storage/storetest"
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(envCrash); dsn != "" {
		os.Exit(storetest.CrashChild(func() (engine.Store, error) { return Open(context.Background(), dsn) }))
	}
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// open opens a fresh database for t, a member of the fleet when worker is
// set.
func open(t *testing.T, opts ...Option) (*DB, string) {
	t.Helper()
	dsn := pgtest.Shared(t).DB(t)
	db, err := Open(context.Background(), dsn, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db, dsn
}
