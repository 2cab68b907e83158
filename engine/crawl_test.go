package engine_test

// Crawl mode (SPEC §10) end to end: real HTTP over loopback, a real SQLite
// file, the files on disk. No timing assertions: what the sites saw, in
// which order, and what the database and the folder hold.

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/engine/fetch"
	"heed/engine/robots"
)

// page is one resource of a test site.
type page struct {
	status int    // 200 when 0
	ctype  string // text/html when ""
	body   string
	header http.Header
	// serve, when set, answers instead; n counts the requests for the
	// path so far, this one included.
	serve func(w http.ResponseWriter, r *http.Request, n int)
}

// site is a loopback web site whose resources a test sets, and which logs
// the paths it was asked for, in order.
type site struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]page
	log   []string
	count map[string]int
}

func newSite(t *testing.T, pages map[string]page) *site {
	t.Helper()
	s := &site{pages: pages, count: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.URL.RequestURI())
		p, ok := s.pages[r.URL.RequestURI()]
		s.count[r.URL.RequestURI()]++
		n := s.count[r.URL.RequestURI()]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		if p.serve != nil {
			p.serve(w, r, n)
			return
		}
		for k, v := range p.header {
			w.Header()[k] = v
		}
		if p.ctype == "" {
			p.ctype = "text/html; charset=utf-8"
		}
		w.Header().Set("Content-Type", p.ctype)
		if p.status != 0 {
			w.WriteHeader(p.status)
		}
		fmt.Fprint(w, p.body)
	}))
	t.Cleanup(s.Close)
	return s
}

// set replaces the resource at path.
func (s *site) set(path string, p page) {
	s.mu.Lock()
	s.pages[path] = p
	s.mu.Unlock()
}

// requests returns the paths asked for so far, in order.
func (s *site) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// host is the site's host key, as the crawl's folder is named (W9).
func (s *site) host() string { u, _ := url.Parse(s.URL); return u.Host }

// crawl starts a crawl with c's rules (robots on unless c says otherwise
// through noRobots) and runs it until nothing is runnable.
func (r *rig) crawl(c engine.Crawl) int64 {
	r.t.Helper()
	if c.Scope == "" {
		c.Scope = "host"
	}
	id, _, err := r.eng.StartCrawl(context.Background(), c)
	require.NoError(r.t, err)
	r.runIdle()
	return id
}

// crawlOf returns the stored crawl id.
func (r *rig) crawlOf(id int64) engine.Crawl {
	r.t.Helper()
	cs, err := r.db.Crawls(context.Background())
	require.NoError(r.t, err)
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	r.t.Fatalf("no crawl %d", id)
	return engine.Crawl{}
}

// jobAt returns the job of URL u, failing the test when there is none.
func (r *rig) jobAt(u string) engine.Job {
	r.t.Helper()
	j, err := r.jobByURL(u)
	require.NoError(r.t, err, "no job for %s", u)
	return j
}

// tree lists the files under the download folder, as slash paths, sorted.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	}))
	sort.Strings(out)
	return out
}

