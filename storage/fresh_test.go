package storage

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// J3: a job Enqueue just created starts without a read of its row, and is handed over exactly as
// a start that reads the row hands it: the same job, field by field.
func TestStartJobs_J3_NewJobHandedOverAsItsRowReads(t *testing.T) {
	clock := time.Unix(1_700_000_000, 123_456_789)
	db, _ := openTest(t)
	db.now = func() time.Time { return clock } // before the first write, which the writer reads it in
	due := clock.Add(-time.Minute)
	res, err := db.Enqueue(bg, []NewJob{
		{URL: "https://a.example/kept", Host: "a.example", NotBefore: due},
		{URL: "https://a.example/read", Host: "a.example", NotBefore: due},
	})
	require.NoError(t, err)
	kept, read := res.Items[0].ID, res.Items[1].ID
	require.Equal(t, 2, db.fresh.len(), "both are kept once Enqueue committed")
	db.fresh.forget(read) // this one starts the way every job did before: from its row

	got, err := db.StartJobs(bg, []int64{kept, read})
	require.NoError(t, err)
	assert.Zero(t, db.fresh.len(), "a started job is not kept")
	a, b := got[0], got[1]
	require.Equal(t, kept, a.ID)
	require.Equal(t, read, b.ID)
	a.ID, a.URL, b.ID, b.URL = 0, "", 0, ""
	assert.Equal(t, b, a, "the kept job reads as its row")
	assert.Equal(t, StateActive, a.State)
	assert.Equal(t, 1, a.Attempts)
	assert.Equal(t, int64(-1), a.Size)
	assert.True(t, a.NotBefore.Equal(due))

	require.NoError(t, db.Flush(bg))
	row, err := db.Job(bg, kept)
	require.NoError(t, err)
	assert.Equal(t, StateActive, row.State)
	assert.Equal(t, 1, row.Attempts, "the start counted in the row as before")
}

// F5: progress saved for a queued job (a part kept for its resume) changes its row: the start
// hands over the part, not the row Enqueue wrote.
func TestStartJobs_F5_ProgressSavedWhileQueuedIsHandedOver(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/f")[0]
	p := Progress{Part: "f.part", Bytes: 100, Size: 400, ETag: `"v1"`, LastModified: "Mon, 02 Jan 2006 15:04:05 GMT"}
	require.NoError(t, db.SaveProgress(bg, id, p))

	got, err := db.StartJobs(bg, []int64{id})
	require.NoError(t, err)
	require.Equal(t, id, got[0].ID)
	assert.Equal(t, p, Progress{Part: got[0].Part, Bytes: got[0].Bytes, Size: got[0].Size,
		ETag: got[0].ETag, LastModified: got[0].LastModified})
}

// J3: a job started on its own (StartJob) is active: StartJobs does not start it a second time.
func TestStartJobs_J3_JobStartedByStartJobNotStartedAgain(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/f")[0]
	_, err := db.StartJob(bg, id)
	require.NoError(t, err)

	got, err := db.StartJobs(bg, []int64{id})
	require.NoError(t, err)
	assert.Zero(t, got[0].ID, "already active")
	require.NoError(t, db.Flush(bg))
	j, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, 1, j.Attempts, "one start, one attempt")
}

// J3: a job paused or cancelled in the same transaction that created it is not kept: a start
// then finds it paused, not queued.
func TestStartJobs_J3_JobPausedInItsOwnBatchNotStarted(t *testing.T) {
	db, _ := openTest(t)
	var id int64
	enqueue := op{name: "enqueue", done: make(chan error, 1), run: func(w *wtx) error {
		r, err := w.exec(`INSERT INTO jobs (url, host, state, created_at, updated_at) VALUES (?, ?, 'queued', 1, 1)`,
			"https://a.example/f", "a.example")
		if err != nil {
			return err
		}
		id, _ = r.LastInsertId()
		w.created(id, freshJob{url: "https://a.example/f", host: "a.example", created: 1})
		return nil
	}}
	pause := op{name: "pause", done: make(chan error, 1), unqueues: true, run: func(w *wtx) error {
		w.forget(id)
		_, err := w.exec(`UPDATE jobs SET state = 'paused' WHERE id = ?`, id)
		return err
	}}
	db.runBatch([]op{enqueue, pause})
	require.NoError(t, <-enqueue.done)
	require.NoError(t, <-pause.done)

	got, err := db.StartJobs(bg, []int64{id})
	require.NoError(t, err)
	assert.Zero(t, got[0].ID, "paused")
}

