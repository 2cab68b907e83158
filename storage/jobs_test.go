package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jobIn puts a new job on host into state s through the public transitions.
func jobIn(t *testing.T, db *DB, url string, s State) int64 {
	t.Helper()
	return jobOfHostIn(t, db, "a.example", url, s)
}

// jobOfHostIn is jobIn for a job of host.
func jobOfHostIn(t *testing.T, db *DB, host, url string, s State) int64 {
	t.Helper()
	id := enqueueURLs(t, db, host, url)[0]
	if s == StateQueued {
		return id
	}
	if s == StatePaused || s == StateCancelled {
		_, err := db.SetJobState(bg, []int64{id}, s)
		require.NoError(t, err)
		return id
	}
	_, err := db.MarkActive(bg, id)
	require.NoError(t, err)
	switch s {
	case StateDone:
		require.NoError(t, db.MarkDone(bg, id, Done{File: "f", Bytes: 1, SHA256: "aa", Status: 200}))
	case StateFailed:
		require.NoError(t, db.MarkFailed(bg, id, "gone", 410))
	}
	return id
}

func TestEnqueue_J2_DuplicateInEveryState(t *testing.T) {
	db, _ := openTest(t)
	for _, s := range States {
		t.Run(string(s), func(t *testing.T) {
			url := "https://a.example/" + string(s)
			id := jobIn(t, db, url, s)
			res, err := db.Enqueue(bg, []NewJob{{URL: url, Host: "a.example"}})
			require.NoError(t, err)
			assert.Equal(t, 0, res.Queued)
			assert.Equal(t, 1, res.Duplicates)
			assert.Equal(t, []EnqueueItem{{ID: id, Duplicate: true, State: s}}, res.Items)
			j, err := db.Job(bg, id)
			require.NoError(t, err)
			assert.Equal(t, s, j.State, "a duplicate leaves the job alone")
		})
	}
}

func TestEnqueue_J2_ReportsEachInput(t *testing.T) {
	db, _ := openTest(t)
	old := enqueueURLs(t, db, "a.example", "https://a.example/old")[0]
	nb := time.Unix(1_700_000_000, 5)
	res, err := db.Enqueue(bg, []NewJob{
		{URL: "https://a.example/1", Host: "a.example", NotBefore: nb},
		{URL: "https://a.example/old", Host: "a.example"},
		{URL: "https://b.example/2", Host: "b.example"},
		{URL: "https://a.example/1", Host: "a.example"}, // twice in one paste
	})
	require.NoError(t, err)
	require.Len(t, res.Items, 4)
	assert.Equal(t, 2, res.Queued)
	assert.Equal(t, 2, res.Duplicates)
	assert.False(t, res.Items[0].Duplicate)
	assert.Equal(t, StateQueued, res.Items[0].State)
	assert.Equal(t, EnqueueItem{ID: old, Duplicate: true, State: StateQueued}, res.Items[1])
	assert.False(t, res.Items[2].Duplicate)
	assert.Equal(t, EnqueueItem{ID: res.Items[0].ID, Duplicate: true, State: StateQueued}, res.Items[3])

	j, err := db.JobByURL(bg, "https://a.example/1")
	require.NoError(t, err)
	assert.Equal(t, res.Items[0].ID, j.ID)
	assert.Equal(t, "a.example", j.Host)
	assert.True(t, nb.Equal(j.NotBefore))
	assert.Equal(t, int64(-1), j.Size, "size unknown")

	_, err = db.Enqueue(bg, []NewJob{{URL: "", Host: "a.example"}})
	assert.Error(t, err, "empty URL")

	ids, err := db.JobIDsByURL(bg, []string{"https://b.example/2", "https://nowhere.example/", "https://a.example/old"})
	require.NoError(t, err)
	assert.Equal(t, []int64{res.Items[2].ID, old}, ids)
}

