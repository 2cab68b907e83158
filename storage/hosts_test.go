package storage

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// S4 (G10, B6): every field of a host's state the engine hands over comes back after a reopen.
// The state is filled field by field and checked to leave none at its zero value but the two the
// store keeps itself (Counts, UpdatedAt), so a field added to engine.HostState that SaveHost or
// Hosts drops fails here.
func TestHosts_S4_HostStateRoundTripAcrossReopen(t *testing.T) {
	tun := engine.DefaultTunables()
	tun.Burst = 7
	tun.ThrottleStatuses = []int{429, 503, 509}
	want := engine.HostState{
		Host: "backoff.example:8080", Tunables: &tun, Paused: true, PauseReason: "Retry-After 2 days",
		Level: 3, Streak: 2, Gate: time.Unix(1_800_000_000, 5), Breaker: engine.HalfOpen, Failures: 4,
		OpenedAt: time.Unix(1_700_000_000, 6), LastStatus: 429, Throttles: 17,
		Tokens: 1.5, TokensAt: time.Unix(1_700_000_100, 7), SpaceUntil: time.Unix(1_700_000_101, 8),
		QuotaName: "burst", QuotaForm: "RateLimit", QuotaLimit: 100, QuotaWindow: time.Minute, QuotaRemaining: 3,
		QuotaReset: time.Unix(1_700_000_120, 9), QuotaSeen: time.Unix(1_700_000_100, 10),
		QuotaUntil: time.Unix(1_700_000_106, 11), CrawlDelay: 5 * time.Second,
	}
	v := reflect.ValueOf(want)
	for i := range v.NumField() {
		switch name := v.Type().Field(i).Name; name {
		case "Counts", "UpdatedAt": // the store's
		default:
			require.False(t, v.Field(i).IsZero(), "the test leaves HostState.%s unset", name)
		}
	}
	saved := time.Unix(1_750_000_000, 9)
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path, withClock(newClock(saved)))
	require.NoError(t, err)
	require.NoError(t, db.SaveHost(want))
	require.NoError(t, db.Close(), "Close flushes the queued host row")

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	got, err := db.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.True(t, saved.Equal(got[0].UpdatedAt), "UpdatedAt is when it was saved: %v", got[0].UpdatedAt)
	want.UpdatedAt = got[0].UpdatedAt
	assert.Equal(t, want, got[0])
}

// S4: the states a host goes through come back as saved, each breaker state and the defaults.
func TestHosts_S4_RoundTripOfEachKind(t *testing.T) {
	at := func(sec int64) time.Time { return time.Unix(sec, 123456789) }
	tun := engine.DefaultTunables()
	tun.RatePerMin = 0.5
	rows := []engine.HostState{
		{Host: "defaults.example"},
		{Host: "tuned.example", Tunables: &tun},
		{Host: "paused.example", Paused: true, PauseReason: "user"},
		{Host: "backoff.example:8080", Level: 3, Streak: 2, Gate: at(1_800_000_000), LastStatus: 429, Throttles: 17,
			Tokens: 2.5, TokensAt: at(1_700_000_100), SpaceUntil: at(1_700_000_101)},
		{Host: "open.example", Breaker: engine.Open, Failures: 5, OpenedAt: at(1_700_000_000), LastStatus: 503},
		{Host: "half.example", Breaker: engine.HalfOpen, Failures: 1, OpenedAt: at(1_700_000_001)},
	}
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	for _, h := range rows {
		require.NoError(t, db.SaveHost(h))
	}
	require.NoError(t, db.Close())

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	got, err := db.Hosts(bg)
	require.NoError(t, err)
	byHost := map[string]engine.HostState{}
	var order []string
	for _, h := range got {
		byHost[h.Host] = h
		order = append(order, h.Host)
	}
	assert.IsNonDecreasing(t, order, "ordered by host")
	require.Len(t, byHost, len(rows))
	for _, want := range rows {
		t.Run(want.Host, func(t *testing.T) {
			h := byHost[want.Host]
			assert.False(t, h.UpdatedAt.IsZero())
			h.UpdatedAt = time.Time{}
			assert.Equal(t, want, h)
		})
	}
}

// S4: a save replaces the host's whole state (a reset to the defaults drops its tunables), and
// leaves its job counts, which are the triggers', as they are.
func TestHosts_S4_SaveReplacesStateKeepsCounts(t *testing.T) {
	db, _ := openTest(t)
	enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	tun := engine.DefaultTunables()
	require.NoError(t, db.SaveHost(engine.HostState{Host: "a.example", Tunables: &tun, Level: 2, Paused: true,
		Counts: engine.Counts{Done: 99}}))
	require.NoError(t, db.Flush(bg))
	hs, err := db.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.NotNil(t, hs[0].Tunables)
	assert.Equal(t, engine.Counts{Queued: 2}, hs[0].Counts, "the counts handed over are not saved")

	require.NoError(t, db.SaveHost(engine.HostState{Host: "a.example"})) // reset to defaults, resumed
	require.NoError(t, db.Flush(bg))
	hs, err = db.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Nil(t, hs[0].Tunables, "NULL tunables: the host follows the defaults")
	assert.False(t, hs[0].Paused)
	assert.Zero(t, hs[0].Level)
	assert.Equal(t, engine.Counts{Queued: 2}, hs[0].Counts)

	assert.Error(t, db.SaveHost(engine.HostState{}), "empty host")
}

