package engine

import (
	"fmt"
	"strings"
	"time"
)

// BreakerState is the state of a host's circuit breaker (SPEC §3).
type BreakerState uint8

const (
	// Closed: requests flow; consecutive failures are counted (B1).
	Closed BreakerState = iota
	// Open: nothing is dispatched until the recovery timeout passes (B2).
	Open
	// HalfOpen: exactly one probe may go; its result decides (B3).
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("breaker(%d)", int(s))
}

// ParseBreakerState is the inverse of BreakerState.String.
func ParseBreakerState(s string) (BreakerState, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "closed":
		return Closed, nil
	case "open":
		return Open, nil
	case "half-open", "halfopen", "half_open":
		return HalfOpen, nil
	}
	return 0, fmt.Errorf("breaker state: %q is not closed, open or half-open", s)
}

// breaker is one host's three-state circuit breaker, B1–B6.
//
// Every state change bumps gen, the breaker's epoch. A Dispatch carries the
// gen it was made under, and only a result whose gen still matches moves
// the state (B4): a late failure from before a reset, or a late success
// from before the breaker opened, changes nothing. In half-open exactly
// one probe is dispatched (probeOut); if it neither reports nor sends a
// heartbeat before probeDeadline, the core declares it failed (B3), so
// half-open can never wedge. The breaker never calls out: the core turns
// the returned transition into an Event after releasing its lock.
//
// All instants are the core's monotonic nanoseconds.
type breaker struct {
	state         BreakerState
	failures      int   // consecutive failures (B1), kept while open for display
	openedAt      int64 // when it last opened
	gen           uint32
	probeOut      bool
	probeSeq      uint64 // Dispatch.Seq of the probe in flight
	probeDeadline int64
}

// transition is a breaker state change to report as an event.
type transition struct {
	kind   EventKind
	detail string
}

// halfOpenAt is when an open breaker turns half-open.
func (b *breaker) halfOpenAt(recovery int64) int64 {
	return addMono(b.openedAt, time.Duration(recovery))
}

func (b *breaker) open(now int64) {
	b.state = Open
	b.openedAt = now
	b.probeOut = false
	b.gen++
}

func (b *breaker) close() {
	b.state = Closed
	b.failures = 0
	b.probeOut = false
	b.gen++
}

func (b *breaker) halfOpen() {
	b.state = HalfOpen
	b.probeOut = false
	b.gen++
}

// advance performs the transitions time alone causes at now: open →
// half-open after the recovery timeout (B2), and an overdue probe counted
// as a failure (B3). abandoned is the Seq of a probe declared failed (0 if
// none), whose in-flight slot the caller releases.
func (b *breaker) advance(now, recovery int64) (t transition, abandoned uint64, changed bool) {
	switch {
	case b.state == Open && now >= b.halfOpenAt(recovery):
		b.halfOpen()
		return transition{EventBreakerHalfOpen, "recovery timeout passed: one probe allowed"}, 0, true
	case b.state == HalfOpen && b.probeOut && now >= b.probeDeadline:
		seq := b.probeSeq
		b.failures++
		b.open(now)
		return transition{EventBreakerOpen, "probe did not report in time: counted as a failure"}, seq, true
	}
	return transition{}, 0, false
}

// observe applies one attempt result (B1, B3, B4). gen is the gen the
// request was dispatched under; failure and success are exclusive, and
// both false means the result says nothing about the host (e.g. a TLS
// error outside half-open).
func (b *breaker) observe(gen uint32, seq uint64, failure, success bool, threshold int, now int64) (t transition, changed bool) {
	if gen != b.gen { // B4: dispatched under an older state
		return transition{}, false
	}
	switch b.state {
	case Closed:
		if failure {
			b.failures++
			if b.failures >= threshold {
				b.open(now)
				return transition{EventBreakerOpen, fmt.Sprintf("%d consecutive failures", b.failures)}, true
			}
			return transition{}, true
		}
		if success && b.failures != 0 {
			b.failures = 0
			return transition{}, true
		}
	case HalfOpen:
		if !b.probeOut || seq != b.probeSeq {
			return transition{}, false
		}
		if success {
			b.close()
			return transition{EventBreakerClosed, "probe succeeded"}, true
		}
		b.failures++
		b.open(now)
		return transition{EventBreakerOpen, "probe failed"}, true
	}
	return transition{}, false
}