// W1–W4, W6, W7, W9, W10: a crawl of a small site fetches robots.txt
// first, then exactly the pages in scope that robots.txt allows, follows
// a page's links, its images and its sitemap, skips a disallowed page with
// the rule, counts a link to another host without fetching it, and saves
// every file as HOST/PATH inside the folder.
func TestCrawl_EndToEnd_ExactlyTheAllowedPagesRobotsFirst(t *testing.T) {
	other := newSite(t, map[string]page{"/": {body: "elsewhere"}})
	s := newSite(t, map[string]page{
		"/robots.txt": {ctype: "text/plain", body: "User-agent: *\nDisallow: /private/\nSitemap: /sitemap.xml\n"},
		"/": {body: `<html><head><title>Home</title></head><body>
			<a href="/a.html">a</a> <a href="b/">b</a> <a href="/private/secret.html">secret</a>
			<a href="` + other.URL + `/">other host</a> <img src="/img.png">
			<a rel="nofollow" href="/nofollow.html">not followed</a> <a href="/a.html#again">a again</a>
			</body></html>`},
		"/a.html":              {body: `<a href="/">home</a> <a href="/b/">b</a>`},
		"/b/":                  {body: `<a href="../a.html">a</a> <a href="c.txt">c</a>`},
		"/b/c.txt":             {ctype: "text/plain", body: "c"},
		"/img.png":             {ctype: "image/png", body: "\x89PNG"},
		"/private/secret.html": {body: "secret"},
		"/nofollow.html":       {body: "nofollow"},
		"/sitemap.xml": {ctype: "application/xml", body: `<?xml version="1.0"?>
			<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
			<url><loc>` + "http://HOST/from-sitemap.html" + `</loc></url></urlset>`},
		"/from-sitemap.html": {body: "in the sitemap"},
	})
	s.set("/sitemap.xml", page{ctype: "application/xml", body: strings.ReplaceAll(s.pages["/sitemap.xml"].body, "http://HOST", s.URL)})
	s.set("/robots.txt", page{ctype: "text/plain", body: "User-agent: *\nDisallow: /private/\nSitemap: " + s.URL + "/sitemap.xml\n"})

	r := newRig(t, engine.Options{})
	id := r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 5, Robots: true})

	got := s.requests()
	require.NotEmpty(t, got)
	assert.Equal(t, "/robots.txt", got[0], "robots.txt before any other request (W4)")
	assert.ElementsMatch(t, []string{"/robots.txt", "/", "/a.html", "/b/", "/b/c.txt", "/img.png", "/sitemap.xml",
		"/from-sitemap.html"}, got, "exactly the allowed pages in scope, each once")
	assert.Empty(t, other.requests(), "out of scope: counted, never fetched (W1)")

	secret := r.jobAt(s.URL + "/private/secret.html")
	assert.Equal(t, engine.JobSkipped, secret.State)
	assert.Equal(t, "robots.txt: Disallow: /private/", secret.LastError)
	assert.Equal(t, s.URL+"/", secret.FoundOn)
	assert.Equal(t, 1, secret.Depth)

	c := r.crawlOf(id)
	assert.Equal(t, int64(7), c.Counts.Done, "the seed, a, b, c, the image, the sitemap and its page")
	assert.Equal(t, int64(1), c.Counts.Skipped)
	assert.Equal(t, int64(1), c.OutOfScope, "the other host")

	host := s.host()
	assert.Equal(t, []string{host + "/a.html", host + "/b/c.txt", host + "/b/index.html", host + "/from-sitemap.html",
		host + "/img.png", host + "/index.html", host + "/sitemap.xml"}, tree(t, r.dir), "saved as HOST/PATH (W9)")

	h := r.history(engine.HistoryQuery{})
	var robots []engine.Attempt
	for _, a := range h {
		if a.Outcome == "robots" {
			robots = append(robots, a)
		}
	}
	require.Len(t, robots, 1, "one robots.txt fetch, in history with outcome robots")
	assert.Equal(t, s.URL+"/robots.txt", robots[0].URL)
	assert.Equal(t, 200, robots[0].Status)
	v, ok := r.eng.Robots(host)
	require.True(t, ok)
	assert.Equal(t, "robots: ok", v.String())
}

// robotsThen answers /robots.txt with fail for its first n requests, then
// with body.
func robotsThen(n int, fail func(w http.ResponseWriter, r *http.Request), body string) page {
	return page{serve: func(w http.ResponseWriter, r *http.Request, i int) {
		if i <= n {
			fail(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, body)
	}}
}

func status(code int) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, r *http.Request) {
	c, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		c.Close()
	}
}

// indexOf is where path first is in the log, -1 when not.
func indexOf(log []string, path string) int { return slices.Index(log, path) }

// W4 (RFC 9309 §2.3.1.3): a robots.txt that is unavailable — a 4xx other
// than 429 — allows everything.
func TestCrawl_W4_UnavailableRobotsAllowsAll(t *testing.T) {
	for _, code := range []int{401, 403, 404, 410} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			s := newSite(t, map[string]page{
				"/robots.txt":     {status: code, ctype: "text/plain", body: "User-agent: *\nDisallow: /\n"},
				"/":               {body: `<a href="/private/x.html">x</a>`},
				"/private/x.html": {body: "x"},
			})
			r := newRig(t, engine.Options{})
			r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 1, Robots: true})
			assert.Equal(t, []string{"/robots.txt", "/", "/private/x.html"}, s.requests())
			v, _ := r.eng.Robots(s.host())
			assert.Equal(t, fmt.Sprintf("robots: allow all (HTTP %d)", code), v.String())
		})
	}
}

