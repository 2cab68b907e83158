package engine

import (
	"time"

	"heed/engine/quota"
)

// G12: a response's own statement of its quota (RateLimit-Policy and
// RateLimit, their older forms, X-RateLimit-*) paces the host before a 429
// comes. The server can only slow Heed down: the quota adds a gate (none
// left: wait for the reset) and a spacing (the requests left spread evenly
// over the time to the reset, and never faster than the policy's quota per
// window), and the host's own tunables stay the ceiling. Retry-After wins
// over the quota's reset. Parsing is package quota's; this file decides.

// quotaStale is how long a quota the server stops stating goes on shaping
// the host, past its reset.
const quotaStale = 10 * time.Minute

// serverQuota is what a host's responses last said of its quota, on the
// core's monotonic clock.
type serverQuota struct {
	name      string        // the binding policy's name, "" when the form has none
	said      string        // the binding policy as the server put it
	form      string        // which header form said it
	limit     int64         // requests per window, -1 unknown
	window    time.Duration // 0 unknown
	remaining int64         // requests left when it was said, -1 unknown
	sent      int64         // requests dispatched since
	resetAt   int64         // when the window resets, noTime unknown
	seenAt    int64         // when it was said, noTime when never
	until     int64         // no dispatch before this: the quota's spacing
	spacing   time.Duration // the spacing last drawn
	shaping   bool          // the quota slows the host more than its own rate does
	ignored   string        // a quota Heed does not pace from, said so
}

// active reports whether the host has a quota that still shapes it at nowM.
func (q *serverQuota) active(nowM int64) bool {
	if q.seenAt == noTime {
		return false
	}
	last := q.seenAt
	if q.resetAt != noTime && q.resetAt > last {
		last = q.resetAt
	}
	return nowM < addMono(last, quotaStale)
}

// onQuota takes in a response's statement s, received at nowM. raOK says the
// response had its own Retry-After, which wins over the quota's reset.
func (c *Core) onQuota(h *host, s quota.Statement, raOK bool, nowM int64) {
	q := &h.quota
	reqs := s.InUnit(quota.Requests)
	if len(reqs) == 0 {
		if other := s.InUnit(quota.ContentBytes); len(other) > 0 {
			q.ignored = "server quota in bytes (" + other[0].String() + "): not paced from, Heed paces requests"
		}
		return
	}
	// The binding policy: the one whose requests left, or whose quota per
	// window, asks for the longest spacing; one with nothing left binds first.
	best, bestGap, empty := quota.Policy{}, time.Duration(-1), false
	for _, p := range reqs {
		gap, none := policyGap(p, 0, p.ResetIn)
		if (none && !empty) || (none == empty && gap > bestGap) {
			best, bestGap, empty = p, gap, none
		}
	}
	wasShaping := q.shaping && q.active(nowM)
	*q = serverQuota{name: best.Name, said: best.String(), form: s.Form, limit: best.Limit, window: best.Window,
		remaining: best.Remaining, resetAt: noTime, seenAt: nowM, until: q.until}
	if best.ResetIn >= 0 {
		q.resetAt = addMono(nowM, best.ResetIn)
	} else if empty && best.Window > 0 {
		q.resetAt = addMono(nowM, best.Window)
	}
	switch {
	case raOK:
		// The response's own Retry-After says when to come back: it wins
		// over the quota's reset, whose count of requests left is not used.
		q.remaining = -1
	case empty && q.resetAt != noTime:
		if g := addMono(q.resetAt, c.resetJitter(q.resetAt-nowM)); g > h.gate {
			h.gate = g
		}
	}
	c.spaceForQuota(h, nowM, h.lastDispatch)
	if q.shaping != wasShaping {
		if q.shaping {
			c.event(h, EventQuota, nowM, "server quota shapes the pace: "+q.describe(nowM))
		} else {
			c.event(h, EventQuota, nowM, "server quota no longer slows the host: "+q.describe(nowM))
		}
	}
	c.markDirty(h)
}

