package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// The contract of the job transitions is storetest's (TestStore); these are SQLite's own: its
// index, its commits, its counts and what Open reports.

// The states engine commands move jobs from (engine/commands.go).
var (
	pausable  = []engine.JobState{engine.JobQueued, engine.JobActive}
	resumable = []engine.JobState{engine.JobPaused}
	retryable = []engine.JobState{engine.JobDone, engine.JobFailed, engine.JobCancelled, engine.JobSkipped}
)

// row is a history row of job id as the engine hands it to Finish.
func row(id int64, outcome string, status int) *engine.Attempt {
	return &engine.Attempt{JobID: id, URL: "https://a.example/x", Host: "a.example", Attempt: 1,
		StartedAt: time.Unix(1_800_000_000, 0), Duration: time.Millisecond, Status: status, Outcome: outcome, Bytes: 3}
}

// F4: a part name is one job's for every write, not only those of Start and SetPart, which
// storetest checks: the unique index on jobs.part holds it, and is partial (jobs without a part
// are not in it).
func TestJobs_F4_PartIndexIsUnique(t *testing.T) {
	db, _ := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	_, err := db.Start(bg, ids[0], "same.part")
	require.NoError(t, err)
	err = db.write(bg, "raw", func(w *wtx) error {
		_, err := w.exec(`UPDATE jobs SET part = 'same.part' WHERE id = ?`, ids[1])
		return err
	})
	assert.ErrorContains(t, err, "UNIQUE")
	var unique, partial int
	require.NoError(t, db.r.QueryRow(`SELECT "unique", partial FROM pragma_index_list('jobs') WHERE name = 'jobs_part'`).
		Scan(&unique, &partial))
	assert.Equal(t, 1, unique)
	assert.Equal(t, 1, partial, "jobs without a part are not in it")
}

// J3, S3, S5: a transition is one commit: Finish records a done job with its last history row in
// one, and SetState moves several jobs in one.
func TestWriter_S5_EachTransitionIsOneCommit(t *testing.T) {
	db, _ := openTest(t)
	a := enqueueURLs(t, db, "a.example", "https://a.example/f", "https://a.example/2")
	b := enqueueURLs(t, db, "b.example", "https://b.example/1")
	_, err := db.Start(bg, a[0], "f.part")
	require.NoError(t, err)
	require.NoError(t, db.Flush(bg))

	before := db.commits.Load()
	require.NoError(t, finish(db, bg, engine.End{JobID: a[0], State: engine.JobDone, Attempt: row(a[0], "ok", 200),
		File: "f", SHA256: "abc", Status: 200, Resume: engine.Resume{Part: "f.part", Bytes: 10, Size: 10}}))
	assert.Equal(t, int64(1), db.commits.Load()-before, "Finish: one commit")

	before = db.commits.Load()
	changed, err := db.SetState(bg, []int64{b[0], 999, a[0], a[1], b[0]}, pausable, engine.JobPaused)
	require.NoError(t, err)
	assert.Len(t, changed, 2)
	assert.Equal(t, int64(1), db.commits.Load()-before, "SetState: one commit")
}

// S2: Recovered says how many jobs Open found active and queued again: the jobs a crash (here a
// Close with jobs active) left active, and none the next time.
func TestOpen_S2_RecoveredCountsTheJobs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	assert.Zero(t, db.Recovered(), "a new database")
	for _, s := range engine.JobStates {
		jobIn(t, db, "https://a.example/"+string(s), s)
	}
	jobIn(t, db, "https://a.example/active2", engine.JobActive)
	require.NoError(t, db.Close())

	db, err = Open(path)
	require.NoError(t, err)
	assert.Equal(t, int64(2), db.Recovered())
	require.NoError(t, db.Close())
	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	assert.Zero(t, db.Recovered(), "nothing to recover the second time")
}

// U1: Counts sums the hosts rows: every state, over every host.
func TestCounts_U1_SumsTheHosts(t *testing.T) {
	db, _ := openTest(t)
	for i, s := range engine.JobStates {
		jobOfHostIn(t, db, "a.example", fmt.Sprintf("https://a.example/%d", i), s)
		jobOfHostIn(t, db, "b.example", fmt.Sprintf("https://b.example/%d", i), s)
	}
	jobOfHostIn(t, db, "c.example", "https://c.example/1", engine.JobDone)
	got, err := db.Counts(bg)
	require.NoError(t, err)
	assert.Equal(t, engine.Counts{Queued: 2, Active: 2, Paused: 2, Done: 3, Failed: 2, Cancelled: 2, Skipped: 2}, got)
	assertCounts(t, db)
}

// U1: the counts change in the same transaction as the transition: a write rolled back takes its
// count change with it, and a reader's snapshot never sees counts that disagree with the jobs,
// however many transitions commit meanwhile.
func TestCounts_U1_SameTransactionAsTheTransition(t *testing.T) {
	db, path := openTest(t)
	urls := make([]string, 40)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://a.example/%d", i)
	}
	ids := enqueueURLs(t, db, "a.example", urls...)
	boom := errors.New("boom")
	err := db.write(bg, "rolled back", func(w *wtx) error {
		if _, err := w.exec(`UPDATE jobs SET state = 'paused' WHERE id = ?`, ids[0]); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, map[string]engine.Counts{"a.example": {Queued: 40}}, hostCounts(t, db), "rolled back with the job")
	assertCounts(t, db)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := ids[i%len(ids)]
			switch i / len(ids) % 4 {
			case 0:
				_, err := db.Start(bg, id, "")
				assert.NoError(t, err)
			case 1:
				assert.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobFailed}))
			case 2:
				_, err := db.SetState(bg, []int64{id}, retryable, engine.JobQueued)
				assert.NoError(t, err)
			case 3:
				_, err := db.SetState(bg, []int64{id}, pausable, engine.JobPaused)
				assert.NoError(t, err)
				_, err = db.SetState(bg, []int64{id}, resumable, engine.JobQueued)
				assert.NoError(t, err)
			}
		}
	})
	raw := rawOpenRO(t, path)
	for range 200 {
		tx, err := raw.BeginTx(bg, nil)
		require.NoError(t, err)
		byQuery := countsByQuery(t, tx)
		rows, err := tx.Query(`SELECT host, queued, active, paused_jobs, done, failed, cancelled, skipped FROM hosts`)
		require.NoError(t, err)
		byRow := map[string]engine.Counts{}
		for rows.Next() {
			var h string
			var c engine.Counts
			require.NoError(t, rows.Scan(&h, &c.Queued, &c.Active, &c.Paused, &c.Done, &c.Failed, &c.Cancelled, &c.Skipped))
			byRow[h] = c
		}
		require.NoError(t, rows.Err())
		require.NoError(t, tx.Rollback())
		require.Equal(t, byQuery, byRow, "one snapshot, counts and jobs agree")
	}
	close(stop)
	wg.Wait()
}