// W4 (RFC 9309 §2.3.1.4), RELIABILITY 46: while robots.txt is unreachable
// — a 429, a 5xx, no answer, a timeout, redirects without end — nothing
// but robots.txt is fetched; it is fetched again after the host's backoff,
// and once it answers its rules apply.
func TestCrawl_W4_UnreachableRobotsDisallowsAllForNow(t *testing.T) {
	rules := "User-agent: *\nDisallow: /private/\n"
	stall := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	cases := []struct {
		name  string
		fail  func(w http.ResponseWriter, r *http.Request)
		times int
	}{
		{"500", status(500), 2},
		{"503", status(503), 2},
		{"429", status(429), 2},
		{"no answer", hangUp, 2},
		{"timeout", stall, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, map[string]page{
				"/robots.txt":     robotsThen(tc.times, tc.fail, rules),
				"/":               {body: `<a href="/private/x.html">x</a> <a href="/ok.html">ok</a>`},
				"/private/x.html": {body: "x"},
				"/ok.html":        {body: "ok"},
				"/seed2.html":     {body: "a second seed, on the same host, waits too"},
			})
			r := newRig(t, engine.Options{Fetch: fetchTimeouts(300 * time.Millisecond)})
			r.crawl(engine.Crawl{Seeds: []string{s.URL + "/", s.URL + "/seed2.html"}, Depth: 1, Robots: true})
			got := s.requests()
			want := slices.Repeat([]string{"/robots.txt"}, tc.times+1)
			require.GreaterOrEqual(t, len(got), tc.times+1)
			assert.Equal(t, want, got[:tc.times+1], "nothing else while robots.txt is unreachable")
			assert.ElementsMatch(t, append(want, "/", "/ok.html", "/seed2.html"), got)
			assert.Equal(t, engine.JobDone, r.jobAt(s.URL+"/seed2.html").State)
			assert.Equal(t, "robots.txt: Disallow: /private/", r.jobAt(s.URL+"/private/x.html").LastError)
		})
	}
}

// fetchTimeouts sets the response header and idle timeouts.
func fetchTimeouts(d time.Duration) fetch.Config {
	return fetch.Config{ResponseHeaderTimeout: d, IdleTimeout: d}
}

// W4, RELIABILITY 46: a robots.txt that never answers, or redirects without
// end, is never taken as "allow all": the page is not fetched, and its job
// fails with the reason once its attempts are spent.
func TestReliability_H46_RobotsNeverReachedIsNeverAllowAll(t *testing.T) {
	loop := page{serve: func(w http.ResponseWriter, r *http.Request, n int) {
		http.Redirect(w, r, fmt.Sprintf("/robots.txt?hop=%d", n), http.StatusFound)
	}}
	cases := []struct {
		name  string
		robot page
		why   string
	}{
		{"500 every time", page{status: 500, ctype: "text/plain"}, "robots.txt could not be fetched (HTTP 500)"},
		{"a redirect loop", loop, "robots.txt could not be fetched (more than 5 redirects)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pages := map[string]page{"/robots.txt": tc.robot, "/": {body: "home"}}
			for i := 1; i <= 40; i++ {
				pages[fmt.Sprintf("/robots.txt?hop=%d", i)] = loop
			}
			s := newSite(t, pages)
			tun := fast()
			tun.Retry.MaxAttempts = 2
			r := newRig(t, engine.Options{Defaults: tun})
			r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 1, Robots: true})
			assert.NotContains(t, s.requests(), "/", "the page is never fetched")
			j := r.jobAt(s.URL + "/")
			assert.Equal(t, engine.JobFailed, j.State)
			assert.Contains(t, j.LastError, tc.why)
			v, _ := r.eng.Robots(s.host())
			assert.Contains(t, v.String(), "robots: disallow all (")
		})
	}
}

// W4: a robots.txt's redirects are followed, up to five, and the rules at
// the end apply to the host asked.
func TestCrawl_W4_RobotsRedirectsAreFollowed(t *testing.T) {
	s := newSite(t, map[string]page{
		"/robots.txt": {serve: func(w http.ResponseWriter, r *http.Request, _ int) {
			http.Redirect(w, r, "/real-robots.txt", http.StatusMovedPermanently)
		}},
		"/real-robots.txt": {ctype: "text/plain", body: "User-agent: heed\nDisallow: /private/\n"},
		"/":                {body: `<a href="/private/x.html">x</a>`},
	})
	r := newRig(t, engine.Options{})
	r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 1, Robots: true})
	assert.Equal(t, []string{"/robots.txt", "/real-robots.txt", "/"}, s.requests())
	assert.Equal(t, engine.JobSkipped, r.jobAt(s.URL+"/private/x.html").State)
	n := 0
	for _, a := range r.history(engine.HistoryQuery{}) {
		if a.Outcome == "robots" {
			n++
		}
	}
	assert.Equal(t, 2, n, "each request for robots.txt is in history with outcome robots")
}

