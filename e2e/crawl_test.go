package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crawlJobLine is a line of heed jobs --json with the crawl's fields (W10).
type crawlJobLine struct {
	jobLine
	CrawlID int64  `json:"crawl_id"`
	Depth   int    `json:"depth"`
	FoundOn string `json:"found_on"`
}

// crawlLine is a line of heed crawls --json (W10).
type crawlLine struct {
	ID         int64    `json:"id"`
	Seeds      []string `json:"seeds"`
	Scope      string   `json:"scope"`
	Depth      int      `json:"depth"`
	Robots     bool     `json:"robots"`
	State      string   `json:"state"`
	Done       int64    `json:"done"`
	Queued     int64    `json:"queued"`
	Active     int64    `json:"active"`
	Skipped    int64    `json:"skipped"`
	Failed     int64    `json:"failed"`
	OutOfScope int64    `json:"out_of_scope"`
	Bytes      int64    `json:"bytes"`
}

// webPage is one resource of a loopback web site.
type webPage struct {
	ctype string // text/html when ""
	body  string
}

// webSite is a loopback web site of fixed resources that logs every path
// it is asked for, in order; delay holds each answer back, so that a
// crawl of it is still going when a test acts.
type webSite struct {
	*httptest.Server
	pages map[string]webPage
	delay time.Duration
	mu    sync.Mutex
	log   []string
}

func newWebSite(t *testing.T, pages map[string]webPage, delay time.Duration) *webSite {
	t.Helper()
	s := &webSite{pages: pages, delay: delay}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.URL.Path)
		s.mu.Unlock()
		p, ok := s.pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if s.delay > 0 {
			select {
			case <-time.After(s.delay):
			case <-r.Context().Done():
				return
			}
		}
		ct := p.ctype
		if ct == "" {
			ct = "text/html; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		fmt.Fprint(w, p.body)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns the paths asked for so far, in order.
func (s *webSite) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// hostKey is the site's host key: the name a crawl gives its folder (W9).
func (s *webSite) hostKey() string { return strings.TrimPrefix(s.URL, "http://") }

// heedIn is heed run with cwd as its working folder.
func heedIn(t *testing.T, cwd string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, heedBin, args...)
	cmd.Dir = cwd
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	default:
		t.Fatalf("running heed %v: %v", args, err)
	}
	require.NoError(t, ctx.Err(), "heed %v did not finish: %s", args, res.stderr)
	return res
}

// tree maps each file under dir to its bytes, by slash path.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err)
	}
	return out
}

