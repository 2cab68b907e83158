package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// breakerHarness has a threshold of 3 and a 10 s recovery timeout.
func breakerHarness(t *testing.T) *harness {
	tun := fast()
	tun.FailureThreshold = 3
	tun.RecoveryTimeout = 10 * time.Second
	h := newHarness(t, tun, func(c *Config) { c.ProbeTimeout = time.Minute })
	h.addN("a", 1, 100)
	return h
}

// failN sends n requests one after another and fails each with a 500.
func failN(h *harness, n int) {
	for range n {
		h.observe(h.mustNext(), 500, "")
	}
}

func TestBreaker_B1_ClosedCountsConsecutiveFailures(t *testing.T) {
	h := breakerHarness(t)
	failN(h, 2)
	assert.Equal(t, 2, h.snap("a").Failures)
	h.observe(h.mustNext(), 404, "") // the URL's fault: a success for the host
	assert.Equal(t, 0, h.snap("a").Failures, "a success resets the count")
	failN(h, 2)
	h.fail(h.mustNext(), ClassTLS) // neither failure nor success
	assert.Equal(t, 2, h.snap("a").Failures)
	assert.Equal(t, Closed, h.snap("a").Breaker)
	h.fail(h.mustNext(), ClassTimeout)
	s := h.snap("a")
	assert.Equal(t, Open, s.Breaker, "opens at failure_threshold")
	assert.Equal(t, 3, s.Failures)
	assert.Equal(t, h.now, s.OpenedAt)
	assert.Contains(t, h.kinds("a"), EventBreakerOpen)
}

func TestBreaker_B1_429CountsAsFailure(t *testing.T) {
	h := breakerHarness(t)
	for range 3 {
		d, ok, wake := h.next()
		if !ok {
			h.now = wake
			d = h.mustNext()
		}
		h.observe(d, 429, "")
	}
	assert.Equal(t, Open, h.snap("a").Breaker)
}

func TestBreaker_B2_OpenDispatchesNothingUntilRecovery(t *testing.T) {
	h := breakerHarness(t)
	h.addN("b", 1000, 1)
	failN(h, 3)
	opened := h.now
	got := h.drain()
	require.Len(t, got, 1, "other hosts are not affected")
	assert.Equal(t, "b", got[0].Host)
	wake := h.none()
	assert.Equal(t, opened.Add(10*time.Second), wake)
	s := h.snap("a")
	assert.Equal(t, WaitBreaker, s.Waiting)
	assert.Equal(t, 10*time.Second, s.HalfOpenIn, "time to half-open is visible (B6)")
	h.now = wake.Add(-time.Nanosecond)
	h.none()
	h.now = wake
	d := h.mustNext()
	assert.True(t, d.Probe, "the first request after recovery is the probe")
	assert.Equal(t, HalfOpen, h.snap("a").Breaker)
}

func TestBreaker_B3_SingleProbe(t *testing.T) {
	cases := []struct {
		name    string
		report  func(h *harness, d Dispatch)
		want    BreakerState
		opensAt bool
	}{
		{"success closes", func(h *harness, d Dispatch) { h.observe(d, 200, "") }, Closed, false},
		{"failure reopens", func(h *harness, d Dispatch) { h.observe(d, 502, "") }, Open, true},
		{"cancelled probe counts as failure", func(h *harness, d Dispatch) { h.fail(d, ClassCanceled) }, Open, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := breakerHarness(t)
			failN(h, 3)
			h.advance(10 * time.Second)
			probe := h.mustNext()
			require.True(t, probe.Probe)
			assert.True(t, h.none().Equal(probe.ProbeDeadline), "exactly one probe in half-open")
			h.advance(2 * time.Second)
			tc.report(h, probe)
			s := h.snap("a")
			assert.Equal(t, tc.want, s.Breaker)
			if tc.opensAt {
				assert.Equal(t, h.now, s.OpenedAt, "a fresh timeout")
				assert.Equal(t, 10*time.Second, s.HalfOpenIn)
			} else {
				assert.Equal(t, 0, s.Failures)
				h.mustNext()
			}
		})
	}
}

