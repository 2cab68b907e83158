package storage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdWriter queues a background write that keeps the writer in its transaction until the
// returned release is called. It returns once that transaction has begun, so that starts logged
// from then on are pending for the next one.
func holdWriter(t *testing.T, db *DB) (release func()) {
	entered, release := queueHold(t, db)
	<-entered
	return release
}

// queueHold queues a background write that blocks inside its transaction, without waiting for
// it to begin: entered is closed once it runs.
func queueHold(t *testing.T, db *DB) (entered chan struct{}, release func()) {
	entered, hold := make(chan struct{}), make(chan struct{})
	var once sync.Once
	require.NoError(t, db.queue("hold", func(*wtx) error {
		once.Do(func() { close(entered) })
		<-hold
		return nil
	}))
	var rel sync.Once
	release = func() { rel.Do(func() { close(hold) }) }
	t.Cleanup(release)
	return entered, release
}

// waitQueued waits until n writes wait for the writer.
func waitQueued(t *testing.T, db *DB, n int) {
	require.Eventually(t, func() bool { return len(db.ops) == n }, 5*time.Second, time.Millisecond)
}

// finishAsync calls FinishJobs with f from a goroutine, and gives its error, or f's.
func finishAsync(db *DB, f Finish) <-chan error {
	done := make(chan error, 1)
	go func() {
		errs, err := db.FinishJobs(bg, []Finish{f})
		if err == nil {
			err = errs[0]
		}
		done <- err
	}()
	return done
}

func finish(id int64, at time.Time) Finish {
	return Finish{
		Attempt: Attempt{JobID: id, URL: "https://a.example/x", Host: "a.example", Attempt: 1, StartedAt: at, Status: 200, Outcome: "ok", Bytes: 1},
		Done:    Done{File: "x", Bytes: 1, SHA256: "ab", Status: 200},
	}
}

// S3, J3: a job that started and finished between two commits is moved from queued to done,
// its attempt counted, in one statement: the finish folds the pending start. The start of a job
// still downloading, younger than startsLinger, is left pending for a later commit. After a
// crash, the left start is applied again and the job queued again as interrupted; the folded
// one, logged after it, changes nothing.
func TestFinishJobs_S3_PendingStartFoldedIntoItsFinish(t *testing.T) {
	db, path := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	release := holdWriter(t, db)
	started, err := db.StartJobs(bg, ids)
	require.NoError(t, err)
	require.Equal(t, ids, []int64{started[0].ID, started[1].ID})
	done := finishAsync(db, finish(ids[1], time.Now()))
	waitQueued(t, db, 2) // the starts' write and the finish: one batch
	release()
	require.NoError(t, <-done)
	assert.Equal(t, int64(1), db.folds.Load(), "the second job's start was folded into its finish")
	hold := holdWriter(t, db) // nothing more is committed while the files are copied
	assert.True(t, db.starts.isPending(ids[0]), "the first job's start, younger than startsLinger, is left pending")
	assert.False(t, db.starts.isPending(ids[1]))
	j, err := db.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, StateDone, j.State)
	assert.Equal(t, 1, j.Attempts, "its attempt counted once")
	j, err = db.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, StateQueued, j.State, "the left start's row reads as queued until it is applied")

	crash := crashCopy(t, path)
	hold()
	after := openCrash(t, crash)
	assert.Equal(t, int64(1), after.Recovered(), "the job still downloading is queued again")
	j, err = after.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, StateDone, j.State)
	assert.Equal(t, 1, j.Attempts, "the folded start is not applied again")
	j, err = after.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, StateQueued, j.State)
	assert.Equal(t, 1, j.Attempts, "the left start is applied once")

	require.NoError(t, db.Flush(bg)) // a write somebody waits for applies every start
	assert.False(t, db.starts.hasPending())
	j, err = db.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, StateActive, j.State)
	assert.Equal(t, 1, j.Attempts)
}

// J3: beside a write somebody waits for other than a finish (here a pause of another job),
// nothing is folded: that write finds every started job active, as always.
func TestFinishJobs_J3_NoFoldBesideOtherWaitedWrites(t *testing.T) {
	db, _ := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	release := holdWriter(t, db)
	_, err := db.StartJobs(bg, ids[:2])
	require.NoError(t, err)
	done := finishAsync(db, finish(ids[0], time.Now()))
	waitQueued(t, db, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := db.SetJobState(bg, []int64{ids[2]}, StatePaused)
		assert.NoError(t, err)
	})
	waitQueued(t, db, 3)
	release()
	wg.Wait()
	require.NoError(t, <-done)
	assert.Zero(t, db.folds.Load())
	assert.False(t, db.starts.hasPending(), "every start is applied")
	j, err := db.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, StateDone, j.State)
	assert.Equal(t, 1, j.Attempts)
	j, err = db.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, StateActive, j.State)
}

