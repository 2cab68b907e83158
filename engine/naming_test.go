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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/engine/demo"
	"heed/storage"
)

// namingOrder is a Store that looks at the download folder at each start
// and at each finished download it records.
type namingOrder struct {
	engine.Store
	dir string

	mu                      sync.Mutex
	startedWithPart         int // parts on disk when their name was recorded
	recorded, parts, finals int // finished downloads recorded; their parts and final names on disk then
}

func (n *namingOrder) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	j, err := n.Store.Start(ctx, id, part)
	if err == nil {
		n.mu.Lock()
		if _, serr := os.Lstat(filepath.Join(n.dir, j.Part)); serr == nil {
			n.startedWithPart++
		}
		n.mu.Unlock()
	}
	return j, err
}

func (n *namingOrder) Finish(ctx context.Context, end engine.End) ([]engine.Enqueued, error) {
	if end.State == engine.JobDone {
		n.mu.Lock()
		n.recorded++
		if _, err := os.Stat(filepath.Join(n.dir, end.Resume.Part)); err == nil {
			n.parts++
		}
		if _, err := os.Stat(filepath.Join(n.dir, end.File)); err == nil {
			n.finals++
		}
		n.mu.Unlock()
	}
	return n.Store.Finish(ctx, end)
}

// J3, F4, S2: a download's part name is recorded before the part exists,
// and a finished download is recorded done, with its final name, while its
// bytes are still in the part: the part takes the name only after the
// commit. So a crash at any instant leaves no file that nothing records.
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

			assert.Zero(t, store.startedWithPart, "no part exists before its name is recorded")
			assert.Equal(t, 40, store.recorded)
			assert.Equal(t, 40, store.parts, "every part still under its part name when recorded")
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
	eng, err := engine.New(context.Background(), wrap(db), opt)
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
		assert.Equal(t, engine.JobDone, j.State, j.URL)
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

func mustJobs(t *testing.T, db *storage.DB) []engine.Job {
	t.Helper()
	jobs, err := db.Jobs(context.Background(), engine.JobQuery{})
	require.NoError(t, err)
	return jobs
}

// S2, F3, F4: Heed killed between the commit that records downloads done,
// with their final names, and the renaming of their parts: the next start
// gives each part its name before anything else runs, so no file is
// fetched twice and none is left that nothing records. A name taken
// meanwhile moves to the next free one, and the job records it; a part
// renamed before the kill is left as it is; a download neither of whose
// names is in this folder waits for a start in its own.
func TestEngine_S2_KilledBeforeRenameNamedAtNextStart(t *testing.T) {
	srv := startDemo(t, demo.FastConfig(1, 4, 4<<10))
	base := t.TempDir()
	dbPath, dir := filepath.Join(base, "heed.db"), filepath.Join(base, "dl")
	in := func(name string) string { return filepath.Join(dir, name) }

	first := killedAfterDone(t, srv, dbPath, dir)
	jobs := first.jobs()
	require.Len(t, jobs, 4)
	for _, j := range jobs {
		require.Equal(t, engine.JobDone, j.State, j.URL)
		require.FileExists(t, in(j.Part))
	}
	us, err := first.db.Unnamed(context.Background())
	require.NoError(t, err)
	require.Len(t, us, 4)
	first.close()
	requests := srv.Requests()

	// Meanwhile: someone took job 1's name; job 2's part was named before
	// the kill; job 3's part and name are in another folder.
	elsewhere := filepath.Join(base, jobs[3].Part)
	require.NoError(t, os.WriteFile(in(jobs[1].File), []byte("came in between"), 0o644))
	require.NoError(t, os.Rename(in(jobs[2].Part), in(jobs[2].File)))
	require.NoError(t, os.Rename(in(jobs[3].Part), elsewhere))

	r := &rig{t: t, dbPath: dbPath, dir: dir}
	r.open(engine.Options{})
	// Named at New, before Run.
	for _, i := range []int{0, 2} {
		assert.NoFileExists(t, in(jobs[i].Part))
		assert.Equal(t, jobs[i].SHA256, sha(t, in(jobs[i].File)), jobs[i].URL)
	}
	require.NoError(t, r.db.Flush(context.Background()))
	us, err = r.db.Unnamed(context.Background())
	require.NoError(t, err)
	require.Len(t, us, 1, "only the download that is not in this folder stays listed")
	assert.Equal(t, jobs[3].ID, us[0].ID)

	// Back in the folder, the next start names it.
	r.close()
	require.NoError(t, os.Rename(elsewhere, in(jobs[3].Part)))
	r.open(engine.Options{})
	assert.Equal(t, jobs[3].SHA256, sha(t, in(jobs[3].File)))
	require.NoError(t, r.db.Flush(context.Background()))
	us, err = r.db.Unnamed(context.Background())
	require.NoError(t, err)
	assert.Empty(t, us, "every listed download was dealt with")

	r.runIdle()
	assert.Equal(t, requests, srv.Requests(), "nothing fetched again")
	after := r.jobs()
	for _, j := range after {
		assert.Equal(t, engine.JobDone, j.State, j.URL)
		want, _ := srv.Expected(j.URL)
		assert.Equal(t, want, j.SHA256, j.URL)
		assert.Equal(t, want, sha(t, in(j.File)), j.URL)
		assert.Empty(t, j.Part, j.URL)
	}
	moved := after[1]
	assert.Equal(t, strings.Replace(jobs[1].File, ".", " (1).", 1), moved.File, "the next free name, recorded")
	got, err := os.ReadFile(in(jobs[1].File))
	require.NoError(t, err)
	assert.Equal(t, "came in between", string(got), "what took the name is kept")
	assert.Len(t, dirNames(t, dir), 5, "the four downloads and the file that came in between, nothing else")
}

