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

// The states engine commands move jobs from (engine/commands.go).
var (
	pausable  = []engine.JobState{engine.JobQueued, engine.JobActive}
	resumable = []engine.JobState{engine.JobPaused}
	retryable = []engine.JobState{engine.JobDone, engine.JobFailed, engine.JobCancelled, engine.JobSkipped}
	stoppable = []engine.JobState{engine.JobQueued, engine.JobActive, engine.JobPaused}
)

// row is a history row of job id as the engine hands it to Finish.
func row(id int64, outcome string, status int) *engine.Attempt {
	return &engine.Attempt{JobID: id, URL: "https://a.example/x", Host: "a.example", Attempt: 1,
		StartedAt: time.Unix(1_800_000_000, 0), Duration: time.Millisecond, Status: status, Outcome: outcome, Bytes: 3}
}

// J3, F4: Start moves a queued job to active, counts its attempt and records its part before the
// file exists, and says so only once it is on disk.
func TestStart_J3_F4_CountsTheAttemptAndRecordsThePart(t *testing.T) {
	clock := newClock(time.Unix(1_700_000_000, 0))
	db, path := openTest(t, withClock(clock))
	id := enqueueURLs(t, db, "a.example", "https://a.example/f")[0]
	clock.Set(time.Unix(1_700_000_009, 0))
	j, err := db.Start(bg, id, "f.part")
	require.NoError(t, err)
	assert.Equal(t, id, j.ID)
	assert.Equal(t, "https://a.example/f", j.URL)
	assert.Equal(t, "a.example", j.Host)
	assert.Equal(t, engine.JobActive, j.State)
	assert.Equal(t, 1, j.Attempts)
	assert.Equal(t, "f.part", j.Part)
	assert.Equal(t, int64(-1), j.Size)
	assert.True(t, time.Unix(1_700_000_009, 0).Equal(j.UpdatedAt))
	stored, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, j, stored, "Start returns the job as it now stands")

	var state, part string
	require.NoError(t, rawOpenRO(t, path).QueryRow(`SELECT state, part FROM jobs WHERE id = ?`, id).Scan(&state, &part))
	assert.Equal(t, "active", state, "on disk when Start returns (J3)")
	assert.Equal(t, "f.part", part, "the part is recorded before the file exists (F4)")

	_, err = db.Start(bg, id, "f.part")
	assert.ErrorIs(t, err, engine.ErrNotQueued, "a job started is not started twice")
	j, err = db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, 1, j.Attempts)
}

// F5: a job that has a part from an earlier attempt keeps it: Start records the part asked for
// only when the job has none.
func TestStart_F5_KeepsThePartItHas(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/f")[0]
	_, err := db.Start(bg, id, "f.part")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobQueued, Error: "reset",
		Resume: engine.Resume{Part: "f.part", Bytes: 10, Size: 100, ETag: `"e"`}}))
	j, err := db.Start(bg, id, "f (1).part")
	require.NoError(t, err)
	assert.Equal(t, "f.part", j.Part, "the resume goes on in the part it has")
	assert.Equal(t, int64(10), j.Bytes)
	assert.Equal(t, `"e"`, j.ETag)
	assert.Equal(t, 2, j.Attempts)
}

// J3: only a queued job starts; any other is refused with ErrNotQueued (ErrStateConflict), an
// unknown one with ErrNotFound, and nothing moves.
func TestStart_J3_RefusedUnlessQueued(t *testing.T) {
	db, _ := openTest(t)
	for i, s := range engine.JobStates {
		if s == engine.JobQueued {
			continue
		}
		t.Run(string(s), func(t *testing.T) {
			id := jobIn(t, db, fmt.Sprintf("https://w.example/%d", i), s)
			before, err := db.Job(bg, id)
			require.NoError(t, err)
			_, err = db.Start(bg, id, fmt.Sprintf("%d.part", i))
			assert.ErrorIs(t, err, engine.ErrNotQueued)
			assert.ErrorIs(t, err, ErrStateConflict)
			after, err := db.Job(bg, id)
			require.NoError(t, err)
			assert.Equal(t, before, after, "nothing moved")
		})
	}
	_, err := db.Start(bg, 12345, "x.part")
	assert.ErrorIs(t, err, engine.ErrNotFound)
	assert.ErrorIs(t, err, ErrNotFound)
	assertCounts(t, db)
}

