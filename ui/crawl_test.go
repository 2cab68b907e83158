package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/engine/crawl"
	"heed/engine/demo"
)

// run starts the harness's engine: it fetches from loopback servers.
func (h *harness) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = h.eng.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// fast lets host take requests as fast as a test wants.
func (h *harness) fast(t *testing.T, host string) {
	t.Helper()
	tu := engine.DefaultTunables()
	tu.RatePerMin, tu.Burst, tu.MaxInflight, tu.JitterMax = 60000, 100, 4, 0
	require.NoError(t, h.eng.SetHostTunables(context.Background(), host, tu))
}

// hostOf is u's host key.
func hostOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	require.NoError(t, err)
	k, err := engine.HostKeyOf(p)
	require.NoError(t, err)
	return k
}

// SPEC §10: the Crawl… dialog starts a crawl with what it was given —
// seeds, scope, depth, max pages, robots.txt, include and exclude — and
// the Crawls tab then shows it selected. What the engine refuses is said
// in the dialog, which stays open, and nothing is stored.
func TestCrawl_W1_DialogStartsACrawlWithItsOptions(t *testing.T) {
	h := newHarness(t)
	test.Tap(h.w.crawlBtn)
	d := h.w.crawlDlg
	require.NotNil(t, d)
	assert.True(t, d.robots.Checked, "robots.txt is obeyed unless said otherwise")
	assert.Equal(t, "5", d.depth.Text, "the default depth")
	assert.Equal(t, scopes[0].label, d.scope.Selected, "host scope by default")

	ctx := context.Background()
	refused := []struct{ depth, include, msg string }{
		{"-1", "", `depth: "-1" is not a whole number of 0 or more`},
		{"two", "", `depth: "two" is not a whole number`},
		{"2", "(", "Not started — "}, // the engine's own word on the pattern
	}
	d.seeds.SetText("https://crawl.example/docs/guide.html\n\n  https://crawl.example/docs/api/  \n")
	for _, c := range refused {
		d.depth.SetText(c.depth)
		d.include.SetText(c.include)
		test.Tap(d.start)
		h.w.bg.Wait()
		assert.True(t, d.errLabel.Visible(), c.msg)
		assert.Contains(t, d.errLabel.Text, c.msg)
		crawls, err := h.eng.Crawls(ctx)
		require.NoError(t, err)
		assert.Empty(t, crawls, "nothing stored")
	}
	assert.Greater(t, len(d.errLabel.Text), len("Not started — "), "with the reason")

	d.scope.SetSelected(scopes[2].label)
	d.depth.SetText("2")
	d.maxPages.SetText("50")
	d.robots.SetChecked(false)
	d.include.SetText(`/docs/`)
	d.exclude.SetText("\\?print=\n/old/")
	test.Tap(d.start)
	h.w.bg.Wait()
	assert.False(t, d.errLabel.Visible(), d.errLabel.Text)

	crawls, err := h.eng.Crawls(ctx)
	require.NoError(t, err)
	require.Len(t, crawls, 1)
	c := crawls[0]
	assert.Equal(t, []string{"https://crawl.example/docs/guide.html", "https://crawl.example/docs/api/"}, c.Seeds)
	assert.Equal(t, "prefix", c.Scope)
	assert.Equal(t, 2, c.Depth)
	assert.Equal(t, 50, c.MaxPages)
	assert.False(t, c.Robots)
	assert.Equal(t, []string{"/docs/"}, c.Include)
	assert.Equal(t, []string{`\?print=`, "/old/"}, c.Exclude)
	assert.Equal(t, int64(2), c.Counts.Queued, "both seeds queued")

	assert.Equal(t, tabCrawls, h.w.tabs.Selected().Text, "the Crawls tab shows it")
	assert.Equal(t, c.ID, h.w.crawls.selected)
	require.Len(t, h.w.crawls.rows, 1)
	assert.Contains(t, h.w.crawls.detail.Text, "scope prefix, depth 2, at most 50 pages, ignores robots.txt")
	h.w.tickNow(time.Now())
	assert.Contains(t, h.w.status.Text, "crawl 1 started: 2 seeds queued")
}

func tableID(row, col int) widget.TableCellID { return widget.TableCellID{Row: row, Col: col} }

// crawlCell is the text of the Crawls table's cell for row and col.
func crawlCell(h *harness, row, col int) *cell {
	c := newCell()
	h.w.crawls.updateCell(tableID(row, col), c)
	return c
}

