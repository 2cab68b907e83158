package e2e

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/cli/clitest"
)

// §9: on a terminal, heed get draws a line per download in flight and a
// total line, redrawn in place. In an 80-column terminal no line is ever
// wider than the terminal (a redraw that wraps leaves a copy behind each
// time), no download ever has two bar lines at once, and once it is over
// the screen holds one "done" line per file, with a short SHA-256, and no
// bars.
func TestGet_ProgressInAnEightyColumnTerminal(t *testing.T) {
	const n = 4
	files := map[string][]byte{}
	var urls []string
	for i := range n {
		p := fmt.Sprintf("/downloads/archive-%d.tar.gz", i) // long enough that a bar line must shorten it
		files[p] = content(uint64(i+1), 160<<10)
	}
	srv := newFileServer(t, files, 8<<10, 50*time.Millisecond) // about a second and a half each
	for p := range files {
		urls = append(urls, srv.URL+p)
	}
	tmp := t.TempDir()
	args := append([]string{"get", "--db", filepath.Join(tmp, "heed.db"), "--dir", filepath.Join(tmp, "dl"),
		"--rate", "6000", "--burst", "10", "--max-inflight", "4", "--jitter", "0-0"}, urls...)
	cmd := exec.Command(heedBin, args...)
	cmd.Env = append(cmd.Environ(), "TERM=xterm", "LANG=C.UTF-8")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 80, Rows: 24})
	require.NoError(t, err)
	defer tty.Close()

	var mu sync.Mutex
	var chunks [][]byte
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			k, err := tty.Read(buf)
			if k > 0 {
				mu.Lock()
				chunks = append(chunks, append([]byte(nil), buf[:k]...))
				mu.Unlock()
			}
			if err != nil { // EIO once heed has exited and the terminal is closed
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("heed get did not finish within a minute")
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("heed get exited %d", ee.ExitCode())
	}
	require.NoError(t, err)
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		tty.Close()
		<-read
	}

	scr := clitest.NewScreen(80, 24)
	bar := regexp.MustCompile(`[█░]`)
	mostBars := 0
	for i, c := range chunks {
		scr.Write(c)
		bars := 0
		perFile := map[string]int{}
		for _, l := range scr.Lines() {
			require.LessOrEqual(t, utf8.RuneCountInString(l), 80, "after write %d: %q", i, l)
			if !bar.MatchString(l) {
				continue
			}
			bars++
			for p := range files {
				if strings.Contains(l, strings.TrimPrefix(p, "/downloads/archive")) { // "-2.tar.gz": a bar line shortens the rest
					perFile[p]++
				}
			}
			assert.NotContains(t, l, "done     ", "a report drawn into a bar line")
		}
		require.LessOrEqual(t, bars, n, "after write %d, more bar lines than downloads:\n%s", i, scr)
		for p, k := range perFile {
			require.LessOrEqual(t, k, 1, "after write %d, %s has %d bar lines:\n%s", i, p, k, scr)
		}
		require.LessOrEqual(t, strings.Count(scr.String(), " done · "), 1, "after write %d, two total lines:\n%s", i, scr)
		mostBars = max(mostBars, bars)
	}
	assert.Zero(t, scr.Wraps, "a line was wider than the terminal:\n%s", scr)
	assert.Empty(t, scr.Unknown, "escape sequences the test's terminal does not know")
	assert.GreaterOrEqual(t, mostBars, 2, "the downloads in flight were drawn as bars")

	final := scr.Lines()
	sha := regexp.MustCompile(`^done     http://\S* → archive-\d\.tar\.gz \(160\.0 KiB, sha256 [0-9a-f]{12}\)$`)
	dones := 0
	for _, l := range final {
		assert.False(t, bar.MatchString(l), "a bar is left on the screen: %q\n%s", l, scr)
		assert.NotContains(t, l, " done · ", "the total line is left on the screen")
		if strings.HasPrefix(l, "done ") {
			dones++
			assert.Regexp(t, sha, l)
		}
	}
	assert.Equal(t, n, dones, "one done line per file:\n%s", scr)
	assert.Contains(t, scr.String(), "this run: 4 done")
}
