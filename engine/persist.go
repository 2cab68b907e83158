package engine

import (
	"math"
	"time"

	"golang.org/x/time/rate"

	"heed/engine/quota"
)

// HostState is what the storage layer persists for a host (G10, B6, S4).
// Instants are wall-clock (no monotonic reading); zero means unset.
type HostState struct {
	Host        string
	Tunables    *Tunables // nil: follows the defaults
	Paused      bool
	PauseReason string
	Level       int
	Streak      int
	Gate        time.Time
	Breaker     BreakerState
	Failures    int
	OpenedAt    time.Time
	LastStatus  int
	Throttles   int64
	// Pacing (G2, G4): the tokens in the host's bucket at TokensAt (zero:
	// unknown, a full bucket), and the end of the jitter spacing after its
	// last request, so that the next run goes on at the host's rate instead
	// of with a fresh burst.
	Tokens     float64
	TokensAt   time.Time
	SpaceUntil time.Time

	// The server's quota as it last stated it (G12), so that a restart
	// inside its window does not spend it again: the binding policy's
	// name and form, its limit per window (-1 unknown), the requests left
	// now (-1 unknown), its reset, when it was said, and the spacing's end.
	QuotaName      string
	QuotaForm      string
	QuotaLimit     int64
	QuotaWindow    time.Duration
	QuotaRemaining int64
	QuotaReset     time.Time
	QuotaSeen      time.Time
	QuotaUntil     time.Time

	// CrawlDelay is the host's robots.txt Crawl-delay (W5), a floor on its
	// spacing; 0 when none.
	CrawlDelay time.Duration

	// In a fleet (SPEC §12), as the Store's Hosts reads them: the worker
	// that leases the host ("" when none), until when, and the lease's
	// epoch. The core neither exports nor restores them.
	Owner      string
	LeaseUntil time.Time
	Epoch      int64

	// Counts are the host's jobs by state, kept by the Store with each
	// transition; the core reads only whether it has jobs queued.
	Counts    Counts
	UpdatedAt time.Time
}

// ExportHost returns host's persistent state with its gate and breaker
// instants as wall-clock times measured at the core clock's now: the
// remaining wait is carried over exactly, whatever the wall clock did
// while running (G10). A half-open breaker is exported as half-open.
func (c *Core) ExportHost(host string) (HostState, bool) {
	c.mu.Lock()
	defer c.unlock()
	h := c.byKey[host]
	if h == nil {
		return HostState{}, false
	}
	now := c.clock()
	nowM := c.mono(now)
	wall := now.Round(0)
	toWall := func(m int64) time.Time {
		if m == noTime || m == never {
			return time.Time{}
		}
		return wall.Add(time.Duration(m - nowM))
	}
	s := HostState{
		Host: h.key, Paused: h.paused, PauseReason: h.pauseReason,
		Level: h.level, Streak: h.streak, Breaker: h.br.state, Failures: h.br.failures,
		LastStatus: h.lastStatus, Throttles: h.throttles,
	}
	if h.gate > nowM {
		s.Gate = toWall(h.gate)
	}
	s.Tokens, s.TokensAt = h.lim.TokensAt(now), wall
	if sp := max(h.spaceUntil, h.delayUntil); sp > nowM {
		s.SpaceUntil = toWall(sp)
	}
	s.CrawlDelay = h.crawlDelay
	s.OpenedAt = toWall(h.br.openedAt)
	if q := &h.quota; q.active(nowM) {
		s.QuotaName, s.QuotaForm, s.QuotaLimit, s.QuotaWindow = q.name, q.form, q.limit, q.window
		s.QuotaRemaining = q.remaining
		if q.remaining >= 0 {
			s.QuotaRemaining = max(q.remaining-q.sent, 0)
		}
		s.QuotaReset, s.QuotaSeen, s.QuotaUntil = toWall(q.resetAt), toWall(q.seenAt), toWall(q.until)
	}
	if h.own != nil {
		t := h.own.Tunables.clone()
		s.Tunables = &t
	}
	return s, true
}

