package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/engine/demo"
	"heed/storage"
)

// namingOrder is a Store that looks, at each FinishJobs, at what the
// download folder holds for the downloads it records.
type namingOrder struct {
	engine.Store
	dir           string
	parts, finals int // parts present, final names present, when recorded
	held          int // bodies held in files with no name, when recorded
	recorded      int
}

func (n *namingOrder) FinishJobs(ctx context.Context, done []engine.Finished) ([]error, error) {
	for _, d := range done {
		n.recorded++
		switch {
		case d.Done.Held && d.Done.Part == "":
			n.held++
		case d.Done.Part == "":
		default:
			if _, err := os.Stat(filepath.Join(n.dir, d.Done.Part)); err == nil {
				n.parts++
			}
		}
		if _, err := os.Stat(filepath.Join(n.dir, d.Done.File)); err == nil {
			n.finals++
		}
	}
	return n.Store.FinishJobs(ctx, done)
}

// J3, S2: a finished download is recorded done, with its final name, while
// its bytes are still in the part — or, for a small body, in a file with no
// name: the part takes the name only after the commit, so a crash at any
// instant leaves no file that nothing records.
func TestEngine_J3_DoneRecordedBeforeThePartIsNamed(t *testing.T) {
	for _, size := range []int{4 << 10, 80 << 10} {
		t.Run(fmt.Sprintf("%d bytes", size), func(t *testing.T) {
			srv := startDemo(t, demo.FastConfig(2, 20, size))
			base := t.TempDir()
			dir := filepath.Join(base, "dl")
			var store *namingOrder
			db, eng := engineOver(t, filepath.Join(base, "heed.db"), dir, func(s engine.Store) engine.Store {
				store = &namingOrder{Store: s, dir: dir}
				return store
			}, srv.URLs())
			require.NoError(t, eng.RunUntilIdle(context.Background()))

			assert.Equal(t, 40, store.recorded)
			if size <= 64<<10 {
				assert.Equal(t, 40, store.held, "every small body still in its file with no name when recorded")
			} else {
				assert.Equal(t, 40, store.parts, "every part still under its part name when recorded")
			}
			assert.Zero(t, store.finals, "no final name taken before it was recorded")
			us, err := db.Unnamed(context.Background())
			require.NoError(t, err)
			assert.Empty(t, us, "each cleared once named")
			assertServedOnce(t, srv, db, dir)
		})
	}
}

// engineOver opens the database at dbPath and an engine over it, whose
// store is the database's own passed through wrap, with urls queued. Both
// are closed when the test ends. tune, if any, changes the engine's options.
func engineOver(t *testing.T, dbPath, dir string, wrap func(engine.Store) engine.Store, urls []string,
	tune ...func(*engine.Options)) (*storage.DB, *engine.Engine) {
	t.Helper()
	db, err := storage.Open(dbPath)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	opt := engine.Options{Dir: dir, Defaults: fast(), Version: "test"}
	for _, f := range tune {
		f(&opt)
	}
	eng, err := engine.New(context.Background(), wrap(storage.EngineStore(db)), opt)
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	_, err = eng.Add(context.Background(), strings.Join(urls, "\n"))
	require.NoError(t, err)
	return db, eng
}

// assertServedOnce checks that every job of db is done with the bytes srv
// serves, under the name its URL gives, and that dir holds those files and
// nothing else: no "name (1)", no part left.
func assertServedOnce(t *testing.T, srv *demo.Server, db *storage.DB, dir string) {
	t.Helper()
	names := map[string]bool{}
	for _, j := range mustJobs(t, db) {
		want, _ := srv.Expected(j.URL)
		assert.Equal(t, storage.StateDone, j.State, j.URL)
		assert.Equal(t, path.Base(j.URL), j.File, j.URL)
		assert.Equal(t, want, sha(t, filepath.Join(dir, j.File)), j.URL)
		names[j.File] = true
	}
	assert.Equal(t, names, dirNames(t, dir), "each file once, no part left")
}