func crawlJobs(t *testing.T, db string) []crawlJobLine {
	t.Helper()
	r := heed(t, "jobs", "--json", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	return jsonLines[crawlJobLine](t, r.stdout)
}

func crawls(t *testing.T, db string) []crawlLine {
	t.Helper()
	r := heed(t, "crawls", "--json", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	return jsonLines[crawlLine](t, r.stdout)
}

// W1, W3, W4, W6, W9, W10: heed crawl of a small site follows its links
// within the seed's host, asks for robots.txt before anything else and
// obeys it, fetches each URL once, keeps the disallowed URL as a skipped
// job with the rule, records where each job was found, saves the files as
// DIR/HOST/PATH with nothing written outside DIR, and exits 0.
func TestCrawl_SmallSite(t *testing.T) {
	other := newWebSite(t, map[string]webPage{"/other.html": {body: "another host: out of scope"}}, 0)
	pages := map[string]webPage{
		"/robots.txt": {ctype: "text/plain", body: "User-agent: *\nDisallow: /private/\n"},
		"/": {body: `<html><body><a href="/a.html">a</a> <a href="b.html">b</a>
			<a href="/private/x.html">private</a> <a href="` + other.URL + `/other.html">other</a></body></html>`},
		"/a.html":         {body: `<a href="/">home</a> <a href="/b.html#top">b</a> <a href="sub/c.html">c</a>`},
		"/b.html":         {body: `<a href="/a.html">a</a> <a href="/private/x.html">private again</a>`},
		"/sub/c.html":     {body: `<a href="../a.html">a</a> <img src="/img.png">`},
		"/img.png":        {ctype: "image/png", body: "\x89PNG\r\n\x1a\n not really"},
		"/private/x.html": {body: "never to be fetched"},
	}
	site := newWebSite(t, pages, 0)
	seed := site.URL + "/"

	tmp := t.TempDir()
	cwd, state, dir := filepath.Join(tmp, "cwd"), filepath.Join(tmp, "state"), filepath.Join(tmp, "dl")
	require.NoError(t, os.Mkdir(cwd, 0o755))
	db := filepath.Join(state, "heed.db")
	res := heedIn(t, cwd, "crawl", "--db", db, "--dir", dir, "--rate", "6000", "--burst", "100", "--jitter", "0-0", seed)
	require.Equal(t, 0, res.code, "stderr: %s\nstdout: %s", res.stderr, res.stdout)

	// What the site saw: robots.txt first, then every in-scope page once;
	// nothing disallowed, nothing of the other host.
	got := site.requests()
	require.NotEmpty(t, got)
	assert.Equal(t, "/robots.txt", got[0], "robots.txt before any other request: %v", got)
	sort.Strings(got)
	assert.Equal(t, []string{"/", "/a.html", "/b.html", "/img.png", "/robots.txt", "/sub/c.html"}, got)
	assert.Empty(t, other.requests(), "a link to another host is out of the host scope")

	// The jobs: one per URL, with the crawl, depth and page that found it.
	type want struct {
		state   string
		depth   int
		foundOn string
	}
	wants := map[string]want{
		"/":               {"done", 0, ""},
		"/a.html":         {"done", 1, seed},
		"/b.html":         {"done", 1, seed},
		"/private/x.html": {"skipped", 1, seed},
		"/sub/c.html":     {"done", 2, site.URL + "/a.html"},
		"/img.png":        {"done", 3, site.URL + "/sub/c.html"},
	}
	js := crawlJobs(t, db)
	require.Len(t, js, len(wants), "one job per URL: %+v", js)
	for _, j := range js {
		path := strings.TrimPrefix(j.URL, site.URL)
		w, ok := wants[path]
		require.True(t, ok, "no job expected for %s", j.URL)
		assert.Equal(t, w.state, j.State, "%s: %s", path, j.LastError)
		assert.Equal(t, int64(1), j.CrawlID, path)
		assert.Equal(t, w.depth, j.Depth, path)
		assert.Equal(t, w.foundOn, j.FoundOn, path)
		if path == "/private/x.html" {
			assert.Equal(t, "robots.txt: Disallow: /private/", j.LastError)
			assert.Empty(t, j.File)
		}
	}

	// The crawl as heed crawls --json lists it.
	cs := crawls(t, db)
	require.Len(t, cs, 1)
	c := cs[0]
	var bytes int64
	for p, w := range wants {
		if w.state == "done" {
			bytes += int64(len(pages[p].body))
		}
	}
	assert.Equal(t, crawlLine{ID: 1, Seeds: []string{seed}, Scope: "host", Depth: 5, Robots: true, State: "running",
		Done: 5, Queued: 0, Active: 0, Skipped: 1, Failed: 0, OutOfScope: 1, Bytes: bytes}, c)

	// robots.txt is in history with its own outcome.
	var robots []historyLine
	for _, h := range history(t, db) {
		if h.Outcome == "robots" {
			robots = append(robots, h)
		}
	}
	require.Len(t, robots, 1)
	assert.Equal(t, site.URL+"/robots.txt", robots[0].URL)
	assert.Equal(t, 200, robots[0].Status)

	// The files, as DIR/HOST/PATH, byte for byte, and nothing else: no part
	// left, nothing outside DIR (the working folder stays empty; beside the
	// database only SQLite's own files).
	host := site.hostKey()
	assert.Equal(t, map[string]string{
		host + "/index.html": pages["/"].body,
		host + "/a.html":     pages["/a.html"].body,
		host + "/b.html":     pages["/b.html"].body,
		host + "/sub/c.html": pages["/sub/c.html"].body,
		host + "/img.png":    pages["/img.png"].body,
	}, tree(t, dir))
	assert.Empty(t, tree(t, cwd), "nothing in the working folder")
	top, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names []string
	for _, e := range top {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"cwd", "dl", "state"}, names)
	for name := range tree(t, state) {
		assert.True(t, strings.HasPrefix(name, "heed.db"), "only the database beside the database: %s", name)
	}

	// A second crawl of the same seed finds it known (W3): nothing is fetched again.
	before := len(site.requests())
	res = heedIn(t, cwd, "crawl", "--db", db, "--dir", dir, "--jitter", "0-0", seed)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	assert.Contains(t, res.stderr, ", not crawled again: "+seed)
	assert.Len(t, site.requests(), before, "nothing fetched again")
	assert.Len(t, crawls(t, db), 2)
}

// Exit codes of a crawl (SPEC §9, §10): a bad --scope or a regular
// expression that does not compile is bad usage, exit 2, and leaves no
// database and no folder; a page that fails is exit 1.
func TestCrawl_ExitCodes(t *testing.T) {
	site := newWebSite(t, map[string]webPage{
		"/robots.txt": {ctype: "text/plain", body: "User-agent: *\nAllow: /\n"},
		"/":           {body: `<a href="/gone.html">gone</a>`},
	}, 0)
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"2 bad scope", []string{"--scope", "galaxy"}, "--scope"},
		{"2 bad include", []string{"--include", "a(b"}, "--include"},
		{"2 bad exclude", []string{"--exclude", "*.zip"}, "--exclude"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			db, dir := filepath.Join(tmp, "heed.db"), filepath.Join(tmp, "dl")
			res := heed(t, append(append([]string{"crawl", "--db", db, "--dir", dir}, tc.args...), site.URL+"/")...)
			assert.Equal(t, 2, res.code, res.stderr)
			assert.Contains(t, res.stderr, tc.msg)
			assert.NoFileExists(t, db)
			assert.NoDirExists(t, dir)
		})
	}
	t.Run("1 a page failed", func(t *testing.T) {
		tmp := t.TempDir()
		db := filepath.Join(tmp, "heed.db")
		res := heed(t, "crawl", "--db", db, "--dir", filepath.Join(tmp, "dl"), "--jitter", "0-0", site.URL+"/")
		assert.Equal(t, 1, res.code, res.stderr)
		c := crawls(t, db)
		require.Len(t, c, 1)
		assert.Equal(t, int64(1), c[0].Done)
		assert.Equal(t, int64(1), c[0].Failed, "the 404")
	})
}

