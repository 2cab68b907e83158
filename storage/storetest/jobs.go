package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

var jobTests = []test{
	{"Start_J3_F4_CountsTheAttemptAndRecordsThePart", testStartCountsTheAttemptAndRecordsThePart},
	{"Start_F5_KeepsThePartItHas", testStartKeepsThePartItHas},
	{"Start_J3_RefusedUnlessQueued", testStartRefusedUnlessQueued},
	{"Start_F4_PartTakenByAnotherJob", testStartPartTakenByAnotherJob},
	{"SetPart_F4_ActiveJobsOnly", testSetPartActiveJobsOnly},
	{"Start_J3_RacingAPause", testStartRacingAPause},
	{"Finish_J3_S3_DoneWithItsHistoryRow", testFinishDoneWithItsHistoryRow},
	{"Finish_R3_R4_F5_RetryThrottleAndFailure", testFinishRetryThrottleAndFailure},
	{"Finish_W6_SkippedWithItsReason", testFinishSkippedWithItsReason},
	{"Finish_J3_S3_PausedOrCancelledMeanwhileKeepsItsState", testFinishPausedOrCancelledMeanwhile},
	{"Finish_J3_Refused", testFinishRefused},
	{"Unnamed_F3_S2_NamedRenameRoundTrip", testUnnamedNamedRenameRoundTrip},
	{"SetState_J3_R5_FromToRules", testSetStateFromToRules},
	{"SetState_J3_ReportsWhatMovedInInputOrder", testSetStateReportsWhatMovedInInputOrder},
	{"SetState_R5_FreshBudgetOnRetry", testSetStateFreshBudgetOnRetry},
	{"NextJobs_Q1_QueueOrderAndCursorAcrossTies", testNextJobsQueueOrderAndCursorAcrossTies},
	{"Jobs_U5_FiltersAndPages", testJobsFiltersAndPages},
	{"Reopen_S2_G42_RecoversActiveJobsOnly", testReopenRecoversActiveJobsOnly},
	{"Counts_U1_FollowEveryTransition", testCountsFollowEveryTransition},
	{"RecordAttempt_S5_BackgroundWriteRidesTheNextWaitedOne", testBackgroundWriteRidesTheNextWaitedOne},
}

// J3, F4: Start moves a queued job to active, counts its attempt and records its part before the
// file exists, and says so only once it is committed.
func testStartCountsTheAttemptAndRecordsThePart(t *testing.T, o Opener) {
	s := open(t, o)
	id := enqueueURLs(t, s, "a.example", "https://a.example/f")[0]
	from := time.Now()
	j, err := s.Start(bg, id, "f.part")
	to := time.Now()
	require.NoError(t, err)
	assert.Equal(t, id, j.ID)
	assert.Equal(t, "https://a.example/f", j.URL)
	assert.Equal(t, "a.example", j.Host)
	assert.Equal(t, engine.JobActive, j.State)
	assert.Equal(t, 1, j.Attempts)
	assert.Equal(t, "f.part", j.Part)
	assert.Equal(t, int64(-1), j.Size)
	assertBetween(t, from, to, j.UpdatedAt, "updated by the start")
	stored, err := s.Job(bg, id)
	require.NoError(t, err)
	equal(t, j, stored, "Start returns the job as it now stands")
	assert.Equal(t, engine.JobActive, stored.State, "committed when Start returns (J3)")
	assert.Equal(t, "f.part", stored.Part, "the part is recorded before the file exists (F4)")

	_, err = s.Start(bg, id, "f.part")
	assert.ErrorIs(t, err, engine.ErrNotQueued, "a job started is not started twice")
	j, err = s.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, 1, j.Attempts)
}

// F5: a job that has a part from an earlier attempt keeps it: Start records the part asked for
// only when the job has none.
func testStartKeepsThePartItHas(t *testing.T, o Opener) {
	s := open(t, o)
	id := enqueueURLs(t, s, "a.example", "https://a.example/f")[0]
	_, err := s.Start(bg, id, "f.part")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobQueued, Error: "reset",
		Resume: engine.Resume{Part: "f.part", Bytes: 10, Size: 100, ETag: `"e"`}}))
	j, err := s.Start(bg, id, "f (1).part")
	require.NoError(t, err)
	assert.Equal(t, "f.part", j.Part, "the resume goes on in the part it has")
	assert.Equal(t, int64(10), j.Bytes)
	assert.Equal(t, `"e"`, j.ETag)
	assert.Equal(t, 2, j.Attempts)
}

// J3: only a queued job starts; any other is refused with ErrNotQueued, an unknown one with
// ErrNotFound, and nothing moves.
func testStartRefusedUnlessQueued(t *testing.T, o Opener) {
	s := open(t, o)
	for i, st := range engine.JobStates {
		if st == engine.JobQueued {
			continue
		}
		t.Run(string(st), func(t *testing.T) {
			id := jobIn(t, s, fmt.Sprintf("https://w.example/%d", i), st)
			before, err := s.Job(bg, id)
			require.NoError(t, err)
			_, err = s.Start(bg, id, fmt.Sprintf("%d.part", i))
			assert.ErrorIs(t, err, engine.ErrNotQueued)
			after, err := s.Job(bg, id)
			require.NoError(t, err)
			equal(t, before, after, "nothing moved")
		})
	}
	_, err := s.Start(bg, 12345, "x.part")
	assert.ErrorIs(t, err, engine.ErrNotFound)
	assertCounts(t, s)
}