// F4: a part name is one job's. Two jobs cannot record one part (Start and SetPart say
// ErrPartTaken, and the job stays as it was); the unique index holds it for every write, and the
// name is free again once its job lets go of it.
func TestStart_F4_PartTakenByAnotherJob(t *testing.T) {
	db, _ := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	_, err := db.Start(bg, ids[0], "same.part")
	require.NoError(t, err)

	_, err = db.Start(bg, ids[1], "same.part")
	assert.ErrorIs(t, err, engine.ErrPartTaken)
	j, err := db.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State, "not started")
	assert.Zero(t, j.Attempts, "no attempt counted")
	assert.Empty(t, j.Part)
	assertCounts(t, db)

	_, err = db.Start(bg, ids[1], "other.part")
	require.NoError(t, err)
	assert.ErrorIs(t, db.SetPart(bg, ids[1], "same.part"), engine.ErrPartTaken)
	j, err = db.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, "other.part", j.Part)

	// The index, not only the methods: no write may give two jobs one part.
	err = db.write(bg, "raw", func(w *wtx) error {
		_, err := w.exec(`UPDATE jobs SET part = 'same.part' WHERE id = ?`, ids[2])
		return err
	})
	assert.ErrorContains(t, err, "UNIQUE")
	var unique, partial int
	require.NoError(t, db.r.QueryRow(`SELECT "unique", partial FROM pragma_index_list('jobs') WHERE name = 'jobs_part'`).
		Scan(&unique, &partial))
	assert.Equal(t, 1, unique)
	assert.Equal(t, 1, partial, "jobs without a part are not in it")

	// Let go of (a retry that starts afresh): the name is free.
	require.NoError(t, finish(db, bg, engine.End{JobID: ids[0], State: engine.JobQueued, Resume: engine.Resume{Size: -1}}))
	j, err = db.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Empty(t, j.Part)
	_, err = db.Start(bg, ids[2], "same.part")
	require.NoError(t, err)
}

// SetPart records another part for an active job, whose first choice was taken on disk: the new
// part starts empty. Only an active job's part is changed.
func TestSetPart_F4_ActiveJobsOnly(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]
	assert.ErrorIs(t, db.SetPart(bg, id, "x.part"), engine.ErrNotQueued, "a queued job")
	_, err := db.Start(bg, id, "f.part")
	require.NoError(t, err)
	require.NoError(t, db.Note(id, engine.Resume{Part: "f.part", Bytes: 5, Size: 10}))
	require.NoError(t, db.SetPart(bg, id, "f (1).part"))
	j, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, "f (1).part", j.Part)
	assert.Zero(t, j.Bytes)
	assert.ErrorIs(t, db.SetPart(bg, 999, "y.part"), engine.ErrNotFound)
}

// J3: a start racing the person's pause, many times over: the job always ends paused, having
// been started once or not at all, never left active.
func TestStart_J3_RacingAPause(t *testing.T) {
	db, _ := openTest(t)
	const n = 100
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://a.example/%d", i)
	}
	ids := enqueueURLs(t, db, "a.example", urls...)
	started := make([]bool, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			_, err := db.Start(bg, id, fmt.Sprintf("%d.part", id))
			if err == nil {
				started[i] = true
			} else {
				assert.ErrorIs(t, err, engine.ErrNotQueued)
			}
		})
		wg.Go(func() {
			changed, err := db.SetState(bg, []int64{id}, pausable, engine.JobPaused)
			assert.NoError(t, err)
			assert.Len(t, changed, 1, "the pause always lands")
		})
	}
	wg.Wait()
	for i, id := range ids {
		j, err := db.Job(bg, id)
		require.NoError(t, err)
		assert.Equal(t, engine.JobPaused, j.State)
		if started[i] {
			assert.Equal(t, 1, j.Attempts)
			assert.Equal(t, fmt.Sprintf("%d.part", id), j.Part)
		} else {
			assert.Zero(t, j.Attempts)
		}
	}
	assertCounts(t, db)
}

// J3, S3: Finish records a download done, with its last history row, in one commit; the part
// name stays until the part has its final name.
func TestFinish_J3_S3_DoneWithItsHistoryRowInOneCommit(t *testing.T) {
	clock := newClock(time.Unix(1_700_000_000, 0))
	db, path := openTest(t, withClock(clock))
	id := enqueueURLs(t, db, "a.example", "https://a.example/f")[0]
	_, err := db.Start(bg, id, "f.part")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobQueued, Error: "503", Status: 503,
		Resume: engine.Resume{Part: "f.part", Bytes: 1, Size: 1000}}))
	_, err = db.Start(bg, id, "")
	require.NoError(t, err)
	require.NoError(t, db.Flush(bg))

	clock.Set(time.Unix(1_700_000_050, 0))
	before := db.commits.Load()
	require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobDone, Attempt: row(id, "ok", 206),
		File: "f", SHA256: "abc", Status: 206,
		Resume: engine.Resume{Part: "f.part", Bytes: 1000, Size: 1000, ETag: `"x"`, LastModified: "Wed, 21 Oct 2015 07:28:00 GMT", Name: "f"}}))
	assert.Equal(t, int64(1), db.commits.Load()-before, "one commit")

	raw := rawOpenRO(t, path) // both are on disk when Finish returns
	var state string
	var rows int
	require.NoError(t, raw.QueryRow(`SELECT state, (SELECT count(*) FROM attempts WHERE job_id = jobs.id) FROM jobs
		WHERE id = ?`, id).Scan(&state, &rows))
	assert.Equal(t, "done", state)
	assert.Equal(t, 1, rows, "with its history row")

	j, err := db.Job(bg, id)
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
	assert.True(t, time.Unix(1_700_000_050, 0).Equal(j.UpdatedAt))
	assertCounts(t, db)
}

