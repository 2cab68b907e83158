package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

var hostTests = []test{
	{"Hosts_S4_G10_B6_HostStateRoundTripAcrossReopen", testHostStateRoundTripAcrossReopen},
	{"Hosts_S4_RoundTripOfEachKind", testHostsRoundTripOfEachKind},
	{"Hosts_S4_U1_SaveReplacesStateKeepsCounts", testHostsSaveReplacesStateKeepsCounts},
	{"Hosts_S4_ListsHostsWithStateOrJobs", testHostsListsHostsWithStateOrJobs},
	{"HostEvents_S4_TimelineNewestFirst", testHostEventsTimelineNewestFirst},
	{"Settings_U7_RoundTrip", testSettingsRoundTrip},
	{"Flush_S5_ReportsBackgroundWriteErrorsOnce", testFlushReportsBackgroundWriteErrorsOnce},
	{"Close_S5_FlushesAndRefusesLaterWrites", testCloseFlushesAndRefusesLaterWrites},
	{"Close_S5_ReportsUnflushedErrors", testCloseReportsUnflushedErrors},
}

// S4 (G10, B6): every field of a host's state the engine hands over comes back after a reopen.
// The state is filled field by field and checked to leave none at its zero value but those the
// store keeps itself (Counts, UpdatedAt, and a fleet's lease: Owner, LeaseUntil, Epoch, which
// SaveHost does not save and which are zero where no worker leased the host), so a field added to
// engine.HostState that SaveHost or Hosts drops fails here.
func testHostStateRoundTripAcrossReopen(t *testing.T, o Opener) {
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
		case "Counts", "UpdatedAt", "Owner", "LeaseUntil", "Epoch": // the store's
		default:
			require.False(t, v.Field(i).IsZero(), "the test leaves HostState.%s unset", name)
		}
	}
	s := open(t, o)
	from := time.Now()
	require.NoError(t, s.SaveHost(want))
	s.Reopen() // Close commits the queued host row
	to := time.Now()

	got, err := s.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assertBetween(t, from, to, got[0].UpdatedAt, "UpdatedAt is when it was saved")
	want.UpdatedAt = got[0].UpdatedAt
	equal(t, want, got[0])
}

// S4: the states a host goes through come back as saved, each breaker state and the defaults.
func testHostsRoundTripOfEachKind(t *testing.T, o Opener) {
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
	s := open(t, o)
	for _, h := range rows {
		require.NoError(t, s.SaveHost(h))
	}
	s.Reopen()

	got, err := s.Hosts(bg)
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
			equal(t, want, h)
		})
	}
}

// S4, U1: a save replaces the host's whole state (a reset to the defaults drops its tunables), and
// leaves its job counts, which are the store's, as they are.
func testHostsSaveReplacesStateKeepsCounts(t *testing.T, o Opener) {
	s := open(t, o)
	enqueueURLs(t, s, "a.example", "https://a.example/1", "https://a.example/2")
	tun := engine.DefaultTunables()
	require.NoError(t, s.SaveHost(engine.HostState{Host: "a.example", Tunables: &tun, Level: 2, Paused: true,
		Counts: engine.Counts{Done: 99}}))
	require.NoError(t, s.Flush(bg))
	hs, err := s.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.NotNil(t, hs[0].Tunables)
	assert.Equal(t, engine.Counts{Queued: 2}, hs[0].Counts, "the counts handed over are not saved")

	require.NoError(t, s.SaveHost(engine.HostState{Host: "a.example"})) // reset to defaults, resumed
	require.NoError(t, s.Flush(bg))
	hs, err = s.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Nil(t, hs[0].Tunables, "no tunables: the host follows the defaults")
	assert.False(t, hs[0].Paused)
	assert.Zero(t, hs[0].Level)
	assert.Equal(t, engine.Counts{Queued: 2}, hs[0].Counts)

	assert.Error(t, s.SaveHost(engine.HostState{}), "empty host")
}

// S4: Hosts lists every host the store knows: one with a saved state and no jobs, and one with
// jobs and no saved state.
func testHostsListsHostsWithStateOrJobs(t *testing.T, o Opener) {
	s := open(t, o)
	require.NoError(t, s.SaveHost(engine.HostState{Host: "saved.example", Level: 1}))
	enqueueURLs(t, s, "jobs.example", "https://jobs.example/1")
	require.NoError(t, s.Flush(bg))
	hs, err := s.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	assert.Equal(t, "jobs.example", hs[0].Host)
	assert.Equal(t, engine.Counts{Queued: 1}, hs[0].Counts)
	assert.Equal(t, "saved.example", hs[1].Host)
	assert.Equal(t, 1, hs[1].Level)
	assert.Zero(t, hs[1].Counts)
}

// S4: a host's timeline comes back newest first, every field kept, as many as asked for; an
// event with no time is stamped with the time it was appended.
func testHostEventsTimelineNewestFirst(t *testing.T, o Opener) {
	s := open(t, o)
	t0 := time.Unix(1_700_000_000, 0)
	kinds := []engine.EventKind{engine.EventThrottle, engine.EventBreakerOpen, engine.EventDecay, engine.EventPause,
		engine.EventBreakerHalfOpen, engine.EventRetryAfter}
	var from time.Time
	for i, k := range kinds {
		require.NoError(t, s.AppendEvent(engine.Event{Host: "a.example", At: t0.Add(time.Duration(i) * time.Second),
			Kind: k, Detail: fmt.Sprintf("d%d", i)}))
		from = time.Now()
		require.NoError(t, s.AppendEvent(engine.Event{Host: "b.example", Kind: engine.EventResume}))
	}
	to := time.Now()
	require.NoError(t, s.Flush(bg))

	evs, err := s.HostEvents(bg, "a.example", 0)
	require.NoError(t, err)
	require.Len(t, evs, len(kinds))
	for i, e := range evs {
		k := len(kinds) - 1 - i
		equal(t, engine.Event{Host: "a.example", At: t0.Add(time.Duration(k) * time.Second), Kind: kinds[k],
			Detail: fmt.Sprintf("d%d", k)}, e)
	}
	evs, err = s.HostEvents(bg, "a.example", 2)
	require.NoError(t, err)
	require.Len(t, evs, 2)
	assert.Equal(t, engine.EventRetryAfter, evs[0].Kind)
	assert.Equal(t, engine.EventBreakerHalfOpen, evs[1].Kind)

	evs, err = s.HostEvents(bg, "b.example", 1)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, engine.EventResume, evs[0].Kind)
	assertBetween(t, from, to, evs[0].At, "zero At means now")
	evs, err = s.HostEvents(bg, "nobody.example", 0)
	require.NoError(t, err)
	assert.Empty(t, evs)
}

