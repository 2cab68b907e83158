package storetest

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

var crawlTests = []test{
	{"CreateCrawl_W1_W10_StoresTheCrawlWithItsSeeds", testCreateCrawlStoresTheCrawlWithItsSeeds},
	{"Finish_W8_W10_FoundLinksStoredWithTheDone", testFinishFoundLinksStoredWithTheDone},
	{"Finish_W1_W8_MaxPagesBudget", testFinishMaxPagesBudget},
	{"Finish_W1_LinkFoundCloserLowersItsDepth", testFinishLinkFoundCloserLowersItsDepth},
	{"Finish_W8_PausedCrawlStoresLinksPaused", testFinishPausedCrawlStoresLinksPaused},
	{"Finish_W8_CancelledCrawlStoresNoLinks", testFinishCancelledCrawlStoresNoLinks},
	{"CreateCrawl_W3_J2_DuplicatesAcrossCrawls", testCreateCrawlDuplicatesAcrossCrawls},
	{"SetCrawlState_W10_MovesItsJobsAndNoOthers", testSetCrawlStateMovesItsJobsAndNoOthers},
	{"Robots_W4_RoundTripAcrossReopen", testRobotsRoundTripAcrossReopen},
}

// link is a URL crawl found at depth on page foundOn, keyed by its URL.
func link(crawl int64, host, url string, depth int, foundOn string) engine.NewJob {
	return engine.NewJob{URL: url, Key: url, Host: host, CrawlID: crawl, Depth: depth, FoundOn: foundOn}
}

// crawlOf returns the stored crawl with id.
func crawlOf(t testing.TB, s engine.Reader, id int64) engine.Crawl {
	t.Helper()
	cs, err := s.Crawls(bg)
	require.NoError(t, err)
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	require.Failf(t, "no such crawl", "crawl %d is not listed", id)
	return engine.Crawl{}
}

// urls returns the URL of every job, as a set.
func urls(t testing.TB, s engine.Reader) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	eachJob(t, s, func(j engine.Job) { out[j.URL] = true })
	return out
}

// startAndFinish starts job id and finishes it done with body bytes and the links it found.
func startAndFinish(t testing.TB, s engine.Store, id, bytes int64, found ...engine.NewJob) []engine.Enqueued {
	t.Helper()
	_, err := s.Start(bg, id, "")
	require.NoError(t, err)
	got, err := s.Finish(bg, engine.End{JobID: id, State: engine.JobDone, File: "index.html", Status: 200,
		Resume: engine.Resume{Bytes: bytes, Size: bytes}, Found: found})
	require.NoError(t, err)
	require.Len(t, got, len(found), "a report for each link")
	return got
}

// sortChanged orders changes by job id (SetCrawlState reports them in no set order).
func sortChanged(cs []engine.Changed) []engine.Changed {
	slices.SortFunc(cs, func(a, b engine.Changed) int { return cmp.Compare(a.ID, b.ID) })
	return cs
}

