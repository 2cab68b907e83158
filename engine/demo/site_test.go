package demo_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine/crawl"
	"heed/engine/demo"
	"heed/engine/robots"
)

// get fetches u and returns its status, Content-Type and body.
func get(t *testing.T, u string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

// walk is what a breadth-first crawl of the site, as Heed's rules make it
// (host scope, depth, robots.txt, trap rules, nofollow), saw.
type walk struct {
	fetched    []string          // paths fetched, in order
	depth      map[string]int    // path → depth
	disallowed map[string]string // path → the robots.txt rule
	trapped    map[string]string // path → the trap rule
	linkedFrom map[string]bool   // paths some HTML page links
	outside    int               // links to other hosts
	deepest    []string          // links past the depth, not followed
	broken     []string          // in-scope pages that did not answer 200
	rules      *robots.Rules
}

func crawlSite(t *testing.T, base string, depth int) walk {
	t.Helper()
	seed, err := url.Parse(base + "/")
	require.NoError(t, err)
	w := walk{depth: map[string]int{}, disallowed: map[string]string{}, trapped: map[string]string{},
		linkedFrom: map[string]bool{}}
	status, _, body := get(t, base+"/robots.txt")
	require.Equal(t, http.StatusOK, status)
	w.rules = robots.Parse(body, "heed")
	type item struct {
		u     *url.URL
		depth int
	}
	seen := map[string]bool{crawl.Key(seed): true}
	queue := []item{{seed, 0}}
	add := func(u *url.URL, d int) {
		if u.Host != seed.Host {
			w.outside++
			return
		}
		k := crawl.Key(u)
		if seen[k] {
			return
		}
		if d > depth {
			w.deepest = append(w.deepest, u.RequestURI())
			return
		}
		seen[k] = true
		if why, trapped := crawl.Trap(u); trapped {
			w.trapped[u.RequestURI()] = why
			return
		}
		if ok, rule := w.rules.Allowed(u.RequestURI()); !ok {
			w.disallowed[u.RequestURI()] = rule
			return
		}
		queue = append(queue, item{u, d})
	}
	for _, sm := range w.rules.Sitemaps() {
		status, _, body := get(t, sm)
		require.Equal(t, http.StatusOK, status, sm)
		m, err := crawl.ParseSitemap(bytes.NewReader(body))
		require.NoError(t, err)
		for _, u := range m.URLs {
			add(u, 1)
		}
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		p := it.u.RequestURI()
		w.fetched = append(w.fetched, p)
		w.depth[p] = it.depth
		status, ctype, body := get(t, it.u.String())
		if status != http.StatusOK {
			w.broken = append(w.broken, p)
			continue
		}
		if !crawl.IsHTML(ctype) {
			continue
		}
		page, err := crawl.Extract(bytes.NewReader(body), it.u, nil, "heed")
		require.NoError(t, err)
		for _, l := range page.Links {
			if l.URL.Host == seed.Host {
				w.linkedFrom[l.URL.Path] = true
			}
			add(l.URL, it.depth+1)
		}
	}
	return w
}

// The demo site as Heed crawls it with its defaults (depth 5): a few
// dozen pages, pictures and a style sheet, no broken link; robots.txt
// keeps the staff area out, and pages link into it; the sitemap adds pages
// no page links; the calendar goes on past the depth; the archive is
// caught by the trap rule.
func TestSite_W1_W4_W6_W7_ACrawlWithHeedsRules(t *testing.T) {
	srv := httptest.NewServer(demo.NewSite())
	t.Cleanup(srv.Close)
	w := crawlSite(t, srv.URL, crawl.DefaultDepth)

	assert.Empty(t, w.broken, "every link in scope answers")
	assert.GreaterOrEqual(t, len(w.fetched), 30, "a few dozen pages")
	assert.LessOrEqual(t, len(w.fetched), 45, "short enough to watch at its crawl-delay: %v", w.fetched)
	for _, p := range []string{"/", "/style.css", "/img/logo.svg", "/img/harbour.png", "/books/the-patient-crawler.html",
		"/guides/wifi.html", "/archive/older/"} {
		assert.Contains(t, w.fetched, p)
	}

	// robots.txt (W4, W5): the staff area is linked, and kept out.
	d, ok := w.rules.CrawlDelay()
	assert.True(t, ok)
	assert.Equal(t, 2*time.Second, d)
	assert.Equal(t, []string{srv.URL + "/sitemap.xml"}, w.rules.Sitemaps())
	assert.Equal(t, "Disallow: /private/", w.disallowed["/private/"])
	assert.Equal(t, "Disallow: /private/", w.disallowed["/private/reservations.html?book=winter-ferries"],
		"each book links its reservation form")
	assert.Contains(t, w.disallowed, "/private/annual-report.html", "the sitemap's private page is kept out too")
	for _, p := range w.fetched {
		assert.False(t, strings.HasPrefix(p, "/private/"), p)
	}

	// The sitemap (W7) adds pages that no page links.
	for _, p := range []string{"/news/2026-spring.html", "/news/2026-summer.html", "/books/out-of-print.html"} {
		assert.Contains(t, w.fetched, p)
		assert.False(t, w.linkedFrom[p], "%s is in the sitemap only", p)
		assert.Equal(t, 1, w.depth[p], "sitemap URLs enter at depth 1")
	}

	// The calendar: the depth ends it, while its last month still links on.
	assert.Contains(t, w.fetched, "/calendar/2026/05/")
	assert.NotContains(t, w.fetched, "/calendar/2026/06/")
	assert.Contains(t, w.deepest, "/calendar/2026/06/")

	// The archive: one segment repeated, caught by the trap rule (W6).
	assert.Equal(t, `path segment "older" repeated 4 times`, w.trapped["/archive/older/older/older/older/"])

	assert.Positive(t, w.outside, "a link to another host, out of scope")
	assert.NotContains(t, w.fetched, "/search?q=tides", "rel=nofollow is not followed")
}

// The calendar and the archive go on for ever; anything else unknown is
// 404.
func TestSite_TrapsGoOnForEver(t *testing.T) {
	srv := httptest.NewServer(demo.NewSite())
	t.Cleanup(srv.Close)
	links := func(p string) []string {
		status, _, body := get(t, srv.URL+p)
		require.Equal(t, http.StatusOK, status, p)
		u, _ := url.Parse(srv.URL + p)
		page, err := crawl.Extract(bytes.NewReader(body), u, nil, "heed")
		require.NoError(t, err)
		var out []string
		for _, l := range page.Links {
			out = append(out, l.URL.Path)
		}
		return out
	}
	assert.Contains(t, links("/calendar/2026/12/"), "/calendar/2027/01/")
	assert.Contains(t, links("/calendar/9998/12/"), "/calendar/9999/01/")
	deep := "/archive/" + strings.Repeat("older/", 30)
	assert.Contains(t, links(deep), deep+"older/")
	for _, p := range []string{"/calendar/2026/13/", "/calendar/2026/1/", "/archive/newer/", "/books/nothing.html", "/img/none.png", "/search"} {
		status, _, _ := get(t, srv.URL+p)
		assert.Equal(t, http.StatusNotFound, status, p)
	}
}

// Every resource is the same bytes on every request and every server, with
// a strong ETag, and serves ranges.
func TestSite_Deterministic(t *testing.T) {
	a := httptest.NewServer(demo.NewSite())
	t.Cleanup(a.Close)
	b := httptest.NewServer(demo.NewSite())
	t.Cleanup(b.Close)
	for _, p := range []string{"/", "/books/", "/img/garden.png", "/style.css", "/calendar/2031/07/", "/archive/older/"} {
		_, ta, ba := get(t, a.URL+p)
		_, tb, bb := get(t, b.URL+p)
		assert.Equal(t, ta, tb, p)
		assert.Equal(t, ba, bb, p)
	}
	req, _ := http.NewRequest(http.MethodGet, a.URL+"/img/garden.png", nil)
	req.Header.Set("Range", "bytes=0-7")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusPartialContent, resp.StatusCode)
	assert.Equal(t, "\x89PNG\r\n\x1a\n", string(body))
	assert.Regexp(t, `^"[0-9a-f]{24}"$`, resp.Header.Get("ETag"))
	assert.NotEmpty(t, resp.Header.Get("Last-Modified"))
}

