package engine

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

func TestGovernor_G1_InflightCapBlocksNobody(t *testing.T) {
	tun := fast()
	tun.MaxInflight = 2
	h := newHarness(t, tun)
	h.addN("a", 1, 5)
	h.addN("b", 100, 1)
	got := h.drain()
	require.Len(t, got, 3, "two for a (its cap), then b is not blocked")
	hosts := map[string]int{}
	for _, d := range got {
		hosts[d.Host]++
	}
	assert.Equal(t, map[string]int{"a": 2, "b": 1}, hosts)
	assert.True(t, h.none().IsZero(), "a capped host waits for a result, not for time")
	assert.Equal(t, WaitInflightCap, h.snap("a").Waiting)
	h.observe(got[0], 200, "")
	d := h.mustNext()
	assert.Equal(t, "a", d.Host, "a result frees a slot")
	h.none()
}

func TestGovernor_G2_TokenBucket(t *testing.T) {
	tun := fast()
	tun.RatePerMin, tun.Burst = 60, 4
	h := newHarness(t, tun)
	h.addN("a", 1, 20)
	assert.Len(t, h.drain(), 4, "a full bucket lets burst requests go at once")
	wake := h.none()
	assert.Equal(t, time.Second, wake.Sub(h.now).Round(time.Microsecond), "then one per 1/rate")
	h.advance(999 * time.Millisecond)
	h.none()
	h.advance(time.Millisecond + time.Microsecond)
	h.mustNext()

	// A rate change applies to the job already waiting for a token.
	h.advance(500 * time.Millisecond) // half a token in the bucket
	require.NoError(t, h.c.SetHostTunables("a", func() Tunables { t := tun; t.RatePerMin = 600; return t }()))
	wake = h.none()
	assert.InDelta(t, float64(50*time.Millisecond), float64(wake.Sub(h.now)), float64(time.Microsecond),
		"the remaining half token comes at the new rate")

	// A burst change applies at once too.
	h.advance(time.Hour)
	require.NoError(t, h.c.SetHostTunables("a", func() Tunables { t := tun; t.Burst = 2; return t }()))
	assert.Len(t, h.drain(), 2, "a lowered burst caps the bucket")
	assert.Equal(t, 0.0, h.snap("a").Tokens)
}

func TestGovernor_G3_GateHoldsEverything(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 3)
	d := h.mustNext()
	h.observe(d, 200, "10")
	wake := h.none()
	assert.Equal(t, h.now.Add(10*time.Second), wake)
	h.now = wake.Add(-time.Nanosecond)
	h.none()
	assert.Equal(t, WaitGate, h.snap("a").Waiting)
	h.now = wake
	h.mustNext()
}

func TestGovernor_G4_SpacingJitter(t *testing.T) {
	tun := fast()
	tun.JitterMin, tun.JitterMax = 100*time.Millisecond, 200*time.Millisecond
	h := newHarness(t, tun)
	h.addN("a", 1, 50)
	starts := h.serveInTurn(50)
	gaps := map[time.Duration]bool{}
	for i := 1; i < len(starts); i++ {
		g := starts[i].Sub(starts[i-1])
		assert.GreaterOrEqual(t, g, 100*time.Millisecond)
		assert.LessOrEqual(t, g, 200*time.Millisecond)
		gaps[g] = true
	}
	assert.Greater(t, len(gaps), 10, "spacing must vary, not form a fixed rhythm")
}

