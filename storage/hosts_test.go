package storage

import (
	"database/sql"
	"encoding/json"
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

func TestHosts_S4_RoundTripAcrossReopen(t *testing.T) {
	at := func(sec int64) time.Time { return time.Unix(sec, 123456789) }
	rows := []HostRow{
		{Host: "defaults.example", UpdatedAt: at(1)},
		{Host: "tuned.example", Tunables: json.RawMessage(`{"rate":0.5,"burst":2,"jitter":["100ms","1s"]}`), UpdatedAt: at(2)},
		{Host: "paused.example", Paused: true, PauseReason: "user", UpdatedAt: at(3)},
		{Host: "backoff.example:8080", Level: 3, Streak: 2, Gate: at(1_800_000_000), LastStatus: 429, Throttles: 17,
			Tokens: 2.5, TokensAt: at(1_700_000_100), SpaceUntil: at(1_700_000_101), UpdatedAt: at(4)},
		{Host: "breaker.example", Breaker: 2, Failures: 5, OpenedAt: at(1_700_000_000), LastStatus: 503, UpdatedAt: at(5)},
	}
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	for _, h := range rows {
		require.NoError(t, db.SaveHost(h))
	}
	require.NoError(t, db.Close(), "Close flushes queued host rows")

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	got, err := db.Hosts(bg)
	require.NoError(t, err)
	byHost := map[string]HostRow{}
	for _, h := range got {
		byHost[h.Host] = h
	}
	require.Len(t, byHost, len(rows))
	for _, want := range rows {
		t.Run(want.Host, func(t *testing.T) {
			h := byHost[want.Host]
			if want.Tunables == nil {
				assert.Nil(t, h.Tunables, "NULL tunables: the host follows the defaults")
			} else {
				assert.JSONEq(t, string(want.Tunables), string(h.Tunables))
			}
			h.Tunables, want.Tunables = nil, nil
			assert.Equal(t, want, h)
		})
	}
}

func TestHosts_S4_SaveReplacesAndValidates(t *testing.T) {
	db, _ := openTest(t)
	require.NoError(t, db.SaveHost(HostRow{Host: "a.example", Tunables: json.RawMessage(`{"rate":1}`), Level: 2, Paused: true}))
	require.NoError(t, db.SaveHost(HostRow{Host: "a.example", Level: 0})) // reset to defaults, resumed
	require.NoError(t, db.Flush(bg))
	hs, err := db.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Nil(t, hs[0].Tunables)
	assert.False(t, hs[0].Paused)
	assert.Zero(t, hs[0].Level)
	assert.False(t, hs[0].UpdatedAt.IsZero(), "UpdatedAt is set when zero")

	assert.Error(t, db.SaveHost(HostRow{Host: "a.example", Tunables: json.RawMessage(`{rate`)}), "invalid JSON")
	assert.Error(t, db.SaveHost(HostRow{}), "empty host")
}

func TestHostEvents_S4_TimelineNewestFirst(t *testing.T) {
	db, _ := openTest(t)
	t0 := time.Unix(1_700_000_000, 0)
	kinds := []string{"throttle", "breaker-open", "decay", "user-pause"}
	for i, k := range kinds {
		require.NoError(t, db.AppendHostEvent(HostEvent{Host: "a.example", At: t0.Add(time.Duration(i) * time.Second), Kind: k, Detail: fmt.Sprintf("d%d", i)}))
		require.NoError(t, db.AppendHostEvent(HostEvent{Host: "b.example", Kind: "other"}))
	}
	require.NoError(t, db.Flush(bg))

	evs, err := db.HostEvents(bg, "a.example", 0)
	require.NoError(t, err)
	require.Len(t, evs, len(kinds))
	for i, e := range evs {
		k := len(kinds) - 1 - i
		assert.Equal(t, kinds[k], e.Kind)
		assert.Equal(t, fmt.Sprintf("d%d", k), e.Detail)
		assert.True(t, t0.Add(time.Duration(k)*time.Second).Equal(e.At))
		assert.Equal(t, "a.example", e.Host)
	}
	evs, err = db.HostEvents(bg, "a.example", 2)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, "user-pause", evs[0].Kind)

	evs, err = db.HostEvents(bg, "b.example", 1)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.False(t, evs[0].At.IsZero(), "zero At means now")
}

func TestSettings_U7_RoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	_, err = db.GetSetting(bg, "folder")
	assert.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, db.SetSetting(bg, "folder", "/old"))
	require.NoError(t, db.SetSetting(bg, "folder", "/home/u/Downloads"))
	require.NoError(t, db.SetSetting(bg, "defaults", `{"rate":1}`))
	require.NoError(t, db.Close())

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	for k, want := range map[string]string{"folder": "/home/u/Downloads", "defaults": `{"rate":1}`} {
		got, err := db.GetSetting(bg, k)
		require.NoError(t, err)
		assert.Equal(t, want, got, k)
	}
}

