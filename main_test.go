package main

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// --db and --dir belong to every command, before it as well as after it.
func TestRun_FlagsBeforeTheCommandWork(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--db", "my.db", "jobs"}, &out, &errb)
	assert.Equal(t, cli.ExitUnusable, code)
	assert.Contains(t, errb.String(), "no database at my.db", "the --db given before jobs is jobs'")
	assert.NoFileExists(t, "my.db")
}

// The toolkit wires the main goroutine to the main thread as the program
// starts; a headless command runs on a goroutine of its own, which is not.
// What it hands back (the window) runs on the caller's goroutine.
func TestOffMain_RunsOffTheCallersGoroutine(t *testing.T) {
	runtime.LockOSThread() // as the toolkit's init does to main
	defer runtime.UnlockOSThread()
	caller := goroutineID()
	require.NotEmpty(t, caller)
	var ran, window string
	code := offMain(func(onMain func(func() int) int) int {
		ran = goroutineID()
		return onMain(func() int { window = goroutineID(); return 3 }) + 1
	})
	assert.Equal(t, 4, code)
	assert.NotEmpty(t, ran)
	assert.NotEqual(t, caller, ran, "the command ran on the wired goroutine")
	assert.Equal(t, caller, window, "the window did not run on the main goroutine")
}

// goroutineID is the number runtime.Stack gives the calling goroutine, or "".
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}