// nextRunServesAll closes eng and db, as Heed does when its run stops, then
// opens both again on the same files and runs until idle: every job ends
// done, served once (assertServedOnce).
func nextRunServesAll(t *testing.T, srv *demo.Server, eng *engine.Engine, db *storage.DB, dbPath, dir string) {
	t.Helper()
	require.NoError(t, eng.Close())
	require.NoError(t, db.Close())
	r := &rig{t: t, dbPath: dbPath, dir: dir}
	r.open(engine.Options{})
	r.runIdle()
	assertServedOnce(t, srv, r.db, dir)
}

func mustJobs(t *testing.T, db *storage.DB) []storage.Job {
	t.Helper()
	jobs, err := db.JobsPage(context.Background(), storage.JobFilter{})
	require.NoError(t, err)
	return jobs
}

// S2, F3, F4: Heed killed between the commit that records downloads done,
// with their final names, and the renaming of their parts: the next start
// gives each part its name before anything else runs, so no file is
// fetched twice and none is left that nothing records. A part is named only
// if it holds the bytes recorded; a name taken meanwhile moves to the next
// free one, and the job records it; a part in another folder waits for a
// start in that folder; a download found nowhere fails its job.
func TestEngine_S2_KilledBeforeRenameNamedAtNextStart(t *testing.T) {
	srv := startDemo(t, demo.FastConfig(1, 5, 4<<10))
	base := t.TempDir()
	dbPath, dir := filepath.Join(base, "heed.db"), filepath.Join(base, "dl")

	// The state such a kill leaves, made as the engine makes it: every job
	// recorded done under its final name, every body still in its part.
	first := killedAfterDone(t, srv, dbPath, dir, func(_ int, name string, body []byte) engine.Completed {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".part"), body, 0o644))
		return engine.Completed{Part: name + ".part"}
	})
	jobs := first.jobs()
	require.Len(t, jobs, 5)
	for _, j := range jobs {
		require.Equal(t, storage.StateDone, j.State, j.URL)
	}
	us, err := first.db.Unnamed(context.Background())
	require.NoError(t, err)
	require.Len(t, us, 5)
	first.close()
	requests := srv.Requests()

	// Meanwhile: someone took job 1's name; job 2's part was named before
	// the kill; job 3's part name now holds another download's bytes; job
	// 4's part is in another folder.
	in := func(name string) string { return filepath.Join(dir, name) }
	elsewhere := filepath.Join(base, jobs[4].File+".part")
	require.NoError(t, os.WriteFile(in(jobs[1].File), []byte("came in between"), 0o644))
	require.NoError(t, os.Rename(in(jobs[2].File+".part"), in(jobs[2].File)))
	require.NoError(t, os.WriteFile(in(jobs[3].File+".part"), []byte("another download's start"), 0o644))
	require.NoError(t, os.Rename(in(jobs[4].File+".part"), elsewhere))

	r := &rig{t: t, dbPath: dbPath, dir: dir}
	r.open(engine.Options{})
	// Named at New, before Run.
	for _, i := range []int{0, 2} {
		assert.NoFileExists(t, in(jobs[i].File+".part"))
		assert.Equal(t, jobs[i].SHA256, sha(t, in(jobs[i].File)), jobs[i].URL)
	}
	require.NoError(t, r.db.Flush(context.Background()))
	us, err = r.db.Unnamed(context.Background())
	require.NoError(t, err)
	require.Len(t, us, 1, "only the download that is not in this folder stays listed")
	assert.Equal(t, jobs[4].ID, us[0].JobID)

	// Back in the folder, the next start names it.
	r.close()
	require.NoError(t, os.Rename(elsewhere, in(jobs[4].File+".part")))
	r.open(engine.Options{})
	assert.Equal(t, jobs[4].SHA256, sha(t, in(jobs[4].File)))
	require.NoError(t, r.db.Flush(context.Background()))
	us, err = r.db.Unnamed(context.Background())
	require.NoError(t, err)
	assert.Empty(t, us, "every listed download was dealt with")

	r.runIdle()
	assert.Equal(t, requests, srv.Requests(), "nothing fetched again")
	after := r.jobs()
	for i, j := range after {
		if i == 3 {
			continue
		}
		assert.Equal(t, storage.StateDone, j.State, j.URL)
		want, _ := srv.Expected(j.URL)
		assert.Equal(t, want, j.SHA256, j.URL)
	}
	lost := after[3]
	assert.Equal(t, storage.StateFailed, lost.State, "its bytes are nowhere: not done under a name that holds others")
	assert.Contains(t, lost.LastError, "found neither")
	assert.Empty(t, lost.Part, "the part name holds another download's bytes")
	assert.Empty(t, lost.File)
	moved := after[1]
	assert.Equal(t, strings.Replace(jobs[1].File, ".", " (1).", 1), moved.File, "the next free name, recorded")
	assert.Equal(t, moved.SHA256, sha(t, in(moved.File)))
	got, err := os.ReadFile(in(jobs[1].File))
	require.NoError(t, err)
	assert.Equal(t, "came in between", string(got), "what took the name is kept")
	got, err = os.ReadFile(in(jobs[3].File + ".part"))
	require.NoError(t, err)
	assert.Equal(t, "another download's start", string(got), "another download's part is not named")
	assert.NoFileExists(t, in(jobs[3].File))
}