// R3, R4, F5: an attempt that ends in a retry queues its job behind its delay with what is on
// disk for the resume; a throttle gives its attempt back and is counted apart; a failure keeps
// the part for a later retry.
func TestFinish_R3_RetryThrottleAndFailure(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/f")[0]
	_, err := db.Start(bg, id, "f.part")
	require.NoError(t, err)

	next := time.Unix(1_800_000_000, 0)
	require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobQueued, Attempt: row(id, "throttled", 429),
		NotBefore: next, GiveBack: true, Throttled: true, Error: "429", Status: 429,
		Resume: engine.Resume{Part: "f.part", Bytes: 100, Size: 1000, ETag: `"x"`, LastModified: "Wed, 21 Oct 2015 07:28:00 GMT", Name: "f.bin"}}))
	j, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.True(t, next.Equal(j.NotBefore))
	assert.Zero(t, j.Attempts, "the throttle gave its attempt back (R3)")
	assert.Equal(t, 1, j.Throttled)
	assert.Equal(t, "429", j.LastError)
	assert.Equal(t, 429, j.LastStatus)
	assert.Equal(t, engine.Resume{Part: "f.part", Bytes: 100, Size: 1000, ETag: `"x"`,
		LastModified: "Wed, 21 Oct 2015 07:28:00 GMT", Name: "f.bin"}, resumeOf(j))

	_, err = db.Start(bg, id, "")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobQueued, NotBefore: next.Add(time.Second),
		Error: "reset", Resume: engine.Resume{Part: "f.part", Bytes: 200, Size: 1000, ETag: `"x"`}}))
	j, err = db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, 1, j.Attempts, "a retry keeps its attempt")
	assert.Equal(t, 1, j.Throttled)
	assert.Equal(t, int64(200), j.Bytes)
	assert.Empty(t, j.Name, "the resume state is replaced whole")

	_, err = db.Start(bg, id, "")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobFailed, Attempt: row(id, "failed", 410),
		Error: "gone", Status: 410, Resume: engine.Resume{Part: "f.part", Bytes: 300, Size: 1000}}))
	j, err = db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, engine.JobFailed, j.State)
	assert.Equal(t, 2, j.Attempts)
	assert.Equal(t, "gone", j.LastError)
	assert.Equal(t, 410, j.LastStatus)
	assert.Equal(t, "f.part", j.Part, "kept for a retry")
	assert.Equal(t, int64(300), j.Bytes)
	hist, err := db.History(bg, engine.HistoryQuery{JobID: id})
	require.NoError(t, err)
	assert.Len(t, hist, 2, "the two exchanges handed over")
	assertCounts(t, db)
}

func resumeOf(j engine.Job) engine.Resume {
	return engine.Resume{Part: j.Part, Bytes: j.Bytes, Size: j.Size, ETag: j.ETag, LastModified: j.LastModified, Name: j.Name}
}

