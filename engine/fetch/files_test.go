package fetch

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// F3, A9, A10: a part takes its final name in one step that never replaces
// anything: not a file, not a symlink (never followed), not a folder.
func TestFiles_F3_RenameNeverReplaces(t *testing.T) {
	e := newEnv(t, nil)
	e.writePart("a.part", "new")
	e.write("taken.txt", "old")
	require.NoError(t, os.Symlink(filepath.Join(e.outside, "target.txt"), filepath.Join(e.dl, "link.txt")))
	require.NoError(t, os.Mkdir(filepath.Join(e.dl, "dir.txt"), 0o755))
	for _, final := range []string{"taken.txt", "link.txt", "dir.txt"} {
		assert.ErrorIs(t, e.f.Rename("a.part", final), fs.ErrExist, final)
	}
	require.NoError(t, e.f.Rename("a.part", "free.txt"))
	files := e.files()
	assert.Equal(t, "old", files["taken.txt"])
	assert.Equal(t, "new", files["free.txt"])
	assert.NotContains(t, files, "a.part")
}

// F1: Rename and the names it is given stay in the folder.
func TestFiles_F1_RenameRefusesUnsafeNames(t *testing.T) {
	e := newEnv(t, nil)
	e.writePart("a.part", "x")
	for _, c := range [][2]string{{"a.part", "../x"}, {"a.part", "sub/x"}, {"../a.part", "x"}, {"a.txt", "x"}} {
		assert.ErrorIs(t, e.f.Rename(c[0], c[1]), errConfined, "%v", c)
	}
	assert.Equal(t, map[string]string{"a.part": "x"}, e.files())
}

// F3: FreeName skips every name something has, a symlink included, and
// the names the caller holds; PartFor names the part after the URL.
func TestFiles_F3_FreeNames(t *testing.T) {
	e := newEnv(t, nil)
	e.write("r.pdf", "1")
	require.NoError(t, os.Symlink("nowhere", filepath.Join(e.dl, "r (1).pdf")))
	held := func(n string) bool { return n == "r (2).pdf" }
	name, err := e.f.FreeName("r.pdf", held)
	require.NoError(t, err)
	assert.Equal(t, "r (3).pdf", name)
	_, err = e.f.FreeName("../r.pdf", nil)
	assert.ErrorIs(t, err, errConfined)

	e.write("file.bin.part", "someone's")
	assert.Equal(t, "file (1).bin.part", e.f.PartFor(mustURL(t, "http://h/dl/file.bin?x=1"), nil))
	assert.Equal(t, "index.html.part", e.f.PartFor(mustURL(t, "http://h/"), nil))
}

// F2, F3: a name as long as F2 allows, taken already, takes its next free
// name, " (1)" added past the limit, and its part is renamed to it.
func TestFiles_F3_LongestNameTakenTakesTheNext(t *testing.T) {
	e := newEnv(t, nil)
	long := strings.Repeat("n", maxNameBytes-4) + ".txt"
	require.Equal(t, long, SafeName(long))
	e.write(long, "first")
	name, err := e.f.FreeName(long, nil)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("n", maxNameBytes-4)+" (1).txt", name)
	e.writePart(name+".part", "second")
	require.NoError(t, e.f.Rename(name+".part", name))
	assert.Equal(t, "second", e.files()[name])
}

// W9, A10: a crawl's tree: a part in a folder is renamed in that folder
// only; a symlinked folder is never written through.
func TestFiles_W9_TreeNames(t *testing.T) {
	e := newEnv(t, nil)
	part, err := e.f.TreePartFor("h:80/a/b.txt", nil)
	require.NoError(t, err)
	assert.Equal(t, "h:80/a/b.txt.part", part)
	e.writePart(part, "x")
	assert.ErrorIs(t, e.f.Rename(part, "h:80/b.txt"), errConfined, "another folder")
	require.NoError(t, e.f.Rename(part, "h:80/a/b.txt"))
	assert.Equal(t, map[string]string{"b.txt": "x"}, listDir(t, filepath.Join(e.dl, "h:80", "a")))

	e.write("h:80/file", "a file where a folder would go")
	part, err = e.f.TreePartFor("h:80/file/c.txt", nil)
	require.NoError(t, err)
	assert.Equal(t, "h:80/file (1)/c.txt.part", part, "the folder takes the next free name")

	require.NoError(t, os.Symlink(e.outside, filepath.Join(e.dl, "h:80", "out")))
	part, err = e.f.TreePartFor("h:80/out/target.txt", nil)
	require.NoError(t, err)
	assert.Equal(t, "h:80/out (1)/target.txt.part", part, "a symlink is not a folder to write in")
	_, err = e.f.createFile("h:80/out/target.txt.part")
	assert.ErrorIs(t, err, errConfined)
}

// G41: a file system that reports no blocks at all (ramfs, some FUSE ones)
// does not know its size: its free space is unknown, not zero, and a
// download into it proceeds.
func TestReliability_G41_ZeroBlocksIsUnknownSpace(t *testing.T) {
	_, err := spaceOf(0, 0, 4096)
	assert.ErrorIs(t, err, errUnknownSpace)
	n, err := spaceOf(100, 25, 4096)
	require.NoError(t, err)
	assert.Equal(t, int64(25*4096), n)
	n, err = spaceOf(1, 1<<60, 1<<20)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<62), n, "saturates")

	e := newEnv(t, func(c *Config) { c.FreeSpace = func() (int64, error) { return spaceOf(0, 0, 4096) } })
	ts, _ := serveFile(t, "payload", `"v1"`, nil)
	res := e.do(ts.URL+"/f.txt", nil)
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, map[string]string{"f.txt": "payload"}, e.files())
}
