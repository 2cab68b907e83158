package engine

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetry_R1_Delay(t *testing.T) {
	noJitter := func(int64) int64 { panic("jitter drawn while off") }
	cases := []struct {
		name string
		p    RetryPolicy
		n    int
		want time.Duration
	}{
		{"fixed n0", RetryPolicy{Strategy: Fixed, Base: 2 * time.Second}, 0, 2 * time.Second},
		{"fixed n7", RetryPolicy{Strategy: Fixed, Base: 2 * time.Second}, 7, 2 * time.Second},
		{"linear n0", RetryPolicy{Strategy: Linear, Base: 2 * time.Second}, 0, 2 * time.Second},
		{"linear n3", RetryPolicy{Strategy: Linear, Base: 2 * time.Second}, 3, 8 * time.Second},
		{"exponential n0", RetryPolicy{Strategy: Exponential, Base: 2 * time.Second}, 0, 2 * time.Second},
		{"exponential n3", RetryPolicy{Strategy: Exponential, Base: 2 * time.Second}, 3, 16 * time.Second},
		{"exponential capped", RetryPolicy{Strategy: Exponential, Base: 2 * time.Second, Max: 5 * time.Second}, 3, 5 * time.Second},
		{"exponential saturates", RetryPolicy{Strategy: Exponential, Base: time.Hour}, 200, math.MaxInt64},
		{"exponential saturates then cap", RetryPolicy{Strategy: Exponential, Base: time.Hour, Max: 300 * time.Second}, 200, 300 * time.Second},
		{"linear saturates", RetryPolicy{Strategy: Linear, Base: math.MaxInt64 / 2}, 5, math.MaxInt64},
		{"zero base", RetryPolicy{Strategy: Exponential}, 10, 0},
		{"negative n treated as 0", RetryPolicy{Strategy: Exponential, Base: time.Second}, -3, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.p.Delay(tc.n, noJitter))
		})
	}
}

func TestRetry_R1_JitterBoundsAndCapAgain(t *testing.T) {
	top := func(k int64) int64 { return k - 1 }
	bottom := func(int64) int64 { return 0 }
	p := RetryPolicy{Strategy: Exponential, Base: 2 * time.Second, Jitter: true}
	assert.Equal(t, 4*time.Second, p.Delay(1, bottom), "jitter draws from [0, d/2]: low end")
	assert.Equal(t, 6*time.Second, p.Delay(1, top), "jitter draws from [0, d/2]: high end is d/2")
	p.Max = 5 * time.Second
	assert.Equal(t, 5*time.Second, p.Delay(1, top), "cap applies again after jitter")
	p = RetryPolicy{Strategy: Exponential, Base: time.Hour, Jitter: true}
	d := p.Delay(100, top)
	assert.Equal(t, time.Duration(math.MaxInt64), d, "saturated plus jitter stays saturated, never wraps")
}

func TestRetry_R2_Classification(t *testing.T) {
	cases := []struct {
		name      string
		class     ErrClass
		status    int
		retry     bool
		brFailure bool
	}{
		{"transport", ClassTransport, 0, true, true},
		{"timeout", ClassTimeout, 0, true, true},
		{"truncated", ClassTruncated, 200, true, true},
		{"408", ClassNone, 408, true, false},
		{"500", ClassNone, 500, true, true},
		{"503 as status error", ClassHTTPStatus, 503, true, true},
		{"404", ClassNone, 404, false, false},
		{"403", ClassHTTPStatus, 403, false, false},
		{"429 breaker failure", ClassNone, 429, false, true},
		{"tls", ClassTLS, 0, false, false},
		{"refused", ClassRefused, 0, false, false},
		{"confinement", ClassConfinement, 0, false, false},
		{"size limit", ClassSizeLimit, 0, false, false},
		{"canceled", ClassCanceled, 0, false, false},
		{"200", ClassNone, 200, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.retry, Retryable(tc.class, tc.status), "retryable")
			assert.Equal(t, tc.brFailure, BreakerFailure(tc.class, tc.status), "breaker failure")
		})
	}
}