// J3, C20: a job the person paused or cancelled while its attempt ended keeps the state the
// person set; Finish says so with ErrNotQueued, and records what is on disk for its resume and its
// history row all the same (engine.Store.Finish).
func TestFinish_J3_PausedOrCancelledMeanwhileKeepsItsState(t *testing.T) {
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
			db, path := openTest(t)
			id := enqueueURLs(t, db, "a.example", "https://a.example/f")[0]
			_, err := db.Start(bg, id, "f.part")
			require.NoError(t, err)
			changed, err := db.SetState(bg, []int64{id}, stoppable, c.to)
			require.NoError(t, err)
			require.Len(t, changed, 1)

			resume := engine.Resume{Part: "f.part", Bytes: 50, Size: 100, ETag: `"v2"`,
				LastModified: "Wed, 21 Oct 2015 07:28:00 GMT", Name: "f.bin"}
			if c.end == engine.JobDone {
				resume.Bytes = 100
			}
			err = finish(db, bg, engine.End{JobID: id, State: c.end, Attempt: row(id, "canceled", 0), GiveBack: true,
				NotBefore: time.Unix(1_800_000_000, 0), Error: "interrupted", File: "f.bin", SHA256: "abc", Resume: resume})
			assert.ErrorIs(t, err, engine.ErrNotQueued)
			assert.ErrorIs(t, err, ErrStateConflict)

			j, err := db.Job(bg, id)
			require.NoError(t, err)
			assert.Equal(t, c.to, j.State, "the person's state is kept")
			assert.Equal(t, resume, resumeOf(j), "what is on disk is recorded for the resume")
			assert.Empty(t, j.File, "not done")
			var rows int
			require.NoError(t, rawOpenRO(t, path).QueryRow(`SELECT count(*) FROM attempts WHERE job_id = ?`, id).Scan(&rows))
			assert.Equal(t, 1, rows, "its history row is recorded too (S3)")
			assertCounts(t, db)
		})
	}
}

// Finish of a job that was never started, or is gone, or of an end no attempt has, changes
// nothing.
func TestFinish_J3_Refused(t *testing.T) {
	db, _ := openTest(t)
	queued := jobIn(t, db, "https://a.example/q", engine.JobQueued)
	done := jobIn(t, db, "https://a.example/d", engine.JobDone)
	active := jobIn(t, db, "https://a.example/a", engine.JobActive)
	for _, id := range []int64{queued, done} {
		before, err := db.Job(bg, id)
		require.NoError(t, err)
		err = finish(db, bg, engine.End{JobID: id, State: engine.JobFailed, Error: "x"})
		assert.ErrorIs(t, err, engine.ErrNotQueued)
		after, err := db.Job(bg, id)
		require.NoError(t, err)
		assert.Equal(t, before, after)
	}
	assert.ErrorIs(t, finish(db, bg, engine.End{JobID: 999, State: engine.JobDone}), engine.ErrNotFound)
	for _, s := range []engine.JobState{engine.JobPaused, engine.JobCancelled, engine.JobActive, "bogus"} {
		assert.Error(t, finish(db, bg, engine.End{JobID: active, State: s}), "an attempt does not end %s", s)
	}
	j, err := db.Job(bg, active)
	require.NoError(t, err)
	assert.Equal(t, engine.JobActive, j.State)
	assertCounts(t, db)
}

// F3, S2: a done job whose part has not taken its final name yet is listed by Unnamed — across a
// crash too —, Rename records another final name before the part takes it, and Named, riding the
// next commit, takes it off the list and lets go of the part name.
func TestUnnamed_F3_S2_NamedRenameRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/a", "https://a.example/b", "https://a.example/c",
		"https://a.example/d")
	done := func(id int64, part, file string) {
		t.Helper()
		_, err := db.Start(bg, id, part)
		require.NoError(t, err)
		require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobDone, Attempt: row(id, "ok", 200),
			File: file, SHA256: "abc", Status: 200, Resume: engine.Resume{Part: part, Bytes: 3, Size: 3}}))
	}
	done(ids[0], "a.part", "a")
	done(ids[1], "b.part", "b")
	_, err = db.Start(bg, ids[2], "c.part")
	require.NoError(t, err)

	us, err := db.Unnamed(bg)
	require.NoError(t, err)
	assert.Equal(t, ids[:2], jobIDs(us))
	for _, u := range us {
		assert.Equal(t, engine.JobDone, u.State)
		assert.Equal(t, "abc", u.SHA256)
	}
	assert.Equal(t, "a.part", us[0].Part)
	assert.Equal(t, "a", us[0].File)

	require.NoError(t, db.Rename(bg, ids[0], "a (1)"))
	require.NoError(t, db.Rename(bg, ids[2], "c"), "an active job")
	j, err := db.Job(bg, ids[2])
	require.NoError(t, err)
	assert.Empty(t, j.File, "only a done job's final name is recorded")

	require.NoError(t, db.Named(ids[0]))
	require.NoError(t, db.Named(ids[2])) // not done: its part is its download's
	require.NoError(t, db.Flush(bg))
	us, err = db.Unnamed(bg)
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[1]}, jobIDs(us))
	j, err = db.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, engine.JobDone, j.State)
	assert.Equal(t, "a (1)", j.File, "the name the part took")
	assert.Empty(t, j.Part)
	assert.Equal(t, "abc", j.SHA256)
	j, err = db.Job(bg, ids[2])
	require.NoError(t, err)
	assert.Equal(t, "c.part", j.Part, "an active job keeps its part")

	_, err = db.Start(bg, ids[3], "a.part")
	require.NoError(t, err, "the part name of a named job is free")

	// A crash between the done commit and the rename: the next start finds it to name.
	require.NoError(t, db.Close())
	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	us, err = db.Unnamed(bg)
	require.NoError(t, err)
	require.Equal(t, []int64{ids[1]}, jobIDs(us))
	assert.Equal(t, "b.part", us[0].Part)
	assert.Equal(t, "b", us[0].File)

	// A done job queued again no longer waits for its old name.
	changed, err := db.SetState(bg, []int64{ids[1]}, retryable, engine.JobQueued)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	us, err = db.Unnamed(bg)
	require.NoError(t, err)
	assert.Empty(t, us)
}