// W1, W10: CreateCrawl stores a crawl, running, with its rules and its seeds as its first jobs,
// committed together; a seed already known (J2, W3) is reported a duplicate and not queued again.
// Crawls lists it with what it has done, across a reopen.
func testCreateCrawlStoresTheCrawlWithItsSeeds(t *testing.T, o Opener) {
	s := open(t, o)
	known := enqueueURLs(t, s, "a.example", "https://a.example/known")[0]
	c := engine.Crawl{Seeds: []string{"https://a.example/", "https://a.example/known", "https://b.example/sitemap.xml"},
		Scope: "domain", Depth: 3, MaxPages: 100, Include: []string{`\.html$`}, Exclude: []string{`/private/`, `\?`},
		Robots: true, State: engine.CrawlRunning}
	seeds := []engine.NewJob{
		{URL: "https://a.example/", Key: "https://a.example/", Host: "a.example"},
		{URL: "https://a.example/known", Key: "https://a.example/known", Host: "a.example"},
		{URL: "https://b.example/sitemap.xml", Key: "https://b.example/sitemap.xml", Host: "b.example", Kind: engine.KindSitemap},
		{URL: "https://a.example/", Key: "https://a.example/", Host: "a.example"}, // twice
	}
	from := time.Now()
	id, res, err := s.CreateCrawl(bg, c, seeds)
	to := time.Now()
	require.NoError(t, err)
	assert.NotZero(t, id)
	require.Len(t, res, len(seeds))
	for _, i := range []int{0, 2} {
		assert.False(t, res[i].Duplicate, "seed %d", i)
		assert.NotZero(t, res[i].ID, "seed %d", i)
		assert.Equal(t, engine.JobQueued, res[i].State, "seed %d", i)
		assertBetween(t, from, to, res[i].NotBefore, "seed %d: due now", i)
	}
	assert.NotEqual(t, res[0].ID, res[2].ID)
	assert.True(t, res[1].Duplicate, "a known seed is not queued again (J2, W3)")
	assert.True(t, res[3].Duplicate, "a seed given twice is queued once")

	j, err := s.Job(bg, res[0].ID)
	require.NoError(t, err)
	assert.Equal(t, id, j.CrawlID, "a seed is its crawl's job")
	assert.Zero(t, j.Depth)
	assert.Empty(t, j.FoundOn, "a seed was found on no page")
	assert.Equal(t, engine.KindPage, j.Kind)
	assert.Equal(t, engine.JobQueued, j.State)
	j, err = s.Job(bg, res[2].ID)
	require.NoError(t, err)
	assert.Equal(t, id, j.CrawlID)
	assert.Equal(t, engine.KindSitemap, j.Kind, "a sitemap seed is read as one (W7)")
	j, err = s.Job(bg, known)
	require.NoError(t, err)
	assert.Zero(t, j.CrawlID, "the known job is left as it was")

	check := func(when string) {
		t.Helper()
		cs, err := s.Crawls(bg)
		require.NoError(t, err)
		require.Len(t, cs, 1, when)
		got := cs[0]
		assertBetween(t, from, to, got.Created, "%s: created now", when)
		want := c
		want.ID, want.Created = id, got.Created
		want.Counts, want.Pages = engine.Counts{Queued: 2}, 2
		equal(t, want, got, when)
	}
	check("created")
	assertCounts(t, s)
	s.Reopen()
	check("reopened")
}

// W8, W10: the links a crawl's page found are stored with its done, when Finish returns: each new
// one a job of the crawl at its depth, found on the page, queued (or skipped with its reason, W6);
// one known already, or twice on the page, is a duplicate (W3). The crawl counts the jobs it
// created, the links out of scope and its done pages' bytes.
func testFinishFoundLinksStoredWithTheDone(t *testing.T, o Opener) {
	s := open(t, o)
	const seed = "https://a.example/"
	id, res, err := s.CreateCrawl(bg, engine.Crawl{Seeds: []string{seed}, Scope: "host", Depth: 2, Robots: true},
		[]engine.NewJob{{URL: seed, Key: seed, Host: "a.example"}})
	require.NoError(t, err)
	page := res[0].ID
	_, err = s.Start(bg, page, "index.html.part")
	require.NoError(t, err)
	why := "robots.txt: Disallow: /private/"
	found := []engine.NewJob{
		link(id, "a.example", "https://a.example/a", 1, seed),
		{URL: "https://a.example/sitemap.xml", Key: "https://a.example/sitemap.xml", Host: "a.example", CrawlID: id,
			Depth: 1, FoundOn: seed, Kind: engine.KindSitemap},
		{URL: "https://a.example/private/c", Key: "https://a.example/private/c", Host: "a.example", CrawlID: id,
			Depth: 1, FoundOn: seed, Skip: why},
		link(id, "a.example", "https://a.example/a", 1, seed), // twice on the page
		link(id, "a.example", seed, 1, seed),                  // the page itself
	}
	from := time.Now()
	got, err := s.Finish(bg, engine.End{JobID: page, State: engine.JobDone, Attempt: row(page, "ok", 200),
		File: "index.html", Status: 200, Resume: engine.Resume{Part: "index.html.part", Bytes: 1234, Size: 1234},
		Found: found, OutOfScope: 7})
	to := time.Now()
	require.NoError(t, err)
	require.Len(t, got, len(found), "a report for each link, in order")
	for i, st := range map[int]engine.JobState{0: engine.JobQueued, 1: engine.JobQueued, 2: engine.JobSkipped} {
		assert.False(t, got[i].Duplicate, "link %d", i)
		assert.NotZero(t, got[i].ID, "link %d", i)
		assert.Equal(t, st, got[i].State, "link %d", i)
		if st == engine.JobQueued {
			assertBetween(t, from, to, got[i].NotBefore, "link %d: due now", i)
		}
	}
	assert.True(t, got[3].Duplicate, "twice on the page: one job")
	assert.True(t, got[4].Duplicate, "a link to a known URL: no second job")

	for i, want := range found[:3] {
		j, err := s.Job(bg, got[i].ID)
		require.NoError(t, err, "link %d is stored when Finish returns", i)
		assert.Equal(t, want.URL, j.URL)
		assert.Equal(t, want.Host, j.Host)
		assert.Equal(t, id, j.CrawlID, "link %d is its crawl's job", i)
		assert.Equal(t, 1, j.Depth)
		assert.Equal(t, seed, j.FoundOn)
		assert.Equal(t, want.Kind, j.Kind)
	}
	j, err := s.Job(bg, got[2].ID)
	require.NoError(t, err)
	assert.Equal(t, engine.JobSkipped, j.State, "a disallowed link is a job, skipped (W6)")
	assert.Equal(t, why, j.LastError, "with the rule")
	j, err = s.Job(bg, page)
	require.NoError(t, err)
	assert.Equal(t, engine.JobDone, j.State)
	assert.Len(t, urls(t, s), 4, "no other job")

	c := crawlOf(t, s, id)
	assert.Equal(t, engine.Counts{Done: 1, Queued: 2, Skipped: 1}, c.Counts, "its jobs by state")
	assert.Equal(t, int64(4), c.Pages, "the jobs it created: the seed and three links")
	assert.Equal(t, int64(7), c.OutOfScope)
	assert.Equal(t, int64(1234), c.Bytes, "its done pages' bytes")
	assertCounts(t, s)
}