// W10: the Crawls tab shows a crawl's pages done, queued, skipped and
// failed, its links out of scope and its bytes, as the engine counts them,
// once the crawl of the demo site has ended.
func TestCrawls_W10_ShowsWhatACrawlDid(t *testing.T) {
	h := newHarness(t)
	site := demo.NewSite()
	site.CrawlDelay = 0
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	h.fast(t, hostOf(t, srv.URL))
	h.run(t)
	id, _, err := h.eng.StartCrawl(context.Background(), engine.Crawl{Seeds: []string{srv.URL + "/"}, Depth: 1, Robots: true})
	require.NoError(t, err)

	var c engine.Crawl
	require.Eventually(t, func() bool {
		cs, err := h.eng.Crawls(context.Background())
		require.NoError(t, err)
		c = cs[0]
		return c.Counts.Done > 5 && left(&c) == 0
	}, 20*time.Second, 50*time.Millisecond, "the crawl ends")
	h.w.selectTab(tabCrawls)
	h.w.bg.Wait()
	require.Len(t, h.w.crawls.rows, 1)
	assert.Equal(t, id, h.w.crawls.rows[0].ID)

	assert.Equal(t, srv.URL+"/", crawlCell(h, 0, ccSeeds).full)
	assert.Equal(t, "host · depth 1", crawlCell(h, 0, ccScope).full)
	assert.Equal(t, "finished", crawlCell(h, 0, ccState).full)
	assert.Equal(t, fmtInt(c.Counts.Done), crawlCell(h, 0, ccDone).full)
	assert.Equal(t, "0", crawlCell(h, 0, ccQueued).full)
	assert.Positive(t, c.Counts.Skipped, "the staff area, which robots.txt keeps out")
	assert.Equal(t, fmtInt(c.Counts.Skipped), crawlCell(h, 0, ccSkipped).full)
	assert.Equal(t, fmtInt(c.Counts.Failed), crawlCell(h, 0, ccFailed).full)
	assert.Positive(t, c.OutOfScope, "the link to another host")
	assert.Equal(t, fmtInt(c.OutOfScope), crawlCell(h, 0, ccOut).full)
	assert.Equal(t, fmtBytes(c.Bytes), crawlCell(h, 0, ccBytes).full)
	all := ended(&c)
	assert.Equal(t, fmtInt(all)+" / "+fmtInt(max(c.Pages, all)), crawlCell(h, 0, ccProgress).full)
	assert.Equal(t, float32(1), crawlCell(h, 0, ccProgress).frac)

	// Selected, its pages show below: each with its depth, the page that
	// linked to it, and what came of it.
	h.w.crawls.table.OnSelected(tableID(0, ccSeeds))
	h.w.bg.Wait()
	pages := h.w.crawls.pages
	require.NotEmpty(t, pages.rows)
	assert.Equal(t, int(c.Pages), len(pages.rows), "every page of a small crawl")
	byURL := map[string]jobRow{}
	for _, r := range pages.rows {
		byURL[r.rec.URL] = r
	}
	cellOf := func(u string, col int) string {
		r, ok := byURL[u]
		require.True(t, ok, u)
		c := newCell()
		pages.updateCell(tableID(slicesIndex(pages.rows, r.rec.ID), col), c)
		return c.full
	}
	staff := srv.URL + "/private/"
	assert.Equal(t, "skipped", cellOf(staff, cpState))
	assert.Equal(t, "1", cellOf(staff, cpDepth))
	assert.Equal(t, srv.URL+"/", cellOf(staff, cpFoundOn))
	assert.Equal(t, "skipped: the site's robots.txt keeps crawlers out (Disallow: /private/)", cellOf(staff, cpResult))
	assert.Equal(t, "a seed", cellOf(srv.URL+"/", cpFoundOn))
	assert.Equal(t, "done", cellOf(srv.URL+"/about.html", cpState))
	assert.Regexp(t, ` → 127\.0\.0\.1:\d+/about\.html$`, cellOf(srv.URL+"/about.html", cpResult), "saved as HOST/PATH")
}

// slicesIndex is the row of job id in rows.
func slicesIndex(rows []jobRow, id int64) int {
	for i, r := range rows {
		if r.rec.ID == id {
			return i
		}
	}
	return -1
}