// J3, R5: SetState moves only the jobs in one of the states it is given, to a state a person may
// ask for, and reports each that moved.
func TestSetState_J3_FromToRules(t *testing.T) {
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
	clock := newClock(time.Unix(1_700_000_000, 0))
	db, _ := openTest(t, withClock(clock))
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s to %s from %v", c.from, c.to, c.froms), func(t *testing.T) {
			clock.Set(time.Unix(1_700_000_000, 0))
			id := jobIn(t, db, fmt.Sprintf("https://s.example/%d", i), c.from)
			before, err := db.Job(bg, id)
			require.NoError(t, err)
			clock.Set(time.Unix(1_700_000_100+int64(i), 0))
			changed, err := db.SetState(bg, []int64{id}, c.froms, c.to)
			require.NoError(t, err)
			j, err := db.Job(bg, id)
			require.NoError(t, err)
			if !c.moves {
				assert.Empty(t, changed)
				assert.Equal(t, before, j, "nothing moved")
				return
			}
			nb := before.NotBefore
			if c.from.Ended() && c.to == engine.JobQueued {
				nb = clock.Now() // a retry is due at once
			}
			assert.Equal(t, []engine.Changed{{ID: id, Host: "a.example", From: c.from, To: c.to, NotBefore: nb}}, changed)
			assert.Equal(t, c.to, j.State)
			assert.True(t, nb.Equal(j.NotBefore))
			assert.True(t, clock.Now().Equal(j.UpdatedAt))
		})
	}
	assertCounts(t, db)

	id := jobIn(t, db, "https://s.example/bad", engine.JobQueued)
	for _, to := range []engine.JobState{engine.JobActive, engine.JobDone, "bogus", ""} {
		changed, err := db.SetState(bg, []int64{id}, engine.JobStates, to)
		assert.Error(t, err, "jobs are not moved to %q by hand", to)
		assert.Empty(t, changed)
	}
	j, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
}

// SetState reports the jobs that moved in input order, skips unknown ids and jobs in other
// states, and moves them all in one commit.
func TestSetState_J3_ReportsWhatMovedInInputOrder(t *testing.T) {
	db, path := openTest(t)
	a := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	b := enqueueURLs(t, db, "b.example", "https://b.example/1")
	done := jobOfHostIn(t, db, "b.example", "https://b.example/done", engine.JobDone)
	require.NoError(t, db.Flush(bg))
	before := db.commits.Load()
	changed, err := db.SetState(bg, []int64{b[0], 999, done, a[1], a[0], a[1]}, pausable, engine.JobPaused)
	require.NoError(t, err)
	assert.Equal(t, int64(1), db.commits.Load()-before, "one commit")
	var got []int64
	for _, c := range changed {
		got = append(got, c.ID)
		assert.Equal(t, engine.JobQueued, c.From)
		assert.Equal(t, engine.JobPaused, c.To)
	}
	assert.Equal(t, []int64{b[0], a[1], a[0]}, got, "in input order, each once")
	assert.Equal(t, "b.example", changed[0].Host)
	assert.Equal(t, "a.example", changed[1].Host)
	var paused int
	require.NoError(t, rawOpenRO(t, path).QueryRow(`SELECT count(*) FROM jobs WHERE state = 'paused'`).Scan(&paused))
	assert.Equal(t, 3, paused, "on disk when it returns")
	assertCounts(t, db)
}