// W1: a link known already in the crawl, found again fewer links from a seed, lowers the depth
// of its job while it waits (queued or paused), so that its own links are followed as far as
// --depth allows from its nearest seed; a job done already, one found again deeper, and another
// crawl's job keep theirs.
func testFinishLinkFoundCloserLowersItsDepth(t *testing.T, o Opener) {
	s := open(t, o)
	const seedA, seedB = "https://a.example/", "https://b.example/"
	id, res, err := s.CreateCrawl(bg, engine.Crawl{Seeds: []string{seedA, seedB}, Scope: "host", Depth: 4, Robots: true},
		[]engine.NewJob{{URL: seedA, Key: seedA, Host: "a.example"}, {URL: seedB, Key: seedB, Host: "b.example"}})
	require.NoError(t, err)
	other, _, err := s.CreateCrawl(bg, engine.Crawl{Seeds: []string{"https://c.example/"}, Scope: "host", Depth: 4},
		[]engine.NewJob{{URL: "https://c.example/", Key: "https://c.example/", Host: "c.example"}})
	require.NoError(t, err)
	const deep, done, theirs = "https://b.example/p/1", "https://a.example/x", "https://b.example/theirs"
	// a.example's seed links b.example's page deep in a chain: found first at depth 4.
	got := startAndFinish(t, s, res[0].ID, 100, link(id, "b.example", deep, 4, seedA), link(id, "a.example", done, 3, seedA),
		link(other, "b.example", theirs, 4, seedA))
	startAndFinish(t, s, got[1].ID, 100)
	// b.example's own seed links it at depth 1; a deeper rediscovery changes nothing.
	again := startAndFinish(t, s, res[1].ID, 100, link(id, "b.example", deep, 1, seedB), link(id, "a.example", done, 1, seedB),
		link(id, "b.example", theirs, 1, seedB))
	for i := range again {
		assert.True(t, again[i].Duplicate, "link %d", i)
	}
	depth := func(id int64) int {
		j, err := s.Job(bg, id)
		require.NoError(t, err)
		return j.Depth
	}
	assert.Equal(t, 1, depth(got[0].ID), "a queued job found closer takes the smaller depth")
	assert.Equal(t, 3, depth(got[1].ID), "a done job keeps its depth")
	assert.Equal(t, 4, depth(got[2].ID), "another crawl's job keeps its depth")
	startAndFinish(t, s, got[0].ID, 100, link(id, "b.example", deep, 3, deep))
	assert.Equal(t, 1, depth(got[0].ID), "found again deeper: unchanged")
	assertCounts(t, s)
}