// J1, J2: a paste whose every URL JSON carries exactly is inserted in one statement, any other
// one job at a time; both report each input alike and store each URL byte for byte.
func TestEnqueue_J2_OneStatementOrOneAJobAlike(t *testing.T) {
	nb := time.Unix(1_700_000_000, 5)
	in := []NewJob{
		{URL: "https://a.example/1", Host: "a.example", NotBefore: nb},
		{URL: "https://a.example/old", Host: "a.example"},
		{URL: `https://a.example/q"uo\te%20x`, Host: "a.example"},
		{URL: "https://b.example/2", Host: "b.example"},
		{URL: "https://a.example/1", Host: "a.example"},
		{URL: `https://a.example/q"uo\te%20x`, Host: "a.example"},
	}
	enqueue := func(extra ...NewJob) (*DB, EnqueueResult) {
		db, _ := openTest(t)
		enqueueURLs(t, db, "a.example", "https://a.example/old")
		res, err := db.Enqueue(bg, append(slices.Clone(in), extra...))
		require.NoError(t, err)
		return db, res
	}
	_, ascii := enqueueBatch(in)
	require.True(t, ascii)
	_, ascii = enqueueBatch([]NewJob{{URL: "https://c.example/\xffbad", Host: "c.example"}})
	require.False(t, ascii)

	fast, once := enqueue()
	slow, each := enqueue(NewJob{URL: "https://c.example/\xffbad", Host: "c.example"})
	assert.NotContains(t, fast.prepared, qEnqueueEach, "in one statement")
	assert.Contains(t, slow.prepared, qEnqueueEach, "one job at a time")
	assert.Equal(t, once.Items, each.Items[:len(in)])
	assert.Equal(t, 3, once.Queued)
	assert.Equal(t, 3, once.Duplicates)
	assert.Equal(t, []bool{false, true, false, false, true, true}, []bool{once.Items[0].Duplicate,
		once.Items[1].Duplicate, once.Items[2].Duplicate, once.Items[3].Duplicate, once.Items[4].Duplicate, once.Items[5].Duplicate})
	for _, db := range []*DB{fast, slow} {
		j, err := db.JobByURL(bg, `https://a.example/q"uo\te%20x`)
		require.NoError(t, err)
		assert.Equal(t, once.Items[2].ID, j.ID)
		j, err = db.JobByURL(bg, "https://a.example/1")
		require.NoError(t, err)
		assert.True(t, nb.Equal(j.NotBefore), "the first of a URL given twice is the job")
	}
	j, err := slow.JobByURL(bg, "https://c.example/\xffbad")
	require.NoError(t, err)
	assert.Equal(t, "https://c.example/\xffbad", j.URL)

	// Every job new: the ids are not read back, and are each URL's all the same.
	fresh := []NewJob{{URL: "https://d.example/z", Host: "d.example"}, {URL: "https://d.example/a", Host: "d.example"},
		{URL: "https://b.example/m", Host: "b.example"}}
	res, err := fast.Enqueue(bg, fresh)
	require.NoError(t, err)
	assert.Equal(t, 3, res.Queued)
	for i, nj := range fresh {
		j, err := fast.JobByURL(bg, nj.URL)
		require.NoError(t, err)
		assert.Equal(t, EnqueueItem{ID: j.ID, State: StateQueued}, res.Items[i], nj.URL)
	}
}

func TestRequeue_J2_OnlyOnRequestAndOnlyFinishedJobs(t *testing.T) {
	db, _ := openTest(t)
	for _, s := range States {
		t.Run(string(s), func(t *testing.T) {
			id := jobIn(t, db, "https://r.example/"+string(s), s)
			moved, err := db.Requeue(bg, []int64{id})
			require.NoError(t, err)
			j, err := db.Job(bg, id)
			require.NoError(t, err)
			switch s {
			case StateDone, StateFailed, StateCancelled:
				assert.Equal(t, []int64{id}, moved)
				assert.Equal(t, StateQueued, j.State)
				assert.Zero(t, j.Attempts, "fresh attempt budget")
				assert.Empty(t, j.LastError)
				assert.Empty(t, j.File)
				assert.Empty(t, j.SHA256)
			default:
				assert.Empty(t, moved)
				assert.Equal(t, s, j.State, "a live job is not requeued")
			}
		})
	}
}