// R5: a job queued again from an ended state gets a fresh attempt budget: attempts, throttles,
// last error and status, final file and digest are cleared; a part and its bytes are kept for the
// resume. A paused job resumed keeps its budget.
func TestSetState_R5_FreshBudgetOnRetry(t *testing.T) {
	db, _ := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/part", "https://a.example/done", "https://a.example/paused")

	// Two attempts, a throttle, a failure with its part kept.
	_, err := db.Start(bg, ids[0], "p.part")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: ids[0], State: engine.JobQueued, Throttled: true, Error: "503",
		Status: 503, Resume: engine.Resume{Part: "p.part", Bytes: 10, Size: 100, ETag: `"e"`}}))
	_, err = db.Start(bg, ids[0], "")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: ids[0], State: engine.JobFailed, Error: "gone", Status: 410,
		Resume: engine.Resume{Part: "p.part", Bytes: 20, Size: 100, ETag: `"e"`}}))
	// Done and named: no part.
	_, err = db.Start(bg, ids[1], "d.part")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: ids[1], State: engine.JobDone, File: "d", SHA256: "abc",
		Status: 200, Resume: engine.Resume{Part: "d.part", Bytes: 3, Size: 3}}))
	require.NoError(t, db.Named(ids[1]))
	// Paused after an attempt.
	_, err = db.Start(bg, ids[2], "q.part")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: ids[2], State: engine.JobQueued, Error: "reset", Status: 502,
		Resume: engine.Resume{Part: "q.part", Bytes: 7, Size: -1}}))
	_, err = db.SetState(bg, ids[2:], pausable, engine.JobPaused)
	require.NoError(t, err)
	require.NoError(t, db.Flush(bg))

	f, err := db.Job(bg, ids[0])
	require.NoError(t, err)
	require.Equal(t, 2, f.Attempts)
	require.Equal(t, 1, f.Throttled)

	changed, err := db.SetState(bg, ids[:2], retryable, engine.JobQueued)
	require.NoError(t, err)
	require.Len(t, changed, 2)
	changed, err = db.SetState(bg, ids[2:], resumable, engine.JobQueued)
	require.NoError(t, err)
	require.Len(t, changed, 1)

	j, err := db.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Zero(t, j.Attempts, "fresh attempt budget")
	assert.Zero(t, j.Throttled)
	assert.Empty(t, j.LastError)
	assert.Zero(t, j.LastStatus)
	assert.Equal(t, "p.part", j.Part, "the part is kept for the resume")
	assert.Equal(t, int64(20), j.Bytes)
	assert.Equal(t, `"e"`, j.ETag)

	j, err = db.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Empty(t, j.File, "the old final file is forgotten")
	assert.Empty(t, j.SHA256)
	assert.Zero(t, j.Bytes, "no part, no bytes")
	assert.Zero(t, j.Attempts)

	j, err = db.Job(bg, ids[2])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Equal(t, 1, j.Attempts, "a resumed job keeps its budget")
	assert.Equal(t, "reset", j.LastError)
	assert.Equal(t, "q.part", j.Part)
	assert.Equal(t, int64(7), j.Bytes)
}

// Q1: NextJobs hands out a host's queued jobs in queue order, (not_before, id), a page at a time
// from a cursor, across ties of not_before, without a job twice or left out.
func TestNextJobs_Q1_QueueOrderAndCursorAcrossTies(t *testing.T) {
	t0, t1, t2 := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_001, 0), time.Unix(1_700_000_002, 0)
	clock := newClock(t1)
	db, _ := openTest(t, withClock(clock))
	// Five jobs due at t1, in one paste: a tie of not_before, ordered by id.
	tie := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3",
		"https://a.example/4", "https://a.example/5", "https://a.example/later", "https://a.example/zero",
		"https://a.example/paused", "https://a.example/active")
	later, zero, paused, active := tie[5], tie[6], tie[7], tie[8]
	tie = tie[:5]
	// Two jobs due earlier, with larger ids.
	clock.Set(t0)
	early := enqueueURLs(t, db, "a.example", "https://a.example/e1", "https://a.example/e2")
	enqueueURLs(t, db, "b.example", "https://b.example/1")
	// Retried: one due at t2, one with no not-before at all.
	for id, nb := range map[int64]time.Time{later: t2, zero: {}} {
		_, err := db.Start(bg, id, "")
		require.NoError(t, err)
		require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobQueued, NotBefore: nb}))
	}
	_, err := db.SetState(bg, []int64{paused}, pausable, engine.JobPaused)
	require.NoError(t, err)
	_, err = db.Start(bg, active, "")
	require.NoError(t, err)

	want := append(append(append([]int64{zero}, early...), tie...), later)
	wantNB := map[int64]time.Time{zero: {}, early[0]: t0, early[1]: t0, later: t2}
	for _, id := range tie {
		wantNB[id] = t1
	}

	all, err := db.NextJobs(bg, "a.example", engine.Cursor{}, 100)
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
				page, err := db.NextJobs(bg, "a.example", after, n)
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
	page, err := db.NextJobs(bg, "a.example", engine.Cursor{NotBefore: nanos(t1), ID: tie[1]}, 100)
	require.NoError(t, err)
	var rest []int64
	for _, q := range page {
		rest = append(rest, q.ID)
	}
	assert.Equal(t, append(append([]int64{}, tie[2:]...), later), rest)
	page, err = db.NextJobs(bg, "nobody.example", engine.Cursor{}, 10)
	require.NoError(t, err)
	assert.Empty(t, page)
}