// F4: a part name is one job's. Two jobs cannot record one part (Start and SetPart say
// ErrPartTaken, and the job stays as it was), and the name is free again once its job lets go of
// it.
func testStartPartTakenByAnotherJob(t *testing.T, o Opener) {
	s := open(t, o)
	ids := enqueueURLs(t, s, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	_, err := s.Start(bg, ids[0], "same.part")
	require.NoError(t, err)

	_, err = s.Start(bg, ids[1], "same.part")
	assert.ErrorIs(t, err, engine.ErrPartTaken)
	j, err := s.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State, "not started")
	assert.Zero(t, j.Attempts, "no attempt counted")
	assert.Empty(t, j.Part)
	assertCounts(t, s)

	_, err = s.Start(bg, ids[1], "other.part")
	require.NoError(t, err)
	assert.ErrorIs(t, s.SetPart(bg, ids[1], "same.part"), engine.ErrPartTaken)
	j, err = s.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, "other.part", j.Part)

	// Let go of (a retry that starts afresh): the name is free.
	require.NoError(t, finish(s, bg, engine.End{JobID: ids[0], State: engine.JobQueued, Resume: engine.Resume{Size: -1}}))
	j, err = s.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Empty(t, j.Part)
	_, err = s.Start(bg, ids[2], "same.part")
	require.NoError(t, err)
}

// F4: SetPart records another part for an active job, whose first choice was taken on disk: the
// new part starts empty. Only an active job's part is changed.
func testSetPartActiveJobsOnly(t *testing.T, o Opener) {
	s := open(t, o)
	id := enqueueURLs(t, s, "a.example", "https://a.example/1")[0]
	assert.ErrorIs(t, s.SetPart(bg, id, "x.part"), engine.ErrNotQueued, "a queued job")
	_, err := s.Start(bg, id, "f.part")
	require.NoError(t, err)
	require.NoError(t, s.Note(id, engine.Resume{Part: "f.part", Bytes: 5, Size: 10}))
	require.NoError(t, s.SetPart(bg, id, "f (1).part"))
	j, err := s.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, "f (1).part", j.Part)
	assert.Zero(t, j.Bytes)
	assert.ErrorIs(t, s.SetPart(bg, 999, "y.part"), engine.ErrNotFound)
}

// J3: a start racing the person's pause, many times over: the job always ends paused, having
// been started once or not at all, never left active.
func testStartRacingAPause(t *testing.T, o Opener) {
	s := open(t, o)
	const n = 100
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://a.example/%d", i)
	}
	ids := enqueueURLs(t, s, "a.example", urls...)
	started := make([]bool, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			_, err := s.Start(bg, id, fmt.Sprintf("%d.part", id))
			if err == nil {
				started[i] = true
			} else {
				assert.ErrorIs(t, err, engine.ErrNotQueued)
			}
		})
		wg.Go(func() {
			changed, err := s.SetState(bg, []int64{id}, pausable, engine.JobPaused)
			assert.NoError(t, err)
			assert.Len(t, changed, 1, "the pause always lands")
		})
	}
	wg.Wait()
	for i, id := range ids {
		j, err := s.Job(bg, id)
		require.NoError(t, err)
		assert.Equal(t, engine.JobPaused, j.State)
		if started[i] {
			assert.Equal(t, 1, j.Attempts)
			assert.Equal(t, fmt.Sprintf("%d.part", id), j.Part)
		} else {
			assert.Zero(t, j.Attempts)
		}
	}
	assertCounts(t, s)
}

// J3, S3: Finish records a download done with its last history row, both committed when it
// returns; the part name stays until the part has its final name.
func testFinishDoneWithItsHistoryRow(t *testing.T, o Opener) {
	s := open(t, o)
	id := enqueueURLs(t, s, "a.example", "https://a.example/f")[0]
	_, err := s.Start(bg, id, "f.part")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobQueued, Error: "503", Status: 503,
		Resume: engine.Resume{Part: "f.part", Bytes: 1, Size: 1000}}))
	_, err = s.Start(bg, id, "")
	require.NoError(t, err)
	require.NoError(t, s.Flush(bg))

	from := time.Now()
	require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobDone, Attempt: row(id, "ok", 206),
		File: "f", SHA256: "abc", Status: 206,
		Resume: engine.Resume{Part: "f.part", Bytes: 1000, Size: 1000, ETag: `"x"`, LastModified: "Wed, 21 Oct 2015 07:28:00 GMT", Name: "f"}}))
	to := time.Now()

	hist, err := s.History(bg, engine.HistoryQuery{JobID: id}) // both are committed when Finish returns
	require.NoError(t, err)
	assert.Len(t, hist, 1, "with its history row")
	j, err := s.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, engine.JobDone, j.State)
	assert.Equal(t, "f", j.File)
	assert.Equal(t, "f", j.Name)
	assert.Equal(t, "f.part", j.Part, "until Named")
	assert.Equal(t, int64(1000), j.Bytes)
	assert.Equal(t, int64(1000), j.Size)
	assert.Equal(t, "abc", j.SHA256)
	assert.Equal(t, `"x"`, j.ETag)
	assert.Equal(t, "Wed, 21 Oct 2015 07:28:00 GMT", j.LastModified)
	assert.Empty(t, j.LastError, "a done job has no error")
	assert.Equal(t, 206, j.LastStatus)
	assert.Equal(t, 2, j.Attempts)
	assertBetween(t, from, to, j.UpdatedAt, "updated by the finish")
	assertCounts(t, s)
}