// resetJitter is G5's small positive jitter for a wait of d: up to 10 % of
// it, at most a second, so clients told the same reset do not all return
// at once.
func (c *Core) resetJitter(d int64) time.Duration {
	j := min(time.Duration(d)/10, time.Second)
	if j <= 0 {
		return 0
	}
	return time.Duration(c.rng.Int64N(int64(j) + 1))
}

// policyGap is the spacing p asks for with sent requests made since it was
// said, ttr before its reset: its quota per window, and the requests left
// spread over the time to the reset, whichever is longer. none says
// nothing is left before the reset.
func policyGap(p quota.Policy, sent int64, ttr time.Duration) (gap time.Duration, none bool) {
	if p.Limit == 0 {
		return 0, true
	}
	if p.Limit > 0 && p.Window > 0 {
		gap = p.Window / time.Duration(p.Limit)
	}
	if p.Remaining >= 0 {
		left := p.Remaining - sent
		if left <= 0 {
			return gap, true
		}
		if ttr > 0 {
			gap = max(gap, ttr/time.Duration(left))
		}
	}
	return gap, false
}

// spaceForQuota sets when the host may next dispatch as its quota has it,
// counting from the dispatch at from (noTime: none yet): the spacing its
// policy asks for, or its reset when nothing is left. After a reset whose
// window is known, a fresh window of limit requests begins.
func (c *Core) spaceForQuota(h *host, nowM, from int64) {
	q := &h.quota
	if !q.active(nowM) {
		q.until, q.spacing, q.shaping = noTime, 0, false
		return
	}
	if q.resetAt != noTime && nowM >= q.resetAt {
		if q.window > 0 && q.limit > 0 {
			q.remaining, q.sent = q.limit, 0
			for q.resetAt <= nowM {
				q.resetAt = addMono(q.resetAt, q.window)
			}
		} else {
			q.remaining, q.resetAt = -1, noTime
		}
	}
	ttr := time.Duration(-1)
	if q.resetAt != noTime {
		ttr = time.Duration(q.resetAt - nowM)
	}
	p := quota.Policy{Limit: q.limit, Window: q.window, Remaining: q.remaining, ResetIn: ttr}
	gap, none := policyGap(p, q.sent, ttr)
	switch {
	case none && q.resetAt != noTime:
		q.until = addMono(q.resetAt, c.resetJitter(q.resetAt-nowM))
	case from != noTime:
		q.until = addMono(from, gap)
	default:
		q.until = noTime
	}
	q.spacing = gap
	own := time.Duration(float64(time.Minute) / h.tun.RatePerMin)
	q.shaping = none || gap > own
}

// quotaDispatched counts a request against the host's quota and spaces the
// next one (G12).
func (c *Core) quotaDispatched(h *host, nowM int64) {
	if !h.quota.active(nowM) {
		h.quota.until = noTime
		return
	}
	h.quota.sent++
	c.spaceForQuota(h, nowM, nowM)
}

// describe says what the server said, as it stands at nowM, and what Heed
// does about it: "3 left of 100 per 60s, resets in 20s — spacing 6.7s".
func (q *serverQuota) describe(nowM int64) string {
	p := quota.Policy{Name: q.name, Limit: q.limit, Window: q.window, Remaining: -1, ResetIn: -1}
	if q.remaining >= 0 {
		p.Remaining = max(q.remaining-q.sent, 0)
	}
	if q.resetAt != noTime {
		p.ResetIn = time.Duration(max(q.resetAt-nowM, 0)).Round(time.Second)
	}
	s := p.String()
	switch {
	case q.until != noTime && q.resetAt != noTime && q.until >= q.resetAt:
		s += " — none left: waiting for the reset"
	case q.spacing > 0:
		s += " — spacing " + roundedDur(q.spacing)
	}
	return s
}

// roundedDur renders d to a tenth of a second under a minute ("6.7s").
func roundedDur(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