func TestBreaker_B3_HungProbeNeverWedges(t *testing.T) {
	h := breakerHarness(t)
	failN(h, 3)
	h.advance(10 * time.Second)
	probe := h.mustNext()
	require.True(t, probe.Probe)
	assert.Equal(t, h.now.Add(time.Minute), probe.ProbeDeadline)

	// A heartbeat keeps a slow but live probe alive.
	h.advance(30 * time.Second)
	h.c.Heartbeat(probe, h.now)
	wake := h.none()
	assert.Equal(t, h.now.Add(time.Minute), wake)

	// Then it hangs: at its deadline it counts as a failure.
	h.now = wake
	h.none()
	s := h.snap("a")
	assert.Equal(t, Open, s.Breaker)
	assert.Equal(t, 0, s.Inflight, "the hung probe no longer holds the host's only slot")
	assert.Equal(t, 4, s.Failures)

	// After a fresh recovery timeout a new probe goes out.
	h.advance(10 * time.Second)
	probe2 := h.mustNext()
	assert.True(t, probe2.Probe)
	// The hung one finally reports: it moves nothing and frees nothing twice.
	h.observe(probe, 200, "")
	assert.Equal(t, HalfOpen, h.snap("a").Breaker)
	assert.Equal(t, 1, h.snap("a").Inflight)
	h.observe(probe2, 200, "")
	assert.Equal(t, Closed, h.snap("a").Breaker)
	assert.Equal(t, 0, h.c.Stats().Inflight)
}

func TestBreaker_B4_OlderStateResultsDoNotMove(t *testing.T) {
	tun := fast()
	tun.FailureThreshold = 2
	h := newHarness(t, tun)
	h.addN("a", 1, 10)
	old := h.drain()
	require.GreaterOrEqual(t, len(old), 4)

	// Dispatched while closed, reported after a trip: the breaker stays open.
	h.c.TripBreaker("a")
	h.observe(old[0], 200, "")
	assert.Equal(t, Open, h.snap("a").Breaker, "a late success does not close it")

	// Dispatched before a reset, failing after it: the count stays 0.
	h.c.ResetBreaker("a")
	h.observe(old[1], 500, "")
	h.observe(old[2], 500, "")
	s := h.snap("a")
	assert.Equal(t, Closed, s.Breaker, "late failures do not reopen it")
	assert.Equal(t, 0, s.Failures)

	// Results of the current state do count.
	h.addN("a", 50, 2)
	cur := h.drain()
	require.Len(t, cur, 2)
	h.observe(cur[0], 500, "")
	h.observe(cur[1], 500, "")
	assert.Equal(t, Open, h.snap("a").Breaker)
}

func TestBreaker_B5_ManualControlIsRecorded(t *testing.T) {
	h := breakerHarness(t)
	h.c.TripBreaker("a")
	assert.Equal(t, Open, h.snap("a").Breaker)
	h.none()
	h.c.ProbeNow("a")
	assert.Equal(t, HalfOpen, h.snap("a").Breaker, "probe now: open → half-open at once")
	d := h.mustNext()
	assert.True(t, d.Probe)
	h.c.ResetBreaker("a")
	assert.Equal(t, Closed, h.snap("a").Breaker)
	h.c.ProbeNow("a") // not open: nothing to do, nothing recorded
	assert.Equal(t, Closed, h.snap("a").Breaker)
	assert.Equal(t, []EventKind{EventTrip, EventProbeNow, EventReset}, h.kinds("a"))
	h.mu.Lock()
	assert.Equal(t, "closed → open", h.events[0].Detail)
	h.mu.Unlock()
}

func TestBreaker_B6_VisibleAndPersisted(t *testing.T) {
	h := breakerHarness(t)
	failN(h, 3)
	h.advance(4 * time.Second)
	s := h.snap("a")
	assert.Equal(t, Open, s.Breaker)
	assert.Equal(t, 3, s.Failures)
	assert.Equal(t, h.now.Add(-4*time.Second), s.OpenedAt)
	assert.Equal(t, 6*time.Second, s.HalfOpenIn)

	st, ok := h.c.ExportHost("a")
	require.True(t, ok)
	assert.Equal(t, Open, st.Breaker)
	assert.Equal(t, 3, st.Failures)
	assert.Equal(t, t0, st.OpenedAt)
	assert.Equal(t, "a", h.c.DirtyHosts()[0], "breaker changes mark the host for saving")
	assert.Empty(t, h.c.DirtyHosts())

	h2 := breakerHarness(t)
	h2.now = h.now.Add(time.Second)
	h2.c.RestoreHost(st, h2.now)
	s2 := h2.snap("a")
	assert.Equal(t, Open, s2.Breaker)
	assert.Equal(t, 3, s2.Failures)
	assert.Equal(t, 5*time.Second, s2.HalfOpenIn)
}

func TestBreakerState_String(t *testing.T) {
	for _, s := range []BreakerState{Closed, Open, HalfOpen} {
		got, err := ParseBreakerState(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	_, err := ParseBreakerState("ajar")
	assert.Error(t, err)
}