// R3, R4, F5: an attempt that ends in a retry queues its job behind its delay with what is on
// disk for the resume; a throttle gives its attempt back and is counted apart; a failure keeps
// the part for a later retry.
func testFinishRetryThrottleAndFailure(t *testing.T, o Opener) {
	s := open(t, o)
	id := enqueueURLs(t, s, "a.example", "https://a.example/f")[0]
	_, err := s.Start(bg, id, "f.part")
	require.NoError(t, err)

	next := time.Unix(1_800_000_000, 0)
	require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobQueued, Attempt: row(id, "throttled", 429),
		NotBefore: next, GiveBack: true, Throttled: true, Error: "429", Status: 429,
		Resume: engine.Resume{Part: "f.part", Bytes: 100, Size: 1000, ETag: `"x"`, LastModified: "Wed, 21 Oct 2015 07:28:00 GMT", Name: "f.bin"}}))
	j, err := s.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.True(t, next.Equal(j.NotBefore))
	assert.Zero(t, j.Attempts, "the throttle gave its attempt back (R3)")
	assert.Equal(t, 1, j.Throttled)
	assert.Equal(t, "429", j.LastError)
	assert.Equal(t, 429, j.LastStatus)
	assert.Equal(t, engine.Resume{Part: "f.part", Bytes: 100, Size: 1000, ETag: `"x"`,
		LastModified: "Wed, 21 Oct 2015 07:28:00 GMT", Name: "f.bin"}, resumeOf(j))

	_, err = s.Start(bg, id, "")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobQueued, NotBefore: next.Add(time.Second),
		Error: "reset", Resume: engine.Resume{Part: "f.part", Bytes: 200, Size: 1000, ETag: `"x"`}}))
	j, err = s.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, 1, j.Attempts, "a retry keeps its attempt")
	assert.Equal(t, 1, j.Throttled)
	assert.Equal(t, int64(200), j.Bytes)
	assert.Empty(t, j.Name, "the resume state is replaced whole")

	_, err = s.Start(bg, id, "")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobFailed, Attempt: row(id, "failed", 410),
		Error: "gone", Status: 410, Resume: engine.Resume{Part: "f.part", Bytes: 300, Size: 1000}}))
	j, err = s.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, engine.JobFailed, j.State)
	assert.Equal(t, 2, j.Attempts)
	assert.Equal(t, "gone", j.LastError)
	assert.Equal(t, 410, j.LastStatus)
	assert.Equal(t, "f.part", j.Part, "kept for a retry")
	assert.Equal(t, int64(300), j.Bytes)
	hist, err := s.History(bg, engine.HistoryQuery{JobID: id})
	require.NoError(t, err)
	assert.Len(t, hist, 2, "the two exchanges handed over")
	assertCounts(t, s)
}

// W6: an attempt Heed ends without a request, because robots.txt disallows the URL, leaves its
// job skipped with the reason and the attempt given back.
func testFinishSkippedWithItsReason(t *testing.T, o Opener) {
	s := open(t, o)
	id := enqueueURLs(t, s, "a.example", "https://a.example/private/f")[0]
	_, err := s.Start(bg, id, "")
	require.NoError(t, err)
	why := "robots.txt: Disallow: /private/"
	require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobSkipped, GiveBack: true, Error: why,
		Resume: engine.Resume{Size: -1}}))
	j, err := s.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, engine.JobSkipped, j.State)
	assert.Equal(t, why, j.LastError)
	assert.Zero(t, j.Attempts, "no request, no attempt")
	assert.Equal(t, map[string]engine.Counts{"a.example": {Skipped: 1}}, hostCounts(t, s))
	assertCounts(t, s)
}