// SPEC §9, W8: Ctrl-C stops a crawl cleanly (exit 130) and says how to go
// on; heed crawl --resume then ends it (exit 0) with every page done.
func TestCrawl_CtrlCThenResume(t *testing.T) {
	const n = 40
	pages, _ := linkedSite(n)
	site := newWebSite(t, pages, 50*time.Millisecond)
	tmp := t.TempDir()
	db := filepath.Join(tmp, "heed.db")
	flags := []string{"--db", db, "--dir", filepath.Join(tmp, "dl"), "--rate", "60000", "--burst", "100",
		"--max-inflight", "1", "--jitter", "0-0", "-q"}

	first := start(t, append(append([]string{"crawl"}, flags...), "--depth", "1000", site.URL+"/p/000.html")...)
	waitFor(t, "5 pages done", 30*time.Second, func() bool { return doneJobs(t, db) >= 5 })
	require.NoError(t, first.cmd.Process.Signal(os.Interrupt))
	require.Equal(t, 130, first.wait(t), "stderr: %s", first.err.String())
	require.Less(t, doneJobs(t, db), n, "stopped in the middle")
	assert.Contains(t, first.err.String(), "run heed crawl --resume 1 to go on")

	res := heed(t, append(append([]string{"crawl"}, flags...), "--resume", "1")...)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)
	c := crawls(t, db)
	require.Len(t, c, 1)
	assert.Equal(t, int64(n), c[0].Done)
	assert.Zero(t, c[0].Queued+c[0].Active+c[0].Failed)
}
