package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/engine/demo"
	"heed/storage"
)

// killedAfterCommit is a Store whose FinishJobs commits and then reports a
// failure: the engine learns nothing of the commit, as if Heed had been
// killed right after it, before any part was renamed.
type killedAfterCommit struct{ engine.Store }

var errKilled = errors.New("killed after the commit")

func (k killedAfterCommit) FinishJobs(ctx context.Context, done []engine.Finished) ([]error, error) {
	if _, err := k.Store.FinishJobs(ctx, done); err != nil {
		return nil, err
	}
	return nil, errKilled
}

// S2, F3, F4: Heed killed between the commit that records downloads done,
// with their final names, and the renaming of their parts: the next start
// gives each part its name before anything else runs, so no file is
// fetched twice and none is left that nothing records. A part is named only
// if it holds the bytes recorded; a name taken meanwhile moves to the next
// free one, and the job records it; a part in another folder waits for a
// start in that folder.
func TestEngine_S2_KilledBeforeRenameNamedAtNextStart(t *testing.T) {
	srv := startDemo(t, demo.FastConfig(1, 5, 4<<10))
	base := t.TempDir()
	dbPath, dir := filepath.Join(base, "heed.db"), filepath.Join(base, "dl")

	db, err := storage.Open(dbPath)
	require.NoError(t, err)
	eng, err := engine.New(context.Background(), killedAfterCommit{storage.EngineStore(db)},
		engine.Options{Dir: dir, Defaults: fast(), Version: "test"})
	require.NoError(t, err)
	_, err = eng.Add(context.Background(), strings.Join(srv.URLs(), "\n"))
	require.NoError(t, err)
	require.NoError(t, eng.RunUntilIdle(context.Background()))
	require.NoError(t, eng.Close())

	// The state such a kill leaves: every job done under its final name,
	// every body still in its part.
	jobs, err := db.JobsPage(context.Background(), storage.JobFilter{})
	require.NoError(t, err)
	require.Len(t, jobs, 5)
	for _, j := range jobs {
		require.Equal(t, storage.StateDone, j.State, j.URL)
		require.FileExists(t, filepath.Join(dir, j.File+".part"))
		require.NoFileExists(t, filepath.Join(dir, j.File))
	}
	us, err := db.Unnamed(context.Background())
	require.NoError(t, err)
	require.Len(t, us, 5)
	require.NoError(t, db.Close())
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
	for _, j := range after {
		assert.Equal(t, storage.StateDone, j.State, j.URL)
		want, _ := srv.Expected(j.URL)
		assert.Equal(t, want, j.SHA256, j.URL)
	}
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
