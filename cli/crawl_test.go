package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage"
)

// testSite is a loopback site of fixed resources, by path: robots.txt as
// text, the rest as HTML. It logs the paths it is asked for, in order.
type testSite struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]string
	log   []string
}

func newTestSite(t *testing.T, pages map[string]string) *testSite {
	t.Helper()
	s := &testSite{pages: pages}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.URL.Path)
		body, ok := s.pages[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/robots.txt" {
			w.Header().Set("Content-Type", "text/plain")
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns the paths asked for so far, in order.
func (s *testSite) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// crawlLines decodes heed crawls --json.
func crawlLines(t *testing.T, db string) []engine.CrawlLine {
	t.Helper()
	code, out, stderr := run(t, "", "crawls", "--db", db, "--json")
	require.Equal(t, ExitOK, code, stderr)
	var lines []engine.CrawlLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var c engine.CrawlLine
		require.NoError(t, json.Unmarshal([]byte(l), &c), l)
		lines = append(lines, c)
	}
	return lines
}

// fast are the flags that let a test crawl run without waiting on the
// politeness defaults.
var fast = []string{"--rate", "6000", "--burst", "100", "--jitter", "0-0"}

// A crawl's rules are checked before anything is opened: each mistake is a
// usage error that names it, exit 2, and leaves no database and no folder.
func TestCrawl_BadRulesExit2WithNothingLeft(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown scope", []string{"--scope", "everywhere", "http://example.com/"}, `--scope: unknown scope "everywhere"`},
		{"include that does not compile", []string{"--include", "(", "http://example.com/"}, `--include "("`},
		{"exclude that does not compile", []string{"--exclude", "[a-", "http://example.com/"}, `--exclude "[a-"`},
		{"depth below 0", []string{"--depth", "-1", "http://example.com/"}, "--depth: -1 is below 0"},
		{"depth not whole", []string{"--depth", "1.5", "http://example.com/"}, "--depth: 1.5 is not a whole number"},
		{"max pages below 0", []string{"--max-pages", "-3", "http://example.com/"}, "--max-pages: -3 is below 0"},
		{"no seeds", nil, "no seed URLs given"},
		{"only a rejected seed", []string{"ftp://example.com/"}, "no seed URLs given"},
		{"resume with seeds", []string{"--resume", "1", "http://example.com/"}, "give no others"},
		{"resume with new rules", []string{"--resume", "1", "--depth", "2"}, "--depth cannot change them"},
		{"resume without a database", []string{"--resume", "1"}, "no crawl 1: there is no database"},
		{"a politeness mistake", []string{"--rate", "0", "http://example.com/"}, "--rate: 0 is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db, dl := filepath.Join(dir, "h.db"), filepath.Join(dir, "dl")
			code, _, stderr := run(t, "", append([]string{"crawl", "--db", db, "--dir", dl}, tc.args...)...)
			assert.Equal(t, ExitUsage, code, stderr)
			assert.Contains(t, stderr, tc.msg)
			assert.NoFileExists(t, db)
			assert.NoDirExists(t, dl)
		})
	}
}

