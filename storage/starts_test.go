package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// S2: the start log gives back, in order, the records after the last one the database
// applied; a record cut short by a crash in the middle of its write is left out.
func TestStartLog_S2_RecordsAfterTheAppliedOnesTornOneLeftOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	l, todo, err := openStartLog(path, 0, false)
	require.NoError(t, err)
	assert.Empty(t, todo)
	require.NoError(t, l.reset())
	logged, err := l.append([]int64{7, 0, 9}, 100)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, true}, logged)
	logged, err = l.append([]int64{9, 11}, 200)
	require.NoError(t, err)
	assert.Equal(t, []bool{false, true}, logged, "a pending start is not logged twice")
	require.NoError(t, l.f.Close())
	f, err := os.OpenFile(path+"-starts", os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{1, 2, 3, 4, 5}) // torn
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, todo, err = openStartLog(path, 1, false)
	require.NoError(t, err)
	assert.Equal(t, []startRec{{seq: 2, job: 9, at: 100}, {seq: 3, job: 11, at: 200}}, todo,
		"the first was applied; the torn one is left out")
	again, todo, err := openStartLog(path, 3, false)
	require.NoError(t, err)
	assert.Empty(t, todo)
	assert.Equal(t, int64(3), again.seq, "numbers go on after the last")
}

// A log that grew past startLogCompact while starts were always pending is rewritten with
// the pending ones only; emptied once none is.
func TestStartLog_CompactedToWhatIsPending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	l, _, err := openStartLog(path, 0, true)
	require.NoError(t, err)
	require.NoError(t, l.reset())
	ids := make([]int64, startLogCompact/startRecord+10)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	_, err = l.append(ids, 5)
	require.NoError(t, err)
	all, _ := l.snapshot()
	keep := all[3]
	delete(all, 3)
	l.applied(all)
	st, err := os.Stat(path + "-starts")
	require.NoError(t, err)
	assert.Equal(t, int64(startRecord), st.Size(), "only the pending start is left")
	_, todo, err := openStartLog(path, 0, false)
	require.NoError(t, err)
	assert.Equal(t, []startRec{{seq: keep.seq, job: 3, at: 5}}, todo)
	_, err = l.append([]int64{100000000}, 6)
	require.NoError(t, err, "appends go on in the new file")
	all, _ = l.snapshot()
	l.applied(all)
	st, err = os.Stat(path + "-starts")
	require.NoError(t, err)
	assert.Zero(t, st.Size(), "emptied once nothing is pending")
	require.NoError(t, l.close())
	assert.NoFileExists(t, path+"-starts", "no file left beside the database")
}

// S2: the start log is kept beside the database file itself, as SQLite keeps its -wal: a
// database opened through a symlink and then through its own name after a crash finds the
// starts the crash left.
func TestStartLog_S2_BesideTheFileWhateverNameOpenedIt(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real", "heed.db")
	require.NoError(t, os.MkdirAll(filepath.Dir(real), 0o755))
	db, err := Open(real)
	require.NoError(t, err)
	id := enqueueURLs(t, db, "a.example", "https://a.example/1")[0]
	require.NoError(t, db.Close())
	link := filepath.Join(dir, "link.db")
	require.NoError(t, os.Symlink(real, link))

	db, err = Open(link)
	require.NoError(t, err)
	_, err = db.StartJobs(bg, []int64{id})
	require.NoError(t, err)
	crash := crashCopy(t, real)
	require.NoError(t, db.Close())
	after := openCrash(t, crash)
	assert.Equal(t, int64(1), after.Recovered(), "the started job is queued again as interrupted")
}

// J3: a start and a pause of the same job at the same moment: either the start is refused
// (the job is paused), or the pause finds it started — active, its attempt counted — never a
// job handed out as started whose start the database does not have.
func TestStartJobs_J3_StartRacingAPause(t *testing.T) {
	db, _ := openTest(t)
	lost := 0
	for i := range 500 {
		id := enqueueURLs(t, db, "a.example", fmt.Sprintf("https://a.example/%d", i))[0]
		var (
			wg      sync.WaitGroup
			started []Job
			moved   []int64
			serr    error
			perr    error
		)
		wg.Go(func() { started, serr = db.StartJobs(bg, []int64{id}) })
		wg.Go(func() { moved, perr = db.SetJobState(bg, []int64{id}, StatePaused) })
		wg.Wait()
		require.NoError(t, serr)
		require.NoError(t, perr)
		require.Len(t, moved, 1, "the pause moves it either way")
		require.NoError(t, db.Flush(bg))
		j, err := db.Job(bg, id)
		require.NoError(t, err)
		require.Equal(t, StatePaused, j.State)
		if started[0].ID == id && j.Attempts != 1 {
			lost++
		}
	}
	assert.Zero(t, lost, "starts handed out that the database does not have")
}