// S2, F3: Heed killed between the commit that records small downloads done
// and the links that give their held bodies (files with no name) their
// final names: the next start finds each one that had its name — under it,
// or under the next free name if another file took it (recorded then) —
// and queues again each one the kill took before it had its name, fetched
// once more; no file is fetched twice and none is left that nothing
// records.
func TestEngine_S2_KilledBeforeHeldBodyNamedFetchedAgain(t *testing.T) {
	srv := startDemo(t, demo.FastConfig(1, 3, 4<<10))
	base := t.TempDir()
	dbPath, dir := filepath.Join(base, "heed.db"), filepath.Join(base, "dl")
	in := func(name string) string { return filepath.Join(dir, name) }

	first := killedAfterDone(t, srv, dbPath, dir, func(i int, name string, body []byte) engine.Completed {
		switch i {
		case 0: // linked before the kill
			require.NoError(t, os.WriteFile(in(name), body, 0o644))
		case 1: // another file took the name first: linked under the next one
			require.NoError(t, os.WriteFile(in(name), []byte("came in between"), 0o644))
			require.NoError(t, os.WriteFile(in(strings.Replace(name, ".", " (1).", 1)), body, 0o644))
		} // 2: the kill took it
		return engine.Completed{Held: true}
	})
	jobs := first.jobs()
	us, err := first.db.Unnamed(context.Background())
	require.NoError(t, err)
	require.Len(t, us, 3, "listed as unnamed, with no part")
	for _, u := range us {
		assert.Empty(t, u.Part)
	}
	first.close()
	requests := srv.Requests()

	r := &rig{t: t, dbPath: dbPath, dir: dir}
	r.open(engine.Options{})
	require.NoError(t, r.db.Flush(context.Background()))
	us, err = r.db.Unnamed(context.Background())
	require.NoError(t, err)
	assert.Empty(t, us, "every listed download was dealt with at New")
	atNew := r.jobs()
	assert.Equal(t, storage.StateDone, atNew[0].State)
	assert.Equal(t, storage.StateDone, atNew[1].State)
	assert.Equal(t, storage.StateQueued, atNew[2].State, "its bytes went with the kill: queued again")
	assert.Empty(t, atNew[2].File)
	assert.Empty(t, atNew[2].SHA256)

	r.runIdle()
	assert.Equal(t, requests+1, srv.Requests(), "only the download the kill took is fetched again")
	after := r.jobs()
	for _, j := range after {
		assert.Equal(t, storage.StateDone, j.State, j.URL)
		want, _ := srv.Expected(j.URL)
		assert.Equal(t, want, j.SHA256, j.URL)
		assert.Equal(t, want, sha(t, in(j.File)), j.URL)
	}
	assert.Equal(t, jobs[0].File, after[0].File)
	assert.Equal(t, strings.Replace(jobs[1].File, ".", " (1).", 1), after[1].File, "the next free name, recorded")
	assert.Equal(t, jobs[2].File, after[2].File, "under its own name: nothing took it")
	got, err := os.ReadFile(in(jobs[1].File))
	require.NoError(t, err)
	assert.Equal(t, "came in between", string(got), "what took the name is kept")
	assert.Len(t, dirNames(t, dir), 4, "the three downloads and the file that came in between, nothing else")
}