func TestTransitions_J3_AttemptsAndFields(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/f")[0]

	n, err := db.MarkActive(bg, id)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, db.SaveProgress(bg, id, Progress{Part: "f.part", Bytes: 10, Size: -1}))
	next := time.Unix(1_800_000_000, 0)
	require.NoError(t, db.MarkQueued(bg, id, Retry{NotBefore: next, Err: "429", Status: 429, Throttled: true,
		Progress: &Progress{Part: "f.part", Bytes: 100, Size: 1000, ETag: `"x"`, LastModified: "Wed, 21 Oct 2015 07:28:00 GMT"}}))

	j, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, StateQueued, j.State)
	assert.True(t, next.Equal(j.NotBefore))
	assert.Equal(t, "429", j.LastError)
	assert.Equal(t, 429, j.LastStatus)
	assert.Equal(t, 1, j.Throttled)
	assert.Equal(t, "f.part", j.Part)
	assert.Equal(t, int64(100), j.Bytes)
	assert.Equal(t, int64(1000), j.Size)
	assert.Equal(t, `"x"`, j.ETag)
	assert.Equal(t, "Wed, 21 Oct 2015 07:28:00 GMT", j.LastModified)

	n, err = db.MarkActive(bg, id)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the throttle gave its attempt back (R3)")
	require.NoError(t, db.MarkDone(bg, id, Done{File: "f", Bytes: 1000, SHA256: "abc", Status: 206}))
	j, err = db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, StateDone, j.State)
	assert.Equal(t, "f", j.File)
	assert.Empty(t, j.Part, "the part became the file")
	assert.Equal(t, int64(1000), j.Bytes)
	assert.Equal(t, "abc", j.SHA256)
	assert.Equal(t, 1, j.Attempts)
	assert.Equal(t, 1, j.Throttled)
}

func TestTransitions_J3_RefusedInWrongState(t *testing.T) {
	db, _ := openTest(t)
	type call func(id int64) error
	markActive := func(id int64) error { _, err := db.MarkActive(bg, id); return err }
	markQueued := func(id int64) error { return db.MarkQueued(bg, id, Retry{}) }
	markDone := func(id int64) error { return db.MarkDone(bg, id, Done{}) }
	markFailed := func(id int64) error { return db.MarkFailed(bg, id, "x", 0) }
	cases := []struct {
		name string
		from State
		call call
	}{
		{"start a paused job", StatePaused, markActive},
		{"start an active job", StateActive, markActive},
		{"start a done job", StateDone, markActive},
		{"retry a queued job", StateQueued, markQueued},
		{"finish a cancelled job", StateCancelled, markDone},
		{"finish a paused job", StatePaused, markDone},
		{"fail a done job", StateDone, markFailed},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := jobIn(t, db, fmt.Sprintf("https://w.example/%d", i), c.from)
			err := c.call(id)
			assert.ErrorIs(t, err, ErrStateConflict)
			j, err := db.Job(bg, id)
			require.NoError(t, err)
			assert.Equal(t, c.from, j.State, "nothing moved")
		})
	}
	assert.ErrorIs(t, markActive(12345), ErrNotFound)
	assert.ErrorIs(t, markDone(12345), ErrNotFound)
	assert.ErrorIs(t, db.SaveProgress(bg, 12345, Progress{}), ErrNotFound)
	_, err := db.Job(bg, 12345)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestSetJobState_J3_UserActions(t *testing.T) {
	cases := []struct {
		from, to State
		moves    bool
	}{
		{StateQueued, StatePaused, true},
		{StateActive, StatePaused, true},
		{StatePaused, StateQueued, true},
		{StateQueued, StateCancelled, true},
		{StateActive, StateCancelled, true},
		{StatePaused, StateCancelled, true},
		{StateDone, StatePaused, false},
		{StateFailed, StateCancelled, false},
		{StateDone, StateQueued, false},
		{StateActive, StateQueued, false},
	}
	db, _ := openTest(t)
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s to %s", c.from, c.to), func(t *testing.T) {
			id := jobIn(t, db, fmt.Sprintf("https://s.example/%d", i), c.from)
			changed, err := db.SetJobState(bg, []int64{id}, c.to)
			require.NoError(t, err)
			j, err := db.Job(bg, id)
			require.NoError(t, err)
			if c.moves {
				assert.Equal(t, []int64{id}, changed)
				assert.Equal(t, c.to, j.State)
			} else {
				assert.Empty(t, changed)
				assert.Equal(t, c.from, j.State)
			}
		})
	}
	for _, to := range []State{StateActive, StateDone, StateFailed, "bogus"} {
		_, err := db.SetJobState(bg, []int64{1}, to)
		assert.Error(t, err, "cannot move to %s by hand", to)
	}
}

