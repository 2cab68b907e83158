package fetch

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// xattrsIn reports whether dir's file system keeps user extended
// attributes (most do; some overlay and network file systems do not).
func xattrsIn(t *testing.T, dir string) bool {
	t.Helper()
	probe := filepath.Join(dir, ".probe")
	require.NoError(t, os.WriteFile(probe, nil, 0o644))
	defer os.Remove(probe)
	err := unix.Setxattr(probe, markAttr, []byte("x"), 0)
	if errors.Is(err, unix.ENOTSUP) {
		return false
	}
	require.NoError(t, err)
	return true
}

func mark(t *testing.T, path, value string) {
	t.Helper()
	require.NoError(t, unix.Lsetxattr(path, markAttr, []byte(value), 0))
}

// S2: a part created for a job is marked with the owner (Heed's database)
// and the job, and OwnedParts finds exactly the owner's parts: regular files
// with a part name marked by it — not another owner's, not unmarked ones,
// not a file a symlink points at, not a folder, not a file that is not a part,
// and not a part once it has its final name.
func TestFetch_S2_PartsMarkedForTheirJob(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Owner = "db1" })
	ts, _ := serveFile(t, "the body", `"v1"`, nil)
	res := e.do(ts.URL+"/ours.bin", func(r *Request) { r.Job, r.Defer = 7, true })
	require.NotNil(t, res.Pending, res.Err)
	unmarked := e.do(ts.URL+"/nojob.bin", func(r *Request) { r.Defer = true })
	require.NotNil(t, unmarked.Pending, unmarked.Err)

	if !xattrsIn(t, e.dl) {
		// Where marks cannot be kept, parts are created all the same and
		// none is ever taken for the owner's.
		owned, err := e.f.OwnedParts()
		require.NoError(t, err)
		assert.Empty(t, owned)
		e.f.FinishParts([]*Result{&res, &unmarked})
		assert.True(t, res.Done, res.Err)
		return
	}
	e.write("foreign.bin.part", "another database's")
	mark(t, filepath.Join(e.dl, "foreign.bin.part"), "db2/7")
	e.write("plain.bin.part", "nobody's mark")
	e.write("notapart.bin", "marked, but no part")
	mark(t, filepath.Join(e.dl, "notapart.bin"), "db1/3")
	require.NoError(t, os.Mkdir(filepath.Join(e.dl, "folder.part"), 0o755))
	mark(t, filepath.Join(e.dl, "folder.part"), "db1/4")
	mark(t, filepath.Join(e.outside, "target.txt"), "db1/5")
	require.NoError(t, os.Symlink(filepath.Join(e.outside, "target.txt"), filepath.Join(e.dl, "link.bin.part")))
	e.write("bad.bin.part", "a mark that names no job")
	mark(t, filepath.Join(e.dl, "bad.bin.part"), "db1/x")

	owned, err := e.f.OwnedParts()
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"ours.bin.part": 7}, owned)

	other := newEnv(t, nil) // no owner: nothing is anybody's
	owned, err = other.f.OwnedParts()
	require.NoError(t, err)
	assert.Empty(t, owned)

	e.f.FinishParts([]*Result{&res, &unmarked})
	require.True(t, res.Done, res.Err)
	owned, err = e.f.OwnedParts()
	require.NoError(t, err)
	assert.Empty(t, owned, "named, it is no part any more")
}
