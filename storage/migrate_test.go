package storage

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schemaOf returns the SQL of every table and index of a database, by name.
func schemaOf(t *testing.T, q *sql.DB) map[string]string {
	t.Helper()
	rows, err := q.Query(`SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY name`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, s string
		require.NoError(t, rows.Scan(&name, &s))
		out[name] = s
	}
	require.NoError(t, rows.Err())
	return out
}

// TestMigrate_S1_FromEveryVersion builds a database at every schema version this Heed has known
// (0 = empty file) and opens it: each must arrive at the newest version with the same schema as a
// fresh database, keeping its data. A new file in migrations/ is covered without changes here.
func TestMigrate_S1_FromEveryVersion(t *testing.T) {
	fresh, _ := openTest(t)
	want := schemaOf(t, fresh.r)
	require.NotEmpty(t, want)
	require.NoError(t, fresh.Close())

	for from := 0; from <= len(migrations); from++ {
		t.Run(fmt.Sprintf("from v%d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "heed.db")
			raw := rawOpen(t, path)
			require.NoError(t, migrateTo(bg, raw, migrations, from))
			if from >= 1 { // settings exist since v1
				_, err := raw.Exec(`INSERT INTO settings (key, value) VALUES ('folder', '/dl')`)
				require.NoError(t, err)
				_, err = raw.Exec(`INSERT INTO jobs (url, host, state, created_at, updated_at) VALUES
					('https://a.example/1', 'a.example', 'done', 1, 1), ('https://a.example/2', 'a.example', 'queued', 1, 1)`)
				require.NoError(t, err)
			}
			require.NoError(t, raw.Close())

			db, err := Open(path)
			require.NoError(t, err)
			defer db.Close()
			v, err := schemaVersion(bg, db.r)
			require.NoError(t, err)
			assert.Equal(t, len(migrations), v)
			assert.Equal(t, want, schemaOf(t, db.r))
			if from >= 1 {
				got, err := db.GetSetting(bg, "folder")
				require.NoError(t, err)
				assert.Equal(t, "/dl", got, "data survives the migration")
				byHost, err := db.CountsByHost(bg)
				require.NoError(t, err)
				assert.Equal(t, map[string]map[State]int64{"a.example": {StateDone: 1, StateQueued: 1}}, byHost,
					"jobs survive, counted through the new indexes")
			}
		})
	}
}

func TestMigrate_S1_ReopenIsNoOp(t *testing.T) {
	db, path := openTest(t)
	enqueueURLs(t, db, "a.example", "https://a.example/1")
	before := schemaOf(t, db.r)
	require.NoError(t, db.Close())

	db, err := Open(path)
	require.NoError(t, err)
	defer db.Close()
	v, err := schemaVersion(bg, db.r)
	require.NoError(t, err)
	assert.Equal(t, len(migrations), v)
	assert.Equal(t, before, schemaOf(t, db.r))
	n, err := db.CountsByState(bg)
	require.NoError(t, err)
	assert.Equal(t, map[State]int64{StateQueued: 1}, n)
}

func TestMigrate_S1_NewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	raw := rawOpen(t, path)
	require.NoError(t, migrate(bg, raw, migrations))
	_, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", len(migrations)+1))
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	db, err := Open(path)
	require.Error(t, err)
	assert.Nil(t, db)
	assert.ErrorIs(t, err, ErrSchemaTooNew)
	assert.Contains(t, err.Error(), path)

	raw = rawOpen(t, path)
	v, err := schemaVersion(bg, raw)
	require.NoError(t, err)
	assert.Equal(t, len(migrations)+1, v, "the newer database is left as it was")
}

func TestMigrate_S1_OneTransactionPerStep(t *testing.T) {
	ms := []migration{
		{Version: 1, Name: "0001_a.sql", SQL: "CREATE TABLE a (x INTEGER);"},
		{Version: 2, Name: "0002_b.sql", SQL: "CREATE TABLE b (x INTEGER); CREATE TABLE a (y INTEGER);"},
	}
	raw := rawOpen(t, filepath.Join(t.TempDir(), "heed.db"))
	err := migrate(bg, raw, ms)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0002_b.sql")

	v, err := schemaVersion(bg, raw)
	require.NoError(t, err)
	assert.Equal(t, 1, v, "the failed step left no version behind")
	var n int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'b'`).Scan(&n))
	assert.Zero(t, n, "the failed step left no table behind")
}

func TestLoadMigrations_S1_NumberedWithoutGaps(t *testing.T) {
	cases := []struct {
		name    string
		files   fstest.MapFS
		want    []int
		wantErr bool
	}{
		{"in order", fstest.MapFS{
			"migrations/0002_b.sql": {Data: []byte("b")},
			"migrations/0001_a.sql": {Data: []byte("a")},
		}, []int{1, 2}, false},
		{"gap", fstest.MapFS{
			"migrations/0001_a.sql": {Data: []byte("a")},
			"migrations/0003_c.sql": {Data: []byte("c")},
		}, nil, true},
		{"bad name", fstest.MapFS{"migrations/init.sql": {Data: []byte("a")}}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms, err := loadMigrations(c.files)
			if c.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			var got []int
			for _, m := range ms {
				got = append(got, m.Version)
			}
			assert.Equal(t, c.want, got)
		})
	}
	assert.NotEmpty(t, migrations, "the embedded migrations load")
}
