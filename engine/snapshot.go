package engine

import (
	"fmt"
	"time"
)

// WaitReason says why a host is not dispatching right now (G11, U5): the
// constraint that binds longest.
type WaitReason uint8

const (
	WaitReady       WaitReason = iota // a request may start now
	WaitToken                         // waiting for a token (G2)
	WaitGate                          // backoff or Retry-After gate (G3, G5)
	WaitJitter                        // spacing jitter after the last dispatch (G4)
	WaitBreaker                       // breaker open, or its probe out (B2, B3)
	WaitPaused                        // host paused, or everything paused (G9, U7)
	WaitInflightCap                   // at max_inflight (G1)
	WaitGlobalCap                     // global in-flight or rate limit (L1, L2)
	WaitEmpty                         // nothing queued
	WaitRetryDelay                    // its jobs wait for their retry delay (R4)
	WaitLoading                       // its next jobs are being read from storage (Q1)
	WaitQuota                         // the server's own quota: its spacing or its reset (G12)
	WaitCrawlDelay                    // robots.txt's Crawl-delay after the last dispatch (W5)
)

var waitNames = [...]string{"ready", "token", "gate", "jitter", "breaker", "paused", "inflight-cap", "global-cap", "empty", "retry-delay", "loading", "quota", "crawl-delay"}

// String returns a short name such as "token" or "inflight-cap".
func (w WaitReason) String() string {
	if int(w) < len(waitNames) {
		return waitNames[w]
	}
	return fmt.Sprintf("wait(%d)", int(w))
}

// HostSnapshot is one host's state as the UI shows it (G11, B6, U1): a
// plain value, consistent within itself, safe to keep.
type HostSnapshot struct {
	Host        string
	At          time.Time // the instant the values describe
	OwnTunables bool      // false: follows the defaults

	Tokens      float64 // in [0, Burst], never below 0
	RatePerMin  float64
	Burst       int
	Level       int
	Gate        time.Time     // zero when none
	GateIn      time.Duration // time left to the gate, 0 when past
	Streak      int
	Throttles   int64
	Inflight    int
	MaxInflight int

	Breaker    BreakerState
	Failures   int
	OpenedAt   time.Time     // zero when never opened
	HalfOpenIn time.Duration // open: time left to half-open
	ProbeOut   bool

	Paused      bool
	PauseReason string
	LastStatus  int
	// Quota is what the server said of its quota and what Heed does
	// about it ("3 left of 100 per 60s, resets in 20s — spacing 6.7s"), ""
	// when it says nothing (G12); QuotaShaping says it slows the host more
	// than its own rate does, QuotaNote a quota Heed does not pace from.
	Quota        string
	QuotaShaping bool
	QuotaNote    string
	// CrawlDelay is the host's robots.txt Crawl-delay, a floor on its
	// spacing (W5); 0 when none.
	CrawlDelay time.Duration
	Waiting    WaitReason
	NextDue    time.Time // when it may dispatch; zero when only an event helps
}

// Stats are the global figures (L1, L2).
type Stats struct {
	Hosts                 int
	Windowed              int // queued jobs in the hosts' windows (the rest are in storage)
	Inflight, InflightCap int
	GlobalRatePerSec      float64
	PausedAll             bool
	Refilling             bool // a window waits for its next jobs from storage
}

// snapshotChunk is how many hosts Snapshot copies per lock hold, so a
// snapshot of 100,000 hosts never stalls dispatch for long.
const snapshotChunk = 256

// Snapshot returns every host's state at the core clock's now (G11).
func (c *Core) Snapshot() []HostSnapshot { return c.SnapshotInto(nil, c.clock()) }

// SnapshotInto appends every host's state at now to buf[:0] and returns
// it, reusing buf's memory. Each host's values are consistent; the core
// lock is released every 256 hosts so dispatch is never held up by a
// large snapshot (hosts are then described within microseconds of each
// other, not at one instant).
func (c *Core) SnapshotInto(buf []HostSnapshot, now time.Time) []HostSnapshot {
	buf = buf[:0]
	for i := 0; ; {
		c.mu.Lock()
		if i >= len(c.hosts) {
			c.unlock()
			return buf
		}
		nowM := c.mono(now)
		end := min(i+snapshotChunk, len(c.hosts))
		for ; i < end; i++ {
			buf = append(buf, c.snapshotLocked(c.hosts[i], now, nowM))
		}
		c.unlock()
	}
}

// HostSnapshot returns one host's state now, and false for a host the
// core has never seen.
func (c *Core) HostSnapshot(host string) (HostSnapshot, bool) {
	c.mu.Lock()
	h := c.byKey[host]
	var s HostSnapshot
	if h != nil {
		now := c.clock()
		s = c.snapshotLocked(h, now, c.mono(now))
	}
	c.unlock()
	return s, h != nil
}

// Stats returns the global figures.
func (c *Core) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Hosts: len(c.hosts), Windowed: c.windowed, Inflight: c.inflight, InflightCap: c.inflightCap,
		GlobalRatePerSec: c.globalRate, PausedAll: c.pausedAll, Refilling: len(c.refills) > 0 || c.refillsOut > 0}
}

func (c *Core) snapshotLocked(h *host, now time.Time, nowM int64) HostSnapshot {
	c.advance(h, nowM)
	t := h.tun
	recovery := int64(t.RecoveryTimeout)
	due, why := h.due(now, nowM, c.probeTimeout, false)
	switch {
	case c.pausedAll && why != WaitEmpty:
		why = WaitPaused
	case why == WaitReady && (c.inflight >= c.inflightCap || (c.glim != nil && c.glim.TokensAt(now) < 1)):
		why = WaitGlobalCap
	}
	s := HostSnapshot{
		Host: h.key, At: now, OwnTunables: h.own != nil,
		Tokens: max(h.lim.TokensAt(now), 0), RatePerMin: t.RatePerMin, Burst: t.Burst,
		Level: h.level, Streak: h.streak, Throttles: h.throttles,
		Inflight: h.inflight, MaxInflight: t.MaxInflight,
		Breaker: h.br.state, Failures: h.br.failures, ProbeOut: h.br.probeOut,
		Paused: h.paused, PauseReason: h.pauseReason, LastStatus: h.lastStatus,
		CrawlDelay: h.crawlDelay, Waiting: why,
	}
	if h.quota.active(nowM) {
		s.Quota, s.QuotaShaping = h.quota.describe(nowM), h.quota.shaping
	}
	s.QuotaNote = h.quota.ignored
	if h.gate != noTime {
		s.Gate = c.at(h.gate)
		s.GateIn = time.Duration(max(h.gate-nowM, 0))
	}
	s.OpenedAt = c.at(h.br.openedAt)
	if h.br.state == Open {
		s.HalfOpenIn = time.Duration(max(h.br.halfOpenAt(recovery)-nowM, 0))
	}
	if due != never {
		s.NextDue = c.at(max(due, nowM))
	}
	return s
}