// W1, W8: a crawl creates no more jobs than its max pages, seeds included: a link over the budget
// is reported with ID 0 and not stored; a known URL is a duplicate and spends none of it.
func testFinishMaxPagesBudget(t *testing.T, o Opener) {
	s := open(t, o)
	enqueueURLs(t, s, "a.example", "https://a.example/known")
	seeds := newJobs("a.example", "https://a.example/", "https://a.example/known", "https://a.example/s2")
	id, res, err := s.CreateCrawl(bg, engine.Crawl{Seeds: []string{"https://a.example/"}, Scope: "host", Depth: 5,
		MaxPages: 4}, seeds)
	require.NoError(t, err)
	require.Len(t, res, 3)
	assert.NotZero(t, res[0].ID)
	assert.True(t, res[1].Duplicate, "a known seed spends none of the budget")
	assert.NotZero(t, res[2].ID)
	assert.Equal(t, int64(2), crawlOf(t, s, id).Pages)

	const on = "https://a.example/"
	got := startAndFinish(t, s, res[0].ID, 10,
		link(id, "a.example", "https://a.example/1", 1, on),
		link(id, "a.example", "https://a.example/known", 1, on),
		link(id, "a.example", "https://a.example/2", 1, on),
		link(id, "a.example", "https://a.example/3", 1, on),
		link(id, "a.example", "https://a.example/1", 1, on))
	assert.NotZero(t, got[0].ID)
	assert.False(t, got[0].Duplicate)
	assert.True(t, got[1].Duplicate, "known: a duplicate, spending nothing")
	assert.NotZero(t, got[2].ID, "the last page the budget allows")
	assert.False(t, got[2].Duplicate)
	assert.Equal(t, engine.Enqueued{}, got[3], "over the budget: ID 0, not stored")
	assert.True(t, got[4].Duplicate, "twice on the page")
	assert.Equal(t, int64(4), crawlOf(t, s, id).Pages)

	got = startAndFinish(t, s, res[2].ID, 10,
		link(id, "a.example", "https://a.example/4", 1, "https://a.example/s2"),
		link(id, "a.example", "https://a.example/1", 1, "https://a.example/s2"))
	assert.Equal(t, engine.Enqueued{}, got[0], "the budget is spent")
	assert.True(t, got[1].Duplicate)

	all := urls(t, s)
	assert.NotContains(t, all, "https://a.example/3")
	assert.NotContains(t, all, "https://a.example/4")
	assert.Len(t, all, 5, "the known URL, two seeds, two links")
	c := crawlOf(t, s, id)
	assert.Equal(t, int64(4), c.Pages)
	assert.Equal(t, engine.Counts{Done: 2, Queued: 2}, c.Counts)
	assertCounts(t, s)
}

