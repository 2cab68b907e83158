package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"heed/engine/crawl"
	"heed/engine/fetch"
	"heed/engine/robots"
)

// Crawl mode (SPEC §10). A crawl is stored with its rules; each URL it
// finds is a job like any other, which carries its crawl, depth and the
// page that linked to it. When a crawl's page is done, the engine reads
// its links from the saved file and the Store queues the new ones in the
// commit that records the page done (W8). robots.txt is in robotstxt.go.

// crawlRun is a crawl as the engine runs it: its rules, with the scope
// compiled.
type crawlRun struct {
	Crawl
	scope *crawl.Scope
}

// maxIndexDepth is how deep sitemap indexes nest (W7).
const maxIndexDepth = 3

// newCrawlRun compiles c's scope.
func newCrawlRun(c Crawl) (*crawlRun, []*url.URL, error) {
	if len(c.Seeds) == 0 {
		return nil, nil, errors.New("a crawl needs at least one seed URL")
	}
	if c.Depth < 0 {
		return nil, nil, fmt.Errorf("depth: %d is below 0", c.Depth)
	}
	if c.MaxPages < 0 {
		return nil, nil, fmt.Errorf("max pages: %d is below 0", c.MaxPages)
	}
	mode, err := crawl.ParseMode(c.Scope)
	if err != nil {
		return nil, nil, err
	}
	seeds := make([]*url.URL, len(c.Seeds))
	for i, s := range c.Seeds {
		urls, rejects := fetch.ParseURLList(s)
		switch {
		case len(rejects) > 0:
			return nil, nil, fmt.Errorf("seed %q: %s", rejects[0].Text, rejects[0].Reason)
		case len(urls) != 1:
			return nil, nil, fmt.Errorf("seed %q is not one URL", s)
		}
		seeds[i] = urls[0].URL
	}
	scope, err := crawl.NewScope(mode, seeds, c.Include, c.Exclude)
	if err != nil {
		return nil, nil, err
	}
	c.Scope = mode.String()
	return &crawlRun{Crawl: c, scope: scope}, seeds, nil
}

// loadCrawls reads the stored crawls at start-up.
func (e *Engine) loadCrawls(ctx context.Context) error {
	cs, err := e.store.Crawls(ctx)
	if err != nil {
		return fmt.Errorf("loading crawls: %w", err)
	}
	for _, c := range cs {
		cr, _, err := newCrawlRun(c)
		if err != nil {
			// Stored by this engine, so valid when stored; a crawl that no
			// longer compiles finds no more links.
			e.log.Error("a stored crawl is not valid", "crawl", c.ID, "err", err)
			continue
		}
		e.crawls[c.ID] = cr
	}
	return nil
}

// crawlOf returns the crawl with id, nil when none.
func (e *Engine) crawlOf(id int64) *crawlRun {
	if id == 0 {
		return nil
	}
	e.crawlMu.Lock()
	defer e.crawlMu.Unlock()
	return e.crawls[id]
}

// StartCrawl stores a crawl (W1) with its seeds as its first jobs and
// queues them; the links of each page it fetches follow. A seed already
// known (J2, W3) is reported as a duplicate, not fetched again. c's ID,
// State and counts are ignored; the crawl's id is returned.
func (e *Engine) StartCrawl(ctx context.Context, c Crawl) (int64, AddReport, error) {
	var rep AddReport
	defer e.Adding()()
	cr, seeds, err := newCrawlRun(c)
	if err != nil {
		return 0, rep, err
	}
	jobs := make([]NewJob, len(seeds))
	cr.Seeds = make([]string, len(seeds))
	for i, u := range seeds {
		cr.Seeds[i] = u.String()
		jobs[i] = NewJob{URL: u.String(), Key: crawl.Key(u), Host: u.Host}
	}
	cr.State = CrawlRunning
	id, got, err := e.store.CreateCrawl(ctx, cr.Crawl, jobs)
	if err != nil {
		return 0, rep, err
	}
	cr.ID = id
	e.crawlMu.Lock()
	e.crawls[id] = cr
	e.crawlMu.Unlock()
	for i, it := range got {
		if it.Duplicate || it.ID == 0 {
			rep.Duplicates = append(rep.Duplicates, fetch.Redact(jobs[i].URL))
			rep.DuplicateStates = append(rep.DuplicateStates, it.State)
			continue
		}
		rep.Queued = append(rep.Queued, it.ID)
		e.core.Add(it.ID, jobs[i].Host, it.NotBefore)
	}
	return id, rep, nil
}

