package engine

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/time/rate"

	"heed/engine/fetch"
)

// Backoff level ceiling (G5): the exponent never goes past 16.
const MaxLevel = 16

// noTime marks an unset instant (gate, spacing, not-before); never is the
// heap key of a host that time alone cannot make ready.
const (
	noTime int64 = math.MinInt64
	never  int64 = math.MaxInt64
)

// tunables is a host's Tunables plus what the hot path derives from them.
type tunables struct {
	Tunables
	throttle throttleSet
	limit    rate.Limit  // tokens per second
	proxy    *url.URL    // Proxy parsed; nil for the environment or direct
	header   http.Header // Headers parsed; shared by every request, never changed
}

func compile(t Tunables) *tunables {
	proxy, _ := fetch.ParseProxy(t.Proxy)      // validated before
	header, _ := fetch.ParseHeaders(t.Headers) // validated before
	return &tunables{Tunables: t, throttle: makeThrottleSet(t.ThrottleStatuses), limit: rate.Limit(t.RatePerMin / 60),
		proxy: proxy, header: header}
}

// host is one host's governor (G1–G11), breaker (B1–B6) and window of
// queued jobs (Q1, see frontier.go).
//
// Instants are int64 nanoseconds on the core's monotonic clock (see
// Core.mono), so a wall clock stepped while running neither shortens nor
// stretches a gate (G10); they are turned into wall instants only when
// exported.
type host struct {
	key     string
	heapIdx int   // index in Core.heap, -1 when not there
	dueAt   int64 // heap key: earliest instant the host may dispatch

	own *tunables // nil: follows the core's defaults
	tun *tunables // own or the defaults
	lim *rate.Limiter
	bw  *rate.Limiter // the host's bandwidth cap; nil until it has one (L2)

	// Governor.
	level        int    // backoff level 0…MaxLevel (G5)
	levelGen     uint32 // bumped at every level increase (G6)
	streak       int    // non-throttle responses since the last throttle or decay (G7)
	throttles    int64  // throttle responses seen (R3: shown, not counted as attempts)
	gate         int64  // earliest next dispatch (G3, G5)
	lastDispatch int64
	spaceUntil   int64 // lastDispatch + jitter draw (G4)
	crawlDelay   time.Duration
	delayUntil   int64 // lastDispatch + crawlDelay (W5)
	inflight     int   // G1
	paused       bool  // G9
	pauseReason  string
	lastStatus   int

	br        breaker
	abandoned []uint64 // Seq of probes declared failed whose in-flight slot was released

	quota serverQuota // what the server says of its quota (G12)

	window

	dirty bool
}

// backoffWindow is G5's min(base·2^(level−1), max), without overflow.
func backoffWindow(base, max time.Duration, level int) time.Duration {
	if level < 1 {
		return 0
	}
	w := satShift(base, level-1)
	if w > max {
		w = max
	}
	return w
}

// retryAfterFloor is G5's floor for a Retry-After of ra: ra plus a small
// positive jitter of up to min(10 % of ra, 1 s), so that clients told the
// same instant do not all return at once.
func (c *Core) retryAfterFloor(ra time.Duration) time.Duration {
	j := ra / 10
	if j > time.Second {
		j = time.Second
	}
	if j > 0 {
		j = time.Duration(c.rng.Int64N(int64(j) + 1))
	}
	return satAdd(ra, j)
}

// drawJitter is G4's spacing draw for h, uniform in [min, max].
func (c *Core) drawJitter(h *host) time.Duration {
	lo, hi := h.tun.JitterMin, h.tun.JitterMax
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(c.rng.Int64N(int64(hi-lo)+1))
}

// tokenReadyAt is when the host's bucket next holds a whole token,
// measured on the limiter's own arithmetic (G2). Reading tokens at now
// rather than reserving ahead means a new rate or burst applies to the
// very next dispatch, even for jobs already waiting.
func (h *host) tokenReadyAt(now time.Time, nowM int64) int64 {
	tok := h.lim.TokensAt(now)
	if tok >= 1 {
		return nowM
	}
	need := (1 - tok) / float64(h.lim.Limit()) * 1e9
	if need >= float64(math.MaxInt64/2) {
		return never
	}
	return addMono(nowM, time.Duration(math.Ceil(need))+1) // +1 ns absorbs float rounding
}

// due is the earliest monotonic instant h may dispatch, ignoring the
// global limits, and the reason it cannot dispatch before then (the
// binding constraint). never means only an event (resume, add, a result)
// can make it ready. It reads but does not change state.
func (h *host) due(now time.Time, nowM int64, probeTimeout int64, hop bool) (int64, WaitReason) {
	recovery := int64(h.tun.RecoveryTimeout)
	if h.paused {
		return never, WaitPaused
	}
	if !hop && len(h.win) == 0 {
		if h.more {
			return never, WaitLoading
		}
		return never, WaitEmpty
	}
	if h.inflight >= h.tun.MaxInflight {
		return never, WaitInflightCap
	}
	due, why := nowM, WaitReady
	switch h.br.state {
	case Open:
		if at := h.br.halfOpenAt(recovery); at > due {
			due, why = at, WaitBreaker
		}
	case HalfOpen:
		if h.br.probeOut && h.br.probeDeadline > due {
			due, why = h.br.probeDeadline, WaitBreaker
		}
	}
	if h.gate > due {
		due, why = h.gate, WaitGate
	}
	if h.spaceUntil > due {
		due, why = h.spaceUntil, WaitJitter
	}
	if h.delayUntil > due {
		due, why = h.delayUntil, WaitCrawlDelay
	}
	if h.quota.until > due && h.quota.active(nowM) {
		due, why = h.quota.until, WaitQuota
	}
	if t := h.tokenReadyAt(now, nowM); t > due {
		due, why = t, WaitToken
	} else if t > nowM && why == WaitJitter {
		why = WaitToken // the spacing runs from the next token (see Core.acquire)
	}
	if !hop {
		if nb := h.win[0].due; nb > due {
			due, why = nb, WaitRetryDelay
		}
	}
	return due, why
}