// G4 with G2: when the bucket sets the pace (a sustained rate), the jitter
// still spaces the requests, from each next token, so they form no fixed
// rhythm; the bucket keeps what the jitter delays, so the rate still
// converges to rate_per_min, and no window ever holds more than burst + rate·t.
func TestGovernor_G4_JitterWhenTheBucketSetsThePace(t *testing.T) {
	tun := fast()
	tun.RatePerMin, tun.Burst = 60, 2
	tun.JitterMin, tun.JitterMax = 300*time.Millisecond, 600*time.Millisecond
	h := newHarness(t, tun)
	h.addN("a", 1, 201) // one left queued at the end, waiting
	starts := h.serveInTurn(200)
	gaps := map[time.Duration]int{}
	for i := 1; i < len(starts); i++ {
		g := starts[i].Sub(starts[i-1]).Round(time.Millisecond)
		assert.GreaterOrEqual(t, g, 300*time.Millisecond, "spaced by at least jitter_min")
		gaps[g]++
	}
	assert.Greater(t, len(gaps), 100, "intervals must vary, not form a fixed rhythm: %v", gaps)
	for g, n := range gaps {
		assert.Less(t, n, 10, "%v came %d times", g, n)
	}
	// G2: at most burst + rate·t in any window; and the rate converges.
	for i := range starts {
		for j := i + 1; j < len(starts); j++ {
			assert.LessOrEqual(t, float64(j-i+1), 2+starts[j].Sub(starts[i]).Seconds()+1e-9)
		}
	}
	total := starts[len(starts)-1].Sub(starts[0]).Seconds()
	assert.InDelta(t, 199/total, 1.0, 0.02, "sustained rate converges to 60/min: %d requests in %.1f s", len(starts), total)
	assert.Equal(t, WaitToken, h.snap("a").Waiting, "the bucket is what it waits for")
}

// G2 over G4 with a burst of 1: a bucket that holds one token keeps nothing
// the jitter would delay, so the spacing runs from the last dispatch and
// the sustained rate still converges to rate_per_min.
func TestGovernor_G2_BurstOfOneKeepsItsRate(t *testing.T) {
	tun := fast()
	tun.RatePerMin, tun.Burst = 60, 1
	tun.JitterMin, tun.JitterMax = 0, 250*time.Millisecond
	h := newHarness(t, tun)
	h.addN("a", 1, 400)
	starts := h.serveInTurn(400)
	total := starts[len(starts)-1].Sub(starts[0]).Seconds()
	assert.InDelta(t, 60*399/total, 60, 0.5, "requests per minute")
}

func TestGovernor_G5_BackoffWindow(t *testing.T) {
	cases := []struct {
		name      string
		base, max time.Duration
		level     int
		want      time.Duration
	}{
		{"level 0", time.Second, time.Minute, 0, 0},
		{"level 1 is base", time.Second, time.Minute, 1, time.Second},
		{"level 4", time.Second, time.Minute, 4, 8 * time.Second},
		{"capped", time.Second, time.Minute, 16, time.Minute},
		{"no overflow with huge base", math.MaxInt64 / 3, math.MaxInt64, 16, math.MaxInt64},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, backoffWindow(tc.base, tc.max, tc.level))
		})
	}
}

func TestGovernor_G5_ThrottleRaisesLevelAndGate(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 40)
	base, max := DefaultTunables().BackoffBase, DefaultTunables().BackoffMax
	for lvl := 1; lvl <= 20; lvl++ {
		d, ok, wake := h.next()
		if !ok {
			h.now = wake
			d = h.mustNext()
		}
		h.observe(d, 429, "")
		s := h.snap("a")
		want := min(lvl, MaxLevel)
		require.Equal(t, want, s.Level, "level is capped at 16")
		assert.LessOrEqual(t, s.GateIn, backoffWindow(base, max, want), "full jitter within the window")
	}
	// Retry-After is a floor, with a small positive jitter of at most min(10 %, 1 s).
	for _, tc := range []struct {
		ra     string
		lo, hi time.Duration
	}{{"30", 30 * time.Second, 31 * time.Second}, {"5", 5 * time.Second, 5500 * time.Millisecond}, {"600", 600 * time.Second, 601 * time.Second}} {
		h := newHarness(t, fast())
		h.addN("a", 1, 1)
		h.observe(h.mustNext(), 503, tc.ra)
		gi := h.snap("a").GateIn
		assert.GreaterOrEqual(t, gi, tc.lo, "Retry-After %s is a floor", tc.ra)
		assert.LessOrEqual(t, gi, tc.hi, "Retry-After %s jitter is small", tc.ra)
	}
	// A Retry-After beyond the backoff cap is not shortened by it.
	h = newHarness(t, fast())
	h.addN("a", 1, 1)
	h.observe(h.mustNext(), 429, "3600")
	assert.GreaterOrEqual(t, h.snap("a").GateIn, time.Hour)
}

