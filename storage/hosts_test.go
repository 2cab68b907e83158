package storage

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// The contract of hosts, events, settings, Flush and Close is storetest's (TestStore); these are
// SQLite's own: its tunables column, its writer's batches and its errors.

// Saved tunables that no longer decode (written by another version) are dropped: the host
// follows the defaults, and the rest of its state is kept.
func TestHosts_S4_UndecodableTunablesDropped(t *testing.T) {
	db, _ := openTest(t)
	require.NoError(t, db.SaveHost(engine.HostState{Host: "a.example", Level: 2}))
	require.NoError(t, db.Flush(bg))
	require.NoError(t, db.write(bg, "old tunables", func(w *wtx) error {
		_, err := w.exec(`UPDATE hosts SET tunables_json = '{"burst": "many"}' WHERE host = 'a.example'`)
		return err
	}))
	hs, err := db.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Nil(t, hs[0].Tunables)
	assert.Equal(t, 2, hs[0].Level)
}

// holdWriter keeps the writer inside a transaction, as a slow commit would, until the returned
// release is called; release waits for the held write to commit.
func holdWriter(t *testing.T, db *DB) (release func()) {
	t.Helper()
	hold, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- db.write(bg, "hold", func(*wtx) error { once.Do(func() { close(held) }); <-hold; return nil })
	}()
	<-held
	return func() {
		close(hold)
		require.NoError(t, <-done)
	}
}

// waitQueued waits until n writes wait for the writer.
func waitQueued(t *testing.T, db *DB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(db.ops) < n {
		require.True(t, time.Now().Before(deadline), "%d writes queued, want %d", len(db.ops), n)
		time.Sleep(time.Millisecond)
	}
}

func TestGroupCommit_S5_WhatArrivesDuringACommitIsOneBatch(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]

	release := holdWriter(t, db)
	before := db.commits.Load()
	const n = 500
	for i := range n {
		require.NoError(t, db.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "a.example", Attempt: i, Outcome: "ok"}))
	}
	require.NoError(t, db.AppendEvent(engine.Event{Host: "a.example", Kind: engine.EventThrottle}))
	require.NoError(t, db.SaveHost(engine.HostState{Host: "a.example"}))
	release()
	require.NoError(t, db.Flush(bg))

	// The held op, then the 502 writes queued meanwhile as one batch; the flush rides with them
	// or, when the writer had already started that batch, commits alone.
	commits := db.commits.Load() - before
	assert.GreaterOrEqual(t, commits, int64(2))
	assert.LessOrEqual(t, commits, int64(3), "what arrived during a commit is one batch")
	hist, err := db.History(bg, engine.HistoryQuery{})
	require.NoError(t, err)
	assert.Len(t, hist, n)
}

// S5: writes that wait for their commit, from several goroutines at once, share one commit; each
// returns only after it, with its own result.
func TestGroupCommit_S5_ConcurrentWaitedWritesShareOneCommit(t *testing.T) {
	db, path := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")

	release := holdWriter(t, db)
	before := db.commits.Load()
	var wg sync.WaitGroup
	errs := make([]error, 6)
	var started engine.Job
	var enq []engine.Enqueued
	var changed []engine.Changed
	wg.Go(func() { started, errs[0] = db.Start(bg, ids[0], "1.part") })
	wg.Go(func() {
		changed, errs[1] = db.SetState(bg, ids[1:2], []engine.JobState{engine.JobQueued}, engine.JobPaused)
	})
	wg.Go(func() { enq, errs[2] = db.Enqueue(bg, newJobs("b.example", "https://b.example/1"), noAgain) })
	wg.Go(func() { errs[3] = db.SetSetting(bg, "folder", "/dl") })
	wg.Go(func() { errs[4] = db.SetSetting(bg, "other", "x") })
	wg.Go(func() { _, errs[5] = db.Start(bg, ids[2], "3.part") })
	waitQueued(t, db, 6)
	release()
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "write %d", i)
	}
	assert.Equal(t, int64(2), db.commits.Load()-before, "the held write's commit, then one for all six")
	assert.Equal(t, engine.JobActive, started.State)
	require.Len(t, changed, 1)
	require.Len(t, enq, 1)
	assert.False(t, enq[0].Duplicate)

	raw := rawOpenRO(t, path) // each was on disk when it returned
	var active, paused, settings int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE state = 'paused')
		FROM jobs`).Scan(&active, &paused))
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM settings WHERE key IN ('folder', 'other')`).Scan(&settings))
	assert.Equal(t, 2, active)
	assert.Equal(t, 1, paused)
	assert.Equal(t, 2, settings)
}

// S5: writes that fail within one batch of the writer fail alone, with SQLite's reasons: Flush
// reports both, and the other writes of the batch are kept.
func TestFlush_S5_FailingWritesOfOneBatchFailAlone(t *testing.T) {
	db, _ := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	for _, id := range ids {
		_, err := db.Start(bg, id, "")
		require.NoError(t, err)
	}
	require.NoError(t, db.Note(ids[0], engine.Resume{Part: "mine.part", Size: -1}))
	require.NoError(t, db.Flush(bg))

	release := holdWriter(t, db)
	id := ids[0]
	require.NoError(t, db.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "h", Outcome: "ok"}))
	require.NoError(t, db.RecordAttempt(engine.Attempt{JobID: 999, URL: "u", Host: "h", Outcome: "ok"})) // no such job
	require.NoError(t, db.Note(ids[1], engine.Resume{Part: "mine.part", Size: -1}))                      // another job's part
	require.NoError(t, db.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "h", Outcome: "ok"}))
	require.NoError(t, db.AppendEvent(engine.Event{Host: "a.example", Kind: engine.EventThrottle}))
	release()

	err := db.Flush(bg)
	assert.ErrorContains(t, err, "FOREIGN KEY", "Flush reports the failed write")
	assert.ErrorContains(t, err, "UNIQUE", "and the other one")
	hist, err := db.History(bg, engine.HistoryQuery{})
	require.NoError(t, err)
	assert.Len(t, hist, 2, "the good writes of the same batch are kept")
	evs, err := db.HostEvents(bg, "a.example", 0)
	require.NoError(t, err)
	assert.Len(t, evs, 1)
}

// S5: after Close every write and Close itself say ErrClosed; a Close with a background write
// failed and not flushed names SQLite's reason.
func TestClose_S5_ErrClosedAndTheUnflushedCause(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]
	require.NoError(t, db.Close())
	assert.ErrorIs(t, db.Close(), ErrClosed)
	assert.ErrorIs(t, db.RecordAttempt(engine.Attempt{JobID: id}), ErrClosed)
	assert.ErrorIs(t, db.Named(id), ErrClosed)
	assert.ErrorIs(t, db.Flush(bg), ErrClosed)
	_, err := db.Enqueue(bg, newJobs("a.example", "https://a.example/2"), noAgain)
	assert.ErrorIs(t, err, ErrClosed)

	db, err = Open(filepath.Join(t.TempDir(), "heed.db"))
	require.NoError(t, err)
	require.NoError(t, db.RecordAttempt(engine.Attempt{JobID: 999, URL: "u", Host: "h", Outcome: "ok"}))
	assert.ErrorContains(t, db.Close(), "FOREIGN KEY")
}
