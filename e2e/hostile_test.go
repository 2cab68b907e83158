package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A --dir that names a file is refused with exit 3 before anything is
// created: no database is left behind by a mistyped folder.
func TestGet_DirThatIsAFileCreatesNothing(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("mine"), 0o644))
	db := filepath.Join(tmp, "heed.db")
	res := heed(t, "get", "--db", db, "--dir", file, "http://127.0.0.1:9/x")
	assert.Equal(t, 3, res.code, res.stderr)
	assert.Contains(t, res.stderr, file)
	assert.NoFileExists(t, db, "no database for a run that could not start")
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(got))
}

// G43: an input that is no list at all (/dev/zero) ends heed add with the
// line it could not read, quickly and with bounded memory (exit 2); the
// URLs given before it stay queued.
func TestAdd_G43_EndlessInput(t *testing.T) {
	tmp := t.TempDir()
	db := filepath.Join(tmp, "heed.db")
	res := heed(t, "add", "--db", db, "-i", "/dev/zero")
	assert.Equal(t, 2, res.code, res.stderr)
	assert.Contains(t, res.stderr, "line 1")
	assert.Contains(t, res.stderr, "not a list")
}