// J3, C20: a job the person paused or cancelled while its attempt ended keeps the state the
// person set; Finish says so with ErrNotQueued, and records what is on disk for its resume and its
// history row all the same (engine.Store.Finish).
func testFinishPausedOrCancelledMeanwhile(t *testing.T, o Opener) {
	for _, c := range []struct {
		to  engine.JobState
		end engine.JobState
	}{
		{engine.JobPaused, engine.JobQueued},    // stopped: interrupted, attempt given back
		{engine.JobPaused, engine.JobFailed},    // failed as it was paused
		{engine.JobCancelled, engine.JobDone},   // complete as it was cancelled
		{engine.JobCancelled, engine.JobQueued}, // a retry as it was cancelled
	} {
		t.Run(fmt.Sprintf("%s, then %s", c.to, c.end), func(t *testing.T) {
			s := open(t, o)
			id := enqueueURLs(t, s, "a.example", "https://a.example/f")[0]
			_, err := s.Start(bg, id, "f.part")
			require.NoError(t, err)
			changed, err := s.SetState(bg, []int64{id}, stoppable, c.to)
			require.NoError(t, err)
			require.Len(t, changed, 1)

			resume := engine.Resume{Part: "f.part", Bytes: 50, Size: 100, ETag: `"v2"`,
				LastModified: "Wed, 21 Oct 2015 07:28:00 GMT", Name: "f.bin"}
			if c.end == engine.JobDone {
				resume.Bytes = 100
			}
			err = finish(s, bg, engine.End{JobID: id, State: c.end, Attempt: row(id, "canceled", 0), GiveBack: true,
				NotBefore: time.Unix(1_800_000_000, 0), Error: "interrupted", File: "f.bin", SHA256: "abc", Resume: resume})
			assert.ErrorIs(t, err, engine.ErrNotQueued)

			j, err := s.Job(bg, id)
			require.NoError(t, err)
			assert.Equal(t, c.to, j.State, "the person's state is kept")
			assert.Equal(t, resume, resumeOf(j), "what is on disk is recorded for the resume")
			assert.Empty(t, j.File, "not done")
			hist, err := s.History(bg, engine.HistoryQuery{JobID: id})
			require.NoError(t, err)
			assert.Len(t, hist, 1, "its history row is recorded too (S3)")
			assertCounts(t, s)
		})
	}
}

// J3: Finish of a job that was never started, or is gone, or of an end no attempt has, changes
// nothing.
func testFinishRefused(t *testing.T, o Opener) {
	s := open(t, o)
	queued := jobIn(t, s, "https://a.example/q", engine.JobQueued)
	done := jobIn(t, s, "https://a.example/d", engine.JobDone)
	active := jobIn(t, s, "https://a.example/a", engine.JobActive)
	for _, id := range []int64{queued, done} {
		before, err := s.Job(bg, id)
		require.NoError(t, err)
		err = finish(s, bg, engine.End{JobID: id, State: engine.JobFailed, Error: "x"})
		assert.ErrorIs(t, err, engine.ErrNotQueued)
		after, err := s.Job(bg, id)
		require.NoError(t, err)
		equal(t, before, after)
	}
	assert.ErrorIs(t, finish(s, bg, engine.End{JobID: 999, State: engine.JobDone}), engine.ErrNotFound)
	for _, st := range []engine.JobState{engine.JobPaused, engine.JobCancelled, engine.JobActive, "bogus"} {
		assert.Error(t, finish(s, bg, engine.End{JobID: active, State: st}), "an attempt does not end %s", st)
	}
	j, err := s.Job(bg, active)
	require.NoError(t, err)
	assert.Equal(t, engine.JobActive, j.State)
	assertCounts(t, s)
}

// F3, S2: a done job whose part has not taken its final name yet is listed by Unnamed — across a
// restart too —, Rename records another final name before the part takes it, and Named, riding
// the next commit, takes it off the list and lets go of the part name.
func testUnnamedNamedRenameRoundTrip(t *testing.T, o Opener) {
	s := open(t, o)
	ids := enqueueURLs(t, s, "a.example", "https://a.example/a", "https://a.example/b", "https://a.example/c",
		"https://a.example/d")
	done := func(id int64, part, file string) {
		t.Helper()
		_, err := s.Start(bg, id, part)
		require.NoError(t, err)
		require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobDone, Attempt: row(id, "ok", 200),
			File: file, SHA256: "abc", Status: 200, Resume: engine.Resume{Part: part, Bytes: 3, Size: 3}}))
	}
	done(ids[0], "a.part", "a")
	done(ids[1], "b.part", "b")
	_, err := s.Start(bg, ids[2], "c.part")
	require.NoError(t, err)

	us, err := s.Unnamed(bg)
	require.NoError(t, err)
	assert.Equal(t, ids[:2], jobIDs(us))
	for _, u := range us {
		assert.Equal(t, engine.JobDone, u.State)
		assert.Equal(t, "abc", u.SHA256)
	}
	assert.Equal(t, "a.part", us[0].Part)
	assert.Equal(t, "a", us[0].File)

	require.NoError(t, s.Rename(bg, ids[0], "a (1)"))
	require.NoError(t, s.Rename(bg, ids[2], "c"), "an active job")
	j, err := s.Job(bg, ids[2])
	require.NoError(t, err)
	assert.Empty(t, j.File, "only a done job's final name is recorded")

	require.NoError(t, s.Named(ids[0]))
	require.NoError(t, s.Named(ids[2])) // not done: its part is its download's
	require.NoError(t, s.Flush(bg))
	us, err = s.Unnamed(bg)
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[1]}, jobIDs(us))
	j, err = s.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, engine.JobDone, j.State)
	assert.Equal(t, "a (1)", j.File, "the name the part took")
	assert.Empty(t, j.Part)
	assert.Equal(t, "abc", j.SHA256)
	j, err = s.Job(bg, ids[2])
	require.NoError(t, err)
	assert.Equal(t, "c.part", j.Part, "an active job keeps its part")

	_, err = s.Start(bg, ids[3], "a.part")
	require.NoError(t, err, "the part name of a named job is free")

	// A crash between the done commit and the rename: the next start finds it to name.
	s.Reopen()
	us, err = s.Unnamed(bg)
	require.NoError(t, err)
	require.Equal(t, []int64{ids[1]}, jobIDs(us))
	assert.Equal(t, "b.part", us[0].Part)
	assert.Equal(t, "b", us[0].File)

	// A done job queued again no longer waits for its old name.
	changed, err := s.SetState(bg, []int64{ids[1]}, retryable, engine.JobQueued)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	us, err = s.Unnamed(bg)
	require.NoError(t, err)
	assert.Empty(t, us)
}

