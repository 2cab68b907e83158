package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"heed/cli"
)

func TestRun_Version(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"version"}, &out, &errb)
	assert.Equal(t, cli.ExitOK, code)
	assert.Equal(t, "heed "+version+"\n", out.String())
}

func TestRun_NoDisplayFailsClearly(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	var out, errb bytes.Buffer
	code := run([]string{"--db", filepath.Join(t.TempDir(), "h.db")}, &out, &errb)
	assert.Equal(t, cli.ExitFailed, code)
	assert.Contains(t, errb.String(), "no display")
}

func TestRun_UnknownCommandIsUsageError(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"frobnicate"}, &out, &errb)
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errb.String(), `unknown command "frobnicate"`)
}

func TestRun_FlagsBeforeTheCommandGetAHint(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--db", "my.db", "jobs"}, &out, &errb)
	assert.Equal(t, cli.ExitUsage, code)
	assert.Contains(t, errb.String(), "flags go after the command: heed jobs --db my.db")
	assert.NoFileExists(t, "my.db")
}