func TestGroupCommit_S5_WhatArrivesDuringACommitIsOneBatch(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]

	// Hold the writer inside a transaction, as a slow commit would.
	hold, held := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		assert.NoError(t, db.write(bg, "hold", func(*wtx) error { close(held); <-hold; return nil }))
	})
	<-held
	before := db.commits.Load()
	const n = 500
	for i := range n {
		require.NoError(t, db.RecordAttempt(Attempt{JobID: id, URL: "u", Host: "a.example", Attempt: i, Outcome: "ok"}))
	}
	require.NoError(t, db.AppendHostEvent(HostEvent{Host: "a.example", Kind: "throttle"}))
	require.NoError(t, db.SaveHost(HostRow{Host: "a.example"}))
	close(hold)
	require.NoError(t, db.Flush(bg))
	wg.Wait()

	// The held op, then the 502 writes queued meanwhile as one batch; the
	// flush rides with them or, when the writer had already started that
	// batch, commits alone.
	commits := db.commits.Load() - before
	assert.GreaterOrEqual(t, commits, int64(2))
	assert.LessOrEqual(t, commits, int64(3), "what arrived during a commit is one batch")
	hist, err := db.HistoryPage(bg, HistoryFilter{})
	require.NoError(t, err)
	assert.Len(t, hist, n)
}

func TestGroupCommit_S5_BadWriteFailsAlone(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]
	hold, held := make(chan struct{}), make(chan struct{})
	go db.write(bg, "hold", func(*wtx) error { close(held); <-hold; return nil })
	<-held
	require.NoError(t, db.RecordAttempt(Attempt{JobID: id, URL: "u", Host: "h", Outcome: "ok"}))
	require.NoError(t, db.RecordAttempt(Attempt{JobID: 999, URL: "u", Host: "h", Outcome: "ok"})) // no such job
	require.NoError(t, db.RecordAttempt(Attempt{JobID: id, URL: "u", Host: "h", Outcome: "ok"}))
	close(hold)

	err := db.Flush(bg)
	assert.ErrorContains(t, err, "FOREIGN KEY", "Flush reports the failed write")
	hist, err := db.HistoryPage(bg, HistoryFilter{})
	require.NoError(t, err)
	assert.Len(t, hist, 2, "the good writes of the same batch are kept")
	assert.NoError(t, db.Flush(bg), "an error is reported once")
}

func TestClose_S5_FlushesAndRefusesLaterWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]
	for range 100 {
		require.NoError(t, db.RecordAttempt(Attempt{JobID: id, URL: "u", Host: "a.example", Outcome: "ok"}))
	}
	require.NoError(t, db.Close())
	assert.ErrorIs(t, db.Close(), ErrClosed)
	assert.ErrorIs(t, db.RecordAttempt(Attempt{JobID: id}), ErrClosed)
	_, err = db.Enqueue(bg, []NewJob{{URL: "https://a.example/2", Host: "a.example"}})
	assert.ErrorIs(t, err, ErrClosed)

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	hist, err := db.HistoryPage(bg, HistoryFilter{})
	require.NoError(t, err)
	assert.Len(t, hist, 100)
}

// S2: every database has an identity of its own (Heed marks the part files it
// creates with it), random, and kept across opens; a database from before
// identities gets one when it is migrated.
func TestOpen_S2_IdentityRandomPerDatabaseAndKept(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a.db")
	b := filepath.Join(t.TempDir(), "b.db")
	ids := map[string]string{}
	for _, path := range []string{a, b} {
		db, err := Open(path)
		require.NoError(t, err)
		id, err := db.GetSetting(bg, "identity")
		require.NoError(t, err)
		assert.Regexp(t, `^[0-9a-f]{32}$`, id)
		require.NoError(t, db.Close())
		ids[path] = id
	}
	assert.NotEqual(t, ids[a], ids[b], "two databases, two identities")

	db, err := Open(a)
	require.NoError(t, err)
	id, err := db.GetSetting(bg, "identity")
	require.NoError(t, err)
	assert.Equal(t, ids[a], id, "reopened, the same identity")
	require.NoError(t, db.Close())

	// A database at schema 4 (before identities): migrated, it gets one.
	old := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite3", old)
	require.NoError(t, err)
	require.NoError(t, migrate(bg, raw, migrations[:4]))
	require.NoError(t, raw.Close())
	db, err = Open(old)
	require.NoError(t, err)
	defer db.Close()
	id, err = db.GetSetting(bg, "identity")
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{32}$`, id)
	assert.NotContains(t, []string{ids[a], ids[b]}, id)
}

// S4: every field of a host's state the engine hands over comes back after a reopen. The state
// is filled field by field and checked to leave none at its zero value, so a field added to
// engine.HostState that the conversion drops fails here.
func TestEngineStore_S4_HostStateRoundTrip(t *testing.T) {
	tun := engine.DefaultTunables()
	tun.Burst = 7
	want := engine.HostState{
		Host: "backoff.example:8080", Tunables: &tun, Paused: true, PauseReason: "Retry-After 2 days",
		Level: 3, Streak: 2, Gate: time.Unix(1_800_000_000, 5), Breaker: engine.HalfOpen, Failures: 4,
		OpenedAt: time.Unix(1_700_000_000, 6), LastStatus: 429, Throttles: 17,
		Tokens: 1.5, TokensAt: time.Unix(1_700_000_100, 7), SpaceUntil: time.Unix(1_700_000_101, 8),
	}
	v := reflect.ValueOf(want)
	for i := range v.NumField() {
		require.False(t, v.Field(i).IsZero(), "the test leaves HostState.%s unset", v.Type().Field(i).Name)
	}
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, EngineStore(db).SaveHost(want))
	require.NoError(t, db.Close())

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	got, err := EngineStore(db).LoadHosts(bg)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, want, got[0])
}