// G5: the wait after a throttle is a uniform draw in [0, window], the window
// doubling with each level: over many hosts (seeds), the gates after the
// first throttle (window = base) and after the third (window = 4·base) spread
// over their whole window with their mean in the middle.
func TestGovernor_G5_FullJitterOverTheWindow(t *testing.T) {
	tun := fast()
	tun.BackoffBase, tun.BackoffMax = time.Second, time.Minute
	const samples = 2000
	for _, tc := range []struct {
		throttles int
		window    time.Duration
	}{{1, time.Second}, {3, 4 * time.Second}} {
		var sum, lo, hi time.Duration
		lo = time.Hour
		for seed := range samples {
			h := newHarness(t, tun, func(c *Config) { c.Seed = int64(seed) + 1 })
			h.addN("a", 1, tc.throttles)
			for range tc.throttles {
				d, ok, wake := h.next()
				if !ok { // after the gate of the throttle before
					h.now = wake
					d = h.mustNext()
				}
				h.observe(d, 429, "")
			}
			gi := h.snap("a").GateIn
			require.LessOrEqual(t, gi, tc.window)
			sum += gi
			lo, hi = min(lo, gi), max(hi, gi)
		}
		mean := sum / samples
		assert.InDelta(t, float64(tc.window/2), float64(mean), float64(tc.window)/20,
			"after %d throttles the mean wait is half the window", tc.throttles)
		assert.Less(t, lo, tc.window/20, "the draw reaches down to 0")
		assert.Greater(t, hi, tc.window*19/20, "the draw reaches up to the window")
	}
}

func TestGovernor_G5_OnlyThrottleStatusesThrottle(t *testing.T) {
	tun := fast()
	tun.ThrottleStatuses = []int{418}
	h := newHarness(t, tun)
	h.addN("a", 1, 3)
	h.observe(h.mustNext(), 429, "")
	assert.Equal(t, 0, h.snap("a").Level, "429 is not in this host's throttle set")
	h.observe(h.mustNext(), 418, "")
	assert.Equal(t, 1, h.snap("a").Level)
}

func TestGovernor_G6_OneBurstOneLevel(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 10)
	burst := h.drain()
	require.GreaterOrEqual(t, len(burst), 4)
	for _, d := range burst[:3] {
		h.observe(d, 429, "")
	}
	assert.Equal(t, 1, h.snap("a").Level, "three throttles from one burst raise the level once")
	before := h.snap("a").Gate
	h.observe(burst[3], 429, "100")
	assert.Equal(t, 1, h.snap("a").Level)
	assert.GreaterOrEqual(t, h.snap("a").Gate.Sub(h.now), 100*time.Second, "a late throttle still honours its own Retry-After")
	assert.False(t, h.snap("a").Gate.Before(before))

	h.now = h.snap("a").Gate
	h.addN("a", 100, 1)
	d := h.mustNext()
	h.observe(d, 429, "")
	assert.Equal(t, 2, h.snap("a").Level, "a request sent after the increase raises it again")
}

func TestGovernor_G7_Decay(t *testing.T) {
	tun := fast()
	tun.DecayAfter = 3
	h := newHarness(t, tun)
	h.addN("a", 1, 30)
	step := func(status int, ra string) {
		d, ok, wake := h.next()
		if !ok {
			h.now = wake
			d = h.mustNext()
		}
		h.observe(d, status, ra)
	}
	step(429, "")
	step(429, "")
	require.Equal(t, 2, h.snap("a").Level)
	step(200, "")
	step(404, "") // any non-throttle response counts
	assert.Equal(t, 2, h.snap("a").Streak)
	step(200, "")
	assert.Equal(t, 1, h.snap("a").Level, "decay_after successes drop one level")
	assert.Equal(t, 0, h.snap("a").Streak, "and the streak restarts")
	step(200, "")
	step(200, "")
	step(429, "")
	assert.Equal(t, 0, h.snap("a").Streak, "a throttle resets the streak")
	assert.Equal(t, 2, h.snap("a").Level)
	assert.Contains(t, h.kinds("a"), EventDecay)

	h.advance(time.Hour)
	h.mu.Lock()
	h.events = nil
	h.mu.Unlock()
	step(200, "45")
	assert.GreaterOrEqual(t, h.snap("a").GateIn, 45*time.Second, "a non-throttle Retry-After is a floor")
	// G10, S4: that wait is an event, which has the host written at once, so a crash right
	// after does not forget it.
	h.mu.Lock()
	require.Len(t, h.events, 1)
	assert.Equal(t, EventRetryAfter, h.events[0].Kind)
	assert.Equal(t, "HTTP 200 with Retry-After 45s", h.events[0].Detail)
	h.mu.Unlock()
	h.advance(time.Minute)
	step(200, "0") // moves no gate: no event
	assert.Equal(t, []EventKind{EventRetryAfter}, h.kinds("a")[len(h.kinds("a"))-1:])
}