// killedAfterDone makes the state a kill leaves right after the commit that
// records srv's downloads done, as the engine makes it: every job started
// and recorded done under its URL's name, its body where place put it (the
// Completed place returns says how: a part, or held). It returns the rig,
// still open.
func killedAfterDone(t *testing.T, srv *demo.Server, dbPath, dir string,
	place func(i int, name string, body []byte) engine.Completed) *rig {
	t.Helper()
	first := &rig{t: t, dbPath: dbPath, dir: dir}
	first.open(engine.Options{})
	first.add(srv.URLs()...)
	store := storage.EngineStore(first.db)
	var ids []int64
	for _, j := range first.jobs() {
		ids = append(ids, j.ID)
	}
	started, err := store.StartJobs(context.Background(), ids)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var done []engine.Finished
	for i, j := range started {
		resp, err := http.Get(j.URL)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		name := path.Base(j.URL)
		c := place(i, name, body)
		sum := sha256.Sum256(body)
		c.File, c.Bytes, c.SHA256, c.Status = name, int64(len(body)), hex.EncodeToString(sum[:]), 200
		done = append(done, engine.Finished{
			Attempt: engine.AttemptRecord{JobID: j.ID, URL: j.URL, Host: j.Host, Attempt: 1, StartedAt: time.Now(),
				Status: 200, Outcome: "ok", Bytes: int64(len(body))},
			Done: c})
	}
	_, err = store.FinishJobs(context.Background(), done)
	require.NoError(t, err)
	return first
}

// fullDisk is a Store whose commits of job starts or of finished downloads
// fail as SQLite's do on a full disk.
type fullDisk struct {
	engine.Store
	starts, finishes, requeues bool
}

func (f fullDisk) MarkQueued(ctx context.Context, id int64, r engine.Requeued) error {
	if f.requeues {
		return errFull
	}
	return f.Store.MarkQueued(ctx, id, r)
}

var errFull = errors.New("database or disk is full")

func (f fullDisk) StartJobs(ctx context.Context, ids []int64) ([]engine.JobRecord, error) {
	if f.starts {
		return nil, errFull
	}
	return f.Store.StartJobs(ctx, ids)
}

func (f fullDisk) FinishJobs(ctx context.Context, done []engine.Finished) ([]error, error) {
	if f.finishes {
		return nil, errFull
	}
	return f.Store.FinishJobs(ctx, done)
}

// RELIABILITY 35, J3: when the database cannot record that downloads start
// (its disk is full), no request is sent, Run stops at once with the reason
// instead of trying every queued job, and every job stays queued for a run
// once space is back.
func TestEngine_RELIABILITY35_StartsNotRecordedStopTheRun(t *testing.T) {
	srv := startDemo(t, demo.FastConfig(2, 20, 1<<10))
	base := t.TempDir()
	dbPath, dir := filepath.Join(base, "heed.db"), filepath.Join(base, "dl")
	db, eng := engineOver(t, dbPath, dir, func(s engine.Store) engine.Store { return fullDisk{Store: s, starts: true} },
		srv.URLs())

	err := eng.RunUntilIdle(context.Background())
	require.ErrorIs(t, err, errFull)
	assert.Contains(t, err.Error(), "cannot record that downloads start")
	assert.Zero(t, srv.Requests(), "no request without its start on disk")
	assert.Equal(t, 40, eng.Core().Queued(), "every job is still in line")
	counts, err := db.CountsByState(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(40), counts[storage.StateQueued])
	nextRunServesAll(t, srv, eng, db, dbPath, dir)
}