// W4, RELIABILITY 46: at most 500 KiB of a robots.txt is parsed; rules
// past that are not.
func TestCrawl_W4_RobotsOver500KiB(t *testing.T) {
	body := "User-agent: *\nDisallow: /early/\n" + strings.Repeat("# padding to push the next rule past 500 KiB\n", 12000) +
		"Disallow: /late/\n"
	require.Greater(t, len(body), robots.MaxSize)
	s := newSite(t, map[string]page{
		"/robots.txt":  {ctype: "text/plain", body: body},
		"/":            {body: `<a href="/early/x.html">e</a> <a href="/late/x.html">l</a>`},
		"/late/x.html": {body: "late"},
	})
	r := newRig(t, engine.Options{})
	r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 1, Robots: true})
	assert.Equal(t, engine.JobSkipped, r.jobAt(s.URL+"/early/x.html").State)
	assert.Equal(t, engine.JobDone, r.jobAt(s.URL+"/late/x.html").State)
}

// W4: with --no-robots a crawl never asks for robots.txt.
func TestCrawl_W4_NoRobots(t *testing.T) {
	s := newSite(t, map[string]page{
		"/robots.txt":     {ctype: "text/plain", body: "User-agent: *\nDisallow: /\n"},
		"/":               {body: `<a href="/private/x.html">x</a>`},
		"/private/x.html": {body: "x"},
	})
	r := newRig(t, engine.Options{})
	r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 1, Robots: false})
	assert.Equal(t, []string{"/", "/private/x.html"}, s.requests())
}