// W8: the links a page of a paused crawl finds are stored paused, to run when the crawl does
// (skipped ones stay skipped); a page the crawl's pause stopped is not done, so its links are
// not stored (it is fetched again).
func testFinishPausedCrawlStoresLinksPaused(t *testing.T, o Opener) {
	s := open(t, o)
	seeds := newJobs("a.example", "https://a.example/", "https://a.example/2")
	id, res, err := s.CreateCrawl(bg, engine.Crawl{Seeds: []string{"https://a.example/"}, Scope: "host", Depth: 5}, seeds)
	require.NoError(t, err)
	page, stopped := res[0].ID, res[1].ID
	_, err = s.Start(bg, stopped, "")
	require.NoError(t, err)
	changed, err := s.SetCrawlState(bg, id, engine.CrawlPaused)
	require.NoError(t, err)
	require.Len(t, changed, 2)
	err = finish(s, bg, engine.End{JobID: stopped, State: engine.JobDone, File: "2", Resume: engine.Resume{Bytes: 3, Size: 3},
		Found: []engine.NewJob{link(id, "a.example", "https://a.example/from-2", 1, "https://a.example/2")}})
	assert.ErrorIs(t, err, engine.ErrNotQueued, "stopped by the pause")
	assert.NotContains(t, urls(t, s), "https://a.example/from-2", "a page not done stores no links")

	// The person runs one page of the paused crawl by itself.
	changed, err = s.SetState(bg, []int64{page}, resumable, engine.JobQueued)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	got := startAndFinish(t, s, page, 10,
		link(id, "a.example", "https://a.example/x", 1, "https://a.example/"),
		engine.NewJob{URL: "https://a.example/private/y", Key: "https://a.example/private/y", Host: "a.example",
			CrawlID: id, Depth: 1, FoundOn: "https://a.example/", Skip: "robots.txt: Disallow: /private/"})
	assert.Equal(t, engine.JobPaused, got[0].State, "stored paused with its crawl")
	assert.Equal(t, engine.JobSkipped, got[1].State)
	j, err := s.Job(bg, got[0].ID)
	require.NoError(t, err)
	assert.Equal(t, engine.JobPaused, j.State)
	j, err = s.Job(bg, got[1].ID)
	require.NoError(t, err)
	assert.Equal(t, engine.JobSkipped, j.State)
	c := crawlOf(t, s, id)
	assert.Equal(t, engine.CrawlPaused, c.State)
	assert.Equal(t, engine.Counts{Done: 1, Paused: 2, Skipped: 1}, c.Counts)
	assert.Equal(t, int64(4), c.Pages)
	assertCounts(t, s)

	changed, err = s.SetCrawlState(bg, id, engine.CrawlRunning)
	require.NoError(t, err)
	var moved []int64
	for _, ch := range sortChanged(changed) {
		moved = append(moved, ch.ID)
		assert.Equal(t, engine.JobPaused, ch.From)
		assert.Equal(t, engine.JobQueued, ch.To)
	}
	assert.Equal(t, []int64{stopped, got[0].ID}, moved, "the paused jobs run with the crawl; the skipped one stays")
	assertCounts(t, s)
}

// W8: a cancelled crawl stores no more links: a page of it done after the cancel reports each
// link with ID 0 and stores none; its bytes are counted, as a done page's.
func testFinishCancelledCrawlStoresNoLinks(t *testing.T, o Opener) {
	s := open(t, o)
	seeds := newJobs("a.example", "https://a.example/", "https://a.example/2", "https://a.example/3")
	id, res, err := s.CreateCrawl(bg, engine.Crawl{Seeds: []string{"https://a.example/"}, Scope: "host", Depth: 5}, seeds)
	require.NoError(t, err)
	startAndFinish(t, s, res[0].ID, 5)
	_, err = s.Start(bg, res[1].ID, "")
	require.NoError(t, err)
	changed, err := s.SetCrawlState(bg, id, engine.CrawlCancelled)
	require.NoError(t, err)
	var moved []int64
	for _, ch := range sortChanged(changed) {
		moved = append(moved, ch.ID)
		assert.Equal(t, engine.JobCancelled, ch.To)
	}
	assert.Equal(t, []int64{res[1].ID, res[2].ID}, moved, "every job not ended is cancelled")

	// The person retries a page of the cancelled crawl by hand.
	changed, err = s.SetState(bg, []int64{res[1].ID}, retryable, engine.JobQueued)
	require.NoError(t, err)
	require.Len(t, changed, 1)
	got := startAndFinish(t, s, res[1].ID, 10,
		link(id, "a.example", "https://a.example/x", 1, "https://a.example/2"),
		link(id, "a.example", "https://a.example/y", 1, "https://a.example/2"))
	assert.Equal(t, []engine.Enqueued{{}, {}}, got, "no link stored")
	all := urls(t, s)
	assert.NotContains(t, all, "https://a.example/x")
	assert.NotContains(t, all, "https://a.example/y")
	c := crawlOf(t, s, id)
	assert.Equal(t, engine.CrawlCancelled, c.State)
	assert.Equal(t, engine.Counts{Done: 2, Cancelled: 1}, c.Counts)
	assert.Equal(t, int64(3), c.Pages)
	assert.Equal(t, int64(15), c.Bytes, "its done pages' bytes")
	assertCounts(t, s)
}