// W10: Pause, Resume and Cancel change the selected crawl's state in the
// engine, and each is on only where it acts; Cancel asks first.
func TestCrawls_W10_PauseResumeCancel(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	id, _, err := h.eng.StartCrawl(ctx, engine.Crawl{Seeds: []string{"https://held.example/", "https://held.example/b/"}, Robots: true})
	require.NoError(t, err)
	cv := h.w.crawls
	assert.True(t, cv.pause.Disabled(), "nothing selected")
	h.w.selectTab(tabCrawls)
	h.w.bg.Wait()
	require.Equal(t, id, cv.selected, "the newest crawl, selected by itself")
	cv.table.OnSelected(tableID(0, ccSeeds))
	require.Equal(t, id, cv.selected)
	state := func() engine.CrawlState {
		cs, err := h.eng.Crawls(ctx)
		require.NoError(t, err)
		return cs[0].State
	}
	assert.Equal(t, "crawling", crawlCell(h, 0, ccState).full)
	assert.Equal(t, "2", crawlCell(h, 0, ccQueued).full)
	assert.True(t, cv.resume.Disabled())

	test.Tap(cv.pause)
	h.w.bg.Wait()
	assert.Equal(t, engine.CrawlPaused, state())
	assert.Equal(t, "paused", crawlCell(h, 0, ccState).full)
	assert.Equal(t, "2", crawlCell(h, 0, ccQueued).full, "its jobs wait, paused")
	assert.True(t, cv.pause.Disabled())
	assert.False(t, cv.resume.Disabled())

	test.Tap(cv.resume)
	h.w.bg.Wait()
	assert.Equal(t, engine.CrawlRunning, state())
	assert.Equal(t, "crawling", crawlCell(h, 0, ccState).full)

	test.Tap(cv.cancel)
	require.NotNil(t, cv.confirm, "Cancel asks first")
	assert.Contains(t, cv.confirm.msg.Text, "Its 2 pages not fetched yet are cancelled")
	test.Tap(cv.confirm.keep)
	h.w.bg.Wait()
	assert.Nil(t, cv.confirm)
	assert.Equal(t, engine.CrawlRunning, state(), "kept")

	test.Tap(cv.cancel)
	test.Tap(cv.confirm.ok)
	h.w.bg.Wait()
	assert.Equal(t, engine.CrawlCancelled, state())
	assert.Equal(t, "cancelled", crawlCell(h, 0, ccState).full)
	for _, b := range []struct {
		name string
		on   bool
	}{{"pause", !cv.pause.Disabled()}, {"resume", !cv.resume.Disabled()}, {"cancel", !cv.cancel.Disabled()}} {
		assert.False(t, b.on, "%s is off for a cancelled crawl", b.name)
	}
	jobs, err := h.db.Jobs(ctx, engine.JobQuery{Host: "held.example"})
	require.NoError(t, err)
	for _, j := range jobs {
		assert.Equal(t, engine.JobCancelled, j.State)
	}
}

// W10, W4, W5: a host whose robots.txt keeps a folder out shows its
// robots state and crawl-delay in the hosts table, which gains a Robots
// column for it, and in full when selected, with the rule that kept URLs
// out; a host whose robots.txt cannot be read shows that it disallows
// everything for now.
func TestHosts_W10_RobotsStateAndRules(t *testing.T) {
	h := newHarness(t)
	require.Len(t, h.w.hosts.table.cols, len(hostColumns)-1, "no Robots column before any crawl")
	srv := httptest.NewServer(demo.NewSite()) // Crawl-delay: 2
	t.Cleanup(srv.Close)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	site, busy := hostOf(t, srv.URL), hostOf(t, down.URL)
	h.fast(t, busy)
	h.run(t)
	ctx := context.Background()
	_, _, err := h.eng.StartCrawl(ctx, engine.Crawl{Seeds: []string{srv.URL + "/"}, Depth: 1, Robots: true})
	require.NoError(t, err)
	_, _, err = h.eng.StartCrawl(ctx, engine.Crawl{Seeds: []string{down.URL + "/"}, Depth: 1, Robots: true})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		skipped, err := h.db.Jobs(ctx, engine.JobQuery{Host: site, State: engine.JobSkipped})
		require.NoError(t, err)
		v, ok := h.eng.Robots(busy)
		return len(skipped) > 0 && ok && strings.HasPrefix(v.State, "disallow all")
	}, 20*time.Second, 50*time.Millisecond, "robots.txt read, the home page's links in")

	h.w.poll.loadCounts()
	h.w.tickNow(time.Now())
	require.Len(t, h.w.hosts.table.cols, len(hostColumns), "the Robots column")
	assert.Equal(t, "ok, crawl-delay 2 s", h.cellAt(t, site, colRobots).full)
	bad := h.cellAt(t, busy, colRobots)
	assert.Equal(t, "disallow all (HTTP 503)", bad.full)
	assert.Equal(t, paintBackoff, bad.bg.FillColor, "it holds the host back: a badge")
	s, _ := h.eng.Core().HostSnapshot(site)
	assert.Equal(t, 2*time.Second, s.CrawlDelay)

	h.w.hosts.setSelected(site)
	h.w.tickNow(time.Now())
	detail := h.w.hosts.robots
	require.True(t, detail.Visible())
	assert.Regexp(t, `^robots.txt: ok \(HTTP 200, fetched \d\d:\d\d:\d\d\) · 1 rule for \*, crawl-delay 2 s: `+
		`a request every 2 s at most · kept out so far: Disallow: /private/ \(\d+ URLs?\)$`, detail.Text)

	h.w.hosts.setSelected(busy)
	h.w.tickNow(time.Now())
	assert.Regexp(t, `^robots.txt: disallow all \(HTTP 503\)( · read again in .+)?$`, detail.Text)

	// A window too narrow for every column leaves Robots out; the selected
	// host's details still say it.
	h.w.win.Resize(fyne.NewSize(900, 600))
	h.w.tickNow(time.Now())
	assert.Len(t, h.w.hosts.table.cols, len(hostColumns)-1)
	assert.True(t, detail.Visible())
	h.w.win.Resize(fyne.NewSize(1240, 760))
	h.w.tickNow(time.Now())
	assert.Len(t, h.w.hosts.table.cols, len(hostColumns))
}

