package storage

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// schemaOf returns the SQL of every table, index and trigger of a database, by name.
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
	require.Contains(t, want, "jobs_queue")
	require.Contains(t, want, "jobs_recounted")
	require.NoError(t, fresh.Close())

	for from := 0; from <= len(migrations); from++ {
		t.Run(fmt.Sprintf("from v%d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "heed.db")
			raw := rawOpen(t, path)
			require.NoError(t, migrateTo(bg, raw, migrations, from))
			if from >= 1 { // settings and jobs exist since v1
				_, err := raw.Exec(`INSERT INTO settings (key, value) VALUES ('folder', '/dl')`)
				require.NoError(t, err)
				insert := `INSERT INTO jobs (url, host, state, created_at, updated_at) VALUES
					('https://a.example/1', 'a.example', 'done', 1, 1), ('https://a.example/2', 'a.example', 'queued', 1, 1)`
				if from >= 8 { // the key is a column of its own since v8, and the host's row counts jobs
					insert = `INSERT INTO jobs (url, key, host, state, created_at, updated_at) VALUES
						('https://a.example/1', 'https://a.example/1', 'a.example', 'done', 1, 1),
						('https://a.example/2', 'https://a.example/2', 'a.example', 'queued', 1, 1);
						INSERT INTO hosts (host, queued, done) VALUES ('a.example', 1, 1)`
				}
				_, err = raw.Exec(insert)
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
				got, err := db.Setting(bg, "folder")
				require.NoError(t, err)
				assert.Equal(t, "/dl", got, "data survives the migration")
				assert.Equal(t, map[string]engine.Counts{"a.example": {Done: 1, Queued: 1}}, hostCounts(t, db),
					"jobs survive, counted in their host's row")
				res, err := db.Enqueue(bg, newJobs("a.example", "https://a.example/1", "https://a.example/3"), noAgain)
				require.NoError(t, err)
				assert.True(t, res[0].Duplicate, "keyed by their URL")
				assert.False(t, res[1].Duplicate)
				assertCounts(t, db)
			}
		})
	}
}