// W4: a host's robots.txt is kept a day in the database: a restart does
// not fetch it again. Older than that it is fetched again, and while it is
// unreachable a copy younger than 30 days stands in.
func TestCrawl_W4_RobotsKeptADayThenACopyStandsIn(t *testing.T) {
	up := true
	var mu sync.Mutex
	s := newSite(t, map[string]page{
		"/robots.txt": {serve: func(w http.ResponseWriter, r *http.Request, _ int) {
			mu.Lock()
			defer mu.Unlock()
			if !up {
				w.WriteHeader(503)
				return
			}
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
		}},
		"/":       {body: "home"},
		"/2.html": {body: `<a href="/private/b.html">b</a>`},
		"/3.html": {body: `<a href="/private/c.html">c</a> <a href="/c.html">c</a>`},
		"/c.html": {body: "c"},
	})
	r := newRig(t, engine.Options{})
	r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 1, Robots: true})
	require.Equal(t, []string{"/robots.txt", "/"}, s.requests())

	r.close()
	r.open(engine.Options{})
	r.crawl(engine.Crawl{Seeds: []string{s.URL + "/2.html"}, Depth: 1, Robots: true})
	assert.Equal(t, []string{"/robots.txt", "/", "/2.html"}, s.requests(), "not fetched again after a restart")
	assert.Equal(t, engine.JobSkipped, r.jobAt(s.URL+"/private/b.html").State)

	// Two days later, the host answers 503.
	r.close()
	raw, err := sql.Open("sqlite3", r.dbPath)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE robots SET fetched_at = ?`, time.Now().Add(-48*time.Hour).UnixNano())
	require.NoError(t, err)
	require.NoError(t, raw.Close())
	mu.Lock()
	up = false
	mu.Unlock()
	r.open(engine.Options{})
	r.crawl(engine.Crawl{Seeds: []string{s.URL + "/3.html"}, Depth: 1, Robots: true})
	got := s.requests()[3:]
	assert.Equal(t, "/robots.txt", got[0], "older than a day: fetched again")
	assert.ElementsMatch(t, []string{"/3.html", "/c.html"}, slices.DeleteFunc(got, func(p string) bool {
		return p == "/robots.txt" // asked again after each backoff
	}), "the copy's rules stand in")
	assert.Equal(t, engine.JobSkipped, r.jobAt(s.URL+"/private/c.html").State)
	v, _ := r.eng.Robots(s.host())
	assert.Contains(t, v.State, "HTTP 503 now")
}

// W1: --depth counts links from a seed (0: the seeds only), and
// --max-pages caps the jobs a crawl creates, seeds included.
func TestCrawl_W1_DepthAndMaxPages(t *testing.T) {
	chain := map[string]page{"/robots.txt": {status: 404}}
	for i := range 10 {
		chain[fmt.Sprintf("/%d.html", i)] = page{body: fmt.Sprintf(`<a href="/%d.html">next</a>`, i+1)}
	}
	for _, depth := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("depth %d", depth), func(t *testing.T) {
			s := newSite(t, chain)
			r := newRig(t, engine.Options{})
			id := r.crawl(engine.Crawl{Seeds: []string{s.URL + "/0.html"}, Depth: depth, Robots: false})
			var want []string
			for i := 0; i <= depth; i++ {
				want = append(want, fmt.Sprintf("/%d.html", i))
			}
			assert.Equal(t, want, s.requests())
			for i := 0; i <= depth; i++ {
				assert.Equal(t, i, r.jobAt(fmt.Sprintf("%s/%d.html", s.URL, i)).Depth)
			}
			assert.Equal(t, int64(depth+1), r.crawlOf(id).Pages)
		})
	}

	wide := map[string]page{"/robots.txt": {status: 404}}
	links := ""
	for i := range 50 {
		links += fmt.Sprintf(`<a href="/p%d.html">%d</a>`, i, i)
		wide[fmt.Sprintf("/p%d.html", i)] = page{body: `<a href="/">home</a> <a href="/p0.html">p0</a>`}
	}
	wide["/"] = page{body: links}
	s := newSite(t, wide)
	r := newRig(t, engine.Options{})
	id := r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 5, MaxPages: 10, Robots: false})
	assert.Len(t, r.jobs(), 10, "ten jobs: the seed and the first nine links")
	assert.Len(t, s.requests(), 10)
	c := r.crawlOf(id)
	assert.Equal(t, int64(10), c.Pages)
	assert.Equal(t, int64(10), c.Counts.Done)
}

// W1: --depth counts the fewest links from a seed, whatever order the pages
// come in. Host a is quick and links b's page /p.html at the end of a chain,
// three links deep, before b's own seed, which links it directly, has
// answered: found again closer while it waits, /p.html is crawled at depth
// 1, and the page it links, two links from b's seed, is fetched too.
func TestCrawl_W1_DepthIsTheFewestLinksFromASeed(t *testing.T) {
	b := newSite(t, map[string]page{
		"/p.html": {body: `<a href="/q.html">q</a>`},
		"/q.html": {body: `the end`},
	})
	b.set("/", page{serve: func(w http.ResponseWriter, r *http.Request, n int) {
		// It answers after a's chain is crawled, and its links are stored
		// well before b's next request may go, a second after this one.
		time.Sleep(500 * time.Millisecond)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<a href="/p.html">p</a>`)
	}})
	a := newSite(t, map[string]page{
		"/":       {body: `<a href="/1.html">1</a>`},
		"/1.html": {body: `<a href="/2.html">2</a>`},
		"/2.html": {body: `<a href="` + b.URL + `/p.html">b's page</a>`},
	})
	r := newRig(t, engine.Options{})
	slow := fast()
	slow.RatePerMin, slow.Burst, slow.MaxInflight = 60, 1, 1
	require.NoError(t, r.eng.SetHostTunables(context.Background(), b.host(), slow))
	r.crawl(engine.Crawl{Seeds: []string{a.URL + "/", b.URL + "/"}, Depth: 3, Robots: false})
	assert.Equal(t, []string{"/", "/1.html", "/2.html"}, a.requests())
	assert.Equal(t, []string{"/", "/p.html", "/q.html"}, b.requests())
	assert.Equal(t, 1, r.jobAt(b.URL+"/p.html").Depth)
	assert.Equal(t, 2, r.jobAt(b.URL+"/q.html").Depth)
}

