package storage

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage/storetest"
)

// Child processes: the test binary re-executes itself with HEED_STORAGE_CHILD set to play a
// second Heed (lock test) or a Heed that gets killed (crash test, storetest.CrashChild).
const (
	envChild = "HEED_STORAGE_CHILD"
	envDB    = "HEED_STORAGE_DB"
)

func TestMain(m *testing.M) {
	switch os.Getenv(envChild) {
	case "":
		os.Exit(m.Run())
	case "open":
		os.Exit(childOpen(os.Getenv(envDB)))
	case "crash":
		os.Exit(storetest.CrashChild(func() (engine.Store, error) { return Open(os.Getenv(envDB)) }))
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

// Enqueue's againBelow: no ended duplicate is queued again, or every one is.
const (
	noAgain  int64 = 0
	allAgain int64 = math.MaxInt64
)

// openTest opens a fresh database under t.TempDir and closes it when the test ends.
func openTest(t testing.TB, opts ...Option) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db, path
}

// testClock is a settable clock for Open (withClock): every write's "now".
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(t time.Time) *testClock { return &testClock{now: t} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// withClock makes the DB read the time from c.
func withClock(c *testClock) Option { return func(o *options) { o.now = c.Now } }

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

// newJobs are urls on host as Enqueue takes them, each URL its own key.
func newJobs(host string, urls ...string) []engine.NewJob {
	jobs := make([]engine.NewJob, len(urls))
	for i, u := range urls {
		jobs[i] = engine.NewJob{URL: u, Key: u, Host: host}
	}
	return jobs
}

// enqueueURLs enqueues urls on host and returns their ids; each must be new.
func enqueueURLs(t testing.TB, db *DB, host string, urls ...string) []int64 {
	t.Helper()
	res, err := db.Enqueue(bg, newJobs(host, urls...), noAgain)
	require.NoError(t, err)
	require.Len(t, res, len(urls))
	ids := make([]int64, len(urls))
	for i, it := range res {
		require.False(t, it.Duplicate, "%s is new", urls[i])
		ids[i] = it.ID
	}
	return ids
}

// jobIn puts a new job of a.example into state s through the public transitions.
func jobIn(t testing.TB, db *DB, url string, s engine.JobState) int64 {
	t.Helper()
	return jobOfHostIn(t, db, "a.example", url, s)
}

// jobOfHostIn is jobIn for a job of host. Active, done and failed jobs went through Start (one
// attempt, no part); a done job's file is "f", its SHA-256 "aa".
func jobOfHostIn(t testing.TB, db *DB, host, url string, s engine.JobState) int64 {
	t.Helper()
	id := enqueueURLs(t, db, host, url)[0]
	switch s {
	case engine.JobQueued:
		return id
	case engine.JobPaused, engine.JobCancelled, engine.JobSkipped:
		changed, err := db.SetState(bg, []int64{id}, []engine.JobState{engine.JobQueued}, s)
		require.NoError(t, err)
		require.Len(t, changed, 1)
		return id
	}
	_, err := db.Start(bg, id, "")
	require.NoError(t, err)
	switch s {
	case engine.JobDone:
		require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobDone, File: "f", SHA256: "aa",
			Status: 200, Resume: engine.Resume{Bytes: 1, Size: 1}}))
	case engine.JobFailed:
		require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobFailed, Error: "gone", Status: 410,
			Resume: engine.Resume{Size: -1}}))
	}
	return id
}

// countsByQuery counts the jobs of every host by state with COUNT(*) GROUP BY, the way the
// triggers' counts must come out.
func countsByQuery(t testing.TB, q interface {
	Query(string, ...any) (*sql.Rows, error)
}) map[string]engine.Counts {
	t.Helper()
	rows, err := q.Query(`SELECT host, state, count(*) FROM jobs GROUP BY host, state`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]engine.Counts{}
	for rows.Next() {
		var host, state string
		var n int64
		require.NoError(t, rows.Scan(&host, &state, &n))
		c := out[host]
		addCount(&c, engine.JobState(state), n)
		out[host] = c
	}
	require.NoError(t, rows.Err())
	return out
}

func addCount(c *engine.Counts, s engine.JobState, n int64) {
	switch s {
	case engine.JobQueued:
		c.Queued += n
	case engine.JobActive:
		c.Active += n
	case engine.JobPaused:
		c.Paused += n
	case engine.JobDone:
		c.Done += n
	case engine.JobFailed:
		c.Failed += n
	case engine.JobCancelled:
		c.Cancelled += n
	case engine.JobSkipped:
		c.Skipped += n
	default:
		panic("state " + string(s))
	}
}

// hostCounts returns the counts Hosts reports, by host, leaving out hosts without jobs.
func hostCounts(t testing.TB, db *DB) map[string]engine.Counts {
	t.Helper()
	hs, err := db.Hosts(bg)
	require.NoError(t, err)
	out := map[string]engine.Counts{}
	for _, h := range hs {
		if h.Counts != (engine.Counts{}) {
			out[h.Host] = h.Counts
		}
	}
	return out
}

// assertCounts checks that the hosts rows count every host's jobs as COUNT(*) does.
func assertCounts(t testing.TB, db *DB, msgAndArgs ...any) {
	t.Helper()
	assert.Equal(t, countsByQuery(t, db.r), hostCounts(t, db), msgAndArgs...)
}

// jobIDs returns the ids of jobs.
func jobIDs(js []engine.Job) []int64 {
	var out []int64
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// finish is db.Finish for the tests that look only at its error.
func finish(db *DB, ctx context.Context, end engine.End) error {
	_, err := db.Finish(ctx, end)
	return err
}