func TestRetry_R2_DecisionsFromObserve(t *testing.T) {
	cases := []struct {
		name             string
		o                Outcome
		retry, fail, thr bool
		reasonContains   string
	}{
		{"transport retried", Outcome{Class: ClassTransport, Err: errors.New("reset")}, true, false, false, "reset"},
		{"no status no class is transport", Outcome{}, true, false, false, "transport"},
		{"500 retried", Outcome{Status: 500}, true, false, false, "HTTP 500"},
		{"408 retried", Outcome{Status: 408}, true, false, false, "HTTP 408"},
		{"404 fails at once", Outcome{Status: 404}, false, true, false, "HTTP 404"},
		{"tls fails at once", Outcome{Class: ClassTLS, Err: errors.New("x509: expired")}, false, true, false, "x509"},
		{"size fails at once", Outcome{Class: ClassSizeLimit, Err: errors.New("too big")}, false, true, false, "too big"},
		{"429 throttled", Outcome{Status: 429}, true, false, true, "HTTP 429"},
		{"200 done", Outcome{Status: 200}, false, false, false, ""},
		{"canceled neither", Outcome{Class: ClassCanceled}, false, false, false, "canceled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fast())
			h.addN("a", 1, 1)
			d := h.mustNext()
			tc.o.Attempts = 1
			dec := h.c.Observe(d, tc.o, h.now)
			assert.Equal(t, tc.retry, dec.Retry, "retry")
			assert.Equal(t, tc.fail, dec.Fail, "fail")
			assert.Equal(t, tc.thr, dec.Throttled, "throttled")
			assert.Contains(t, dec.Reason, tc.reasonContains)
			if tc.retry && !tc.thr {
				assert.False(t, dec.NotBefore.Before(h.now.Add(2*time.Second)), "first retry waits base (2s)")
			}
		})
	}
}

// R1 through the core: a job's n-th failed attempt puts its next one off by
// the policy's delay for n-1 (the first retry waits base), growing as the
// strategy says, jitter in [0, d/2] on top, capped by max.
func TestRetry_R1_CoreDelaysGrowWithAttempts(t *testing.T) {
	for _, tc := range []struct {
		name     Strategy
		policy   RetryPolicy
		attempts []int
		want     []time.Duration // without jitter
	}{
		{Exponential, RetryPolicy{MaxAttempts: 10, Strategy: Exponential, Base: time.Second, Max: 10 * time.Second, Jitter: true},
			[]int{1, 2, 3, 4, 5}, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}},
		{Linear, RetryPolicy{MaxAttempts: 10, Strategy: Linear, Base: time.Second, Jitter: false},
			[]int{1, 2, 3}, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
		{Fixed, RetryPolicy{MaxAttempts: 10, Strategy: Fixed, Base: 3 * time.Second, Jitter: false},
			[]int{1, 4}, []time.Duration{3 * time.Second, 3 * time.Second}},
	} {
		t.Run(tc.name.String(), func(t *testing.T) {
			tun := fast()
			tun.Retry = tc.policy
			for i, n := range tc.attempts {
				h := newHarness(t, tun)
				h.addN("a", 1, 1)
				dec := h.c.Observe(h.mustNext(), Outcome{Status: 500, Attempts: n}, h.now)
				require.True(t, dec.Retry)
				got := dec.NotBefore.Sub(h.now)
				hi := tc.want[i]
				if tc.policy.Jitter {
					hi = hi + hi/2
					if tc.policy.Max > 0 {
						hi = min(hi, tc.policy.Max)
					}
				}
				assert.GreaterOrEqual(t, got, tc.want[i], "after attempt %d", n)
				assert.LessOrEqual(t, got, hi, "after attempt %d", n)
			}
		})
	}
}

