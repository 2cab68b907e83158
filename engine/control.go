package engine

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/time/rate"
)

// SetDefaults replaces the tunables of every host that has none of its
// own, effective for the very next dispatch (G2). t is normalized first;
// the error is Validate's.
func (c *Core) SetDefaults(t Tunables) error {
	t = t.Normalize()
	if err := t.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	c.defaults = compile(t)
	now := c.clock()
	nowM := c.mono(now)
	for _, h := range c.hosts {
		if h.own == nil {
			h.applyTunables(c.defaults, now)
			c.place(h, now, nowM)
		}
	}
	c.unlock()
	c.signal()
	return nil
}

// Defaults returns the current default tunables.
func (c *Core) Defaults() Tunables {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.defaults.Tunables.clone()
}

// SetHostTunables gives host its own tunables, live: the very next
// dispatch uses the new rate and burst, even for jobs already waiting for
// a token (G2). t is normalized first; the error is Validate's.
func (c *Core) SetHostTunables(host string, t Tunables) error {
	t = t.Normalize()
	if err := t.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	now := c.clock()
	nowM := c.mono(now)
	h := c.getHost(host, now)
	was := h.tun.Tunables
	h.own = compile(t)
	h.applyTunables(h.own, now)
	c.event(h, EventRetune, nowM, retuned(was, t))
	c.markDirty(h)
	c.place(h, now, nowM)
	c.unlock()
	c.signal()
	return nil
}

// ClearHostTunables makes host follow the defaults again.
func (c *Core) ClearHostTunables(host string) {
	c.mu.Lock()
	if h := c.byKey[host]; h != nil && h.own != nil {
		now := c.clock()
		nowM := c.mono(now)
		h.own = nil
		h.applyTunables(c.defaults, now)
		c.event(h, EventRetune, nowM, "back to defaults")
		c.markDirty(h)
		c.place(h, now, nowM)
	}
	c.unlock()
	c.signal()
}

// HostTunables returns the tunables host runs with and whether they are
// its own (false: the defaults).
func (c *Core) HostTunables(host string) (Tunables, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, own := c.defaults, false
	if h := c.byKey[host]; h != nil {
		t, own = h.tun, h.own != nil
	}
	return t.Tunables.clone(), own
}

// HostProxy is the proxy set for the host of u (N4), for the fetcher's
// transport: ok false when the host follows the environment.
func (c *Core) HostProxy(u *url.URL) (proxy *url.URL, ok bool) {
	key, err := HostKeyOf(u)
	if err != nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.defaults
	if h := c.byKey[key]; h != nil {
		t = h.tun
	}
	if t.Proxy == "" {
		return nil, false
	}
	return t.proxy, true
}

// HostRequest is what a request to host (a host key: the dispatch's)
// carries beside Heed's own: the host's extra headers and its bandwidth cap
// (nil for none).
func (c *Core) HostRequest(host string) (http.Header, *rate.Limiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.byKey[host]
	if h == nil {
		return c.defaults.header, nil
	}
	return h.tun.header, h.bw
}

func (c *Core) pauseLocked(h *host, reason string, nowM int64) {
	h.paused = true
	h.pauseReason = reason
	c.event(h, EventPause, nowM, reason)
	c.markDirty(h)
}

// PauseHost stops dispatching to host at once (G9). Its in-flight
// requests finish normally and its queued jobs stay queued.
func (c *Core) PauseHost(host, reason string) {
	c.mu.Lock()
	now := c.clock()
	nowM := c.mono(now)
	h := c.getHost(host, now)
	c.pauseLocked(h, reason, nowM)
	c.place(h, now, nowM)
	c.unlock()
}

// ResumeHost lets host dispatch again (G9). Its gate, level and breaker
// are as they were.
func (c *Core) ResumeHost(host string) {
	c.mu.Lock()
	if h := c.byKey[host]; h != nil && h.paused {
		now := c.clock()
		nowM := c.mono(now)
		h.paused, h.pauseReason = false, ""
		c.event(h, EventResume, nowM, "")
		c.markDirty(h)
		c.place(h, now, nowM)
	}
	c.unlock()
	c.signal()
}