func TestTransitions_J3_CommittedBeforeReturn(t *testing.T) {
	db, path := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/x")[0]
	_, err := db.MarkActive(bg, id)
	require.NoError(t, err)
	// Another connection, outside the DB, sees the transition at once.
	raw := rawOpenRO(t, path)
	var s State
	require.NoError(t, raw.QueryRow(`SELECT state FROM jobs WHERE id = ?`, id).Scan(&s))
	assert.Equal(t, StateActive, s)
}

func TestOpen_S2_RecoversActiveJobsOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	ids := map[State]int64{}
	for _, s := range States {
		ids[s] = jobIn(t, db, "https://a.example/"+string(s), s)
	}
	second := jobIn(t, db, "https://a.example/active2", StateActive)
	require.NoError(t, db.SaveProgress(bg, ids[StateActive], Progress{Part: "a.part", Bytes: 42, Size: 100, ETag: `"e"`}))
	require.NoError(t, db.Close()) // Close does not touch states: as after a crash

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	assert.Equal(t, int64(2), db.Recovered())
	interrupted, err := db.Interrupted(bg)
	require.NoError(t, err)
	assert.Equal(t, []Interrupted{{JobID: ids[StateActive]}, {JobID: second}}, interrupted,
		"the jobs a crash interrupted, their folder unknown")
	for _, s := range States {
		j, err := db.Job(bg, ids[s])
		require.NoError(t, err)
		assert.Equal(t, afterCrash(s), j.State, "job that was %s", s)
	}
	j, err := db.Job(bg, ids[StateActive])
	require.NoError(t, err)
	assert.Equal(t, "a.part", j.Part)
	assert.Equal(t, int64(42), j.Bytes)
	assert.Equal(t, `"e"`, j.ETag)
	j, err = db.Job(bg, second)
	require.NoError(t, err)
	assert.Equal(t, StateQueued, j.State)
}

func TestReads_U5_JobsPageFiltersAndPages(t *testing.T) {
	db, _ := openTest(t)
	a := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	b := enqueueURLs(t, db, "b.example", "https://b.example/1")
	_, err := db.SetJobState(bg, []int64{a[1]}, StatePaused)
	require.NoError(t, err)

	ids := func(js []Job) []int64 {
		var out []int64
		for _, j := range js {
			out = append(out, j.ID)
		}
		return out
	}
	cases := []struct {
		name string
		f    JobFilter
		want []int64
	}{
		{"all", JobFilter{}, append(append([]int64{}, a...), b...)},
		{"host", JobFilter{Host: "a.example"}, a},
		{"state", JobFilter{State: StatePaused}, []int64{a[1]}},
		{"host and state", JobFilter{Host: "a.example", State: StateQueued}, []int64{a[0], a[2]}},
		{"first page", JobFilter{Limit: 2}, a[:2]},
		{"next page", JobFilter{AfterID: a[1], Limit: 2}, []int64{a[2], b[0]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			js, err := db.JobsPage(bg, c.f)
			require.NoError(t, err)
			assert.Equal(t, c.want, ids(js))
		})
	}
}