// heed crawl follows a site's links within its host and depth, fetches
// robots.txt first, saves the files as HOST/PATH, lists the crawl in heed
// crawls --json and exits 0; a disallowed URL is a skipped job.
func TestCrawl_FollowsLinks(t *testing.T) {
	other := newTestSite(t, map[string]string{"/elsewhere.html": "not in scope"})
	site := newTestSite(t, map[string]string{
		"/robots.txt":     "User-agent: *\nDisallow: /private/\n",
		"/":               `<a href="/a.html">a</a> <a href="/private/x.html">x</a> <a href="` + other.URL + `/elsewhere.html">o</a>`,
		"/a.html":         `<a href="/deep/b.html">b</a>`,
		"/deep/b.html":    `<a href="/deep/c.html">c</a>`,
		"/deep/c.html":    "three links from the seed: past --depth 2",
		"/private/x.html": "secret",
	})
	dir := t.TempDir()
	db, dl := filepath.Join(dir, "h.db"), filepath.Join(dir, "dl")
	args := append([]string{"crawl", "--db", db, "--dir", dl, "--depth", "2"}, fast...)
	code, stdout, stderr := run(t, "", append(args, site.URL+"/")...)
	require.Equal(t, ExitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Equal(t, []string{"/robots.txt", "/", "/a.html", "/deep/b.html"}, site.requests(),
		"robots.txt first; depth 2 stops before c; nothing disallowed")
	assert.Empty(t, other.requests(), "another host is out of the host scope")
	host := strings.TrimPrefix(site.URL, "http://")
	for _, f := range []string{"index.html", "a.html", "deep/b.html"} {
		assert.FileExists(t, filepath.Join(dl, host, filepath.FromSlash(f)))
	}
	assert.Contains(t, stderr, "crawl 1 started: queued 1, known already 0; scope host, depth 2")
	assert.Contains(t, stderr, "crawl 1: 3 done (")
	assert.Contains(t, stderr, "1 skipped, 0 failed, 0 queued, ")

	lines := crawlLines(t, db)
	require.Len(t, lines, 1)
	c := lines[0]
	assert.Equal(t, int64(1), c.ID)
	assert.Equal(t, []string{site.URL + "/"}, c.Seeds)
	assert.Equal(t, "host", c.Scope)
	assert.Equal(t, 2, c.Depth)
	assert.True(t, c.Robots)
	assert.Equal(t, engine.CrawlRunning, c.State)
	assert.Equal(t, [4]int64{3, 0, 1, 0}, [4]int64{c.Done, c.Queued, c.Skipped, c.Failed}, "done, queued, skipped, failed")
	assert.Equal(t, int64(1), c.OutOfScope, "the link to the other host")
	assert.Positive(t, c.Bytes)

	code, out, stderr := run(t, "", "jobs", "--db", db, "--state", "skipped", "--json")
	require.Equal(t, ExitOK, code, stderr)
	var skipped engine.JobLine
	require.NoError(t, json.Unmarshal([]byte(out), &skipped), out)
	assert.Equal(t, site.URL+"/private/x.html", skipped.URL)
	assert.Equal(t, "robots.txt: Disallow: /private/", skipped.LastError)
	assert.Equal(t, int64(1), skipped.CrawlID)
	assert.Equal(t, 1, skipped.Depth)
	assert.Equal(t, site.URL+"/", skipped.FoundOn)
}

// A job robots.txt keeps out is said as skipped, with the rule, and counted
// apart: it is not a failure (exit 0). A page that fails is (exit 1).
func TestCrawl_SkippedIsNoFailure(t *testing.T) {
	site := newTestSite(t, map[string]string{
		"/robots.txt":     "User-agent: *\nDisallow: /private/\n",
		"/private/x.html": "secret",
		"/broken.html":    `<a href="/missing.html">gone</a>`,
	})
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	args := append([]string{"crawl", "--db", db, "--dir", filepath.Join(dir, "dl")}, fast...)
	code, stdout, stderr := run(t, "", append(args, site.URL+"/private/x.html")...)
	require.Equal(t, ExitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "skipped  "+site.URL+"/private/x.html — robots.txt: Disallow: /private/\n")
	assert.Contains(t, stderr, "this run: 0 done (0 B), 1 skipped, 0 failed")
	assert.NotContains(t, site.requests(), "/private/x.html")

	code, stdout, stderr = run(t, "", append(args, "--max-attempts", "1", site.URL+"/broken.html")...)
	assert.Equal(t, ExitFailed, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "failed   "+site.URL+"/missing.html: ")
	lines := crawlLines(t, db)
	require.Len(t, lines, 2)
	assert.Equal(t, int64(1), lines[1].Failed)
	assert.Equal(t, int64(1), lines[1].Done)
}

// startCrawl stores a crawl of seed through the engine, as the window
// would, and leaves it in state to (paused or cancelled) without running
// it.
func startCrawl(t *testing.T, db, dir, seed string, to engine.CrawlState) int64 {
	t.Helper()
	ctx := context.Background()
	s, err := storage.Open(db)
	require.NoError(t, err)
	defer s.Close()
	eng, err := engine.New(ctx, s, engine.Options{Dir: dir})
	require.NoError(t, err)
	defer eng.Close()
	id, _, err := eng.StartCrawl(ctx, engine.Crawl{Seeds: []string{seed}, Scope: "host", Depth: 5, Robots: true})
	require.NoError(t, err)
	switch to {
	case engine.CrawlPaused:
		_, err = eng.PauseCrawl(ctx, id)
	case engine.CrawlCancelled:
		_, err = eng.CancelCrawl(ctx, id)
	}
	require.NoError(t, err)
	return id
}

// heed crawl --resume ID resumes a paused crawl and runs it to its end; a
// cancelled or unknown crawl is a usage error.
func TestCrawl_ResumeGoesOnWithThePausedCrawl(t *testing.T) {
	site := newTestSite(t, map[string]string{
		"/robots.txt": "User-agent: *\nAllow: /\n",
		"/":           `<a href="/a.html">a</a>`,
		"/a.html":     `<a href="/b.html">b</a>`,
		"/b.html":     "the end",
	})
	dir := t.TempDir()
	db, dl := filepath.Join(dir, "h.db"), filepath.Join(dir, "dl")
	id := startCrawl(t, db, dl, site.URL+"/", engine.CrawlPaused)
	require.Equal(t, engine.CrawlPaused, crawlLines(t, db)[0].State)

	args := append([]string{"crawl", "--db", db, "--dir", dl}, fast...)
	code, stdout, stderr := run(t, "", append(args, "--resume", fmt.Sprint(id))...)
	require.Equal(t, ExitOK, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Equal(t, []string{"/robots.txt", "/", "/a.html", "/b.html"}, site.requests())
	c := crawlLines(t, db)[0]
	assert.Equal(t, engine.CrawlRunning, c.State)
	assert.Equal(t, int64(3), c.Done)
	assert.Contains(t, stderr, fmt.Sprintf("crawl %d: 3 done", id))

	code, _, stderr = run(t, "", append(args, "--resume", "99")...)
	assert.Equal(t, ExitUsage, code, stderr)
	assert.Contains(t, stderr, "no crawl 99 (heed crawls lists them)")

	gone := startCrawl(t, db, dl, site.URL+"/other.html", engine.CrawlCancelled)
	code, _, stderr = run(t, "", append(args, "--resume", fmt.Sprint(gone))...)
	assert.Equal(t, ExitUsage, code, stderr)
	assert.Contains(t, stderr, "was cancelled")
}