func TestFoldable_FinishesBesideBackgroundWritesOnly(t *testing.T) {
	bgOp := op{name: "history"}
	waited := op{name: "pause", done: make(chan error, 1)}
	fin := func(ids ...int64) op { return op{name: "mark done", done: make(chan error, 1), finishes: ids} }
	fold, light := foldable([]op{bgOp, fin(1, 2), {starts: true}, fin(3)})
	assert.Equal(t, map[int64]bool{1: true, 2: true, 3: true}, fold)
	assert.True(t, light)
	for _, ops := range [][]op{{fin(1), waited}, {waited, fin(1)}} {
		fold, light = foldable(ops)
		assert.Nil(t, fold)
		assert.False(t, light)
	}
	fold, light = foldable([]op{bgOp, {starts: true}})
	assert.Nil(t, fold)
	assert.True(t, light)
}

// The write that only applies logged starts waits startsLinger for company, and commits then
// on its own when none came.
func TestWriter_StartsLinger(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]
	before := db.commits.Load()
	_, err := db.StartJobs(bg, []int64{id})
	require.NoError(t, err)
	start := time.Now()
	require.Eventually(t, func() bool { return !db.starts.hasPending() }, 5*time.Second, time.Millisecond)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, startsLinger-5*time.Millisecond, "the starts waited for company")
	assert.Equal(t, before+1, db.commits.Load())
	j, err := db.Job(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, StateActive, j.State)
}

// J3: a start left to a finish that did not take it is applied before the commit all the same.
func TestRunTx_J3_FoldedStartNoFinishTookIsApplied(t *testing.T) {
	db, _ := openTest(t)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]
	release := holdWriter(t, db)
	_, err := db.StartJobs(bg, []int64{id})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		done <- db.submit(bg, op{ctx: bg, name: "finishes nothing", done: make(chan error, 1), finishes: []int64{id},
			run: func(*wtx) error { return nil }})
	}()
	waitQueued(t, db, 2)
	release()
	require.NoError(t, <-done)
	assert.Zero(t, db.folds.Load())
	j, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, StateActive, j.State)
	assert.Equal(t, 1, j.Attempts)
	assert.False(t, db.starts.isPending(id))
}

// J3: a start left pending by a commit is applied by a later one of its own, once older than
// startsLinger, with no other write to bring it.
func TestStarts_J3_LeftPendingAppliedByItself(t *testing.T) {
	db, _ := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	release := holdWriter(t, db)
	_, err := db.StartJobs(bg, ids)
	require.NoError(t, err)
	done := finishAsync(db, finish(ids[1], time.Now()))
	waitQueued(t, db, 2)
	release()
	require.NoError(t, <-done)
	require.Equal(t, int64(1), db.folds.Load())
	require.True(t, db.starts.isPending(ids[0]), "left pending by the finish's commit")
	require.Eventually(t, func() bool { return !db.starts.hasPending() }, 5*time.Second, time.Millisecond)
	j, err := db.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, StateActive, j.State)
	assert.Equal(t, 1, j.Attempts)
}

// frozenClock makes db.now return one instant: in a light batch every start is then younger
// than startsLinger and left pending, so which starts a commit applies no longer depends on
// timing. Set before any write, so the writer reads it after.
func frozenClock(db *DB) {
	at := time.Now()
	db.now = func() time.Time { return at }
}

// S2: a job whose start was folded into its finish while an earlier start was left pending,
// then requeued by the person, does not become active at the replay after a crash: the
// requeue's batch records as applied every start logged before it, the folded one included.
func TestStarts_S2_RequeuedAfterFoldNotAppliedAgain(t *testing.T) {
	db, path := openTest(t)
	frozenClock(db)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	a, b, c := ids[0], ids[1], ids[2]

	rel1 := holdWriter(t, db)
	_, err := db.StartJobs(bg, []int64{a, b}) // seq 1, 2
	require.NoError(t, err)
	fin := finishAsync(db, finish(b, time.Now()))
	waitQueued(t, db, 2)
	rel1()
	require.NoError(t, <-fin)
	require.Equal(t, int64(1), db.folds.Load(), "b's start folded into its finish")
	require.True(t, db.starts.isPending(a), "a's start left pending")

	rel0 := holdWriter(t, db) // rides with the rearmed apply-starts write (light: a left again)
	req := make(chan error, 1)
	go func() {
		moved, err := db.Requeue(bg, []int64{b})
		if err == nil && len(moved) != 1 {
			err = assert.AnError
		}
		req <- err
	}()
	waitQueued(t, db, 1)
	entered2, rel2 := queueHold(t, db)
	waitQueued(t, db, 2)
	rel0()
	<-entered2                            // in the Requeue's batch (not light): a applied, starts_applied = 1, b queued
	_, err = db.StartJobs(bg, []int64{c}) // seq 3, after that batch's snapshot: the log is not emptied
	require.NoError(t, err)
	rel2()
	require.NoError(t, <-req)

	rel3 := holdWriter(t, db)
	j, err := db.Job(bg, b)
	require.NoError(t, err)
	require.Equal(t, StateQueued, j.State)
	require.Equal(t, 0, j.Attempts, "Requeue gives a fresh attempt budget")
	crash := crashCopy(t, path)
	rel3()

	after := openCrash(t, crash)
	j, err = after.Job(bg, b)
	require.NoError(t, err)
	assert.Equal(t, StateQueued, j.State)
	assert.Equal(t, 0, j.Attempts, "b's old, folded start must not be applied again at replay")
	its, err := after.Interrupted(bg)
	require.NoError(t, err)
	for _, it := range its {
		assert.NotEqual(t, b, it.JobID, "b was not interrupted: it was requeued and never started again")
	}
	assert.Equal(t, int64(2), after.Recovered(), "a and c were active; b was not")
}