func TestGovernor_G9_Pause(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 3)
	h.addN("b", 10, 1)
	inflight := h.mustNext()
	require.Equal(t, "a", inflight.Host)
	h.c.PauseHost("a", "user")
	got := h.drain()
	require.Len(t, got, 1, "only b dispatches")
	assert.Equal(t, "b", got[0].Host)
	s := h.snap("a")
	assert.True(t, s.Paused)
	assert.Equal(t, "user", s.PauseReason)
	assert.Equal(t, 2, h.q.queued("a"), "pausing loses no queued job")
	assert.Equal(t, WaitPaused, s.Waiting)
	h.observe(inflight, 200, "") // in-flight requests finish normally
	assert.Equal(t, 0, h.snap("a").Inflight)
	h.c.ResumeHost("a")
	assert.Len(t, h.drain(), 2)
	assert.Equal(t, []EventKind{EventPause, EventResume}, h.kinds("a"))

	// Retry-After longer than max_retry_after pauses the host with that reason.
	tun := fast()
	tun.MaxRetryAfter = time.Hour
	h = newHarness(t, tun)
	h.addN("a", 1, 2)
	h.observe(h.mustNext(), 503, "7200")
	s = h.snap("a")
	assert.True(t, s.Paused)
	assert.Contains(t, s.PauseReason, "Retry-After")
	assert.Less(t, s.GateIn, time.Hour, "the pause replaces the wait; our backoff still applies")
	h.now = h.now.Add(24 * time.Hour)
	h.none()

	// PauseAll holds every host; ResumeAll lets them go.
	h = newHarness(t, fast())
	h.addN("a", 1, 1)
	h.c.PauseAll()
	assert.True(t, h.none().IsZero())
	assert.Equal(t, WaitPaused, h.snap("a").Waiting)
	h.c.ResumeAll()
	h.mustNext()
}

func TestGovernor_G10_RestartKeepsGate(t *testing.T) {
	tun := fast()
	tun.RecoveryTimeout = time.Hour
	h := newHarness(t, tun)
	h.addN("a", 1, 2)
	h.observe(h.mustNext(), 503, "86400")
	h.c.TripBreaker("a")
	exported, ok := h.c.ExportHost("a")
	require.True(t, ok)
	assert.Equal(t, time.UTC, exported.Gate.Location())
	assert.GreaterOrEqual(t, exported.Gate.Sub(h.now), 86400*time.Second)

	// Restart ten minutes later (wall), a fresh core with a fresh epoch.
	h2 := newHarness(t, tun)
	h2.now = h.now.Add(10 * time.Minute)
	h2.c.RestoreHost(exported, h2.now)
	h2.add(2, "a", time.Time{})
	s := h2.snap("a")
	assert.Equal(t, exported.Gate.Sub(h2.now), s.GateIn, "the remaining wait is kept exactly")
	assert.Equal(t, Open, s.Breaker, "B6: the breaker state survives a restart")
	assert.Equal(t, exported.OpenedAt, s.OpenedAt.Round(0))
	assert.Equal(t, 50*time.Minute, s.HalfOpenIn, "and so does its recovery countdown")
	wake := h2.none()
	assert.Equal(t, exported.Gate, wake.Round(0), "no full-speed restart after a 429")
}