// Crawls returns every crawl with what it has done, oldest first (W10).
func (e *Engine) Crawls(ctx context.Context) ([]Crawl, error) { return e.store.Crawls(ctx) }

// PauseCrawl holds a crawl as a whole: its queued jobs leave their
// windows, its active ones stop with their parts kept, and the links its
// pages still find are stored paused. It returns the jobs that changed.
func (e *Engine) PauseCrawl(ctx context.Context, id int64) ([]int64, error) {
	return e.setCrawl(ctx, id, CrawlPaused)
}

// ResumeCrawl lets a paused crawl run again.
func (e *Engine) ResumeCrawl(ctx context.Context, id int64) ([]int64, error) {
	return e.setCrawl(ctx, id, CrawlRunning)
}

// CancelCrawl ends a crawl: every job of it not ended is cancelled, and
// no link its pages find is stored any more.
func (e *Engine) CancelCrawl(ctx context.Context, id int64) ([]int64, error) {
	return e.setCrawl(ctx, id, CrawlCancelled)
}

func (e *Engine) setCrawl(ctx context.Context, id int64, to CrawlState) ([]int64, error) {
	cr := e.crawlOf(id)
	if cr == nil {
		return nil, fmt.Errorf("crawl %d: %w", id, ErrNotFound)
	}
	changed, err := e.store.SetCrawlState(ctx, id, to)
	if err != nil {
		return nil, fmt.Errorf("crawl %d: %w", id, err)
	}
	e.crawlMu.Lock()
	cr.State = to
	e.crawlMu.Unlock()
	out := make([]int64, len(changed))
	for i, c := range changed {
		out[i] = c.ID
		if c.To == JobQueued {
			e.core.Add(c.ID, c.Host, c.NotBefore)
			continue
		}
		e.core.Remove(c.ID, c.Host)
		e.mu.Lock()
		if a := e.active[c.ID]; a != nil {
			a.cancel(errUserStop)
		}
		e.mu.Unlock()
	}
	return out, nil
}

// found is what a crawled file led to (W2, W7): the jobs to store with its
// end, the links out of scope, and a note on what was refused.
type found struct {
	jobs       []NewJob
	outOfScope int64
	note       string
}

// discover reads the links of a crawl's page, or the URLs of a sitemap,
// from its saved part (W2: never a second download), base the URL it was
// fetched from after redirects.
func (e *Engine) discover(job Job, res fetch.Result, base *url.URL) found {
	cr := e.crawlOf(job.CrawlID)
	if cr == nil || cr.State == CrawlCancelled {
		return found{}
	}
	ct := res.Header.Get("Content-Type")
	sitemap := job.Kind == KindSitemap || job.Depth == 0 && looksLikeSitemap(ct, base)
	html := !sitemap && crawl.IsHTML(ct) && job.Depth < cr.Depth
	if !sitemap && !html {
		return found{}
	}
	f, err := e.fetch.Open(res.Part)
	if err != nil {
		return found{note: "its links could not be read: " + err.Error()}
	}
	defer f.Close()
	if sitemap {
		fd := e.readSitemap(cr, job, f)
		if fd.note != "" || len(fd.jobs) > 0 || job.Kind == KindSitemap {
			return fd
		}
		// A seed that looked like a sitemap and is not one: an XML page.
		return found{}
	}
	page, err := crawl.Extract(f, base, res.Header, "heed")
	if err != nil {
		return found{note: "its links could not be read: " + err.Error()}
	}
	fd := found{jobs: make([]NewJob, 0, len(page.Links))}
	foundOn := fetch.Redact(job.URL)
	for _, l := range page.Links {
		e.follow(cr, foundOn, l.URL, l.Key, job.Depth+1, KindPage, &fd)
	}
	switch {
	case page.Truncated:
		fd.note = fmt.Sprintf("links read from its first %d MiB only", crawl.MaxHTML>>20)
	case page.Dropped > 0:
		fd.note = fmt.Sprintf("%d links past the first %d left out", page.Dropped, crawl.MaxLinks)
	}
	return fd
}