// U5: Jobs filters by state and host and pages by id, oldest or newest first.
func TestJobs_U5_FiltersAndPages(t *testing.T) {
	db, _ := openTest(t)
	a := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	b := enqueueURLs(t, db, "b.example", "https://b.example/1")
	_, err := db.SetState(bg, []int64{a[1]}, pausable, engine.JobPaused)
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
			js, err := db.Jobs(bg, c.q)
			require.NoError(t, err)
			assert.Equal(t, c.want, jobIDs(js))
		})
	}
	j, err := db.Job(bg, 12345)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	assert.Zero(t, j.ID)
}

// S2, G42: Open queues again every job a crash left active, keeping its part, bytes and
// validators for the resume, giving back the attempt the crash cut off and saying why; jobs in any
// other state are left exactly as they were.
func TestOpen_S2_G42_RecoversActiveJobsOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	ids := map[engine.JobState]int64{}
	for _, s := range engine.JobStates {
		ids[s] = jobIn(t, db, "https://a.example/"+string(s), s)
	}
	active := ids[engine.JobActive]
	second := jobIn(t, db, "https://a.example/active2", engine.JobQueued)
	_, err = db.Start(bg, second, "2.part")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: second, State: engine.JobQueued, Error: "reset"}))
	_, err = db.Start(bg, second, "2.part")
	require.NoError(t, err) // its second attempt
	require.NoError(t, db.Note(active, engine.Resume{Part: "a.part", Bytes: 42, Size: 100, ETag: `"e"`, Name: "a.bin"}))
	require.NoError(t, db.Flush(bg))
	before := map[int64]engine.Job{}
	js, err := db.Jobs(bg, engine.JobQuery{})
	require.NoError(t, err)
	for _, j := range js {
		before[j.ID] = j
	}
	require.NoError(t, db.Close()) // Close does not touch states: as after a crash

	db, err = Open(path)
	require.NoError(t, err)
	assert.Equal(t, int64(2), db.Recovered())
	for _, s := range engine.JobStates {
		j, err := db.Job(bg, ids[s])
		require.NoError(t, err)
		if s != engine.JobActive {
			assert.Equal(t, before[ids[s]], j, "a %s job is left alone", s)
		}
	}
	j, err := db.Job(bg, active)
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Equal(t, engine.Resume{Part: "a.part", Bytes: 42, Size: 100, ETag: `"e"`, Name: "a.bin"}, resumeOf(j),
		"the part is kept for the resume")
	assert.Zero(t, j.Attempts, "the attempt the crash cut off is given back (G42)")
	assert.Equal(t, "interrupted", j.LastError)
	j, err = db.Job(bg, second)
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	assert.Equal(t, 1, j.Attempts, "its first attempt still counts")
	assert.Equal(t, "2.part", j.Part)
	assertCounts(t, db)
	counts, err := db.Counts(bg)
	require.NoError(t, err)
	assert.Zero(t, counts.Active)
	require.NoError(t, db.Close())

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	assert.Zero(t, db.Recovered(), "nothing to recover the second time")
	j, err = db.Job(bg, active)
	require.NoError(t, err)
	assert.Zero(t, j.Attempts)
}