// W3, J2: a URL already known — in this crawl, in another, or queued by
// hand — is not queued again; its de-duplication key is the URL
// normalised, while the URL is fetched as written.
func TestCrawl_W3_OneJobPerURL(t *testing.T) {
	s := newSite(t, map[string]page{
		"/robots.txt": {status: 404},
		"/":           {body: `<a href="/a.html">a</a> <a href="/x/../a.html">a again</a> <a href="/%7Euser/">user</a>`},
		"/a.html":     {body: `<a href="/">home</a> <a href="/~user/">user</a>`},
		"/%7Euser/":   {body: "user"},
	})
	r := newRig(t, engine.Options{})
	r.add(s.URL + "/a.html") // by hand first
	r.runIdle()
	r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 3, Robots: false})
	assert.ElementsMatch(t, []string{"/a.html", "/", "/%7Euser/"}, s.requests(), "each URL once")
	assert.Len(t, r.jobs(), 3)
	_, rep, err := r.eng.StartCrawl(context.Background(), engine.Crawl{Seeds: []string{s.URL + "/"}, Scope: "host", Depth: 3})
	require.NoError(t, err)
	assert.Empty(t, rep.Queued, "a second crawl from a known seed queues nothing")
	assert.Len(t, rep.Duplicates, 1)
}

// W6, RELIABILITY 47: a calendar without end, paths that repeat a segment,
// and URLs that grow stay bounded: caught by the trap rules as skipped jobs
// with the rule, or by the depth; the frontier never grows without end.
func TestReliability_H47_TrapsAreBoundedAndSkippedVisibly(t *testing.T) {
	s := newSite(t, map[string]page{"/robots.txt": {status: 404}})
	handler := func(w http.ResponseWriter, r *http.Request, _ int) {
		p := r.URL.Path
		w.Header().Set("Content-Type", "text/html")
		// Relative links that nest one level deeper each time, a calendar's
		// next month, a session id in the query, and a URL that grows.
		fmt.Fprintf(w, `<a href="loop/">deeper</a> <a href="/cal?month=%d">next</a> <a href="?sid=%d">again</a>
			<a href="%s">longer</a>`, len(p), len(p), p+strings.Repeat("x", 300))
	}
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.URL.RequestURI())
		s.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		handler(w, r, 0)
	})
	r := newRig(t, engine.Options{})
	id := r.crawl(engine.Crawl{Seeds: []string{s.URL + "/loop/"}, Depth: 8, Robots: true})
	c := r.crawlOf(id)
	assert.Less(t, c.Pages, int64(1000), "bounded")
	var trapped []string
	for _, j := range r.jobs() {
		if j.State == engine.JobSkipped {
			trapped = append(trapped, j.LastError)
		}
		assert.LessOrEqual(t, j.Depth, 8)
	}
	assert.Contains(t, trapped, `crawler trap: path segment "loop" repeated 4 times`)
	assert.Contains(t, trapped, "crawler trap: URL over 2,048 bytes")
	for _, p := range s.requests() {
		assert.LessOrEqual(t, strings.Count(p, "loop/"), 3, "a trapped URL is never fetched: %s", p)
	}
}

// W9, RELIABILITY 50: hostile paths in crawled URLs — dot-segments plain
// and escaped, backslashes, a 300-byte segment, names that differ only in
// case, a folder that is a file — stay inside the folder, under the host's
// folder, and overwrite nothing.
func TestReliability_H50_HostilePathsStayInTheTree(t *testing.T) {
	long := strings.Repeat("n", 300)
	s := newSite(t, map[string]page{
		"/robots.txt": {status: 404},
		"/": {body: `<a href="/../../escape.txt">1</a> <a href="/%2e%2e/%2e%2e/escape2.txt">2</a>
			<a href="/a%5C..%5C..%5Cescape3.txt">3</a> <a href="/` + long + `.txt">4</a>
			<a href="/Case.txt">5</a> <a href="/case.txt">6</a> <a href="/dir">7</a> <a href="/dir/inner.txt">8</a>
			<a href="/q?x=/../../etc/passwd">9</a> <a href="/%00nul.txt">10</a> <a href="/con.txt">11</a>`},
	})
	// Every other path answers with its own request line.
	base := s.Config.Handler
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || r.URL.Path == "/robots.txt" {
			base.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		s.log = append(s.log, r.URL.RequestURI())
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, r.URL.RequestURI())
	})
	r := newRig(t, engine.Options{})
	parent := filepath.Dir(r.dir)
	before := tree(t, parent)
	r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 1, Robots: true})

	outside := slices.DeleteFunc(tree(t, parent), func(p string) bool {
		return strings.HasPrefix(p, "downloads/") || slices.Contains(before, p) || strings.HasPrefix(p, "heed.db")
	})
	assert.Empty(t, outside, "nothing outside the download folder")
	files := tree(t, r.dir)
	host := s.host()
	for _, f := range files {
		assert.True(t, strings.HasPrefix(f, host+"/"), "%s is under the host's folder", f)
		assert.LessOrEqual(t, len(filepath.Base(f)), 255)
	}
	done := 0
	for _, j := range r.jobs() {
		require.NotEqual(t, engine.JobFailed, j.State, "%s: %s", j.URL, j.LastError)
		if j.State != engine.JobDone || j.URL == s.URL+"/" {
			continue
		}
		done++
		b, err := os.ReadFile(filepath.Join(r.dir, j.File))
		require.NoError(t, err, j.URL)
		u, _ := url.Parse(j.URL)
		assert.Equal(t, u.RequestURI(), string(b), "%s has its own bytes, nothing overwritten", j.File)
	}
	assert.Equal(t, len(files), done+1, "one file per job")
	assert.Contains(t, files, host+"/Case.txt")
	assert.Contains(t, files, host+"/case.txt")
}

