package engine

import (
	"slices"
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

// harness drives a Core on an explicit clock, with a memStore for its
// queue, and records its events.
type harness struct {
	t   *testing.T
	c   *Core
	q   *memStore
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
	h.q = newMemStore(h.c)
	return h
}

// memStore stands for the Store in core tests: each host's queued jobs in
// queue order (not_before, id), which serves the core's refills (Q1).
type memStore struct {
	c    *Core
	mu   sync.Mutex
	jobs map[string][]Queued
	host map[int64]string
}

func newMemStore(c *Core) *memStore {
	return &memStore{c: c, jobs: map[string][]Queued{}, host: map[int64]string{}}
}

func keyOf(q Queued) Cursor { return Cursor{NotBefore: nanos(q.NotBefore), ID: q.ID} }

// add queues job id for host in the store, then in the core.
func (m *memStore) add(id int64, host string, nb time.Time) {
	m.mu.Lock()
	m.dropLocked(id)
	q := Queued{ID: id, NotBefore: nb}
	js := m.jobs[host]
	i, _ := slices.BinarySearchFunc(js, keyOf(q), func(x Queued, k Cursor) int {
		switch xk := keyOf(x); {
		case xk.Less(k):
			return -1
		case k.Less(xk):
			return 1
		}
		return 0
	})
	m.jobs[host] = slices.Insert(js, i, q)
	m.host[id] = host
	m.mu.Unlock()
	m.c.Add(id, host, nb)
}

func (m *memStore) dropLocked(id int64) bool {
	host, ok := m.host[id]
	if !ok {
		return false
	}
	delete(m.host, id)
	m.jobs[host] = slices.DeleteFunc(m.jobs[host], func(q Queued) bool { return q.ID == id })
	return true
}

// remove takes a queued job out (a pause or cancel), reporting whether it
// was queued.
func (m *memStore) remove(id int64) bool {
	m.mu.Lock()
	host := m.host[id]
	ok := m.dropLocked(id)
	m.mu.Unlock()
	m.c.Remove(id, host)
	return ok
}

// serve answers every refill the core asks for.
func (m *memStore) serve() {
	for {
		rs := m.c.Refills(1 << 20)
		if len(rs) == 0 {
			return
		}
		for _, r := range rs {
			m.mu.Lock()
			var out []Queued
			for _, q := range m.jobs[r.Host] {
				if r.After.Less(keyOf(q)) && len(out) < r.N {
					out = append(out, q)
				}
			}
			m.mu.Unlock()
			m.c.Refilled(r, out, nil)
		}
	}
}

// next is Core.Next after the refills are served; a dispatched job leaves
// the store's queue, as Start moves it to active.
func (m *memStore) next(now time.Time) (Dispatch, bool, time.Time) {
	m.serve()
	d, ok, wake := m.c.Next(now)
	if ok {
		m.mu.Lock()
		m.dropLocked(d.JobID)
		m.mu.Unlock()
	}
	return d, ok, wake
}

// queued counts host's queued jobs ("" for all).
func (m *memStore) queued(host string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if host == "" {
		return len(m.host)
	}
	return len(m.jobs[host])
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

func (h *harness) next() (Dispatch, bool, time.Time) { return h.q.next(h.now) }

func (h *harness) add(id int64, host string, nb time.Time) { h.q.add(id, host, nb) }
func (h *harness) remove(id int64) bool                    { return h.q.remove(id) }

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
	d, ok, wake := h.q.next(h.now)
	require.True(h.t, ok, "expected a dispatch at %v (wake %v)", h.now.Sub(t0), wake.Sub(t0))
	return d
}

func (h *harness) none() time.Time {
	h.t.Helper()
	d, ok, wake := h.q.next(h.now)
	require.False(h.t, ok, "unexpected dispatch of job %d on %s at %v", d.JobID, d.Host, h.now.Sub(t0))
	return wake
}

// drain dispatches everything that may start now.
func (h *harness) drain() []Dispatch {
	var out []Dispatch
	for {
		d, ok, _ := h.q.next(h.now)
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
		h.add(int64(from+i), host, time.Time{})
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