func TestReads_J3_DueAndQueuedOrder(t *testing.T) {
	db, _ := openTest(t)
	t0 := time.Unix(1_700_000_000, 0)
	res, err := db.Enqueue(bg, []NewJob{
		{URL: "https://b.example/late", Host: "b.example", NotBefore: t0.Add(3 * time.Second)},
		{URL: "https://a.example/late", Host: "a.example", NotBefore: t0.Add(2 * time.Second)},
		{URL: "https://b.example/early", Host: "b.example", NotBefore: t0},
		{URL: "https://a.example/early", Host: "a.example", NotBefore: t0.Add(time.Second)},
		{URL: "https://a.example/paused", Host: "a.example"},
	})
	require.NoError(t, err)
	id := func(i int) int64 { return res.Items[i].ID }
	_, err = db.SetJobState(bg, []int64{id(4)}, StatePaused)
	require.NoError(t, err)

	hostDue, err := db.HostDueJobs(bg, "a.example", 10)
	require.NoError(t, err)
	require.Len(t, hostDue, 2, "the paused job is not due")
	assert.Equal(t, []int64{id(3), id(1)}, []int64{hostDue[0].ID, hostDue[1].ID}, "soonest first")
	assert.Equal(t, "a.example", hostDue[0].Host)
	assert.True(t, t0.Add(time.Second).Equal(hostDue[0].NotBefore))

	var got []int64
	require.NoError(t, db.ForEachQueued(bg, func(id int64, host string, nb time.Time) error {
		got = append(got, id)
		return nil
	}))
	assert.Equal(t, []int64{id(3), id(1), id(2), id(0)}, got, "by host, then not-before; paused left out")

	stop := fmt.Errorf("stop")
	assert.ErrorIs(t, db.ForEachQueued(bg, func(int64, string, time.Time) error { return stop }), stop)
}

func TestReads_U1_Counts(t *testing.T) {
	db, _ := openTest(t)
	jobIn(t, db, "https://a.example/1", StateDone)
	jobIn(t, db, "https://a.example/2", StateFailed)
	jobIn(t, db, "https://a.example/3", StateQueued)
	enqueueURLs(t, db, "b.example", "https://b.example/1", "https://b.example/2")
	// Done jobs are counted from the totals (schema v3 keeps them out of the state index): a host
	// with nothing but done jobs, and every other state once.
	jobOfHostIn(t, db, "c.example", "https://c.example/1", StateDone)
	jobOfHostIn(t, db, "c.example", "https://c.example/2", StateDone)
	jobOfHostIn(t, db, "d.example", "https://d.example/1", StateActive)
	jobOfHostIn(t, db, "d.example", "https://d.example/2", StatePaused)
	jobOfHostIn(t, db, "d.example", "https://d.example/3", StateCancelled)

	byState, err := db.CountsByState(bg)
	require.NoError(t, err)
	assert.Equal(t, map[State]int64{StateDone: 3, StateFailed: 1, StateQueued: 3, StateActive: 1, StatePaused: 1,
		StateCancelled: 1}, byState)

	byHost, err := db.CountsByHost(bg)
	require.NoError(t, err)
	assert.Equal(t, map[string]map[State]int64{
		"a.example": {StateDone: 1, StateFailed: 1, StateQueued: 1},
		"b.example": {StateQueued: 2},
		"c.example": {StateDone: 2},
		"d.example": {StateActive: 1, StatePaused: 1, StateCancelled: 1},
	}, byHost)
}

