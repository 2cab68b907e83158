//go:build linux

package fetch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// F1: the part file is created by openat(2) in the folder itself, so only a
// single safe part name is accepted: a path could go through a symlinked
// subfolder or up and out of it.
func TestCreatePartFile_F1_OnlyAPartNameInTheFolder(t *testing.T) {
	base := t.TempDir()
	dl, outside := filepath.Join(base, "dl"), filepath.Join(base, "outside")
	require.NoError(t, os.Mkdir(dl, 0o755))
	require.NoError(t, os.Mkdir(outside, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(dl, "sub")))
	root, err := os.OpenRoot(dl)
	require.NoError(t, err)
	defer root.Close()
	dir, err := root.Open(".")
	require.NoError(t, err)
	defer dir.Close()

	for _, name := range []string{"../x.part", "sub/x.part", filepath.Join(outside, "x.part"), "x.txt", ".part", "x\x00.part"} {
		f, err := createPartFile(dir, root, name)
		if f != nil {
			f.Close()
		}
		assert.ErrorIs(t, err, errConfined, "%q", name)
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was created outside the folder")

	f, err := createPartFile(dir, root, "a.txt.part")
	require.NoError(t, err)
	_, err = f.WriteString("abc")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := os.ReadFile(filepath.Join(dl, "a.txt.part"))
	require.NoError(t, err)
	assert.Equal(t, "abc", string(got))
	_, err = createPartFile(dir, root, "a.txt.part")
	assert.ErrorIs(t, err, os.ErrExist, "an existing part is never opened again by create")
}
