package engine_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"heed/engine"
	"heed/engine/demo"
	"heed/storage"
)

// S2, RELIABILITY 32: Heed killed while downloads were in flight, some of
// them before their parts were recorded (a body in its first moments, or
// one complete but not yet recorded done). At the next download run in
// that folder (even after another command opened the database first, and a
// run in another folder came between), a part Heed
// marked as created for one of those jobs, and that nothing records, is
// removed, so that the download, fetched again, takes its own name instead
// of "name (1)" beside a part nothing would ever use. A recorded part is kept
// and resumed; another database's part, an unmarked file, and the part of a
// job the crash did not interrupt are left alone.
func TestEngine_S2_UnrecordedPartsOfInterruptedJobsRemoved(t *testing.T) {
	ctx := context.Background()
	// Files over 64 KiB, which have parts from their first byte (a smaller
	// body is held in a file with no name, and takes its own free name).
	srv := startDemo(t, demo.FastConfig(1, 5, 65<<10))
	base := t.TempDir()
	dbPath, dir := filepath.Join(base, "heed.db"), filepath.Join(base, "dl")
	in := func(name string) string { return filepath.Join(dir, name) }

	// The state a kill leaves: jobs 0–3 active, job 4 queued.
	first := &rig{t: t, dbPath: dbPath, dir: dir}
	first.open(engine.Options{})
	first.add(srv.URLs()...)
	jobs := first.jobs()
	require.Len(t, jobs, 5)
	store := storage.EngineStore(first.db)
	ids := []int64{jobs[0].ID, jobs[1].ID, jobs[2].ID, jobs[3].ID}
	_, err := store.StartJobs(ctx, ids)
	require.NoError(t, err)
	identity, err := first.db.GetSetting(ctx, "identity")
	require.NoError(t, err)
	name := func(i int) string { return path.Base(jobs[i].URL) }
	marks := xattrsIn(t, dir)
	mark := func(file, owner string, id int64) {
		if marks {
			require.NoError(t, unix.Setxattr(in(file), "user.heed.job", []byte(owner+"/"+strconv.FormatInt(id, 10)), 0))
		}
	}
	// Job 0: cut off before its part was recorded.
	require.NoError(t, os.WriteFile(in(name(0)+".part"), []byte("the first bytes"), 0o644))
	mark(name(0)+".part", identity, jobs[0].ID)
	// Job 1: its part recorded for the resume: the first 1,000 bytes.
	resp, err := http.Get(jobs[1].URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in(name(1)+".part"), body[:1000], 0o644))
	mark(name(1)+".part", identity, jobs[1].ID)
	require.NoError(t, store.SaveResume(ctx, jobs[1].ID, engine.Resume{Part: name(1) + ".part", Bytes: 1000,
		Size: int64(len(body)), ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}))
	// Job 2: a part marked by another database.
	require.NoError(t, os.WriteFile(in(name(2)+".part"), []byte("another database's"), 0o644))
	mark(name(2)+".part", "0123456789abcdef0123456789abcdef", jobs[2].ID)
	// Job 3: a part nobody marked.
	require.NoError(t, os.WriteFile(in(name(3)+".part"), []byte("nobody's"), 0o644))
	// Job 4, not interrupted: a part marked for it all the same.
	require.NoError(t, os.WriteFile(in(name(4)+".part"), []byte("not a crash's"), 0o644))
	mark(name(4)+".part", identity, jobs[4].ID)
	first.close()
	requests := srv.Requests()
	// A command that only reads (heed jobs, say) opens the database first:
	// it queues the interrupted jobs again, and they stay listed.
	lister, err := storage.Open(dbPath)
	require.NoError(t, err)
	require.Equal(t, int64(4), lister.Recovered())
	require.NoError(t, lister.Close())
	// A download run in another folder leaves them for a run in theirs.
	other := &rig{t: t, dbPath: dbPath, dir: filepath.Join(base, "elsewhere")}
	other.open(engine.Options{})
	assert.FileExists(t, in(name(0)+".part"))
	its, err := other.db.Interrupted(ctx)
	require.NoError(t, err)
	assert.Len(t, its, 4, "still listed")
	other.close()

	r := &rig{t: t, dbPath: dbPath, dir: dir}
	r.open(engine.Options{})
	require.NoError(t, r.db.Flush(ctx))
	left, err := r.db.Interrupted(ctx)
	require.NoError(t, err)
	assert.Empty(t, left, "cleared once their parts were looked for")
	if !marks {
		// Where the file system keeps no marks, nothing is taken for Heed's.
		assert.FileExists(t, in(name(0)+".part"))
		return
	}
	assert.NoFileExists(t, in(name(0)+".part"), "removed at New, before Run")
	for i := 1; i <= 4; i++ {
		assert.FileExists(t, in(name(i)+".part"))
	}

	r.runIdle()
	assert.Equal(t, requests+5, srv.Requests(), "each download fetched once more")
	after := r.jobs()
	for i, j := range after {
		assert.Equal(t, storage.StateDone, j.State, j.URL)
		want, _ := srv.Expected(j.URL)
		assert.Equal(t, want, sha(t, in(j.File)), j.URL)
		switch i {
		case 0, 1:
			assert.Equal(t, name(i), j.File, "under its own name")
		default:
			assert.Equal(t, name(i)[:len(name(i))-4]+" (1).bin", j.File, "beside a part that is not its to remove")
		}
	}
	for _, i := range []int{0, 1} {
		assert.NoFileExists(t, in(name(i)+".part"))
	}
	for _, i := range []int{2, 3, 4} {
		assert.FileExists(t, in(name(i)+".part"), "left alone")
	}
}

// xattrsIn reports whether dir's file system keeps user extended
// attributes (most do; some overlay and network file systems do not).
func xattrsIn(t *testing.T, dir string) bool {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	probe := filepath.Join(dir, ".probe")
	require.NoError(t, os.WriteFile(probe, nil, 0o644))
	defer os.Remove(probe)
	err := unix.Setxattr(probe, "user.heed.job", []byte("x"), 0)
	if errors.Is(err, unix.ENOTSUP) {
		return false
	}
	require.NoError(t, err)
	return true
}