// S1: a database that an older Heed (schema version 7) used — parts waiting for their final name
// in naming, interrupted jobs, the identity and start log settings, host rows, history — is carried
// to version 8 whole: every job keeps its id and fields, is keyed by its URL, a done job's part
// waiting in naming moves to its part column, the tables and settings of the mechanisms that are
// gone go, and each host's row counts its jobs.
func TestMigrate_S1_Version7ToOnePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	raw := rawOpen(t, path)
	require.NoError(t, migrateTo(bg, raw, migrations, 7))
	_, err := raw.Exec(`
		INSERT INTO jobs (id, url, host, state, not_before, created_at, updated_at, file, part, etag, last_modified,
			size, bytes, sha256, attempts, throttled, last_error, last_status) VALUES
		(1, 'https://a.example/done-unnamed', 'a.example', 'done', 0, 10, 11, 'done-unnamed', '', '"e1"', 'lm1',
			100, 100, 'sha1', 1, 0, '', 200),
		(2, 'https://a.example/done-named', 'a.example', 'done', 0, 10, 12, 'done-named', '', '', '', 5, 5, 'sha2', 2, 1, '', 200),
		(3, 'https://a.example/failed', 'a.example', 'failed', 0, 10, 13, '', 'failed.part', '"e3"', '', 1000, 300, '',
			3, 0, 'gone', 410),
		(4, 'https://b.example/queued', 'b.example', 'queued', 1700000000000000000, 10, 14, '', 'q.part', '', '', -1, 7, '',
			1, 2, 'reset', 503),
		(5, 'https://b.example/active', 'b.example', 'active', 0, 10, 15, '', 'a.part', '', '', -1, 9, '', 2, 0, '', 0),
		(6, 'https://c.example/paused', 'c.example', 'paused', 0, 10, 16, '', '', '', '', -1, 0, '', 0, 0, '', 0),
		(7, 'https://c.example/cancelled', 'c.example', 'cancelled', 0, 10, 17, '', '', '', '', -1, 0, '', 0, 0, '', 0);
		INSERT INTO naming (job_id, part) VALUES (1, 'done-unnamed.part');
		INSERT INTO interrupted (job_id, folder) VALUES (5, '/dl/one');
		INSERT INTO settings (key, value) VALUES ('folder', '/dl'), ('run_folder', '/dl/one'), ('starts_applied', '42');
		INSERT INTO attempts (job_id, url, host, attempt, started_at, outcome, status) VALUES
			(1, 'https://a.example/done-unnamed', 'a.example', 1, 5, 'ok', 200),
			(3, 'https://a.example/failed', 'a.example', 3, 6, 'failed', 410);
		INSERT INTO hosts (host, tunables_json, paused, pause_reason, level, breaker_state, failures, throttles, updated_at)
			VALUES ('a.example', '{"burst": 3}', 1, 'user', 2, 1, 4, 9, 99), ('gone.example', NULL, 0, '', 1, 0, 0, 0, 98);
	`)
	require.NoError(t, err)
	var identity string
	require.NoError(t, raw.QueryRow(`SELECT value FROM settings WHERE key = 'identity'`).Scan(&identity))
	require.NotEmpty(t, identity, "version 5 gave it an identity")
	require.NoError(t, raw.Close())

	db, err := Open(path)
	require.NoError(t, err)
	defer db.Close()
	v, err := schemaVersion(bg, db.r)
	require.NoError(t, err)
	assert.Equal(t, len(migrations), v)
	assert.Equal(t, int64(1), db.Recovered(), "the job left active is queued again")

	byID := map[int64]engine.Job{}
	js, err := db.Jobs(bg, engine.JobQuery{})
	require.NoError(t, err)
	for _, j := range js {
		byID[j.ID] = j
	}
	require.Len(t, byID, 7, "every job, by its id")
	j := byID[1]
	assert.Equal(t, engine.JobDone, j.State)
	assert.Equal(t, "done-unnamed.part", j.Part, "the part waiting in naming is the done job's part")
	assert.Equal(t, "done-unnamed", j.File)
	assert.Equal(t, "sha1", j.SHA256)
	assert.Equal(t, `"e1"`, j.ETag)
	assert.Equal(t, "lm1", j.LastModified)
	assert.Equal(t, int64(100), j.Size)
	assert.Equal(t, int64(100), j.Bytes)
	assert.Equal(t, 200, j.LastStatus)
	assert.Equal(t, int64(10), j.CreatedAt.UnixNano())
	assert.Equal(t, int64(11), j.UpdatedAt.UnixNano())
	assert.Empty(t, j.Name)
	assert.Empty(t, byID[2].Part, "a named done job has no part")
	assert.Equal(t, 2, byID[2].Attempts)
	assert.Equal(t, 1, byID[2].Throttled)
	j = byID[3]
	assert.Equal(t, engine.JobFailed, j.State)
	assert.Equal(t, "failed.part", j.Part, "a failed job keeps its part for a retry")
	assert.Equal(t, int64(300), j.Bytes)
	assert.Equal(t, "gone", j.LastError)
	assert.Equal(t, 410, j.LastStatus)
	assert.Equal(t, 3, j.Attempts)
	j = byID[4]
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Equal(t, int64(1_700_000_000_000_000_000), j.NotBefore.UnixNano())
	assert.Equal(t, "q.part", j.Part)
	assert.Equal(t, 2, j.Throttled)
	j = byID[5]
	assert.Equal(t, engine.JobQueued, j.State, "recovered")
	assert.Equal(t, "a.part", j.Part)
	assert.Equal(t, int64(9), j.Bytes)
	assert.Equal(t, 1, j.Attempts, "its cut-off attempt given back")
	assert.Equal(t, engine.JobPaused, byID[6].State)
	assert.Equal(t, engine.JobCancelled, byID[7].State)

	us, err := db.Unnamed(bg)
	require.NoError(t, err)
	assert.Equal(t, []int64{1}, jobIDs(us), "the done job waiting for its name is found to name")

	var keys int
	require.NoError(t, db.r.QueryRow(`SELECT count(*) FROM jobs WHERE key = url`).Scan(&keys))
	assert.Equal(t, 7, keys, "keyed by the URL as stored")
	for _, table := range []string{"naming", "interrupted"} {
		var n int
		require.NoError(t, db.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = ?`, table).Scan(&n))
		assert.Zero(t, n, "%s is gone", table)
	}
	for _, key := range []string{"identity", "run_folder", "starts_applied"} {
		v, err := db.Setting(bg, key)
		require.NoError(t, err)
		assert.Empty(t, v, "%s is gone", key)
	}
	folder, err := db.Setting(bg, "folder")
	require.NoError(t, err)
	assert.Equal(t, "/dl", folder)

	hist, err := db.History(bg, engine.HistoryQuery{})
	require.NoError(t, err)
	assert.Len(t, hist, 2, "history is kept")
	rows, err := db.r.Query(`PRAGMA foreign_key_check`)
	require.NoError(t, err)
	assert.False(t, rows.Next(), "every history row still refers to its job")
	require.NoError(t, rows.Close())

	hs, err := db.Hosts(bg)
	require.NoError(t, err)
	byHost := map[string]engine.HostState{}
	for _, h := range hs {
		byHost[h.Host] = h
	}
	require.Len(t, byHost, 4, "the saved hosts and the hosts of jobs")
	a := byHost["a.example"]
	assert.True(t, a.Paused)
	assert.Equal(t, "user", a.PauseReason)
	assert.Equal(t, 2, a.Level)
	assert.Equal(t, engine.Open, a.Breaker)
	assert.Equal(t, 4, a.Failures)
	assert.Equal(t, int64(9), a.Throttles)
	require.NotNil(t, a.Tunables)
	assert.Equal(t, 3, a.Tunables.Burst)
	assert.Equal(t, engine.Counts{Done: 2, Failed: 1}, a.Counts)
	assert.Equal(t, engine.Counts{Queued: 2}, byHost["b.example"].Counts)
	assert.Equal(t, engine.Counts{Paused: 1, Cancelled: 1}, byHost["c.example"].Counts)
	assert.Zero(t, byHost["gone.example"].Counts)
	assert.Equal(t, 1, byHost["gone.example"].Level)
	assertCounts(t, db)

	// The triggers count from here on, and the migrated jobs behave as any.
	j, err = db.Start(bg, 4, "other.part")
	require.NoError(t, err)
	assert.Equal(t, "q.part", j.Part, "its resume goes on in its part")
	_, err = db.SetState(bg, []int64{6}, []engine.JobState{engine.JobPaused}, engine.JobQueued)
	require.NoError(t, err)
	_, err = db.Start(bg, 6, "failed.part")
	assert.ErrorIs(t, err, engine.ErrPartTaken, "parts are one job's")
	res, err := db.Enqueue(bg, newJobs("a.example", "https://a.example/done-named"), noAgain)
	require.NoError(t, err)
	assert.Equal(t, []engine.Enqueued{{ID: 2, Duplicate: true, State: engine.JobDone}}, res)
	assertCounts(t, db)
}

// S1: a version-7 database may record one part name for two jobs — parts were only unique on
// disk, and a failed job's part could be deleted by hand, or another download folder used, before
// another job took the name. Migrating it must not fail (the database would never open again): it
// opens, with no part name recorded for two jobs.
func TestMigrate_S1_Version7WithOnePartForTwoJobs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	raw := rawOpen(t, path)
	require.NoError(t, migrateTo(bg, raw, migrations, 7))
	_, err := raw.Exec(`
		INSERT INTO jobs (id, url, host, state, created_at, updated_at, part, bytes) VALUES
			(1, 'https://a.example/1/index.html', 'a.example', 'failed', 1, 1, 'index.html.part', 10),
			(2, 'https://a.example/2/index.html', 'a.example', 'queued', 1, 1, 'index.html.part', 20),
			(3, 'https://a.example/3/index.html', 'a.example', 'done', 1, 1, '', 30);
		INSERT INTO naming (job_id, part) VALUES (3, 'index.html.part');
	`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	db, err := Open(path)
	require.NoError(t, err, "the database opens")
	defer db.Close()
	var parts, distinct int
	require.NoError(t, db.r.QueryRow(`SELECT count(part), count(DISTINCT part) FROM jobs WHERE part <> ''`).
		Scan(&parts, &distinct))
	assert.Equal(t, distinct, parts, "no part name is two jobs'")
	assertCounts(t, db)
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
	n, err := db.Counts(bg)
	require.NoError(t, err)
	assert.Equal(t, engine.Counts{Queued: 1}, n)
}

// F36: a database written by a newer Heed is refused, by Open and OpenReader, and left as it was.
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
	r, err := OpenReader(path)
	assert.Nil(t, r)
	assert.ErrorIs(t, err, ErrSchemaTooNew)

	raw = rawOpen(t, path)
	v, err := schemaVersion(bg, raw)
	require.NoError(t, err)
	assert.Equal(t, len(migrations)+1, v, "the newer database is left as it was")
}

// S6: OpenReader never migrates: a database of an older schema (the Heed holding it is upgrading
// it, or is an older Heed) is refused as not ready, and left as it is.
func TestOpenReader_S1_OlderSchemaNotReadyAndNotMigrated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	raw := rawOpen(t, path)
	require.NoError(t, migrateTo(bg, raw, migrations, 7))
	require.NoError(t, raw.Close())

	r, err := OpenReader(path)
	assert.Nil(t, r)
	assert.ErrorIs(t, err, ErrNotReady)
	assert.ErrorContains(t, err, path)
	raw = rawOpen(t, path)
	v, err := schemaVersion(bg, raw)
	require.NoError(t, err)
	assert.Equal(t, 7, v, "left at its version")
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

// S1: foreign keys are off while a step runs, so that a step may rebuild a table others refer to
// (SQLite's twelve steps, as version 8 rebuilds jobs), and checked before it commits: a step that
// leaves rows referring to nothing is undone. They are on again afterwards.
func TestMigrate_S1_ForeignKeysOffDuringAStepCheckedBeforeCommit(t *testing.T) {
	base := []migration{
		{Version: 1, Name: "0001_init.sql", SQL: `CREATE TABLE parent (id INTEGER PRIMARY KEY, v TEXT);
			CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL REFERENCES parent (id));
			INSERT INTO parent (id, v) VALUES (1, 'a'), (2, 'b');
			INSERT INTO child (parent_id) VALUES (1), (2);`},
	}
	rebuild := migration{Version: 2, Name: "0002_rebuild.sql", SQL: `CREATE TABLE parent_new (id INTEGER PRIMARY KEY, v TEXT, w TEXT);
		INSERT INTO parent_new (id, v) SELECT id, v FROM parent;
		DROP TABLE parent;
		ALTER TABLE parent_new RENAME TO parent;`}
	orphan := migration{Version: 2, Name: "0002_orphan.sql", SQL: `DELETE FROM parent WHERE id = 2;`}

	t.Run("a rebuild of a referred-to table", func(t *testing.T) {
		raw, err := sql.Open("sqlite3", dsn(filepath.Join(t.TempDir(), "heed.db"), "_fk=on"))
		require.NoError(t, err)
		raw.SetMaxOpenConns(1)
		defer raw.Close()
		require.NoError(t, migrate(bg, raw, append(base, rebuild)))
		v, err := schemaVersion(bg, raw)
		require.NoError(t, err)
		assert.Equal(t, 2, v)
		var n int
		require.NoError(t, raw.QueryRow(`SELECT count(*) FROM child JOIN parent ON parent.id = child.parent_id`).Scan(&n))
		assert.Equal(t, 2, n, "the children still find their parents")
		var fk int
		require.NoError(t, raw.QueryRow(`PRAGMA foreign_keys`).Scan(&fk))
		assert.Equal(t, 1, fk, "foreign keys are on again")
	})
	t.Run("a step that leaves orphans", func(t *testing.T) {
		raw, err := sql.Open("sqlite3", dsn(filepath.Join(t.TempDir(), "heed.db"), "_fk=on"))
		require.NoError(t, err)
		raw.SetMaxOpenConns(1)
		defer raw.Close()
		err = migrate(bg, raw, append(base, orphan))
		require.Error(t, err)
		assert.ErrorContains(t, err, "0002_orphan.sql")
		assert.ErrorContains(t, err, "foreign keys")
		v, err := schemaVersion(bg, raw)
		require.NoError(t, err)
		assert.Equal(t, 1, v, "undone")
		var n int
		require.NoError(t, raw.QueryRow(`SELECT count(*) FROM parent`).Scan(&n))
		assert.Equal(t, 2, n, "undone")
		var fk int
		require.NoError(t, raw.QueryRow(`PRAGMA foreign_keys`).Scan(&fk))
		assert.Equal(t, 1, fk, "foreign keys are on again")
	})
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
	assert.Len(t, migrations, 10, "the embedded migrations load")
}