// killedAfterDone makes the state a kill leaves right after the commit that
// records srv's downloads done, as the engine makes it: every job started
// with its part name recorded, its body synced in that part, and recorded
// done under its URL's name. It returns the rig, still open.
func killedAfterDone(t *testing.T, srv *demo.Server, dbPath, dir string) *rig {
	t.Helper()
	first := &rig{t: t, dbPath: dbPath, dir: dir}
	first.open(engine.Options{})
	first.add(srv.URLs()...)
	store := first.db
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, j := range first.jobs() {
		name := path.Base(j.URL)
		j, err := store.Start(context.Background(), j.ID, name+".part")
		require.NoError(t, err)
		resp, err := http.Get(j.URL)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, j.Part), body, 0o644))
		sum := sha256.Sum256(body)
		_, err = store.Finish(context.Background(), engine.End{JobID: j.ID, State: engine.JobDone,
			Attempt: &engine.Attempt{JobID: j.ID, URL: j.URL, Host: j.Host, Attempt: 1, StartedAt: time.Now(),
				Status: 200, Outcome: "ok", Bytes: int64(len(body))},
			Resume: engine.Resume{Part: j.Part, Bytes: int64(len(body)), Size: int64(len(body))},
			File:   name, SHA256: hex.EncodeToString(sum[:]), Status: 200})
		require.NoError(t, err)
	}
	return first
}

// fullDisk is a Store whose commits of job starts, of finished downloads
// or of retries fail as SQLite's do on a full disk.
type fullDisk struct {
	engine.Store
	starts, finishes, requeues bool
}

var errFull = errors.New("database or disk is full")

func (f fullDisk) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	if f.starts {
		return engine.Job{}, errFull
	}
	return f.Store.Start(ctx, id, part)
}

func (f fullDisk) Finish(ctx context.Context, end engine.End) ([]engine.Enqueued, error) {
	if (f.finishes && end.State == engine.JobDone) || (f.requeues && end.State == engine.JobQueued) {
		return nil, errFull
	}
	return f.Store.Finish(ctx, end)
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
	assert.Contains(t, err.Error(), "cannot record that a download starts")
	assert.Zero(t, srv.Requests(), "no request without its start on disk")
	counts, err := db.Counts(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(40), counts.Queued, "every job is still in line")
	assert.Empty(t, dirNames(t, dir), "no part without its name recorded")
	nextRunServesAll(t, srv, eng, db, dbPath, dir)
}