// StartSite serves the site on a loopback address of its own, logs what it
// answered, and frees its port on Close; the robots.txt names the
// server's own address in its Sitemap line.
func TestSite_StartSiteOnLoopback(t *testing.T) {
	s, err := demo.StartSite("")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(s.Addr, "127.0.0."), s.Addr)
	assert.Equal(t, "http://"+s.Addr+"/", s.URL)
	status, ctype, body := get(t, s.URL+"robots.txt")
	assert.Equal(t, http.StatusOK, status)
	assert.True(t, strings.HasPrefix(ctype, "text/plain"))
	assert.Equal(t, "# Harbour Town Library: crawlers welcome, but not in the staff area.\n"+
		"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n\nSitemap: "+s.URL+"sitemap.xml\n", string(body))
	log := s.Log()
	require.Len(t, log, 1)
	assert.Equal(t, demo.Request{Time: log[0].Time, Host: "site", Method: "GET", Path: "/robots.txt", Status: 200,
		Bytes: int64(len(body))}, log[0])
	require.NoError(t, s.Close())
	_, err = http.Get(s.URL)
	assert.Error(t, err, "closed")

	// Without a Crawl-delay, for tests that do not wait.
	site := demo.NewSite()
	site.CrawlDelay = 0
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	_, _, body = get(t, srv.URL+"/robots.txt")
	assert.NotContains(t, string(body), "Crawl-delay")
	assert.True(t, slices.Contains(strings.Split(string(body), "\n"), "Disallow: /private/"))
}