func TestStartJobs_J3_S2_LoggedBeforeItReturnsAppliedWithTheNextCommit(t *testing.T) {
	db, path := openTest(t)
	queued := jobIn(t, db, "https://a.example/1", StateQueued)
	paused := jobIn(t, db, "https://a.example/2", StatePaused)
	second := jobIn(t, db, "https://a.example/3", StateQueued)
	before := db.commits.Load()

	jobs, err := db.StartJobs(bg, []int64{queued, paused, 999, second})
	require.NoError(t, err)
	require.Len(t, jobs, 4)
	assert.Equal(t, queued, jobs[0].ID)
	assert.Equal(t, StateActive, jobs[0].State)
	assert.Equal(t, 1, jobs[0].Attempts)
	assert.Equal(t, "https://a.example/1", jobs[0].URL)
	assert.Zero(t, jobs[1].ID, "a paused job is not started")
	assert.Zero(t, jobs[2].ID, "an unknown job is not started")
	assert.Equal(t, second, jobs[3].ID)
	again, err := db.StartJobs(bg, []int64{queued})
	require.NoError(t, err)
	assert.Zero(t, again[0].ID, "a started job is not started twice")

	// On disk when it returns (J3): Heed killed now finds both started, and queues them again
	// as interrupted, each attempt counted (S2). (If the next commit came first, it finds them
	// active: the same.)
	crashed := crashCopy(t, path)
	after, err := Open(crashed)
	require.NoError(t, err)
	assert.Equal(t, int64(2), after.Recovered())
	for _, id := range []int64{queued, second} {
		j, err := after.Job(bg, id)
		require.NoError(t, err)
		assert.Equal(t, StateQueued, j.State)
		assert.Equal(t, 1, j.Attempts, "its attempt counted")
	}
	its, err := after.Interrupted(bg)
	require.NoError(t, err)
	assert.Len(t, its, 2)
	require.NoError(t, after.Close())

	// Applied with the next commit, which comes of itself: another connection sees them active.
	require.NoError(t, db.Flush(bg))
	raw := rawOpenRO(t, path)
	var active, attempts int
	require.NoError(t, raw.QueryRow(`SELECT count(*), sum(attempts) FROM jobs WHERE state = 'active'`).Scan(&active, &attempts))
	assert.Equal(t, 2, active)
	assert.Equal(t, 2, attempts)
	assert.LessOrEqual(t, db.commits.Load()-before, int64(1), "no commit of its own")
	j, err := db.Job(bg, paused)
	require.NoError(t, err)
	assert.Equal(t, StatePaused, j.State)
	st, err := os.Stat(path + "-starts")
	require.NoError(t, err)
	assert.Zero(t, st.Size(), "emptied once applied")
}

// A job the person pauses after its start was logged, before it was applied, stays paused:
// the start is dropped, and the job's end finds it no longer active.
func TestStartJobs_J3_PausedBeforeTheStartIsApplied(t *testing.T) {
	db, _ := openTest(t)
	id := jobIn(t, db, "https://a.example/1", StateQueued)
	jobs, err := db.StartJobs(bg, []int64{id})
	require.NoError(t, err)
	require.Equal(t, id, jobs[0].ID)
	moved, err := db.SetJobState(bg, []int64{id}, StatePaused)
	require.NoError(t, err)
	assert.Equal(t, []int64{id}, moved, "paused as an active job is")
	j, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, StatePaused, j.State)
	assert.Equal(t, 1, j.Attempts)
	err = db.MarkQueued(bg, id, Retry{Err: "interrupted"})
	assert.ErrorIs(t, err, ErrStateConflict)
	require.NoError(t, db.Close())
}