// At most maxFresh jobs are kept; the others start from their rows.
func TestFreshJobs_KeepsAtMostMaxFresh(t *testing.T) {
	var f freshJobs
	created := map[int64]freshJob{}
	for i := range maxFresh + 10 {
		created[int64(i+1)] = freshJob{url: fmt.Sprint(i)}
	}
	f.keep(created)
	f.keep(map[int64]freshJob{maxFresh + 100: {}})
	assert.Equal(t, maxFresh, f.len())
}

// J3: a start that comes as Enqueue commits, before the new job is kept, waits for it to be kept
// and takes it: it does not start the job from its row and leave it kept, to be started again.
func TestStartJobs_J3_StartAsEnqueueCommitsTakesTheKeptJob(t *testing.T) {
	db, _ := openTest(t)
	started := make(chan []Job, 1)
	db.afterCommit = func() {
		db.afterCommit = nil // the writer's own field: the next commits run no hook
		go func() {
			js, err := db.StartJobs(bg, []int64{1})
			assert.NoError(t, err)
			started <- js
		}()
		time.Sleep(50 * time.Millisecond) // the start has read the row by now, unless it waits
	}
	id := enqueueURLs(t, db, "a.example", "https://a.example/f")[0]
	require.Equal(t, int64(1), id)
	js := <-started
	require.Equal(t, id, js[0].ID, "started once")
	assert.Zero(t, db.fresh.len(), "not kept once started")

	require.NoError(t, db.Flush(bg))
	again, err := db.StartJobs(bg, []int64{id})
	require.NoError(t, err)
	assert.Zero(t, again[0].ID, "an active job is not started a second time")
}

// A kept job holds copies of its URL and host, not the text they were cut from: one job left
// kept would otherwise keep a whole paste in memory.
func TestStartJobs_KeptJobHoldsNoPartOfThePaste(t *testing.T) {
	db, _ := openTest(t)
	paste := "https://a.example/ a.example"
	id := enqueueURLs(t, db, paste[19:], paste[:18])[0]
	j, ok := db.fresh.take(id)
	require.True(t, ok)
	require.Equal(t, "https://a.example/", j.URL)
	require.Equal(t, "a.example", j.Host)
	for _, s := range []string{j.URL, j.Host} {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		start := uintptr(unsafe.Pointer(unsafe.StringData(paste)))
		assert.False(t, p >= start && p < start+uintptr(len(paste)), "%q points into the paste", s)
	}
}

// J3: a job given twice to one StartJobs starts once.
func TestStartJobs_J3_JobGivenTwiceStartsOnce(t *testing.T) {
	db, _ := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/kept", "https://a.example/read")
	db.fresh.forget(ids[1])
	got, err := db.StartJobs(bg, []int64{ids[0], ids[0], ids[1], ids[1]})
	require.NoError(t, err)
	assert.Equal(t, []int64{ids[0], 0, ids[1], 0}, []int64{got[0].ID, got[1].ID, got[2].ID, got[3].ID})
	require.NoError(t, db.Flush(bg))
	for _, id := range ids {
		j, err := db.Job(bg, id)
		require.NoError(t, err)
		assert.Equal(t, 1, j.Attempts)
	}
}

// J3: in a long list too, a job given twice starts once.
func TestStartJobs_J3_JobGivenTwiceInALongListStartsOnce(t *testing.T) {
	db, _ := openTest(t)
	urls := make([]string, 70)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://a.example/%d", i)
	}
	ids := enqueueURLs(t, db, "a.example", urls...)
	got, err := db.StartJobs(bg, append(ids, ids[3]))
	require.NoError(t, err)
	for i := range ids {
		assert.Equal(t, ids[i], got[i].ID)
	}
	assert.Zero(t, got[len(ids)].ID, "given twice")
}

// The kept jobs' map goes once the last of them started: a big paste leaves none behind.
func TestFreshJobs_MapGoesWhenEmpty(t *testing.T) {
	var f freshJobs
	f.keep(map[int64]freshJob{1: {}, 2: {}})
	f.take(1)
	require.NotNil(t, f.jobs)
	f.take(2)
	assert.Nil(t, f.jobs)
}