// Hosts lists every host the store knows: one with a saved state and no jobs, and one with jobs
// and no saved state.
func TestHosts_S4_ListsHostsWithStateOrJobs(t *testing.T) {
	db, _ := openTest(t)
	require.NoError(t, db.SaveHost(engine.HostState{Host: "saved.example", Level: 1}))
	enqueueURLs(t, db, "jobs.example", "https://jobs.example/1")
	require.NoError(t, db.Flush(bg))
	hs, err := db.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	assert.Equal(t, "jobs.example", hs[0].Host)
	assert.Equal(t, engine.Counts{Queued: 1}, hs[0].Counts)
	assert.Equal(t, "saved.example", hs[1].Host)
	assert.Equal(t, 1, hs[1].Level)
	assert.Zero(t, hs[1].Counts)
}

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

func TestHostEvents_S4_TimelineNewestFirst(t *testing.T) {
	clock := newClock(time.Unix(1_750_000_000, 42))
	db, _ := openTest(t, withClock(clock))
	t0 := time.Unix(1_700_000_000, 0)
	kinds := []engine.EventKind{engine.EventThrottle, engine.EventBreakerOpen, engine.EventDecay, engine.EventPause,
		engine.EventBreakerHalfOpen, engine.EventRetryAfter}
	for i, k := range kinds {
		require.NoError(t, db.AppendEvent(engine.Event{Host: "a.example", At: t0.Add(time.Duration(i) * time.Second),
			Kind: k, Detail: fmt.Sprintf("d%d", i)}))
		require.NoError(t, db.AppendEvent(engine.Event{Host: "b.example", Kind: engine.EventResume}))
	}
	require.NoError(t, db.Flush(bg))

	evs, err := db.HostEvents(bg, "a.example", 0)
	require.NoError(t, err)
	require.Len(t, evs, len(kinds))
	for i, e := range evs {
		k := len(kinds) - 1 - i
		assert.Equal(t, engine.Event{Host: "a.example", At: t0.Add(time.Duration(k) * time.Second), Kind: kinds[k],
			Detail: fmt.Sprintf("d%d", k)}, e)
	}
	evs, err = db.HostEvents(bg, "a.example", 2)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, engine.EventRetryAfter, evs[0].Kind)
	assert.Equal(t, engine.EventBreakerHalfOpen, evs[1].Kind)

	evs, err = db.HostEvents(bg, "b.example", 1)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.True(t, clock.Now().Equal(evs[0].At), "zero At means now: %v", evs[0].At)
	evs, err = db.HostEvents(bg, "nobody.example", 0)
	require.NoError(t, err)
	assert.Empty(t, evs)
}

func TestSettings_U7_RoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	v, err := db.Setting(bg, "folder")
	require.NoError(t, err, "an unset setting is no error")
	assert.Empty(t, v)
	require.NoError(t, db.SetSetting(bg, "folder", "/old"))
	require.NoError(t, db.SetSetting(bg, "folder", "/home/u/Downloads"))
	require.NoError(t, db.SetSetting(bg, "defaults", `{"rate":1}`))
	require.NoError(t, db.SetSetting(bg, "empty", ""))
	require.NoError(t, db.Close())

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	for k, want := range map[string]string{"folder": "/home/u/Downloads", "defaults": `{"rate":1}`, "empty": ""} {
		got, err := db.Setting(bg, k)
		require.NoError(t, err)
		assert.Equal(t, want, got, k)
	}
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

// S5: a failing write in a batch fails alone; Flush reports the failure of a background write,
// once, and the other writes of its batch are kept.
func TestFlush_S5_ReportsBackgroundWriteErrorsOnce(t *testing.T) {
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
	j, err := db.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Empty(t, j.Part, "the failed note changed nothing")
	assert.NoError(t, db.Flush(bg), "an error is reported once")
}

func TestClose_S5_FlushesAndRefusesLaterWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]
	_, err = db.Start(bg, id, "1.part")
	require.NoError(t, err)
	for range 100 {
		require.NoError(t, db.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "a.example", Outcome: "ok"}))
	}
	require.NoError(t, db.Note(id, engine.Resume{Part: "1.part", Bytes: 77, Size: 100}))
	require.NoError(t, db.SaveHost(engine.HostState{Host: "a.example", Level: 4}))
	require.NoError(t, db.AppendEvent(engine.Event{Host: "a.example", Kind: engine.EventDecay}))
	require.NoError(t, db.Close())
	assert.ErrorIs(t, db.Close(), ErrClosed)
	assert.ErrorIs(t, db.RecordAttempt(engine.Attempt{JobID: id}), ErrClosed)
	assert.ErrorIs(t, db.Named(id), ErrClosed)
	assert.ErrorIs(t, db.Flush(bg), ErrClosed)
	_, err = db.Enqueue(bg, newJobs("a.example", "https://a.example/2"), noAgain)
	assert.ErrorIs(t, err, ErrClosed)

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	hist, err := db.History(bg, engine.HistoryQuery{})
	require.NoError(t, err)
	assert.Len(t, hist, 100)
	j, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, int64(77), j.Bytes, "the note rode the last commit")
	hs, err := db.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, 4, hs[0].Level)
	evs, err := db.HostEvents(bg, "a.example", 0)
	require.NoError(t, err)
	assert.Len(t, evs, 1)
}

// Close returns the errors of background writes no Flush reported.
func TestClose_S5_ReportsUnflushedErrors(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "heed.db"))
	require.NoError(t, err)
	require.NoError(t, db.RecordAttempt(engine.Attempt{JobID: 999, URL: "u", Host: "h", Outcome: "ok"}))
	assert.ErrorContains(t, db.Close(), "FOREIGN KEY")
}