// W2, RELIABILITY 48: links are read from the first 10 MiB of a page only;
// a page that is huge, malformed, deeply nested or not UTF-8 is saved
// whole, read without a crash, and what could not be read is said.
func TestReliability_H48_HostileHTML(t *testing.T) {
	huge := `<a href="/early.html">e</a>` + strings.Repeat("<p>filler</p>", (11<<20)/13) + `<a href="/late.html">l</a>`
	nested := strings.Repeat("<div>", 200000) + `<a href="/nested.html">n</a>`
	latin1 := "<html><body>caf\xe9 <a href=\"/latin.html\">\xe9t\xe9</a></body></html>"
	malformed := `<a href="/broken.html" <<<>>> <a href=/unquoted.html>u</a> <a href="/unclosed.html`
	s := newSite(t, map[string]page{
		"/robots.txt":       {status: 404},
		"/":                 {body: `<a href="/huge.html">1</a> <a href="/nested-page.html">2</a> <a href="/latin1.html">3</a> <a href="/malformed.html">4</a>`},
		"/huge.html":        {body: huge},
		"/nested-page.html": {body: nested},
		"/latin1.html":      {ctype: "text/html; charset=iso-8859-1", body: latin1},
		"/malformed.html":   {body: malformed},
	})
	r := newRig(t, engine.Options{})
	r.crawl(engine.Crawl{Seeds: []string{s.URL + "/"}, Depth: 2, Robots: true})
	got := s.requests()
	for _, p := range []string{"/early.html", "/nested.html", "/latin.html", "/unquoted.html"} {
		assert.Contains(t, got, p)
	}
	assert.NotContains(t, got, "/late.html", "past the first 10 MiB")
	h := r.jobAt(s.URL + "/huge.html")
	assert.Equal(t, engine.JobDone, h.State)
	assert.Equal(t, int64(len(huge)), h.Bytes, "saved whole")
	assert.Equal(t, "links read from its first 10 MiB only", h.LastError)
}

// gzipped compresses b.
func gzipped(t *testing.T, b []byte) string {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	_, err := z.Write(b)
	require.NoError(t, err)
	require.NoError(t, z.Close())
	return buf.String()
}