// U1, Q1: the counts in the hosts rows follow every transition: an insert, a start, each end, each
// person's command, a retry by Enqueue, and recovery at Open.
func TestCounts_U1_TriggersCountEveryTransition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	check := func(step string, want map[string]engine.Counts) {
		t.Helper()
		assert.Equal(t, want, hostCounts(t, db), step)
		assertCounts(t, db, step)
		var sum engine.Counts
		for _, c := range want {
			sum.Add(c)
		}
		got, err := db.Counts(bg)
		require.NoError(t, err)
		assert.Equal(t, sum, got, step+": Counts sums the hosts")
	}
	a := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	b := enqueueURLs(t, db, "b.example", "https://b.example/1")
	check("enqueue", map[string]engine.Counts{"a.example": {Queued: 3}, "b.example": {Queued: 1}})
	res, err := db.Enqueue(bg, newJobs("a.example", "https://a.example/1"), noAgain)
	require.NoError(t, err)
	require.True(t, res[0].Duplicate)
	check("duplicate", map[string]engine.Counts{"a.example": {Queued: 3}, "b.example": {Queued: 1}})

	_, err = db.Start(bg, a[0], "1.part")
	require.NoError(t, err)
	_, err = db.Start(bg, b[0], "b.part")
	require.NoError(t, err)
	check("start", map[string]engine.Counts{"a.example": {Queued: 2, Active: 1}, "b.example": {Active: 1}})
	_, err = db.Start(bg, a[1], "1.part")
	require.ErrorIs(t, err, engine.ErrPartTaken)
	check("refused start", map[string]engine.Counts{"a.example": {Queued: 2, Active: 1}, "b.example": {Active: 1}})

	require.NoError(t, finish(db, bg, engine.End{JobID: a[0], State: engine.JobQueued, GiveBack: true}))
	check("retry", map[string]engine.Counts{"a.example": {Queued: 3}, "b.example": {Active: 1}})
	require.NoError(t, finish(db, bg, engine.End{JobID: b[0], State: engine.JobDone, File: "b"}))
	check("done", map[string]engine.Counts{"a.example": {Queued: 3}, "b.example": {Done: 1}})
	_, err = db.Start(bg, a[0], "")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: a[0], State: engine.JobFailed, Error: "gone"}))
	check("failed", map[string]engine.Counts{"a.example": {Queued: 2, Failed: 1}, "b.example": {Done: 1}})

	_, err = db.SetState(bg, []int64{a[1]}, pausable, engine.JobPaused)
	require.NoError(t, err)
	_, err = db.SetState(bg, []int64{a[2]}, stoppable, engine.JobCancelled)
	require.NoError(t, err)
	check("pause, cancel", map[string]engine.Counts{"a.example": {Paused: 1, Failed: 1, Cancelled: 1}, "b.example": {Done: 1}})
	_, err = db.SetState(bg, []int64{a[1]}, resumable, engine.JobQueued)
	require.NoError(t, err)
	_, err = db.SetState(bg, []int64{a[1]}, []engine.JobState{engine.JobQueued}, engine.JobSkipped)
	require.NoError(t, err)
	check("resume, skip", map[string]engine.Counts{"a.example": {Failed: 1, Cancelled: 1, Skipped: 1}, "b.example": {Done: 1}})
	_, err = db.SetState(bg, []int64{a[0], a[2]}, retryable, engine.JobQueued)
	require.NoError(t, err)
	check("retry by hand", map[string]engine.Counts{"a.example": {Queued: 2, Skipped: 1}, "b.example": {Done: 1}})
	res, err = db.Enqueue(bg, newJobs("b.example", "https://b.example/1", "https://b.example/2"), allAgain)
	require.NoError(t, err)
	require.True(t, res[0].Again)
	check("again", map[string]engine.Counts{"a.example": {Queued: 2, Skipped: 1}, "b.example": {Queued: 2}})

	_, err = db.Start(bg, a[0], "")
	require.NoError(t, err)
	_, err = db.SetState(bg, []int64{a[0]}, pausable, engine.JobPaused)
	require.NoError(t, err)
	require.ErrorIs(t, finish(db, bg, engine.End{JobID: a[0], State: engine.JobDone}), engine.ErrNotQueued)
	check("finish of a paused job", map[string]engine.Counts{"a.example": {Queued: 1, Paused: 1, Skipped: 1}, "b.example": {Queued: 2}})

	_, err = db.Start(bg, b[0], "")
	require.NoError(t, err)
	_, err = db.Start(bg, a[2], "")
	require.NoError(t, err)
	check("before the crash", map[string]engine.Counts{"a.example": {Active: 1, Paused: 1, Skipped: 1}, "b.example": {Queued: 1, Active: 1}})
	require.NoError(t, db.Close())
	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	check("recovered", map[string]engine.Counts{"a.example": {Queued: 1, Paused: 1, Skipped: 1}, "b.example": {Queued: 2}})
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

// S5: a background write lingers for company; the waited transition that follows commits at once
// and carries it.
func TestWriter_S5_BackgroundWriteLandsWithTheNextWaitedOne(t *testing.T) {
	db, path := openTest(t)
	id := jobIn(t, db, "https://a.example/1", engine.JobActive)
	require.NoError(t, db.RecordAttempt(*row(id, "redirect", 301)))
	require.NoError(t, finish(db, bg, engine.End{JobID: id, State: engine.JobFailed, Attempt: row(id, "failed", 410),
		Error: "gone", Status: 410}))
	var n int
	require.NoError(t, rawOpenRO(t, path).QueryRow(`SELECT count(*) FROM attempts WHERE job_id = ?`, id).Scan(&n))
	assert.Equal(t, 2, n)
}
