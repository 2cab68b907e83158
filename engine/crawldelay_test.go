package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// W5: a host's Crawl-delay is a floor on its spacing: however fast its rate
// and however full its bucket, it never dispatches sooner than Crawl-delay
// after its last dispatch, and while it waits it says so.
func TestCrawl_W5_CrawlDelayIsASpacingFloor(t *testing.T) {
	h := newHarness(t, fast()) // no rate, burst or jitter limit to speak of
	h.c.SetCrawlDelay("a", 5*time.Second)
	h.addN("a", 1, 20)
	starts := h.serveInTurn(20)
	for i := 1; i < len(starts); i++ {
		assert.Equal(t, 5*time.Second, starts[i].Sub(starts[i-1]), "request %d", i)
	}
	h.addN("a", 100, 1)
	h.advance(time.Second)
	h.none()
	s := h.snap("a")
	assert.Equal(t, WaitCrawlDelay, s.Waiting)
	assert.Equal(t, 5*time.Second, s.CrawlDelay)

	// A slower rate is not made faster by a shorter Crawl-delay.
	tun := fast()
	tun.RatePerMin, tun.Burst = 6, 1 // one every 10 s
	h = newHarness(t, tun)
	h.c.SetCrawlDelay("b", time.Second)
	h.addN("b", 1, 5)
	starts = h.serveInTurn(5)
	for i := 1; i < len(starts); i++ {
		assert.GreaterOrEqual(t, starts[i].Sub(starts[i-1]), 10*time.Second-time.Millisecond)
	}
}

// W5, G9: a Crawl-delay over max_crawl_delay pauses the host with that
// reason instead of spacing it.
func TestCrawl_W5_CrawlDelayOverTheMaximumPausesTheHost(t *testing.T) {
	tun := fast()
	tun.MaxCrawlDelay = time.Minute
	h := newHarness(t, tun)
	h.addN("a", 1, 2)
	h.c.SetCrawlDelay("a", time.Hour)
	h.none()
	s := h.snap("a")
	require.True(t, s.Paused)
	assert.Equal(t, "robots.txt asks for a Crawl-delay of 1h0m0s, over max_crawl_delay (1m0s)", s.PauseReason)
	assert.Contains(t, h.kinds("a"), EventPause)
}

// W5, G10: the Crawl-delay and the wait it set are kept across a restart.
func TestCrawl_W5_CrawlDelaySurvivesARestart(t *testing.T) {
	h := newHarness(t, fast())
	h.c.SetCrawlDelay("a", 30*time.Second)
	h.addN("a", 1, 1)
	h.serveInTurn(1)
	h.advance(10 * time.Second)
	st, ok := h.c.ExportHost("a")
	require.True(t, ok)
	assert.Equal(t, 30*time.Second, st.CrawlDelay)

	g := newHarness(t, fast())
	g.now = h.now
	g.c.RestoreHost(st, g.now)
	g.addN("a", 2, 2)
	wake := g.none()
	assert.Equal(t, 20*time.Second, wake.Sub(g.now), "the rest of the Crawl-delay, not a fresh one")
	g.now = wake
	starts := g.serveInTurn(2)
	assert.Equal(t, 30*time.Second, starts[1].Sub(starts[0]))
}

// Tunables saved before max_crawl_delay existed read it as its default.
func TestTunables_W5_MaxCrawlDelayDefault(t *testing.T) {
	var old Tunables = DefaultTunables()
	old.MaxCrawlDelay = 0
	assert.Equal(t, DefaultMaxCrawlDelay, old.Normalize().MaxCrawlDelay)
	old.MaxCrawlDelay = time.Millisecond
	assert.EqualError(t, old.Validate(), "max_crawl_delay: 1ms is below the minimum 1s")
}