// R4: a retry says when it may go as things stand — after the host's gate (a Retry-After on a
// 500) or its open breaker — while the job itself keeps only its own retry delay.
func TestRetry_R4_NextTryCountsGateAndBreaker(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 1)
	dec := h.c.Observe(h.mustNext(), Outcome{Status: 500, RetryAfter: "10", Attempts: 1}, h.now)
	require.True(t, dec.Retry)
	assert.LessOrEqual(t, dec.NotBefore.Sub(h.now), 3*time.Second, "the job's own delay: base 2 s and jitter")
	assert.GreaterOrEqual(t, dec.NextTry.Sub(h.now), 10*time.Second, "after the gate Retry-After set")

	tun := fast()
	tun.FailureThreshold = 1
	tun.RecoveryTimeout = time.Minute
	h = newHarness(t, tun)
	h.addN("b", 1, 1)
	dec = h.c.Observe(h.mustNext(), Outcome{Status: 504, Attempts: 1}, h.now) // opens the breaker
	require.True(t, dec.Retry)
	require.Equal(t, Open, dec.Breaker)
	assert.GreaterOrEqual(t, dec.NextTry.Sub(h.now), time.Minute, "after the breaker's half-open time")
	assert.Less(t, dec.NotBefore.Sub(h.now), time.Minute)
}

func TestRetry_R3_ThrottleDoesNotUseAttempts(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 1)
	d := h.mustNext()
	max := DefaultRetryPolicy().MaxAttempts
	dec := h.c.Observe(d, Outcome{Status: 429, Attempts: max}, h.now)
	assert.True(t, dec.Retry, "a throttle at the last attempt is still retried")
	assert.True(t, dec.Throttled)
	assert.False(t, dec.Fail)
	assert.EqualValues(t, 1, h.snap("a").Throttles, "throttles are counted separately")
	h.addN("a", 2, 1)
	h.advance(time.Hour)
	d = h.mustNext()
	dec = h.c.Observe(d, Outcome{Status: 500, Attempts: max}, h.now)
	assert.True(t, dec.Fail, "a 500 at the last attempt fails")
}

func TestRetry_R4_WaitsForMaxOfDelayGateBreaker(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 1)
	d := h.mustNext()
	h.observe(d, 200, "30") // gate: now+30s (floor)
	h.add(2, "a", t0.Add(10*time.Second))
	h.add(3, "b", t0.Add(10*time.Second))
	h.advance(10 * time.Second)
	got := h.mustNext()
	assert.Equal(t, int64(3), got.JobID, "b has no gate: its retry delay alone decides")
	wake := h.none()
	assert.Equal(t, t0.Add(30*time.Second), wake, "a's job waits for the gate, the later of the two")
	h.now = wake
	assert.Equal(t, int64(2), h.mustNext().JobID)

	h.add(4, "a", h.now.Add(time.Second))
	h.c.TripBreaker("a")
	wake = h.none()
	assert.Equal(t, h.now.Add(DefaultTunables().RecoveryTimeout), wake, "then the breaker, later still")
}

func TestRetry_R5_GivesUpWithLastError(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 1)
	pol := DefaultRetryPolicy()
	for n := 1; n <= pol.MaxAttempts; n++ {
		h.now = h.now.Add(time.Hour)
		d := h.mustNext()
		dec := h.c.Observe(d, Outcome{Class: ClassTimeout, Err: errors.New("header timeout"), Attempts: n}, h.now)
		if n < pol.MaxAttempts {
			require.True(t, dec.Retry, "attempt %d", n)
			h.add(1, "a", dec.NotBefore)
			continue
		}
		assert.True(t, dec.Fail)
		assert.False(t, dec.Retry)
		assert.Contains(t, dec.Reason, "header timeout")
		assert.Contains(t, dec.Reason, "5 attempts")
	}
	// "retry" from the UI: a fresh budget is a fresh Attempts count.
	h.add(1, "a", time.Time{})
	h.now = h.now.Add(time.Hour)
	d := h.mustNext()
	dec := h.c.Observe(d, Outcome{Class: ClassTimeout, Attempts: 1}, h.now)
	assert.True(t, dec.Retry)
}

func TestStrategy_ParseAndString(t *testing.T) {
	for _, s := range []Strategy{Fixed, Linear, Exponential} {
		got, err := ParseStrategy(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	_, err := ParseStrategy("random")
	assert.ErrorContains(t, err, "random")
}
