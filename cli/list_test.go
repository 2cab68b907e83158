package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/storage"
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

// heed hosts shows, once a crawl has run, each host's robots.txt state and
// Crawl-delay, and its skipped jobs; also read-only, beside a running
// Heed. Without any crawl, its table is as it was.
func TestHosts_RobotsStateAndCrawlDelay(t *testing.T) {
	site := newTestSite(t, map[string]string{
		"/robots.txt": "User-agent: *\nCrawl-delay: 1\nDisallow: /private/\n",
		"/":           `<a href="/private/x.html">x</a>`,
	})
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	code, _, stderr := run(t, "", "get", "--db", db, "--dir", filepath.Join(dir, "dl"), "--jitter", "0-0", site.URL+"/plain.txt")
	require.Equal(t, ExitFailed, code, stderr) // a 404: only the table matters here
	code, out, stderr := run(t, "", "hosts", "--db", db)
	require.Equal(t, ExitOK, code, stderr)
	assert.NotContains(t, out, "ROBOTS", "no crawl, no robots column")

	code, stdout, stderr := run(t, "", append([]string{"crawl", "--db", db, "--dir", filepath.Join(dir, "dl"), site.URL + "/"}, fast...)...)
	require.Equal(t, ExitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)

	check := func(t *testing.T) {
		code, out, stderr := run(t, "", "hosts", "--db", db)
		require.Equal(t, ExitOK, code, stderr)
		assert.Regexp(t, `(?m)^HOST\s.*\sSKIPPED\s+ROBOTS$`, out)
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(strings.TrimPrefix(site.URL, "http://"))+`\s.*\s1\s+ok, crawl-delay 1s$`, out)

		code, out, stderr = run(t, "", "hosts", "--db", db, "--json")
		require.Equal(t, ExitOK, code, stderr)
		var l struct {
			Robots       string           `json:"robots"`
			CrawlDelayMS int64            `json:"crawl_delay_ms"`
			Jobs         map[string]int64 `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &l), out)
		assert.Equal(t, "ok", l.Robots)
		assert.Equal(t, int64(1000), l.CrawlDelayMS)
		assert.Equal(t, int64(1), l.Jobs["skipped"])
	}
	t.Run("writable", check)
	t.Run("heed host", func(t *testing.T) {
		code, out, stderr := run(t, "", "host", "--db", db, site.URL)
		require.Equal(t, ExitOK, code, stderr)
		assert.Contains(t, out, "robots        ok, crawl-delay 1s\n")
	})
	t.Run("beside a running Heed", func(t *testing.T) {
		holder, err := storage.Open(db)
		require.NoError(t, err)
		defer holder.Close()
		check(t)
	})
}

// heed host, where the engine is open, shows the server's own quota as
// Heed paces from it.
func TestHost_ShowsTheServersQuota(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Limit", "100")
		w.Header().Set("X-RateLimit-Remaining", "40")
		w.Header().Set("X-RateLimit-Reset", "600")
		w.Write([]byte("hi"))
	}))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	code, _, stderr := run(t, "", "get", "--db", db, "--dir", dir, "--jitter", "0-0", ts.URL+"/a.txt")
	require.Equal(t, ExitOK, code, stderr)
	code, out, stderr := run(t, "", "host", "--db", db, ts.URL)
	require.Equal(t, ExitOK, code, stderr)
	assert.Regexp(t, `(?m)^quota         40 left of 100, resets in `, out)
	code, out, stderr = run(t, "", "host", "--db", db, ts.URL, "--json")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, `"quota":"`)
}
