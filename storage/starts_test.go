package storage

import (
	"os"
	"path/filepath"
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
	all := l.snapshot()
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
	l.applied(l.snapshot())
	st, err = os.Stat(path + "-starts")
	require.NoError(t, err)
	assert.Zero(t, st.Size(), "emptied once nothing is pending")
	require.NoError(t, l.close())
	assert.NoFileExists(t, path+"-starts", "no file left beside the database")
}