// looksLikeSitemap says whether a seed's body may be a sitemap (W7): XML
// by its type, or a name ending .xml or .xml.gz.
func looksLikeSitemap(contentType string, u *url.URL) bool {
	ct := strings.ToLower(contentType)
	p := strings.ToLower(u.Path)
	return strings.Contains(ct, "xml") && !crawl.IsHTML(ct) ||
		strings.HasSuffix(p, ".xml") || strings.HasSuffix(p, ".xml.gz")
}

// readSitemap reads a sitemap's URLs (W7): pages at depth 1, nested
// sitemaps one index level deeper, at most maxIndexDepth.
func (e *Engine) readSitemap(cr *crawlRun, job Job, r io.Reader) found {
	sm, err := crawl.ParseSitemap(r)
	var fd found
	if err != nil {
		fd.note = "sitemap: " + err.Error()
		if errors.Is(err, crawl.ErrNotSitemap) && job.Kind != KindSitemap {
			return found{}
		}
	}
	for _, u := range sm.URLs {
		e.follow(cr, fetch.Redact(job.URL), u, crawl.Key(u), 1, KindPage, &fd)
	}
	for _, u := range sm.Sitemaps {
		if job.Depth+1 > maxIndexDepth {
			fd.note = fmt.Sprintf("sitemap: indexes nested more than %d deep are not read", maxIndexDepth)
			break
		}
		e.follow(cr, fetch.Redact(job.URL), u, crawl.Key(u), job.Depth+1, KindSitemap, &fd)
	}
	return fd
}

// follow adds u, found on the page foundOn, to fd as a job of crawl cr at depth
// when the crawl's scope takes it (W1): skipped when a trap rule (W6) or the
// host's robots.txt, if already known, refuses it. key is u's crawl.Key (W3).
func (e *Engine) follow(cr *crawlRun, foundOn string, u *url.URL, key string, depth int, kind JobKind, fd *found) {
	if ok, _ := cr.scope.Allows(u); !ok {
		fd.outOfScope++
		return
	}
	if kind == KindPage && depth > cr.Depth {
		return
	}
	host, err := HostKeyOf(u)
	if err != nil {
		fd.outOfScope++
		return
	}
	j := NewJob{URL: u.String(), Key: key, Host: host, CrawlID: cr.ID, Depth: depth,
		FoundOn: foundOn, Kind: kind}
	if why, trapped := crawl.Trap(u); trapped {
		j.Skip = "crawler trap: " + why
	} else if cr.Robots && !isRobotsTxt(u) {
		if rules := e.robots.known(host); rules != nil {
			if ok, rule := rules.Allowed(u.RequestURI()); !ok {
				j.Skip = robotsSkip(rule)
			}
		}
	}
	fd.jobs = append(fd.jobs, j)
}

// robotsSkip is the reason of a job robots.txt disallows (W6).
func robotsSkip(rule string) string { return "robots.txt: " + rule }

// isRobotsTxt says whether u is a robots.txt, which is always allowed.
func isRobotsTxt(u *url.URL) bool { return u.EscapedPath() == "/robots.txt" }

// sitemapJobs are the jobs of the Sitemap: lines of a host's robots.txt
// (W7), fetched from robotsURL, for the crawl of job.
func (e *Engine) sitemapJobs(job Job, robotsURL string, rules *robots.Rules) []NewJob {
	cr := e.crawlOf(job.CrawlID)
	if cr == nil {
		return nil
	}
	var fd found
	for _, s := range rules.Sitemaps() {
		u, err := url.Parse(s)
		if err != nil || !u.IsAbs() {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		e.follow(cr, robotsURL, u, crawl.Key(u), 0, KindSitemap, &fd)
	}
	return fd.jobs
}

// KnownByDepth groups, by depth, the keys of the found jobs a store reported as
// known already, for the store to lower the depth of those of them still
// waiting in the crawl: a URL found again fewer links from a seed than when
// it was first found takes the smaller depth, so that --depth counts the
// fewest links from a seed, whatever order the hosts' pages came in. (A page
// another host links first, deep in that host's pages, would otherwise
// have its own links left unfollowed.)
func KnownByDepth(found []NewJob, out []Enqueued) map[int][]string {
	var by map[int][]string
	for i, j := range found {
		if j.CrawlID == 0 || !out[i].Duplicate {
			continue
		}
		if by == nil {
			by = map[int][]string{}
		}
		by[j.Depth] = append(by[j.Depth], j.Key)
	}
	return by
}