// J3, R5: SetState moves only the jobs in one of the states it is given, to a state a person may
// ask for, and reports each that moved.
func testSetStateFromToRules(t *testing.T, o Opener) {
	cases := []struct {
		from  engine.JobState
		froms []engine.JobState
		to    engine.JobState
		moves bool
	}{
		{engine.JobQueued, pausable, engine.JobPaused, true},
		{engine.JobActive, pausable, engine.JobPaused, true},
		{engine.JobPaused, pausable, engine.JobPaused, false},
		{engine.JobDone, pausable, engine.JobPaused, false},
		{engine.JobPaused, resumable, engine.JobQueued, true},
		{engine.JobQueued, resumable, engine.JobQueued, false},
		{engine.JobActive, resumable, engine.JobQueued, false},
		{engine.JobQueued, stoppable, engine.JobCancelled, true},
		{engine.JobActive, stoppable, engine.JobCancelled, true},
		{engine.JobPaused, stoppable, engine.JobCancelled, true},
		{engine.JobDone, stoppable, engine.JobCancelled, false},
		{engine.JobFailed, stoppable, engine.JobCancelled, false},
		{engine.JobDone, retryable, engine.JobQueued, true},
		{engine.JobFailed, retryable, engine.JobQueued, true},
		{engine.JobCancelled, retryable, engine.JobQueued, true},
		{engine.JobSkipped, retryable, engine.JobQueued, true},
		{engine.JobQueued, retryable, engine.JobQueued, false},
		{engine.JobActive, retryable, engine.JobQueued, false},
		{engine.JobQueued, []engine.JobState{engine.JobQueued}, engine.JobQueued, false}, // already there
		{engine.JobQueued, []engine.JobState{engine.JobQueued}, engine.JobSkipped, true}, // W6
		{engine.JobQueued, nil, engine.JobPaused, false},
	}
	s := open(t, o)
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s to %s from %v", c.from, c.to, c.froms), func(t *testing.T) {
			id := jobIn(t, s, fmt.Sprintf("https://s.example/%d", i), c.from)
			before, err := s.Job(bg, id)
			require.NoError(t, err)
			from := time.Now()
			changed, err := s.SetState(bg, []int64{id}, c.froms, c.to)
			to := time.Now()
			require.NoError(t, err)
			j, err := s.Job(bg, id)
			require.NoError(t, err)
			if !c.moves {
				assert.Empty(t, changed)
				equal(t, before, j, "nothing moved")
				return
			}
			nb := before.NotBefore
			if c.from.Ended() && c.to == engine.JobQueued {
				nb = j.NotBefore
				assertBetween(t, from, to, nb, "a retry is due at once")
			}
			equal(t, []engine.Changed{{ID: id, Host: "a.example", From: c.from, To: c.to, NotBefore: nb}}, changed)
			assert.Equal(t, c.to, j.State)
			assert.True(t, nb.Equal(j.NotBefore))
			assertBetween(t, from, to, j.UpdatedAt, "updated by the move")
		})
	}
	assertCounts(t, s)

	id := jobIn(t, s, "https://s.example/bad", engine.JobQueued)
	for _, to := range []engine.JobState{engine.JobActive, engine.JobDone, "bogus", ""} {
		changed, err := s.SetState(bg, []int64{id}, engine.JobStates, to)
		assert.Error(t, err, "jobs are not moved to %q by hand", to)
		assert.Empty(t, changed)
	}
	j, err := s.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
}

// J3: SetState reports the jobs that moved in input order, skips unknown ids and jobs in other
// states, and has moved them all when it returns.
func testSetStateReportsWhatMovedInInputOrder(t *testing.T, o Opener) {
	s := open(t, o)
	a := enqueueURLs(t, s, "a.example", "https://a.example/1", "https://a.example/2")
	b := enqueueURLs(t, s, "b.example", "https://b.example/1")
	done := jobOfHostIn(t, s, "b.example", "https://b.example/done", engine.JobDone)
	changed, err := s.SetState(bg, []int64{b[0], 999, done, a[1], a[0], a[1]}, pausable, engine.JobPaused)
	require.NoError(t, err)
	var got []int64
	for _, c := range changed {
		got = append(got, c.ID)
		assert.Equal(t, engine.JobQueued, c.From)
		assert.Equal(t, engine.JobPaused, c.To)
	}
	assert.Equal(t, []int64{b[0], a[1], a[0]}, got, "in input order, each once")
	require.Len(t, changed, 3)
	assert.Equal(t, "b.example", changed[0].Host)
	assert.Equal(t, "a.example", changed[1].Host)
	paused, err := s.Jobs(bg, engine.JobQuery{State: engine.JobPaused})
	require.NoError(t, err)
	assert.Len(t, paused, 3, "committed when it returns")
	assertCounts(t, s)
}