// S2: Named with Again moves a done job back to queued without anybody waiting for it; its batch
// is not light, so every start is applied first and the job's folded start is not applied again
// at the replay after a crash.
func TestStarts_S2_NamedAgainIsNotLight(t *testing.T) {
	db, path := openTest(t)
	frozenClock(db)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	a, b := ids[0], ids[1]

	rel1 := holdWriter(t, db)
	_, err := db.StartJobs(bg, []int64{a, b})
	require.NoError(t, err)
	f := finish(b, time.Now())
	f.Done.Held = true
	fin := finishAsync(db, f)
	waitQueued(t, db, 2)
	require.NoError(t, db.Named([]Named{{JobID: b, Again: true}}))
	waitQueued(t, db, 3)
	rel1()
	require.NoError(t, <-fin)

	rel2 := holdWriter(t, db)
	j, err := db.Job(bg, b)
	require.NoError(t, err)
	require.Equal(t, StateQueued, j.State)
	require.Equal(t, 1, j.Attempts)
	crash := crashCopy(t, path)
	rel2()

	after := openCrash(t, crash)
	j, err = after.Job(bg, b)
	require.NoError(t, err)
	assert.Equal(t, StateQueued, j.State)
	assert.Equal(t, 1, j.Attempts, "b's one start counted once")
	assert.Equal(t, int64(1), after.Recovered(), "only a was started and not finished")
}

// J3: a start logged as Close's own write commits is applied before the last commit, and the
// start log is removed; the writer never sends on the closed queue of writes (it panicked then,
// hence the child process).
func TestClose_J3_StartLoggedAsCloseCommitsIsApplied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=close-late-start", envDB+"="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NoFileExists(t, path+"-starts", "Close applies every start and removes the start log")
	after, err := Open(path)
	require.NoError(t, err)
	defer after.Close()
	assert.Equal(t, int64(2), after.Recovered(), "both started jobs were active at Close")
}

// childCloseLateStart starts a job, then closes the database, starting a second one the moment
// Close's own write commits, as a dispatcher could.
func childCloseLateStart(path string) int {
	db, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	res, err := db.Enqueue(bg, []NewJob{{URL: "https://a.example/1", Host: "a.example"}, {URL: "https://a.example/2", Host: "a.example"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	first, late := res.Items[0].ID, res.Items[1].ID
	var armed atomic.Bool
	db.afterCommit = func() {
		if armed.CompareAndSwap(true, false) {
			if _, err := db.StartJobs(bg, []int64{late}); err != nil {
				panic(err)
			}
		}
	}
	if _, err := db.StartJobs(bg, []int64{first}); err != nil { // pending: Close writes to apply it
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	armed.Store(true)
	if err := db.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// J3: a start's age is measured on the monotonic clock: when the system clock steps back, the
// start is still applied about startsLinger after it was logged, and the writer does not commit
// an empty write every startsLinger until the clock catches up.
func TestStarts_J3_AgeOnTheMonotonicClock(t *testing.T) {
	db, _ := openTest(t)
	var offset atomic.Int64
	db.now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]
	_, err := db.StartJobs(bg, []int64{id})
	require.NoError(t, err)
	offset.Store(int64(-time.Hour)) // NTP steps the clock back an hour
	before := db.commits.Load()
	require.Eventually(t, func() bool { return !db.starts.hasPending() }, 5*time.Second, time.Millisecond,
		"the start is applied about startsLinger after it was logged")
	time.Sleep(4 * startsLinger)
	assert.LessOrEqual(t, db.commits.Load()-before, int64(2), "the writer does not commit again and again")
	j, err := db.Job(bg, id)
	require.NoError(t, err)
	assert.Equal(t, StateActive, j.State)
}