// capBandwidth sets h's bandwidth cap live: downloads in flight slow down or
// speed up at their next read. 0 lifts it.
func (h *host) capBandwidth(bps int64) {
	switch {
	case bps <= 0 && h.bw != nil:
		h.bw.SetLimit(rate.Inf)
	case bps > 0 && h.bw == nil:
		h.bw = rate.NewLimiter(rate.Limit(bps), bandwidthBurst(bps))
	case bps > 0:
		h.bw.SetBurst(bandwidthBurst(bps))
		h.bw.SetLimit(rate.Limit(bps))
	}
}

// bandwidthBurst is the burst of a bandwidth cap of bps: a tenth of a
// second, and at least one read.
func bandwidthBurst(bps int64) int {
	return int(max(min(bps/10, math.MaxInt32), 64<<10))
}

// applyTunables points h at t and retunes its bucket at now, so the next
// dispatch already uses the new rate and burst (G2). A jitter spacing
// already drawn is clamped into the new [min, max] range.
func (h *host) applyTunables(t *tunables, now time.Time) {
	h.tun = t
	h.capBandwidth(t.BytesPerSec)
	if h.lim == nil {
		h.lim = rate.NewLimiter(t.limit, t.Burst)
		return
	}
	if h.lim.Limit() != t.limit {
		h.lim.SetLimitAt(now, t.limit)
	}
	if h.lim.Burst() != t.Burst {
		h.lim.SetBurstAt(now, t.Burst)
	}
	if h.lastDispatch != noTime {
		if hi := addMono(h.lastDispatch, t.JitterMax); h.spaceUntil > hi {
			h.spaceUntil = hi
		}
		if lo := addMono(h.lastDispatch, t.JitterMin); h.spaceUntil < lo {
			h.spaceUntil = lo
		}
	}
}

// onThrottle is G5/G6 for a throttle response to d at nowM. It returns the
// event detail.
func (c *Core) onThrottle(h *host, d *Dispatch, status int, ra time.Duration, raOK bool, nowM int64) {
	t := h.tun
	h.streak = 0
	h.throttles++
	var delay time.Duration
	raised := d.levelGen == h.levelGen // G6: one burst, one level
	if raised {
		if h.level < MaxLevel {
			h.level++
		}
		h.levelGen++
		delay = time.Duration(c.rng.Int64N(int64(backoffWindow(t.BackoffBase, t.BackoffMax, h.level)) + 1))
	}
	detail := ""
	if raOK {
		if ra > t.MaxRetryAfter {
			c.pauseLocked(h, retryAfterTooLong(ra, t.MaxRetryAfter), nowM)
		} else if f := c.retryAfterFloor(ra); f > delay {
			delay = f
		}
		detail = fmt.Sprintf(", Retry-After %v", ra.Round(time.Millisecond))
	}
	if g := addMono(nowM, delay); g > h.gate { // Retry-After is a floor: never shorten a gate
		h.gate = g
	}
	if raised {
		c.event(h, EventThrottle, nowM, fmt.Sprintf("HTTP %d: level %d, wait %v%s", status, h.level, delay.Round(time.Millisecond), detail))
	} else {
		c.event(h, EventThrottle, nowM, fmt.Sprintf("HTTP %d from before level %d: level kept%s", status, h.level, detail))
	}
}

// onResponse is G7 for a non-throttle HTTP response. A Retry-After that
// moves the gate is an event, so that it is written at once (G10: a crash
// right after must not forget the wait) and shows in the timeline.
func (c *Core) onResponse(h *host, status int, ra time.Duration, raOK bool, nowM int64) {
	t := h.tun
	h.streak++
	if h.streak >= t.DecayAfter {
		h.streak = 0
		if h.level > 0 {
			h.level--
			c.event(h, EventDecay, nowM, fmt.Sprintf("%d successes: level %d", t.DecayAfter, h.level))
		}
	}
	if raOK {
		if ra > t.MaxRetryAfter {
			c.pauseLocked(h, retryAfterTooLong(ra, t.MaxRetryAfter), nowM)
		} else if g := addMono(nowM, ra); g > h.gate {
			h.gate = g
			c.event(h, EventRetryAfter, nowM, fmt.Sprintf("HTTP %d with Retry-After %v", status, ra.Round(time.Millisecond)))
		}
	}
}

// addMono returns m+d saturating at never; noTime stays noTime.
func addMono(m int64, d time.Duration) int64 {
	if m == noTime {
		return noTime
	}
	if d > 0 && m > math.MaxInt64-int64(d) {
		return never
	}
	return m + int64(d)
}

// retryAfterTooLong is the pause reason of a Retry-After longer than max:
// a value saturated from an absurd header (9999999999999 seconds) reads as
// what it is, not as 2562047h47m16s.
func retryAfterTooLong(ra, max time.Duration) string {
	const century = 100 * 365 * 24 * time.Hour
	asked := ra.Round(time.Second).String()
	if ra >= century {
		asked = "of more than 100 years"
	}
	return fmt.Sprintf("Retry-After %s exceeds max_retry_after %v", asked, max)
}