// W3, J2: a URL is one job across crawls and pastes: a seed or a link another crawl, or a person,
// queued already is a duplicate, the job stays the first one's, and only the crawl that created a
// job counts it.
func testCreateCrawlDuplicatesAcrossCrawls(t *testing.T, o Opener) {
	s := open(t, o)
	plain := enqueueURLs(t, s, "a.example", "https://a.example/plain")[0]
	c := engine.Crawl{Seeds: []string{"https://a.example/"}, Scope: "host", Depth: 5}
	first, r1, err := s.CreateCrawl(bg, c, newJobs("a.example", "https://a.example/", "https://a.example/shared"))
	require.NoError(t, err)
	require.Len(t, r1, 2)
	second, r2, err := s.CreateCrawl(bg, c, append(newJobs("a.example", "https://a.example/shared"),
		append(newJobs("b.example", "https://b.example/"), newJobs("a.example", "https://a.example/plain")...)...))
	require.NoError(t, err)
	require.Len(t, r2, 3)
	assert.Less(t, first, second)
	assert.True(t, r2[0].Duplicate, "another crawl's seed")
	assert.False(t, r2[1].Duplicate)
	assert.True(t, r2[2].Duplicate, "a person's URL")
	j, err := s.Job(bg, r1[1].ID)
	require.NoError(t, err)
	assert.Equal(t, first, j.CrawlID, "the job stays the first crawl's")
	j, err = s.Job(bg, plain)
	require.NoError(t, err)
	assert.Zero(t, j.CrawlID, "and the person's stays the person's")

	got := startAndFinish(t, s, r2[1].ID, 10,
		link(second, "a.example", "https://a.example/", 1, "https://b.example/"),
		link(second, "a.example", "https://a.example/plain", 1, "https://b.example/"),
		link(second, "b.example", "https://b.example/new", 1, "https://b.example/"))
	assert.True(t, got[0].Duplicate, "the first crawl's seed")
	assert.True(t, got[1].Duplicate, "the person's URL")
	assert.False(t, got[2].Duplicate)
	assert.NotZero(t, got[2].ID)

	res, err := s.Enqueue(bg, newJobs("a.example", "https://a.example/shared"), noAgain)
	require.NoError(t, err)
	equal(t, []engine.Enqueued{{ID: r1[1].ID, Duplicate: true, State: engine.JobQueued, NotBefore: r1[1].NotBefore}}, res,
		"a crawl's job is a person's duplicate too")

	cs, err := s.Crawls(bg)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	assert.Equal(t, []int64{first, second}, []int64{cs[0].ID, cs[1].ID}, "oldest first")
	assert.Equal(t, int64(2), cs[0].Pages)
	assert.Equal(t, engine.Counts{Queued: 2}, cs[0].Counts)
	assert.Equal(t, int64(2), cs[1].Pages, "its own seed and link")
	assert.Equal(t, engine.Counts{Done: 1, Queued: 1}, cs[1].Counts)
	assert.Len(t, urls(t, s), 5)
	assertCounts(t, s)
}