// RELIABILITY 35, J3: when the database cannot record finished downloads,
// Run stops with the reason, no part takes a final name that nothing
// records, and the next run completes every job under its own name: a part
// nothing records is removed rather than left beside a "name (1)".
func TestEngine_RELIABILITY35_FinishesNotRecordedStopTheRun(t *testing.T) {
	srv := startDemo(t, demo.FastConfig(2, 500, 1<<10))
	base := t.TempDir()
	dbPath, dir := filepath.Join(base, "heed.db"), filepath.Join(base, "dl")
	ends := &jobEnds{}
	db, eng := engineOver(t, dbPath, dir, func(s engine.Store) engine.Store { return fullDisk{Store: s, finishes: true} },
		srv.URLs(), ends.tune)

	err := eng.RunUntilIdle(context.Background())
	require.ErrorIs(t, err, errFull)
	require.ErrorIs(t, err, engine.ErrNotRecorded)
	assert.Contains(t, err.Error(), "cannot record finished downloads")
	ends.assertNotRecordedNotFailed(t)
	// The first finishes are recorded together a moment after they land
	// (finishLinger); far fewer than the 1,000 files are fetched by then.
	assert.Less(t, srv.Requests(), int64(1000), "no new download starts once one could not be recorded")
	counts, err := db.CountsByState(context.Background())
	require.NoError(t, err)
	assert.Zero(t, counts[storage.StateDone])
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.True(t, strings.HasSuffix(e.Name(), ".part"), "%s: no final name without its record", e.Name())
	}
	kept := 0 // reported with bytes: heed get says "(partial file kept)"
	for _, e := range ends.ends {
		if e.Bytes > 0 {
			kept++
		}
	}
	assert.LessOrEqual(t, kept, len(entries), "a job is reported with bytes only when its part is kept")
	nextRunServesAll(t, srv, eng, db, dbPath, dir)
}

// RELIABILITY 35, J3: a retry the database cannot record (its disk is
// full) stops the run with the reason too; the job is not retried behind
// the database's back, and the next run takes it up again.
func TestEngine_RELIABILITY35_RetryNotRecordedStopsTheRun(t *testing.T) {
	srv := startDemo(t, demo.Config{Files: 20, FileSize: 1 << 10, Seed: 3, Fast: true,
		Hosts: []demo.HostSpec{{Name: "flaky", Behavior: demo.Flaky, FailFraction: 1}}})
	base := t.TempDir()
	ends := &jobEnds{}
	db, eng := engineOver(t, filepath.Join(base, "heed.db"), filepath.Join(base, "dl"),
		func(s engine.Store) engine.Store { return fullDisk{Store: s, requeues: true} }, srv.URLs(), ends.tune)

	err := eng.RunUntilIdle(context.Background())
	require.ErrorIs(t, err, errFull)
	require.ErrorIs(t, err, engine.ErrNotRecorded)
	assert.Contains(t, err.Error(), "cannot record how a download ended")
	ends.assertNotRecordedNotFailed(t)
	assert.Less(t, srv.Requests(), int64(20), "no new request once an outcome could not be recorded")
	counts, err := db.CountsByState(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(20), counts[storage.StateQueued]+counts[storage.StateActive], "no job lost, none given up")
}

// jobEnds collects what the engine reports of each job's end (OnJob).
type jobEnds struct {
	mu   sync.Mutex
	ends []engine.JobEnd
}

func (j *jobEnds) tune(o *engine.Options) {
	o.OnJob = func(e engine.JobEnd) { j.mu.Lock(); j.ends = append(j.ends, e); j.mu.Unlock() }
}