// R5: a job queued again from an ended state gets a fresh attempt budget: attempts, throttles,
// last error and status, final file and digest are cleared; a part and its bytes are kept for the
// resume. A paused job resumed keeps its budget.
func testSetStateFreshBudgetOnRetry(t *testing.T, o Opener) {
	s := open(t, o)
	ids := enqueueURLs(t, s, "a.example", "https://a.example/part", "https://a.example/done", "https://a.example/paused")

	// Two attempts, a throttle, a failure with its part kept.
	_, err := s.Start(bg, ids[0], "p.part")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: ids[0], State: engine.JobQueued, Throttled: true, Error: "503",
		Status: 503, Resume: engine.Resume{Part: "p.part", Bytes: 10, Size: 100, ETag: `"e"`}}))
	_, err = s.Start(bg, ids[0], "")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: ids[0], State: engine.JobFailed, Error: "gone", Status: 410,
		Resume: engine.Resume{Part: "p.part", Bytes: 20, Size: 100, ETag: `"e"`}}))
	// Done and named: no part.
	_, err = s.Start(bg, ids[1], "d.part")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: ids[1], State: engine.JobDone, File: "d", SHA256: "abc",
		Status: 200, Resume: engine.Resume{Part: "d.part", Bytes: 3, Size: 3}}))
	require.NoError(t, s.Named(ids[1]))
	// Paused after an attempt.
	_, err = s.Start(bg, ids[2], "q.part")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: ids[2], State: engine.JobQueued, Error: "reset", Status: 502,
		Resume: engine.Resume{Part: "q.part", Bytes: 7, Size: -1}}))
	_, err = s.SetState(bg, ids[2:], pausable, engine.JobPaused)
	require.NoError(t, err)
	require.NoError(t, s.Flush(bg))

	f, err := s.Job(bg, ids[0])
	require.NoError(t, err)
	require.Equal(t, 2, f.Attempts)
	require.Equal(t, 1, f.Throttled)

	changed, err := s.SetState(bg, ids[:2], retryable, engine.JobQueued)
	require.NoError(t, err)
	require.Len(t, changed, 2)
	changed, err = s.SetState(bg, ids[2:], resumable, engine.JobQueued)
	require.NoError(t, err)
	require.Len(t, changed, 1)

	j, err := s.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Zero(t, j.Attempts, "fresh attempt budget")
	assert.Zero(t, j.Throttled)
	assert.Empty(t, j.LastError)
	assert.Zero(t, j.LastStatus)
	assert.Equal(t, "p.part", j.Part, "the part is kept for the resume")
	assert.Equal(t, int64(20), j.Bytes)
	assert.Equal(t, `"e"`, j.ETag)

	j, err = s.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Empty(t, j.File, "the old final file is forgotten")
	assert.Empty(t, j.SHA256)
	assert.Zero(t, j.Bytes, "no part, no bytes")
	assert.Zero(t, j.Attempts)

	j, err = s.Job(bg, ids[2])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Equal(t, 1, j.Attempts, "a resumed job keeps its budget")
	assert.Equal(t, "reset", j.LastError)
	assert.Equal(t, "q.part", j.Part)
	assert.Equal(t, int64(7), j.Bytes)
}

// Q1: NextJobs hands out a host's queued jobs in queue order, (not_before, id), a page at a time
// from a cursor, across ties of not_before, without a job twice or left out.
func testNextJobsQueueOrderAndCursorAcrossTies(t *testing.T, o Opener) {
	t0, t1, t2 := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_001, 0), time.Unix(1_700_000_002, 0)
	s := open(t, o)
	tie := enqueueURLs(t, s, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3",
		"https://a.example/4", "https://a.example/5", "https://a.example/later", "https://a.example/zero",
		"https://a.example/paused", "https://a.example/active")
	later, zero, paused, active := tie[5], tie[6], tie[7], tie[8]
	tie = tie[:5]
	early := enqueueURLs(t, s, "a.example", "https://a.example/e1", "https://a.example/e2") // larger ids
	enqueueURLs(t, s, "b.example", "https://b.example/1")
	// Each retried to its not-before: five due at t1 (a tie, ordered by id), two due earlier,
	// one later, one with no not-before at all.
	wantNB := map[int64]time.Time{zero: {}, early[0]: t0, early[1]: t0, later: t2}
	for _, id := range tie {
		wantNB[id] = t1
	}
	for _, id := range append(append(append([]int64{}, tie...), early...), later, zero) {
		_, err := s.Start(bg, id, "")
		require.NoError(t, err)
		require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobQueued, NotBefore: wantNB[id]}))
	}
	_, err := s.SetState(bg, []int64{paused}, pausable, engine.JobPaused)
	require.NoError(t, err)
	_, err = s.Start(bg, active, "")
	require.NoError(t, err)

	want := append(append(append([]int64{zero}, early...), tie...), later)
	all, err := s.NextJobs(bg, "a.example", engine.Cursor{}, 100)
	require.NoError(t, err)
	var got []int64
	for _, q := range all {
		got = append(got, q.ID)
		assert.True(t, wantNB[q.ID].Equal(q.NotBefore), "job %d: not_before %v", q.ID, q.NotBefore)
	}
	assert.Equal(t, want, got, "(not_before, id) order; paused, active and other hosts' jobs left out")

	for _, n := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("pages of %d", n), func(t *testing.T) {
			var paged []int64
			after := engine.Cursor{}
			for range 20 {
				page, err := s.NextJobs(bg, "a.example", after, n)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page), n)
				if len(page) == 0 {
					break
				}
				for _, q := range page {
					paged = append(paged, q.ID)
				}
				last := page[len(page)-1]
				after = engine.Cursor{NotBefore: nanos(last.NotBefore), ID: last.ID}
			}
			assert.Equal(t, want, paged)
		})
	}

	// A cursor in the middle of the tie goes on with the rest of the tie, then what is later.
	page, err := s.NextJobs(bg, "a.example", engine.Cursor{NotBefore: nanos(t1), ID: tie[1]}, 100)
	require.NoError(t, err)
	var rest []int64
	for _, q := range page {
		rest = append(rest, q.ID)
	}
	assert.Equal(t, append(append([]int64{}, tie[2:]...), later), rest)
	page, err = s.NextJobs(bg, "nobody.example", engine.Cursor{}, 10)
	require.NoError(t, err)
	assert.Empty(t, page)
}