// W10: SetCrawlState pauses a crawl's queued and active jobs, runs its paused ones again, and
// cancels every one not ended, reporting each job it moved; it leaves ended jobs, other crawls'
// jobs and a person's jobs alone.
func testSetCrawlStateMovesItsJobsAndNoOthers(t *testing.T, o Opener) {
	s := open(t, o)
	plain := enqueueURLs(t, s, "a.example", "https://a.example/plain")[0]
	c := engine.Crawl{Seeds: []string{"https://a.example/1"}, Scope: "host", Depth: 5}
	other, ro, err := s.CreateCrawl(bg, c, newJobs("b.example", "https://b.example/1"))
	require.NoError(t, err)
	id, r, err := s.CreateCrawl(bg, c, newJobs("a.example", "https://a.example/1", "https://a.example/2",
		"https://a.example/3", "https://a.example/4", "https://a.example/5"))
	require.NoError(t, err)
	queued, active, done, failed, paused := r[0].ID, r[1].ID, r[2].ID, r[3].ID, r[4].ID
	_, err = s.Start(bg, active, "2.part")
	require.NoError(t, err)
	startAndFinish(t, s, done, 1)
	_, err = s.Start(bg, failed, "")
	require.NoError(t, err)
	require.NoError(t, finish(s, bg, engine.End{JobID: failed, State: engine.JobFailed, Error: "gone", Status: 410}))
	_, err = s.SetState(bg, []int64{paused}, pausable, engine.JobPaused)
	require.NoError(t, err)

	step := func(to engine.CrawlState, want []engine.Changed, states map[int64]engine.JobState) {
		t.Helper()
		changed, err := s.SetCrawlState(bg, id, to)
		require.NoError(t, err, to)
		for i := range want {
			j, err := s.Job(bg, want[i].ID)
			require.NoError(t, err)
			want[i].Host, want[i].NotBefore = "a.example", j.NotBefore
		}
		equal(t, want, sortChanged(changed), "%s: the jobs it moved", to)
		for jid, st := range states {
			j, err := s.Job(bg, jid)
			require.NoError(t, err)
			assert.Equal(t, st, j.State, "%s: job %d", to, jid)
		}
		for _, jid := range []int64{plain, ro[0].ID} {
			j, err := s.Job(bg, jid)
			require.NoError(t, err)
			assert.Equal(t, engine.JobQueued, j.State, "%s: no other crawl's or person's job moves", to)
		}
		assert.Equal(t, to, crawlOf(t, s, id).State)
		assert.Equal(t, engine.CrawlRunning, crawlOf(t, s, other).State)
		assertCounts(t, s, to)
	}
	step(engine.CrawlPaused, []engine.Changed{
		{ID: queued, From: engine.JobQueued, To: engine.JobPaused},
		{ID: active, From: engine.JobActive, To: engine.JobPaused},
	}, map[int64]engine.JobState{done: engine.JobDone, failed: engine.JobFailed, paused: engine.JobPaused})
	step(engine.CrawlRunning, []engine.Changed{
		{ID: queued, From: engine.JobPaused, To: engine.JobQueued},
		{ID: active, From: engine.JobPaused, To: engine.JobQueued},
		{ID: paused, From: engine.JobPaused, To: engine.JobQueued},
	}, map[int64]engine.JobState{done: engine.JobDone, failed: engine.JobFailed})
	_, err = s.Start(bg, active, "")
	require.NoError(t, err)
	step(engine.CrawlCancelled, []engine.Changed{
		{ID: queued, From: engine.JobQueued, To: engine.JobCancelled},
		{ID: active, From: engine.JobActive, To: engine.JobCancelled},
		{ID: paused, From: engine.JobQueued, To: engine.JobCancelled},
	}, map[int64]engine.JobState{done: engine.JobDone, failed: engine.JobFailed})
	j, err := s.Job(bg, active)
	require.NoError(t, err)
	assert.Equal(t, "2.part", j.Part, "a stopped job keeps its part")

	_, err = s.SetCrawlState(bg, 9999, engine.CrawlPaused)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	_, err = s.SetCrawlState(bg, id, "bogus")
	assert.Error(t, err)
	assert.Equal(t, engine.CrawlCancelled, crawlOf(t, s, id).State)
}

// W4: a host's robots.txt comes back as last saved, every field, across a reopen; a host never
// fetched has none.
func testRobotsRoundTripAcrossReopen(t *testing.T, o Opener) {
	s := open(t, o)
	_, ok, err := s.Robots(bg, "a.example")
	require.NoError(t, err)
	assert.False(t, ok, "never fetched")

	rules := engine.RobotsFile{Host: "a.example", Fetched: time.Unix(1_700_000_000, 42), Status: 200,
		Body: []byte("User-agent: *\nDisallow: /private/\nCrawl-delay: 5\n\x00\xff")}
	unreachable := engine.RobotsFile{Host: "b.example:8080", Fetched: time.Unix(1_700_000_001, 43),
		Error: "dial tcp 127.0.0.1:8080: connect: connection refused"}
	require.NoError(t, s.SaveRobots(rules))
	require.NoError(t, s.SaveRobots(unreachable))
	require.NoError(t, s.Flush(bg))
	got, ok, err := s.Robots(bg, "a.example")
	require.NoError(t, err)
	require.True(t, ok)
	equal(t, rules, got)
	got, ok, err = s.Robots(bg, "b.example:8080")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, got.Body)
	got.Body = nil
	equal(t, unreachable, got, "a fetch that got no answer")

	again := engine.RobotsFile{Host: "a.example", Fetched: time.Unix(1_700_086_400, 44), Status: 503}
	require.NoError(t, s.SaveRobots(again))
	s.Reopen()
	got, ok, err = s.Robots(bg, "a.example")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, got.Body, "replaced whole")
	got.Body = nil
	equal(t, again, got)
	_, ok, err = s.Robots(bg, "c.example")
	require.NoError(t, err)
	assert.False(t, ok)
}