// RELIABILITY 35, J3: when the database cannot record finished downloads,
// Run stops with the reason, no part takes a final name that nothing
// records, and the next run completes every job under its own name from
// the part it recorded when it started: no "name (1)", no part left.
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
	assert.Contains(t, err.Error(), "cannot record a finished download")
	ends.assertNotRecordedNotFailed(t)
	assert.Less(t, srv.Requests(), int64(1000), "no new download starts once one could not be recorded")
	counts, err := db.Counts(context.Background())
	require.NoError(t, err)
	assert.Zero(t, counts.Done)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.True(t, strings.HasSuffix(e.Name(), ".part"), "%s: no final name without its record", e.Name())
	}
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
	counts, err := db.Counts(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(20), counts.Queued+counts.Active, "no job lost, none given up")
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

func (p pausedWhileFinishing) Finish(ctx context.Context, end engine.End) ([]engine.Enqueued, error) {
	if end.State == engine.JobDone {
		if _, err := p.Store.SetState(ctx, []int64{end.JobID}, []engine.JobState{engine.JobActive}, engine.JobPaused); err != nil {
			return nil, err
		}
	}
	return p.Store.Finish(ctx, end)
}

// J3, F3, F5: a job the person pauses while its file is finishing stays
// paused with its complete part recorded, and no final name is taken for
// it; resumed, it completes from that part (a 416 for the whole file), and
// the folder holds each file once under its own name.
func TestEngine_J3_PausedWhileFinishingKeepsItsPartForTheResume(t *testing.T) {
	for _, size := range []int{80 << 10, 2 << 10} {
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
				require.Equal(t, engine.JobPaused, j.State, j.URL)
				ids = append(ids, j.ID)
				require.NotEmpty(t, j.Part, "the part is recorded for the resume")
				assert.Equal(t, int64(size), j.Bytes)
				assert.FileExists(t, filepath.Join(dir, j.Part))
				assert.NoFileExists(t, filepath.Join(dir, strings.TrimSuffix(j.Part, ".part")), "no final name for a paused job")
			}
			first := len(srv.Log())

			eng, err := engine.New(context.Background(), db, engine.Options{Dir: dir, Defaults: fast(), Version: "test"})
			require.NoError(t, err)
			defer eng.Close()
			_, err = eng.ResumeJobs(context.Background(), ids)
			require.NoError(t, err)
			require.NoError(t, eng.RunUntilIdle(context.Background()))
			assertServedOnce(t, srv, db, dir)
			// The log gets a request when its handler returns, which can be just
			// after Heed read the answer.
			require.Eventually(t, func() bool { return len(srv.Log()) == first+4 }, 10*time.Second, 5*time.Millisecond)
			for _, r := range srv.Log()[first:] {
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

// takenParts is a store in which every part name without the job's id is
// taken by another job, as a fleet's other workers, each with a folder of
// its own, may have recorded the names a worker would choose.
type takenParts struct {
	engine.Store
	refused atomic.Int64
}

func (s *takenParts) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	if part != "" && !strings.Contains(part, "."+strconv.FormatInt(id, 10)) {
		s.refused.Add(1)
		return engine.Job{}, fmt.Errorf("job %d, part %q: %w", id, part, engine.ErrPartTaken)
	}
	return s.Store.Start(ctx, id, part)
}

// F3, M2: when the part names a download would take are taken in the
// database by other jobs, its part carries the job's id instead, and the
// download ends with its own name: the run neither stops nor loses a job.
func TestEngine_F3_PartNamesTakenElsewhereGetTheJobsID(t *testing.T) {
	srv := startDemo(t, demo.FastConfig(1, 5, 1<<10))
	base := t.TempDir()
	store := &takenParts{}
	db, eng := engineOver(t, filepath.Join(base, "heed.db"), filepath.Join(base, "dl"),
		func(s engine.Store) engine.Store { store.Store = s; return store }, srv.URLs())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, eng.RunUntilIdle(ctx))
	counts, err := db.Counts(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(5), counts.Done)
	assert.Equal(t, int64(10), store.refused.Load(), "two names tried for each download before the job's id")
	jobs, err := db.Jobs(context.Background(), engine.JobQuery{})
	require.NoError(t, err)
	for _, j := range jobs {
		assert.NotContains(t, j.File, strconv.FormatInt(j.ID, 10), "the final name is the file's own")
		_, err := os.Stat(filepath.Join(base, "dl", j.File))
		assert.NoError(t, err)
	}
}