// G2, G4, G10: a host's pacing outlives a restart. Its bucket holds what it held when saved,
// plus what the rate added since, and the jitter spacing after its last request still holds,
// so a run started right after another does not get a fresh burst.
func TestGovernor_G2_G4_RestartKeepsPacing(t *testing.T) {
	tun := fast()
	tun.RatePerMin, tun.Burst = 60, 2 // a token a second
	h := newHarness(t, tun)
	h.addN("a", 1, 3)
	h.observe(h.mustNext(), 200, "")
	h.observe(h.mustNext(), 200, "")
	h.none() // the burst is spent
	exported, ok := h.c.ExportHost("a")
	require.True(t, ok)
	assert.InDelta(t, 0, exported.Tokens, 1e-6)

	// Half a second later, a new run: half a token, so the next request in half a second.
	h2 := newHarness(t, tun)
	h2.now = h.now.Add(500 * time.Millisecond)
	h2.c.RestoreHost(exported, h2.now)
	h2.addN("a", 4, 3)
	wake := h2.none()
	assert.Equal(t, 500*time.Millisecond, wake.Sub(h2.now).Round(time.Millisecond), "not a fresh burst of 2")
	h2.now = wake
	h2.mustNext()

	// Ten seconds later the bucket is full again, but no fuller than its burst.
	h3 := newHarness(t, tun)
	h3.now = h.now.Add(10 * time.Second)
	h3.c.RestoreHost(exported, h3.now)
	h3.addN("a", 7, 3)
	assert.Len(t, h3.drain(), 2)

	// A host with a burst of its own larger than the defaults' gets back what it held too.
	own := tun
	own.Burst = 10
	h6 := newHarness(t, tun)
	require.NoError(t, h6.c.SetHostTunables("b", own))
	h6.addN("b", 1, 1)
	h6.observe(h6.mustNext(), 200, "") // 1 token of the 2 it had under the defaults' burst
	h6.advance(6 * time.Second)        // then 6 more
	exported, _ = h6.c.ExportHost("b")
	assert.InDelta(t, 7, exported.Tokens, 1e-6)
	h7 := newHarness(t, tun)
	h7.now = h6.now
	h7.c.RestoreHost(exported, h7.now)
	h7.addN("b", 4, 10)
	assert.Len(t, h7.drain(), 7, "7 tokens, neither fewer nor more")

	// The jitter spacing after the last request holds across the restart too (G4).
	tun.RatePerMin, tun.Burst = MaxRatePerMin, MaxBurst
	tun.JitterMin, tun.JitterMax = 2*time.Second, 2*time.Second
	h4 := newHarness(t, tun)
	h4.addN("a", 1, 1)
	h4.observe(h4.mustNext(), 200, "")
	exported, _ = h4.c.ExportHost("a")
	h5 := newHarness(t, tun)
	h5.now = h4.now.Add(500 * time.Millisecond)
	h5.c.RestoreHost(exported, h5.now)
	h5.addN("a", 2, 1)
	assert.Equal(t, 1500*time.Millisecond, h5.none().Sub(h5.now).Round(time.Millisecond))

	// A saved spacing longer than jitter_max (a wall clock set back a day between the runs)
	// holds the host at most jitter_max.
	exported.SpaceUntil = exported.SpaceUntil.Add(24 * time.Hour)
	h8 := newHarness(t, tun)
	h8.now = h4.now
	h8.c.RestoreHost(exported, h8.now)
	h8.addN("a", 2, 1)
	assert.LessOrEqual(t, h8.none().Sub(h8.now), 2*time.Second)
}

func TestGovernor_G10_MonotonicInstants(t *testing.T) {
	// Times from time.Now carry a monotonic reading; the core measures with
	// it. Two instants with the same monotonic distance but any wall reading
	// give the same gate distance.
	start := time.Now()
	h := newHarness(t, fast())
	h.now = start
	h.addN("a", 1, 2)
	h.observe(h.mustNext(), 200, "60")
	wake := h.none()
	assert.Equal(t, 60*time.Second, wake.Sub(start))
	assert.NotEqual(t, wake.Round(0), wake, "gates carry the monotonic reading while running")
}