// U5: Jobs filters by state and host and pages by id, oldest or newest first.
func testJobsFiltersAndPages(t *testing.T, o Opener) {
	s := open(t, o)
	a := enqueueURLs(t, s, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	b := enqueueURLs(t, s, "b.example", "https://b.example/1")
	_, err := s.SetState(bg, []int64{a[1]}, pausable, engine.JobPaused)
	require.NoError(t, err)

	cases := []struct {
		name string
		q    engine.JobQuery
		want []int64
	}{
		{"all", engine.JobQuery{}, []int64{a[0], a[1], a[2], b[0]}},
		{"host", engine.JobQuery{Host: "a.example"}, a},
		{"state", engine.JobQuery{State: engine.JobPaused}, []int64{a[1]}},
		{"host and state", engine.JobQuery{Host: "a.example", State: engine.JobQueued}, []int64{a[0], a[2]}},
		{"first page", engine.JobQuery{Limit: 2}, a[:2]},
		{"next page", engine.JobQuery{AfterID: a[1], Limit: 2}, []int64{a[2], b[0]}},
		{"newest first", engine.JobQuery{Newest: true, Limit: 2}, []int64{b[0], a[2]}},
		{"newest, next page", engine.JobQuery{Newest: true, BeforeID: a[2], Limit: 2}, []int64{a[1], a[0]}},
		{"newest of a host in a state", engine.JobQuery{Newest: true, Host: "a.example", State: engine.JobQueued}, []int64{a[2], a[0]}},
		{"none", engine.JobQuery{State: engine.JobDone}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			js, err := s.Jobs(bg, c.q)
			require.NoError(t, err)
			assert.Equal(t, c.want, jobIDs(js))
		})
	}
	j, err := s.Job(bg, 12345)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	assert.Zero(t, j.ID)
}

// S2, G42: opening the store again queues every job left active (by a crash; here by a Close
// with jobs active) again, keeping its part, bytes and validators for the resume, giving back the
// attempt the crash cut off and saying why; jobs in any other state are left exactly as they were.
func testReopenRecoversActiveJobsOnly(t *testing.T, o Opener) {
	s := open(t, o)
	ids := map[engine.JobState]int64{}
	for _, st := range engine.JobStates {
		ids[st] = jobIn(t, s, "https://a.example/"+string(st), st)
	}
	active := ids[engine.JobActive]
	second := jobIn(t, s, "https://a.example/active2", engine.JobQueued)
	_, err := s.Start(bg, second, "2.part")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: second, State: engine.JobQueued, Error: "reset"}))
	_, err = s.Start(bg, second, "2.part")
	require.NoError(t, err) // its second attempt
	require.NoError(t, s.Note(active, engine.Resume{Part: "a.part", Bytes: 42, Size: 100, ETag: `"e"`, Name: "a.bin"}))
	require.NoError(t, s.Flush(bg))
	before := map[int64]engine.Job{}
	js, err := s.Jobs(bg, engine.JobQuery{})
	require.NoError(t, err)
	for _, j := range js {
		before[j.ID] = j
	}
	s.Reopen() // Close leaves states as they are: as after a crash

	for _, st := range engine.JobStates {
		j, err := s.Job(bg, ids[st])
		require.NoError(t, err)
		if st != engine.JobActive {
			equal(t, before[ids[st]], j, "a %s job is left alone", st)
		}
	}
	j, err := s.Job(bg, active)
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Equal(t, engine.Resume{Part: "a.part", Bytes: 42, Size: 100, ETag: `"e"`, Name: "a.bin"}, resumeOf(j),
		"the part is kept for the resume")
	assert.Zero(t, j.Attempts, "the attempt the crash cut off is given back (G42)")
	assert.Equal(t, "interrupted", j.LastError)
	j, err = s.Job(bg, second)
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Equal(t, 1, j.Attempts, "its first attempt still counts")
	assert.Equal(t, "2.part", j.Part)
	assertCounts(t, s)
	assert.Zero(t, totalCounts(t, s).Active)

	s.Reopen()
	j, err = s.Job(bg, active)
	require.NoError(t, err)
	assert.Zero(t, j.Attempts, "nothing to recover the second time")
	assert.Equal(t, engine.JobQueued, j.State)
}

