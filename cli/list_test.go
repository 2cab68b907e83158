package cli

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heed hosts says "idle" of a host with nothing queued, not "running".
func TestHosts_IdleHostIsIdle(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "", "host", "--db", db, "idle.example", "--rate", "6")
	require.Equal(t, ExitOK, code, stderr)
	code, _, stderr = run(t, "", "add", "--db", db, "http://busy.example/a")
	require.Equal(t, ExitOK, code, stderr)
	code, out, stderr := run(t, "", "hosts", "--db", db)
	require.Equal(t, ExitOK, code, stderr)
	assert.Regexp(t, `(?m)^idle\.example\s+idle\s`, out)
	assert.Regexp(t, `(?m)^busy\.example\s+running\s`, out, "a host with a job queued")
	assert.NotRegexp(t, `(?m)^idle\.example\s+running`, out)
}

// heed history shows the date of each request, newest start first: a
// request that started later but ended sooner comes first.
func TestHistory_DatesNewestStartFirst(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow.txt" {
			time.Sleep(600 * time.Millisecond)
		}
		w.Write([]byte("hi"))
	}))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	code, _, stderr := run(t, "", "get", "-q", "--db", db, "--dir", dir, "--rate", "600", "--burst", "1", "--max-inflight", "2", // fast starts 100 ms after slow
		"--jitter", "0-0", ts.URL+"/slow.txt", ts.URL+"/fast.txt")
	require.Equal(t, ExitOK, code, stderr)

	code, out, stderr := run(t, "", "history", "--db", db)
	require.Equal(t, ExitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	date := regexp.MustCompile(`^` + time.Now().Format("2006-01-02") + ` \d\d:\d\d:\d\d\.\d{3}\s`)
	assert.Regexp(t, date, lines[1])
	assert.Regexp(t, date, lines[2])
	// The jobs are 1 (slow, started first) and 2 (fast, started after it, ended first).
	assert.Regexp(t, `\.\d{3}\s+2\s`, lines[1], "the later start first:\n%s", out)
	assert.Regexp(t, `\.\d{3}\s+1\s`, lines[2], out)

	code, out, _ = run(t, "", "history", "--db", db, "--limit", "1")
	require.Equal(t, ExitOK, code)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Regexp(t, `\.\d{3}\s+2\s`, lines[1], "the newest start, not the newest end")
}
