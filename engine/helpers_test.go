package engine

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// t0 is the wall instant every test starts at.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fast returns tunables that never hold a request back, so a test can
// switch on exactly the rule it is about.
func fast() Tunables {
	t := DefaultTunables()
	t.RatePerMin = MaxRatePerMin
	t.Burst = MaxBurst
	t.MaxInflight = MaxMaxInflight
	t.JitterMin, t.JitterMax = 0, 0
	t.FailureThreshold = MaxFailThreshold
	return t
}

// harness drives a Core on an explicit clock and records its events.
type harness struct {
	t   *testing.T
	c   *Core
	now time.Time

	mu     sync.Mutex
	events []Event
}

func newHarness(t *testing.T, tun Tunables, cfgs ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, now: t0}
	cfg := Config{Defaults: tun, Seed: 1, GlobalInflight: 1 << 20,
		Now:     func() time.Time { return h.now },
		OnEvent: func(e Event) { h.mu.Lock(); h.events = append(h.events, e); h.mu.Unlock() }}
	for _, f := range cfgs {
		f(&cfg)
	}
	h.c = NewCore(cfg)
	return h
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

func (h *harness) next() (Dispatch, bool, time.Time) { return h.c.Next(h.now) }

// serveInTurn dispatches n jobs one after the other, each at the first
// instant it may go and each answered 200 at once, and returns when each
// started.
func (h *harness) serveInTurn(n int) []time.Time {
	h.t.Helper()
	starts := make([]time.Time, 0, n)
	for range n {
		d, ok, wake := h.next()
		if !ok {
			require.False(h.t, wake.IsZero(), "a job is waiting for nothing")
			h.now = wake
			d = h.mustNext()
		}
		starts = append(starts, h.now)
		h.observe(d, 200, "")
	}
	return starts
}

func (h *harness) mustNext() Dispatch {
	h.t.Helper()
	d, ok, wake := h.c.Next(h.now)
	require.True(h.t, ok, "expected a dispatch at %v (wake %v)", h.now.Sub(t0), wake.Sub(t0))
	return d
}

func (h *harness) none() time.Time {
	h.t.Helper()
	d, ok, wake := h.c.Next(h.now)
	require.False(h.t, ok, "unexpected dispatch of job %d on %s at %v", d.JobID, d.Host, h.now.Sub(t0))
	return wake
}

// drain dispatches everything that may start now.
func (h *harness) drain() []Dispatch {
	var out []Dispatch
	for {
		d, ok, _ := h.c.Next(h.now)
		if !ok {
			return out
		}
		out = append(out, d)
	}
}

func (h *harness) observe(d Dispatch, status int, retryAfter string) Decision {
	return h.c.Observe(d, Outcome{Status: status, RetryAfter: retryAfter, Attempts: 1}, h.now)
}

func (h *harness) fail(d Dispatch, class ErrClass) Decision {
	return h.c.Observe(d, Outcome{Class: class, Attempts: 1}, h.now)
}

func (h *harness) addN(host string, from, n int) {
	for i := range n {
		h.c.Add(int64(from+i), host, time.Time{})
	}
}

func (h *harness) kinds(host string) []EventKind {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []EventKind
	for _, e := range h.events {
		if e.Host == host {
			out = append(out, e.Kind)
		}
	}
	return out
}

func (h *harness) snap(host string) HostSnapshot {
	h.t.Helper()
	s, ok := h.c.HostSnapshot(host)
	require.True(h.t, ok)
	return s
}
