package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Q1: a host's window holds its next few jobs only; the rest stay in the
// store until a refill brings them, in queue order (not_before, id).
func TestFrontier_Q1_WindowHoldsAFewAndRefillsInOrder(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 1000)
	h.q.serve()
	h.c.mu.Lock()
	win := len(h.c.byKey["a"].win)
	h.c.mu.Unlock()
	assert.LessOrEqual(t, win, h.c.maxWindow(h.c.byKey["a"]), "the window is small, not the queue")
	var got []int64
	for range 1000 {
		d := h.mustNext()
		got = append(got, d.JobID)
		h.observe(d, 200, "")
	}
	for i, id := range got {
		require.Equal(t, int64(i+1), id, "queue order kept across refills")
	}
	h.none()
}

// Q1: the windows of all hosts share one budget. With more hosts than it
// allows whole windows for, each holds its next few jobs only, so memory
// does not grow with the length of each host's queue; every job is still
// dispatched, each host's in queue order.
func TestFrontier_Q1_ManyHostsShareTheWindowBudget(t *testing.T) {
	h := newHarness(t, fast())
	h.c.windowBudget = 100
	const hosts, each = 50, 30
	for i := range hosts { // the hosts are known first, as at start from the hosts table
		h.add(int64(1+i*each), fmt.Sprintf("h%02d", i), time.Time{})
	}
	for i := range hosts {
		h.addN(fmt.Sprintf("h%02d", i), 2+i*each, each-1)
	}
	h.q.serve()
	h.c.mu.Lock()
	assert.Equal(t, minWindow, h.c.windowSize(h.c.byKey["h00"]), "100 entries over 50 hosts: each gets the least")
	assert.LessOrEqual(t, h.c.windowed, hosts*h.c.maxWindow(h.c.byKey["h00"]), "windows stay small, not the queue")
	h.c.mu.Unlock()

	last := map[string]int64{}
	for range hosts * each {
		d := h.mustNext()
		assert.Greater(t, d.JobID, last[d.Host], "host %s in queue order across refills", d.Host)
		last[d.Host] = d.JobID
		h.observe(d, 200, "")
		h.q.serve()
		h.c.mu.Lock()
		require.LessOrEqual(t, h.c.windowed, hosts*h.c.maxWindow(h.c.byKey["h00"]))
		h.c.mu.Unlock()
	}
	h.none()
	assert.Len(t, last, hosts)
	for i := range hosts {
		assert.Equal(t, int64((i+1)*each), last[fmt.Sprintf("h%02d", i)], "every job of host %d dispatched", i)
	}
}

// G2 with Q1: a host whose window is refilled many times keeps its exact
// pace: no window of time ever holds more than burst + rate·t requests,
// and the rate converges, as with a whole queue in memory.
func TestFrontier_G2_RefilledWindowKeepsExactSpacing(t *testing.T) {
	tun := fast()
	tun.RatePerMin, tun.Burst, tun.MaxInflight = 120, 3, 1
	h := newHarness(t, tun)
	h.addN("a", 1, 600) // some 40 windows' worth
	starts := h.serveInTurn(600)
	for i := range starts {
		for j := i + 1; j < len(starts); j += 7 {
			window := starts[j].Sub(starts[i])
			allowed := float64(tun.Burst) + window.Seconds()*tun.RatePerMin/60
			assert.LessOrEqual(t, float64(j-i+1), allowed+1e-9, "requests %d..%d in %v", i, j, window)
		}
	}
	total := starts[len(starts)-1].Sub(starts[0])
	rate := float64(len(starts)-1-tun.Burst) / total.Minutes()
	assert.InDelta(t, tun.RatePerMin, rate, 1, "the rate converges")
}

// Q1, G9, G2, B1: pausing, retuning and the breaker act on a host's jobs
// not yet in memory as on those in its window.
func TestFrontier_Q1_CommandsActOnJobsNotInMemory(t *testing.T) {
	tun := fast()
	tun.FailureThreshold = 2
	tun.RecoveryTimeout = time.Minute
	h := newHarness(t, tun)
	h.addN("a", 1, 500)

	h.c.PauseHost("a", "by hand")
	h.none()
	h.advance(time.Hour)
	h.none()
	assert.Equal(t, 500, h.q.queued("a"), "nothing dispatched while paused, none lost")
	h.c.ResumeHost("a")
	for range 100 { // past the first window, into the store
		h.observe(h.mustNext(), 200, "")
	}

	slow := tun
	slow.RatePerMin, slow.Burst, slow.JitterMax = 6, 1, 0
	require.NoError(t, h.c.SetHostTunables("a", slow))
	starts := h.serveInTurn(20)
	for i := 1; i < len(starts); i++ {
		assert.GreaterOrEqual(t, starts[i].Sub(starts[i-1]), 10*time.Second-time.Millisecond, "the new rate, for jobs read later")
	}

	require.NoError(t, h.c.SetHostTunables("a", tun))
	h.fail(h.nextDue(), ClassTransport)
	h.fail(h.nextDue(), ClassTransport)
	assert.Equal(t, Open, h.snap("a").Breaker)
	wake := h.none()
	assert.Equal(t, time.Minute, wake.Sub(h.now), "the breaker holds the jobs in storage too")
	h.now = wake
	d := h.mustNext()
	assert.True(t, d.Probe)
	h.observe(d, 200, "")
	left := h.q.queued("a")
	for range left {
		h.observe(h.mustNext(), 200, "")
	}
	h.none()
	assert.Equal(t, 0, h.q.queued("a"), "every job went, once")
}

// nextDue dispatches the next job at the first instant it may go.
func (h *harness) nextDue() Dispatch {
	h.t.Helper()
	d, ok, wake := h.next()
	if ok {
		return d
	}
	require.False(h.t, wake.IsZero(), "a job is waiting for nothing")
	h.now = wake
	return h.mustNext()
}