// W7, RELIABILITY 49: sitemaps and sitemap indexes (plain and gzip) are
// read; an index that lists itself is read once; a sitemap of too many URLs
// and one that is not a sitemap are refused with the reason on their job,
// what was read before the limit kept. (The gzip bomb, 50 MB unpacked, is
// TestCrawl_W7_GzipBomb in engine/crawl: the same refusal, without 50 MB
// through the race detector here.)
func TestReliability_H49_SitemapsAndTheirLimits(t *testing.T) {
	s := newSite(t, map[string]page{"/robots.txt": {status: 404}})
	urlset := func(paths ...string) string {
		var b strings.Builder
		b.WriteString(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, p := range paths {
			fmt.Fprintf(&b, "<url><loc>%s%s</loc></url>", s.URL, p)
		}
		b.WriteString("</urlset>")
		return b.String()
	}
	index := func(paths ...string) string {
		var b strings.Builder
		b.WriteString(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, p := range paths {
			fmt.Fprintf(&b, "<sitemap><loc>%s%s</loc></sitemap>", s.URL, p)
		}
		b.WriteString("</sitemapindex>")
		return b.String()
	}
	many := make([]string, 50010)
	for i := range many {
		many[i] = fmt.Sprintf("/m%d", i)
	}
	s.set("/index.xml", page{ctype: "application/xml", body: index("/index.xml", "/a.xml.gz", "/not-a-sitemap.xml", "/many.xml")})
	s.set("/a.xml.gz", page{ctype: "application/gzip", body: gzipped(t, []byte(urlset("/a.html", "/b.html")))})
	s.set("/not-a-sitemap.xml", page{body: "<html><body>a page</body></html>"})
	s.set("/many.xml", page{ctype: "application/xml", body: urlset(many...)})
	for _, p := range []string{"/a.html", "/b.html", "/m0"} {
		s.set(p, page{body: "page"})
	}
	r := newRig(t, engine.Options{})
	id := r.crawl(engine.Crawl{Seeds: []string{s.URL + "/index.xml"}, Depth: 1, MaxPages: 100, Robots: true})

	for _, p := range []string{"/a.html", "/b.html", "/m0"} {
		j := r.jobAt(s.URL + p)
		assert.Equal(t, engine.JobDone, j.State, p)
		assert.Equal(t, 1, j.Depth, "a sitemap's URLs enter at depth 1")
	}
	assert.Equal(t, 1, countOf(s.requests(), "/index.xml"), "the index that lists itself is read once")
	assert.Contains(t, r.jobAt(s.URL+"/not-a-sitemap.xml").LastError, "sitemap: not a sitemap")
	assert.Contains(t, r.jobAt(s.URL+"/many.xml").LastError, "sitemap: ")
	assert.Contains(t, r.jobAt(s.URL+"/many.xml").LastError, "more than 50,000 URLs")
	assert.LessOrEqual(t, r.crawlOf(id).Pages, int64(100))
}

// countOf is how often path is in log.
func countOf(log []string, path string) int {
	n := 0
	for _, p := range log {
		if p == path {
			n++
		}
	}
	return n
}

// W10: a crawl is paused, resumed and cancelled as a whole: pausing holds
// its queued jobs and stores the links its pages still find paused;
// resuming runs them; cancelling ends every job not ended.
func TestCrawl_W10_PauseResumeCancelAsAWhole(t *testing.T) {
	pages := map[string]page{"/robots.txt": {status: 404}}
	links := ""
	for i := range 20 {
		links += fmt.Sprintf(`<a href="/p%d.html">%d</a>`, i, i)
		pages[fmt.Sprintf("/p%d.html", i)] = page{body: "leaf"}
	}
	pages["/"] = page{body: links}
	s := newSite(t, pages)
	tun := fast()
	r := newRig(t, engine.Options{Defaults: tun})
	ctx := context.Background()
	id, _, err := r.eng.StartCrawl(ctx, engine.Crawl{Seeds: []string{s.URL + "/"}, Scope: "host", Depth: 1})
	require.NoError(t, err)
	changed, err := r.eng.PauseCrawl(ctx, id)
	require.NoError(t, err)
	assert.Len(t, changed, 1, "the seed")
	r.runIdle()
	assert.Empty(t, s.requests(), "a paused crawl fetches nothing")
	assert.Equal(t, engine.CrawlPaused, r.crawlOf(id).State)

	_, err = r.eng.ResumeCrawl(ctx, id)
	require.NoError(t, err)
	r.runIdle()
	c := r.crawlOf(id)
	assert.Equal(t, int64(21), c.Counts.Done)

	// A second crawl, cancelled before it runs: nothing of it is fetched.
	id2, _, err := r.eng.StartCrawl(ctx, engine.Crawl{Seeds: []string{s.URL + "/other.html"}, Scope: "host"})
	require.NoError(t, err)
	_, err = r.eng.CancelCrawl(ctx, id2)
	require.NoError(t, err)
	r.runIdle()
	assert.NotContains(t, s.requests(), "/other.html")
	c2 := r.crawlOf(id2)
	assert.Equal(t, engine.CrawlCancelled, c2.State)
	assert.Equal(t, int64(1), c2.Counts.Cancelled)
	_, err = r.eng.PauseCrawl(ctx, 999)
	assert.ErrorIs(t, err, engine.ErrNotFound)
}