// HostPaused reports whether host is paused (G9).
func (c *Core) HostPaused(host string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.byKey[host]
	return h != nil && h.paused
}

// PauseAll stops all dispatching (U7) without touching any host's own
// pause; ResumeAll undoes it.
func (c *Core) PauseAll() {
	c.mu.Lock()
	c.pausedAll = true
	c.unlock()
}

// ResumeAll undoes PauseAll.
func (c *Core) ResumeAll() {
	c.mu.Lock()
	c.pausedAll = false
	c.unlock()
	c.signal()
}

// breakerAction applies a manual breaker control (B5).
func (c *Core) breakerAction(host string, kind EventKind) {
	c.mu.Lock()
	now := c.clock()
	nowM := c.mono(now)
	h := c.getHost(host, now)
	from := h.br.state
	changed := true
	switch kind {
	case EventProbeNow:
		if changed = from == Open; changed {
			h.br.halfOpen()
		}
	case EventReset:
		h.br.close()
	case EventTrip:
		h.br.open(nowM)
	}
	if changed {
		c.event(h, kind, nowM, fmt.Sprintf("%v → %v", from, h.br.state))
		c.markDirty(h)
	}
	c.place(h, now, nowM)
	c.unlock()
	c.signal()
}

// ProbeNow moves an open breaker to half-open at once, so the next
// dispatch is its probe (B5). It does nothing to a breaker not open.
func (c *Core) ProbeNow(host string) { c.breakerAction(host, EventProbeNow) }

// ResetBreaker closes host's breaker and clears its failure count (B5).
func (c *Core) ResetBreaker(host string) { c.breakerAction(host, EventReset) }

// TripBreaker opens host's breaker now, with a fresh recovery timeout (B5).
func (c *Core) TripBreaker(host string) { c.breakerAction(host, EventTrip) }

// SetGlobalInflight sets L1, the requests in flight across all hosts
// (at least 1). Lowering it never cancels a request; it only holds back
// new ones.
func (c *Core) SetGlobalInflight(n int) {
	c.mu.Lock()
	c.inflightCap = max(n, 1)
	c.unlock()
	c.signal()
}

// GlobalInflight returns L1, the cap on requests in flight across all hosts.
func (c *Core) GlobalInflight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflightCap
}

// SetGlobalRate sets L2's global request rate in requests per second,
// 0 for none. Its bucket holds one second's worth (at least 1).
func (c *Core) SetGlobalRate(perSec float64) {
	c.mu.Lock()
	c.setGlobalRateLocked(perSec)
	c.unlock()
	c.signal()
}

func (c *Core) setGlobalRateLocked(perSec float64) {
	if !(perSec > 0) {
		c.globalRate, c.glim = 0, nil
		return
	}
	burst := int(max(1, min(perSec, 1e6)))
	c.globalRate = perSec
	if c.glim == nil {
		c.glim = rate.NewLimiter(rate.Limit(perSec), burst)
		return
	}
	now := c.clock()
	c.glim.SetLimitAt(now, rate.Limit(perSec))
	c.glim.SetBurstAt(now, burst)
}

// SetCrawlDelay makes d, a host's robots.txt Crawl-delay, a floor on its
// spacing (W5): it never dispatches sooner than d after its last dispatch,
// whatever its rate. A Crawl-delay over the host's max_crawl_delay pauses
// it with that reason instead, as a long Retry-After does (G9). 0 clears
// it.
func (c *Core) SetCrawlDelay(host string, d time.Duration) {
	c.mu.Lock()
	now := c.clock()
	nowM := c.mono(now)
	h := c.getHost(host, now)
	d = max(d, 0)
	if d > h.tun.MaxCrawlDelay {
		if !h.paused {
			c.pauseLocked(h, fmt.Sprintf("robots.txt asks for a Crawl-delay of %v, over max_crawl_delay (%v)",
				d, h.tun.MaxCrawlDelay), nowM)
		}
		d = h.tun.MaxCrawlDelay
	}
	if d != h.crawlDelay {
		h.crawlDelay = d
		if h.lastDispatch != noTime {
			h.delayUntil = addMono(h.lastDispatch, d)
		}
		c.markDirty(h)
		c.place(h, now, nowM)
	}
	c.unlock()
	c.signal()
}