// U1, Q1: the counts Hosts reports follow every transition: an insert, a start, each end, each
// person's command, a retry by Enqueue, and recovery when the store is opened again.
func testCountsFollowEveryTransition(t *testing.T, o Opener) {
	s := open(t, o)
	check := func(step string, want map[string]engine.Counts) {
		t.Helper()
		assert.Equal(t, want, hostCounts(t, s), step)
		assertCounts(t, s, step)
	}
	a := enqueueURLs(t, s, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	b := enqueueURLs(t, s, "b.example", "https://b.example/1")
	check("enqueue", map[string]engine.Counts{"a.example": {Queued: 3}, "b.example": {Queued: 1}})
	res, err := s.Enqueue(bg, newJobs("a.example", "https://a.example/1"), noAgain)
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	check("duplicate", map[string]engine.Counts{"a.example": {Queued: 3}, "b.example": {Queued: 1}})

	_, err = s.Start(bg, a[0], "1.part")
	require.NoError(t, err)
	_, err = s.Start(bg, b[0], "b.part")
	require.NoError(t, err)
	check("start", map[string]engine.Counts{"a.example": {Queued: 2, Active: 1}, "b.example": {Active: 1}})
	_, err = s.Start(bg, a[1], "1.part")
	require.ErrorIs(t, err, engine.ErrPartTaken)
	check("refused start", map[string]engine.Counts{"a.example": {Queued: 2, Active: 1}, "b.example": {Active: 1}})

	require.NoError(t, finish(s, bg, engine.End{JobID: a[0], State: engine.JobQueued, GiveBack: true}))
	check("retry", map[string]engine.Counts{"a.example": {Queued: 3}, "b.example": {Active: 1}})
	require.NoError(t, finish(s, bg, engine.End{JobID: b[0], State: engine.JobDone, File: "b"}))
	check("done", map[string]engine.Counts{"a.example": {Queued: 3}, "b.example": {Done: 1}})
	_, err = s.Start(bg, a[0], "")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: a[0], State: engine.JobFailed, Error: "gone"}))
	check("failed", map[string]engine.Counts{"a.example": {Queued: 2, Failed: 1}, "b.example": {Done: 1}})

	_, err = s.SetState(bg, []int64{a[1]}, pausable, engine.JobPaused)
	require.NoError(t, err)
	_, err = s.SetState(bg, []int64{a[2]}, stoppable, engine.JobCancelled)
	require.NoError(t, err)
	check("pause, cancel", map[string]engine.Counts{"a.example": {Paused: 1, Failed: 1, Cancelled: 1}, "b.example": {Done: 1}})
	_, err = s.SetState(bg, []int64{a[1]}, resumable, engine.JobQueued)
	require.NoError(t, err)
	_, err = s.SetState(bg, []int64{a[1]}, []engine.JobState{engine.JobQueued}, engine.JobSkipped)
	require.NoError(t, err)
	check("resume, skip", map[string]engine.Counts{"a.example": {Failed: 1, Cancelled: 1, Skipped: 1}, "b.example": {Done: 1}})
	_, err = s.SetState(bg, []int64{a[0], a[2]}, retryable, engine.JobQueued)
	require.NoError(t, err)
	check("retry by hand", map[string]engine.Counts{"a.example": {Queued: 2, Skipped: 1}, "b.example": {Done: 1}})
	res, err = s.Enqueue(bg, newJobs("b.example", "https://b.example/1", "https://b.example/2"), allAgain)
	require.NoError(t, err)
	require.True(t, res[0].Again)
	check("again", map[string]engine.Counts{"a.example": {Queued: 2, Skipped: 1}, "b.example": {Queued: 2}})

	_, err = s.Start(bg, a[0], "")
	require.NoError(t, err)
	_, err = s.SetState(bg, []int64{a[0]}, pausable, engine.JobPaused)
	require.NoError(t, err)
	require.ErrorIs(t, finish(s, bg, engine.End{JobID: a[0], State: engine.JobDone}), engine.ErrNotQueued)
	check("finish of a paused job", map[string]engine.Counts{"a.example": {Queued: 1, Paused: 1, Skipped: 1}, "b.example": {Queued: 2}})

	_, err = s.Start(bg, b[0], "")
	require.NoError(t, err)
	_, err = s.Start(bg, a[2], "")
	require.NoError(t, err)
	check("before the crash", map[string]engine.Counts{"a.example": {Active: 1, Paused: 1, Skipped: 1}, "b.example": {Queued: 1, Active: 1}})
	s.Reopen()
	check("recovered", map[string]engine.Counts{"a.example": {Queued: 1, Paused: 1, Skipped: 1}, "b.example": {Queued: 2}})
}

// S5: a background write (RecordAttempt) is committed by the waited transition that follows it,
// with no Flush.
func testBackgroundWriteRidesTheNextWaitedOne(t *testing.T, o Opener) {
	s := open(t, o)
	id := jobIn(t, s, "https://a.example/1", engine.JobActive)
	require.NoError(t, s.RecordAttempt(*row(id, "redirect", 301)))
	require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobFailed, Attempt: row(id, "failed", 410),
		Error: "gone", Status: 410}))
	hist, err := s.History(bg, engine.HistoryQuery{JobID: id})
	require.NoError(t, err)
	assert.Len(t, hist, 2)
}