func TestGovernor_G11_SnapshotValues(t *testing.T) {
	tun := fast()
	tun.RatePerMin, tun.Burst, tun.MaxInflight = 60, 3, 2
	h := newHarness(t, tun)
	h.addN("a", 1, 5)
	got := h.drain()
	require.Len(t, got, 2)
	s := h.snap("a")
	assert.Equal(t, "a", s.Host)
	assert.InDelta(t, 1.0, s.Tokens, 1e-9)
	assert.Equal(t, 60.0, s.RatePerMin)
	assert.Equal(t, 3, s.Burst)
	assert.Equal(t, 2, s.Inflight)
	assert.Equal(t, 2, s.MaxInflight)
	assert.Equal(t, 3, h.q.queued("a"))
	assert.Equal(t, WaitInflightCap, s.Waiting)
	h.observe(got[0], 200, "")
	h.observe(got[1], 200, "")
	h.drain()
	s = h.snap("a")
	assert.GreaterOrEqual(t, s.Tokens, 0.0, "tokens are never shown below 0")
	assert.Equal(t, WaitToken, s.Waiting)
	assert.Equal(t, 200, s.LastStatus)
	assert.Equal(t, 2, s.Streak)
	assert.False(t, s.NextDue.IsZero())

	all := h.c.Snapshot()
	require.Len(t, all, 1)
	assert.Equal(t, s.Host, all[0].Host)
	_, ok := h.c.HostSnapshot("nobody")
	assert.False(t, ok)
}

func TestGovernor_G11_WaitReasons(t *testing.T) {
	cases := []struct {
		name  string
		setup func(h *harness)
		want  WaitReason
	}{
		{"ready", func(h *harness) {}, WaitReady},
		{"empty", func(h *harness) { h.drain() }, WaitEmpty},
		{"paused", func(h *harness) { h.c.PauseHost("a", "x") }, WaitPaused},
		{"breaker", func(h *harness) { h.c.TripBreaker("a") }, WaitBreaker},
		{"gate", func(h *harness) { h.observe(h.mustNext(), 200, "9"); h.addN("a", 3, 1) }, WaitGate},
		{"retry delay", func(h *harness) { h.add(1, "a", h.now.Add(time.Minute)) }, WaitRetryDelay},
		{"global cap", func(h *harness) {
			h.c.SetGlobalInflight(1)
			h.add(99, "b", time.Time{})
			h.remove(1)
			h.mustNext()
			h.add(1, "a", time.Time{})
		}, WaitGlobalCap},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fast())
			h.addN("a", 1, 1)
			h.addN("a", 2, 1)
			h.remove(2)
			tc.setup(h)
			assert.Equal(t, tc.want, h.snap("a").Waiting)
			assert.NotEmpty(t, tc.want.String())
		})
	}
}