func TestFinishJobs_J3_S3_RecordsAttemptsAndMarksDoneInOneCommit(t *testing.T) {
	db, path := openTest(t)
	a := jobIn(t, db, "https://a.example/1", StateActive)
	b := jobIn(t, db, "https://a.example/2", StateActive)
	c := jobIn(t, db, "https://a.example/3", StateActive)
	_, err := db.SetJobState(bg, []int64{c}, StateCancelled) // the person cancelled it meanwhile
	require.NoError(t, err)
	before := db.commits.Load()

	fin := func(id int64, file string) Finish {
		return Finish{Attempt: Attempt{JobID: id, URL: "https://a.example/x", Host: "a.example", Attempt: 1,
			StartedAt: time.Unix(1_800_000_000, 0), Duration: time.Millisecond, Status: 200, Outcome: "ok", Bytes: 3},
			Done: Done{File: file, Bytes: 3, SHA256: "abc", Status: 200}}
	}
	errs, err := db.FinishJobs(bg, []Finish{fin(a, "one"), fin(b, "two"), fin(c, "three")})
	require.NoError(t, err)
	require.Len(t, errs, 3)
	assert.NoError(t, errs[0])
	assert.NoError(t, errs[1])
	assert.ErrorIs(t, errs[2], ErrStateConflict, "a cancelled job stays cancelled")
	assert.Equal(t, int64(1), db.commits.Load()-before, "one commit for the batch")

	raw := rawOpenRO(t, path)
	var n int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM attempts WHERE outcome = 'ok'`).Scan(&n))
	assert.Equal(t, 3, n, "every attempt is in history, the cancelled job's too (S3)")
	for id, file := range map[int64]string{a: "one", b: "two"} {
		j, err := db.Job(bg, id)
		require.NoError(t, err)
		assert.Equal(t, StateDone, j.State)
		assert.Equal(t, file, j.File)
		assert.Equal(t, "abc", j.SHA256)
	}
	j, err := db.Job(bg, c)
	require.NoError(t, err)
	assert.Equal(t, StateCancelled, j.State)
}

func TestWriter_S5_BackgroundWriteLandsWithTheNextWaitedOne(t *testing.T) {
	db, path := openTest(t)
	id := jobIn(t, db, "https://a.example/1", StateActive)
	// A background write lingers for company; the transition that follows
	// commits at once and carries it, in order.
	require.NoError(t, db.RecordAttempt(Attempt{JobID: id, URL: "https://a.example/1", Host: "a.example",
		Attempt: 1, StartedAt: time.Unix(1_800_000_000, 0), Status: 503, Outcome: "retry"}))
	require.NoError(t, db.MarkFailed(bg, id, "gone", 410))
	raw := rawOpenRO(t, path)
	var n int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM attempts WHERE job_id = ?`, id).Scan(&n))
	assert.Equal(t, 1, n)
}

