package bench_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/bench"
	"heed/engine"
	"heed/storage"
)

// A fixture is a database as Heed would have it after queueing its URLs: the
// same schema and indexes, every job queued and due, the hosts' counts right,
// each host's jobs in queue order, and its keys known to Enqueue.
func TestBuildFixture_AsIfQueuedByHeed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, built, err := bench.Fixture(ctx, dir, 1000, 7)
	require.NoError(t, err)
	require.True(t, built)
	again, built, err := bench.Fixture(ctx, dir, 1000, 7)
	require.NoError(t, err)
	assert.False(t, built, "cached")
	assert.Equal(t, path, again)

	fresh := filepath.Join(t.TempDir(), "fresh.db")
	fdb, err := storage.Open(fresh)
	require.NoError(t, err)
	require.NoError(t, fdb.Close())
	assert.Equal(t, schema(t, fresh), schema(t, path), "same tables, indexes and triggers as a database Heed made")

	db, err := storage.Open(path)
	require.NoError(t, err)
	defer db.Close()
	hosts, err := db.Hosts(ctx)
	require.NoError(t, err)
	require.Len(t, hosts, 7)
	total := int64(0)
	for i, h := range hosts {
		assert.Equal(t, bench.FixtureHost(i), h.Host)
		want := int64(1000 / 7)
		if i < 1000%7 {
			want++
		}
		assert.Equal(t, want, h.Counts.Queued, h.Host)
		total += h.Counts.Queued
	}
	assert.Equal(t, int64(1000), total)
	counts, err := db.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1000), counts.Queued)

	host := bench.FixtureHost(3)
	next, err := db.NextJobs(ctx, host, engine.Cursor{}, 5)
	require.NoError(t, err)
	require.Len(t, next, 5)
	for k, q := range next {
		assert.Equal(t, int64(3+7*k+1), q.ID, "host 3's jobs in id order")
		assert.True(t, q.NotBefore.Before(time.Now()), "due")
		if k > 0 {
			assert.True(t, next[k-1].NotBefore.Before(q.NotBefore), "not-before grows with the id")
		}
	}
	j, err := db.Job(ctx, 4)
	require.NoError(t, err)
	assert.Equal(t, bench.FixtureURL(3, 7), j.URL)
	assert.Equal(t, host, j.Host)
	key, err := engine.HostKey(j.URL)
	require.NoError(t, err)
	assert.Equal(t, host, key, "the host column is the URL's host key")
	res, err := db.Enqueue(ctx, []engine.NewJob{{URL: j.URL, Key: j.URL, Host: host}}, 0)
	require.NoError(t, err)
	assert.True(t, res[0].Duplicate)
	assert.Equal(t, int64(4), res[0].ID)
}

func schema(t *testing.T, path string) []string {
	conn, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer conn.Close()
	rows, err := conn.Query(`SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	var mode string
	require.NoError(t, conn.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	return append(out, "journal_mode "+mode)
}