// TestGovernor_G2_Invariant drives one host with random outcomes and
// latencies over a virtual hour, with a rate change half way, and checks
// every window of starts against burst + rate·t (G2).
func TestGovernor_G2_Invariant(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		tun := fast()
		tun.RatePerMin, tun.Burst, tun.MaxInflight = 90, 5, 64
		tun.DecayAfter = MaxDecayAfter
		h := newHarness(t, tun, func(c *Config) { c.Seed = int64(seed) })
		rng := rand.New(rand.NewPCG(seed, 7))
		h.addN("a", 1, 30_000)
		type pending struct {
			at time.Time
			d  Dispatch
		}
		var inflight []pending
		var starts []time.Time
		half, end := t0.Add(30*time.Minute), t0.Add(time.Hour)
		changed := false
		var firstAfterChange time.Time
		newRate := 360.0
		calls := 0
		for h.now.Before(end) {
			if !changed && !h.now.Before(half) {
				t2 := tun
				t2.RatePerMin = newRate
				require.NoError(t, h.c.SetHostTunables("a", t2))
				changed = true
			}
			// Results due now come back with random non-throttle statuses.
			sort.Slice(inflight, func(i, j int) bool { return inflight[i].at.Before(inflight[j].at) })
			for len(inflight) > 0 && !inflight[0].at.After(h.now) {
				st := []int{200, 200, 200, 404, 206, 301}[rng.IntN(6)]
				h.c.Observe(inflight[0].d, Outcome{Status: st, Attempts: 1}, h.now)
				inflight = inflight[1:]
			}
			var wake time.Time
			for {
				calls++
				d, ok, w := h.next()
				if !ok {
					wake = w
					break
				}
				starts = append(starts, h.now)
				if changed && firstAfterChange.IsZero() {
					firstAfterChange = h.now
				}
				lat := time.Duration(rng.Int64N(int64(3 * time.Second)))
				inflight = append(inflight, pending{h.now.Add(lat), d})
			}
			sort.Slice(inflight, func(i, j int) bool { return inflight[i].at.Before(inflight[j].at) })
			nextT := end
			if !wake.IsZero() && wake.Before(nextT) {
				nextT = wake
			}
			if len(inflight) > 0 && inflight[0].at.Before(nextT) {
				nextT = inflight[0].at
			}
			if !changed && half.Before(nextT) {
				nextT = half
			}
			require.True(t, nextT.After(h.now), "time must advance (no spinning)")
			h.now = nextT
		}
		require.NotEmpty(t, starts)
		check := func(from, to time.Time, ratePerMin float64, sustained bool) {
			var s []time.Time
			for _, x := range starts {
				if !x.Before(from) && x.Before(to) {
					s = append(s, x)
				}
			}
			// (j−i+1) − r·(s_j−s_i) ≤ burst for all i ≤ j, checked in O(n) by
			// keeping the minimum of i − r·s_i over the prefix.
			r := ratePerMin / 60
			minA := math.Inf(1)
			for j := range s {
				x := s[j].Sub(t0).Seconds()
				if a := float64(j) - r*x; a < minA {
					minA = a
				}
				if worst := float64(j) - r*x - minA + 1; worst > float64(tun.Burst)+1e-6 {
					t.Fatalf("seed %d: a window ending at %v holds %.3f more starts than burst+rate·t allows", seed, s[j].Sub(t0), worst-float64(tun.Burst))
				}
			}
			if !sustained {
				return
			}
			n := float64(len(s))
			secs := to.Sub(from).Seconds()
			assert.InEpsilon(t, ratePerMin/60, (n-float64(tun.Burst))/secs, 0.01, "sustained rate within 1%%")
		}
		check(t0, half, tun.RatePerMin, true)
		check(half, end, newRate, true)
		check(t0, end, newRate, false) // windows across the change stay under the larger rate
		assert.LessOrEqual(t, firstAfterChange.Sub(half), time.Duration(60/newRate*float64(time.Second))+time.Microsecond,
			"the new rate applies to the very next dispatch")
		assert.Less(t, calls, 4*len(starts)+100, "Next is not called in a spin")
	}
}

// L2: a host's bandwidth cap is one limiter for all its requests, changed
// live by a retune (a download in flight slows or speeds at its next read)
// and lifted, not dropped, when the cap goes back to none; a host without a
// cap has none, and headers follow the host's tunables.
func TestCore_L2_HostBandwidthCapLive(t *testing.T) {
	h := newHarness(t, fast())
	hdr, bw := h.c.HostRequest("capped.example")
	assert.Nil(t, bw)
	assert.Nil(t, hdr)

	tun := fast()
	tun.BytesPerSec = 1 << 20
	tun.Headers = []string{"X-Team: blue"}
	require.NoError(t, h.c.SetHostTunables("capped.example", tun))
	hdr, bw = h.c.HostRequest("capped.example")
	require.NotNil(t, bw)
	assert.Equal(t, rate.Limit(1<<20), bw.Limit())
	assert.Equal(t, "blue", hdr.Get("X-Team"))

	tun.BytesPerSec = 1 << 10
	require.NoError(t, h.c.SetHostTunables("capped.example", tun))
	_, again := h.c.HostRequest("capped.example")
	assert.Same(t, bw, again, "one limiter, retuned in place")
	assert.Equal(t, rate.Limit(1<<10), bw.Limit())

	h.c.ClearHostTunables("capped.example")
	hdr, _ = h.c.HostRequest("capped.example")
	assert.Equal(t, rate.Inf, bw.Limit(), "the cap is lifted for downloads in flight too")
	assert.Nil(t, hdr)

	tun.Headers = []string{"Range: bytes=0-"}
	assert.ErrorContains(t, h.c.SetHostTunables("capped.example", tun), "Range")
	tun.Headers, tun.BytesPerSec = nil, -1
	assert.ErrorContains(t, h.c.SetHostTunables("capped.example", tun), "bytes_per_sec")
}