// J3, S2: a download is recorded done with its final name before its part
// takes the name; FinishJobs lists it as unnamed in the same commit, and
// Named clears it: as recorded, under another name (the recorded one was
// taken meanwhile), or failed with its part kept when it could not be named.
func TestFinishJobs_S2_UnnamedUntilNamed(t *testing.T) {
	db, path := openTest(t)
	ids := make([]int64, 4)
	var fs []Finish
	for i := range ids {
		ids[i] = jobIn(t, db, fmt.Sprintf("https://a.example/%d", i), StateActive)
		fs = append(fs, Finish{Attempt: Attempt{JobID: ids[i], URL: "https://a.example/x", Host: "a.example",
			Attempt: 1, StartedAt: time.Unix(1_800_000_000, 0), Status: 200, Outcome: "ok", Bytes: 3},
			Done: Done{File: fmt.Sprintf("f%d", i), Part: fmt.Sprintf("f%d.part", i), Bytes: 3, SHA256: "abc", Status: 200}})
	}
	fs[3].Done.Part = "" // made final before it was recorded: nothing to list
	_, err := db.SetJobState(bg, []int64{ids[2]}, StateCancelled)
	require.NoError(t, err)
	fs[2].Done.Size, fs[2].Done.ETag = 3, `"v2"`
	errs, err := db.FinishJobs(bg, fs)
	require.NoError(t, err)
	require.ErrorIs(t, errs[2], ErrStateConflict)
	j2, err := db.Job(bg, ids[2])
	require.NoError(t, err)
	assert.Equal(t, StateCancelled, j2.State)
	assert.Equal(t, "f2.part", j2.Part, "a job cancelled while finishing keeps its complete part, in the same commit")
	assert.Equal(t, int64(3), j2.Bytes)
	assert.Equal(t, `"v2"`, j2.ETag)

	// Listed in the commit that marked them done, visible to another connection.
	raw := rawOpenRO(t, path)
	var n int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM naming`).Scan(&n))
	assert.Equal(t, 2, n, "the two jobs marked done with a part, not the cancelled one, not the one without a part")
	us, err := db.Unnamed(bg)
	require.NoError(t, err)
	assert.Equal(t, []Unnamed{
		{JobID: ids[0], Part: "f0.part", File: "f0", Bytes: 3, SHA256: "abc"},
		{JobID: ids[1], Part: "f1.part", File: "f1", Bytes: 3, SHA256: "abc"},
	}, us)

	require.NoError(t, db.Named([]Named{{JobID: ids[0], File: "f0 (1)"}, {JobID: ids[1], Err: "disk full"}}))
	require.NoError(t, db.Flush(bg))
	us, err = db.Unnamed(bg)
	require.NoError(t, err)
	assert.Empty(t, us)
	j0, err := db.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, StateDone, j0.State)
	assert.Equal(t, "f0 (1)", j0.File, "the name the part took")
	j1, err := db.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, StateFailed, j1.State)
	assert.Equal(t, "disk full", j1.LastError)
	assert.Equal(t, "f1.part", j1.Part, "the part is kept for a resume")
	assert.Empty(t, j1.File)

	// Named again (a second start after a crash) changes nothing.
	require.NoError(t, db.Named([]Named{{JobID: ids[1], Err: "again"}}))
	require.NoError(t, db.Flush(bg))
	j1, err = db.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, "disk full", j1.LastError)

	// Found nowhere: the job fails and keeps no part (its part name may be another download's).
	lostID := jobIn(t, db, "https://a.example/lost", StateActive)
	fl := fs[0]
	fl.Attempt.JobID = lostID
	_, err = db.FinishJobs(bg, []Finish{fl})
	require.NoError(t, err)
	require.NoError(t, db.Named([]Named{{JobID: lostID, Err: "found nowhere", Lost: true}}))
	require.NoError(t, db.Flush(bg))
	jl, err := db.Job(bg, lostID)
	require.NoError(t, err)
	assert.Equal(t, StateFailed, jl.State)
	assert.Equal(t, "found nowhere", jl.LastError)
	assert.Empty(t, jl.Part)
	assert.Empty(t, jl.File)

	// A job queued again no longer waits for its old name.
	again := jobIn(t, db, "https://a.example/again", StateActive)
	fa := fs[0]
	fa.Attempt.JobID = again
	_, err = db.FinishJobs(bg, []Finish{fa})
	require.NoError(t, err)
	moved, err := db.Requeue(bg, []int64{again})
	require.NoError(t, err)
	require.Equal(t, []int64{again}, moved)
	us, err = db.Unnamed(bg)
	require.NoError(t, err)
	assert.Empty(t, us)
}

// S2: the jobs a crash interrupted stay listed whichever command opens the
// database first after it (a listing, say), until they are cleared; a
// second crash adds to the list.
func TestOpen_S2_InterruptedListedUntilCleared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	a := jobIn(t, db, "https://a.example/1", StateActive)
	b := jobIn(t, db, "https://a.example/2", StateActive)
	jobIn(t, db, "https://a.example/3", StateQueued)
	require.NoError(t, db.SetSetting(bg, "run_folder", "/dl/one"))
	require.NoError(t, db.Close()) // as after a crash

	list := func() []Interrupted {
		t.Helper()
		db, err := Open(path)
		require.NoError(t, err)
		defer db.Close()
		its, err := db.Interrupted(bg)
		require.NoError(t, err)
		return its
	}
	one := []Interrupted{{JobID: a, Folder: "/dl/one"}, {JobID: b, Folder: "/dl/one"}}
	assert.Equal(t, one, list(), "the first open after the crash lists them, with the run's folder")
	assert.Equal(t, one, list(), "and they stay listed for the next")

	db, err = Open(path)
	require.NoError(t, err)
	require.NoError(t, db.ClearInterrupted(bg, []int64{a}))
	require.NoError(t, db.SetSetting(bg, "run_folder", "/dl/two"))
	_, err = db.StartJob(bg, a)
	require.NoError(t, err)
	require.NoError(t, db.Close()) // a second crash, with a active again, in another folder
	assert.Equal(t, []Interrupted{{JobID: a, Folder: "/dl/two"}, {JobID: b, Folder: "/dl/one"}}, list())

	db, err = Open(path)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.ClearInterrupted(bg, []int64{a, b}))
	ids, err := db.Interrupted(bg)
	require.NoError(t, err)
	assert.Empty(t, ids)
}
