package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun_Version(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"version"}, &out, &errb)
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "heed "+version+"\n", out.String())
}

func TestRun_NoDisplayFailsClearly(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	var out, errb bytes.Buffer
	code := run([]string{"--db", filepath.Join(t.TempDir(), "h.db")}, &out, &errb)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, errb.String(), "no display")
}

func TestRun_UnknownCommandIsUsageError(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"frobnicate"}, &out, &errb)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), `unknown command "frobnicate"`)
}

func TestResolvePaths_CreatesFolders(t *testing.T) {
	base := t.TempDir()
	p, err := resolvePaths(filepath.Join(base, "data", "heed.db"), filepath.Join(base, "dl"))
	require.NoError(t, err)
	for _, d := range []string{filepath.Dir(p.db), p.dir} {
		fi, err := os.Stat(d)
		require.NoError(t, err)
		assert.True(t, fi.IsDir())
	}
}