// assertNotRecordedNotFailed checks that a job whose end the database could
// not record is not reported failed — it is queued again at the next start —
// and says so (RELIABILITY 35: the reason, and no state the job is not in).
func (j *jobEnds) assertNotRecordedNotFailed(t *testing.T) {
	t.Helper()
	j.mu.Lock()
	defer j.mu.Unlock()
	notRecorded := 0
	for _, e := range j.ends {
		assert.NotEqual(t, "failed", e.Outcome, "%s: %s", e.URL, e.Err)
		if strings.Contains(e.Err, "cannot record") {
			notRecorded++
			assert.Equal(t, "canceled", e.Outcome, e.URL)
			assert.Contains(t, e.Err, errFull.Error())
			assert.Contains(t, e.Err, "it is queued again when Heed next starts")
		}
	}
	assert.Positive(t, notRecorded, "the jobs the database could not record are reported")
}

// pausedWhileFinishing is a Store where the person pauses every job just
// before its finished download is recorded.
type pausedWhileFinishing struct{ engine.Store }

func (p pausedWhileFinishing) FinishJobs(ctx context.Context, done []engine.Finished) ([]error, error) {
	ids := make([]int64, len(done))
	for i, d := range done {
		ids[i] = d.Attempt.JobID
	}
	if _, err := p.Store.SetJobState(ctx, ids, engine.JobPaused); err != nil {
		return nil, err
	}
	return p.Store.FinishJobs(ctx, done)
}

// J3, F3, F5: a job the person pauses while its file is finishing stays
// paused with its complete part recorded, and no final name is taken for
// it; resumed, it completes from that part (a 416 for the whole file), and
// the folder holds each file once under its own name. A small body, held
// in a file with no name, has no part to keep: it is let go, and the
// resume fetches it whole.
func TestEngine_J3_PausedWhileFinishingKeepsItsPartForTheResume(t *testing.T) {
	for _, size := range []int{80 << 10, 2 << 10} {
		held := size <= 64<<10
		t.Run(fmt.Sprintf("%d bytes", size), func(t *testing.T) {
			srv := startDemo(t, demo.Config{Files: 4, FileSize: size, Seed: 4, Hosts: []demo.HostSpec{{Name: "ok"}}})
			base := t.TempDir()
			dir := filepath.Join(base, "dl")
			db, eng := engineOver(t, filepath.Join(base, "heed.db"), dir,
				func(s engine.Store) engine.Store { return pausedWhileFinishing{s} }, srv.URLs())
			require.NoError(t, eng.RunUntilIdle(context.Background()))
			require.NoError(t, eng.Close())

			jobs := mustJobs(t, db)
			var ids []int64
			for _, j := range jobs {
				require.Equal(t, storage.StatePaused, j.State, j.URL)
				ids = append(ids, j.ID)
				if held {
					assert.Empty(t, j.Part, "nothing to resume")
					continue
				}
				require.NotEmpty(t, j.Part, "the part is recorded for the resume")
				assert.Equal(t, int64(size), j.Bytes)
				assert.FileExists(t, filepath.Join(dir, j.Part))
				assert.NoFileExists(t, filepath.Join(dir, strings.TrimSuffix(j.Part, ".part")), "no final name for a paused job")
			}
			if held {
				assert.Empty(t, dirNames(t, dir), "no final name for a paused job, and no part")
			}
			first := len(srv.Log())

			eng, err := engine.New(context.Background(), storage.EngineStore(db), engine.Options{Dir: dir, Defaults: fast(), Version: "test"})
			require.NoError(t, err)
			defer eng.Close()
			_, err = eng.Resume(context.Background(), ids)
			require.NoError(t, err)
			require.NoError(t, eng.RunUntilIdle(context.Background()))
			assertServedOnce(t, srv, db, dir)
			// The log gets a request when its handler returns, which can be just
			// after Heed read the answer.
			require.Eventually(t, func() bool { return len(srv.Log()) == first+4 }, 10*time.Second, 5*time.Millisecond)
			for _, r := range srv.Log()[first:] {
				if held {
					assert.Empty(t, r.Range, "fetched whole: %s", r.Path)
					assert.Equal(t, 200, r.Status, r.Path)
					continue
				}
				assert.NotEmpty(t, r.Range, "resumed from the part: %s", r.Path)
				assert.Equal(t, 416, r.Status, "the whole file was in the part: %s", r.Path)
			}
		})
	}
}

func dirNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}