// W6: a skipped job says so in the Jobs tab, with the rule that skipped
// it, and its detail line where the crawl found it and at what depth.
func TestJobs_W6_SkippedJobShowsItsReason(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	id, _, err := h.eng.StartCrawl(ctx, engine.Crawl{Seeds: []string{"https://trap.example/"}, Robots: true})
	require.NoError(t, err)
	found := "https://trap.example/archive/older/older/older/"
	var jobs []engine.NewJob
	for _, s := range []struct{ u, why string }{
		{found + "older/", "crawler trap: path segment \"older\" repeated 4 times"},
		{"https://trap.example/private/", "robots.txt: Disallow: /private/"},
	} {
		u, _ := url.Parse(s.u)
		jobs = append(jobs, engine.NewJob{URL: s.u, Key: crawl.Key(u), Host: "trap.example", CrawlID: id,
			Depth: 5, FoundOn: found, Skip: s.why})
	}
	_, err = h.db.Enqueue(ctx, jobs, 0)
	require.NoError(t, err)

	h.w.poll.loadCounts()
	h.w.tickNow(time.Now())
	jv := h.w.jobs
	jv.state.SetSelected(string(engine.JobSkipped))
	h.w.bg.Wait()
	require.Len(t, jv.rows(), 2)
	robots, trap := jv.rows()[0], jv.rows()[1] // newest first
	assert.Equal(t, "skipped: the site's robots.txt keeps crawlers out (Disallow: /private/)", robots.why[0])
	assert.Equal(t, `skipped: a crawler trap (path segment "older" repeated 4 times)`, trap.why[0])
	c := newCell()
	jv.updateCell(&robots, jcState, c)
	assert.Equal(t, "skipped", c.full)
	jv.updateCell(&robots, jcWhy, c)
	assert.Equal(t, theme.Color(theme.ColorNameForeground), c.text.Color, "the reason is not dimmed")

	jv.table.OnSelected(tableID(1, jcURL))
	assert.Equal(t, "Job "+strconv.FormatInt(trap.rec.ID, 10)+": "+found+"older/ — "+trap.why[0]+
		" · crawl 1, depth 5, found on "+found, jv.detail.Text)
	jv.table.OnSelected(tableID(0, jcURL))
	assert.Contains(t, jv.detail.Text, "robots.txt keeps crawlers out")
}

// W5: a host waiting for its robots.txt's Crawl-delay says so, and for
// how long, in the words of the State column.
func TestWords_W5_CrawlDelayWait(t *testing.T) {
	now := time.Now()
	s := engine.HostSnapshot{Host: "site", At: now, NextDue: now.Add(1400 * time.Millisecond),
		Waiting: engine.WaitCrawlDelay, CrawlDelay: 2 * time.Second, Burst: 4, MaxInflight: 1, RatePerMin: 60}
	assert.Equal(t, wording{"next request in 1.4 s (robots.txt asks for 2 s between requests)",
		"next request in 1.4 s (crawl-delay 2 s)", "next in 1.4 s (crawl-delay)", "next in 1.4 s"},
		hostSentence(&s, hostFacts{}))
	_, strong, badge := stateLook(&s)
	assert.True(t, badge)
	assert.False(t, strong, "pacing itself: a pale badge")
}