// U7: settings come back as last set, across a reopen; an unset one is "" and no error.
func testSettingsRoundTrip(t *testing.T, o Opener) {
	s := open(t, o)
	v, err := s.Setting(bg, "folder")
	require.NoError(t, err, "an unset setting is no error")
	assert.Empty(t, v)
	require.NoError(t, s.SetSetting(bg, "folder", "/old"))
	require.NoError(t, s.SetSetting(bg, "folder", "/home/u/Downloads"))
	require.NoError(t, s.SetSetting(bg, "defaults", `{"rate":1}`))
	require.NoError(t, s.SetSetting(bg, "empty", ""))
	s.Reopen()

	for k, want := range map[string]string{"folder": "/home/u/Downloads", "defaults": `{"rate":1}`, "empty": ""} {
		got, err := s.Setting(bg, k)
		require.NoError(t, err)
		assert.Equal(t, want, got, k)
	}
}

// S5: a failing background write fails alone: Flush reports its failure, once, and the other
// writes queued with it are kept. A history row of a job that does not exist and a part another
// job has recorded (F4) are such failures.
func testFlushReportsBackgroundWriteErrorsOnce(t *testing.T, o Opener) {
	s := open(t, o)
	ids := enqueueURLs(t, s, "a.example", "https://a.example/1", "https://a.example/2")
	for _, id := range ids {
		_, err := s.Start(bg, id, "")
		require.NoError(t, err)
	}
	require.NoError(t, s.Note(ids[0], engine.Resume{Part: "mine.part", Size: -1}))
	require.NoError(t, s.Flush(bg))

	id := ids[0]
	require.NoError(t, s.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "h", Outcome: "ok"}))
	require.NoError(t, s.RecordAttempt(engine.Attempt{JobID: 999, URL: "u", Host: "h", Outcome: "ok"})) // no such job
	require.NoError(t, s.Note(ids[1], engine.Resume{Part: "mine.part", Size: -1}))                      // another job's part
	require.NoError(t, s.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "h", Outcome: "ok"}))
	require.NoError(t, s.AppendEvent(engine.Event{Host: "a.example", Kind: engine.EventThrottle}))

	assert.Error(t, s.Flush(bg), "Flush reports the failed writes")
	hist, err := s.History(bg, engine.HistoryQuery{})
	require.NoError(t, err)
	assert.Len(t, hist, 2, "the good writes queued with them are kept")
	evs, err := s.HostEvents(bg, "a.example", 0)
	require.NoError(t, err)
	assert.Len(t, evs, 1)
	j, err := s.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Empty(t, j.Part, "the failed note changed nothing")
	assert.NoError(t, s.Flush(bg), "an error is reported once")
}

// S5: Close commits every write queued before it, and the store refuses writes after it.
func testCloseFlushesAndRefusesLaterWrites(t *testing.T, o Opener) {
	s := open(t, o)
	id := enqueueURLs(t, s, "a.example", "https://a.example/1")[0]
	_, err := s.Start(bg, id, "1.part")
	require.NoError(t, err)
	for range 100 {
		require.NoError(t, s.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "a.example", Outcome: "ok"}))
	}
	require.NoError(t, s.Note(id, engine.Resume{Part: "1.part", Bytes: 77, Size: 100}))
	require.NoError(t, s.SaveHost(engine.HostState{Host: "a.example", Level: 4}))
	require.NoError(t, s.AppendEvent(engine.Event{Host: "a.example", Kind: engine.EventDecay}))
	closed := s.Store
	require.NoError(t, s.Close())
	assert.Error(t, closed.RecordAttempt(engine.Attempt{JobID: id}), "a write after Close")
	assert.Error(t, closed.Named(id))
	assert.Error(t, closed.Flush(bg))
	_, err = closed.Enqueue(bg, newJobs("a.example", "https://a.example/2"), noAgain)
	assert.Error(t, err)

	s.Store = s.reopen()
	hist, err := s.History(bg, engine.HistoryQuery{})
	require.NoError(t, err)
	assert.Len(t, hist, 100)
	j, err := s.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, int64(77), j.Bytes, "the note rode the last commit")
	hs, err := s.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, 4, hs[0].Level)
	evs, err := s.HostEvents(bg, "a.example", 0)
	require.NoError(t, err)
	assert.Len(t, evs, 1)
	_, err = s.Enqueue(bg, newJobs("a.example", "https://a.example/2"), noAgain)
	assert.NoError(t, err, "the reopened store takes writes")
}

// S5: Close returns the errors of background writes no Flush reported.
func testCloseReportsUnflushedErrors(t *testing.T, o Opener) {
	s := open(t, o)
	require.NoError(t, s.RecordAttempt(engine.Attempt{JobID: 999, URL: "u", Host: "h", Outcome: "ok"}))
	assert.Error(t, s.Close())
}