// RestoreHost loads a persisted host at start-up, at now (a time.Now
// reading). Gates are re-anchored on the monotonic clock as
// now + (s.Gate − wall now), so a restart keeps a host's backoff and
// Retry-After (G10); the breaker keeps its state, failures and opened-at
// (B6), and a half-open breaker allows one fresh probe. Invalid tunables
// are dropped (the host follows the defaults) rather than refused.
func (c *Core) RestoreHost(s HostState, now time.Time) {
	c.mu.Lock()
	nowM := c.mono(now)
	wall := now.Round(0)
	fromWall := func(t time.Time) int64 {
		if t.IsZero() {
			return noTime
		}
		return addMono(nowM, t.Sub(wall))
	}
	h := c.getHost(s.Host, now)
	if s.Tunables != nil {
		if t := s.Tunables.Normalize(); t.Validate() == nil {
			h.own = compile(t)
			h.applyTunables(h.own, now)
		}
	}
	if !s.TokensAt.IsZero() {
		h.restoreTokens(s.Tokens, max(wall.Sub(s.TokensAt), 0), now)
	}
	if sp := fromWall(s.SpaceUntil); sp != noTime && sp > nowM {
		// At most one spacing from now: a wall clock set back between the
		// runs, or a jitter_max lowered, must not hold the host longer.
		h.spaceUntil = min(sp, addMono(nowM, h.tun.JitterMax))
		h.delayUntil = min(sp, addMono(nowM, max(s.CrawlDelay, 0)))
	}
	h.crawlDelay = max(s.CrawlDelay, 0)
	h.paused, h.pauseReason = s.Paused, s.PauseReason
	h.level = min(max(s.Level, 0), MaxLevel)
	h.streak = max(s.Streak, 0)
	h.gate = fromWall(s.Gate)
	h.lastStatus = s.LastStatus
	h.throttles = s.Throttles
	h.levelGen++
	h.br = breaker{state: s.Breaker, failures: max(s.Failures, 0), openedAt: fromWall(s.OpenedAt), gen: h.br.gen + 1}
	if h.br.state > HalfOpen {
		h.br.state = Closed
	}
	if h.br.state != Closed && h.br.openedAt == noTime {
		h.br.openedAt = nowM
	}
	if !s.QuotaSeen.IsZero() {
		h.quota = serverQuota{name: s.QuotaName, form: s.QuotaForm, limit: s.QuotaLimit, window: s.QuotaWindow,
			remaining: s.QuotaRemaining, resetAt: fromWall(s.QuotaReset), seenAt: fromWall(s.QuotaSeen),
			until: fromWall(s.QuotaUntil)}
		h.quota.said = quota.Policy{Name: s.QuotaName, Limit: s.QuotaLimit, Window: s.QuotaWindow,
			Remaining: s.QuotaRemaining, ResetIn: -1}.String()
		c.spaceForQuota(h, nowM, noTime)
		if u := fromWall(s.QuotaUntil); u != noTime && u > h.quota.until {
			h.quota.until = u
		}
	}
	if s.Counts.Queued > 0 && len(h.win) == 0 {
		h.more = true // its queue is in storage: the first refill reads it
	}
	c.place(h, now, nowM)
	c.unlock()
	c.signal()
}

// restoreTokens leaves in h's bucket (full until now) the tokens it held
// when saved, plus what its rate has added in the elapsed time since, at
// most its burst (G2). The bucket is emptied at the instant it would have
// been empty to hold exactly that now.
func (h *host) restoreTokens(saved float64, elapsed time.Duration, now time.Time) {
	burst, perSec := float64(h.lim.Burst()), float64(h.lim.Limit())
	have := min(burst, max(saved, 0)+perSec*elapsed.Seconds())
	if have >= burst || !(perSec > 0) || math.IsInf(perSec, 0) {
		return
	}
	// A fresh, full bucket: one retuned from the defaults' burst to the
	// host's own keeps the tokens it had, which need not be the new burst.
	h.lim = rate.NewLimiter(h.lim.Limit(), h.lim.Burst())
	h.lim.ReserveN(now.Add(-time.Duration(have/perSec*1e9)), h.lim.Burst())
}

// DirtyHosts returns the hosts whose persistent state changed since the
// last call (in first-change order) and forgets them: the storage layer
// exports and saves exactly these.
func (c *Core) DirtyHosts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.dirty))
	for i, h := range c.dirty {
		out[i] = h.key
		h.dirty = false
	}
	clear(c.dirty)
	c.dirty = c.dirty[:0]
	return out
}
