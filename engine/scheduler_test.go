package engine

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScheduler_L1_GlobalConcurrency(t *testing.T) {
	h := newHarness(t, fast(), func(c *Config) { c.GlobalInflight = 0 }) // default 16
	for i := range 20 {
		h.add(int64(i), "h"+strconv.Itoa(i), time.Time{})
	}
	got := h.drain()
	assert.Len(t, got, 16, "default global cap is 16")
	assert.True(t, h.none().IsZero(), "at the cap only a result helps: wait on Changed")
	sent := map[string]bool{}
	for _, d := range got {
		sent[d.Host] = true
	}
	for i := range 20 {
		if k := "h" + strconv.Itoa(i); !sent[k] {
			assert.Equal(t, WaitGlobalCap, h.snap(k).Waiting, k)
		}
	}
	h.observe(got[0], 200, "")
	h.mustNext()
	h.none()

	h.c.SetGlobalInflight(18)
	assert.Len(t, h.drain(), 2, "raised live")
	h.c.SetGlobalInflight(1)
	h.none()
	assert.Equal(t, 18, h.c.Stats().Inflight, "lowering cancels nothing")
}

func TestScheduler_L1_WaitingHostHoldsNoSlot(t *testing.T) {
	h := newHarness(t, fast(), func(c *Config) { c.GlobalInflight = 1 })
	h.addN("a", 1, 2)
	h.observe(h.mustNext(), 503, "3600") // a now waits an hour
	h.addN("b", 10, 1)
	d := h.mustNext()
	assert.Equal(t, "b", d.Host, "a's wait does not hold the only global slot")
}

func TestScheduler_L2_GlobalRate(t *testing.T) {
	h := newHarness(t, fast(), func(c *Config) { c.GlobalRatePerSec = 2 })
	for i := range 50 {
		h.add(int64(i), "h"+strconv.Itoa(i), time.Time{})
	}
	assert.Len(t, h.drain(), 2, "a second's worth at once")
	wake := h.none()
	assert.InDelta(t, float64(500*time.Millisecond), float64(wake.Sub(h.now)), float64(time.Microsecond))
	h.c.SetGlobalRate(100)
	wake = h.none()
	assert.InDelta(t, float64(10*time.Millisecond), float64(wake.Sub(h.now)), float64(time.Microsecond), "changed live")
	h.c.SetGlobalRate(0)
	assert.Len(t, h.drain(), 48, "0 turns it off")
}

func TestScheduler_L3_WaitingHostNeverBlocksOthers(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("slow", 1, 1000)
	h.observe(h.mustNext(), 429, "600")
	h.c.TripBreaker("broken")
	h.c.PauseHost("paused", "")
	h.addN("broken", 2000, 10)
	h.addN("paused", 3000, 10)
	h.addN("fast", 4000, 3)
	got := h.drain()
	require.Len(t, got, 3)
	for _, d := range got {
		assert.Equal(t, "fast", d.Host)
	}
	wake := h.none()
	assert.Equal(t, h.now.Add(DefaultTunables().RecoveryTimeout), wake, "nothing due: sleep until the earliest due time")
}

// TestScheduler_L3_LoopSleepsUntilDue runs a real engine loop in a synctest
// bubble: it must finish every job, never spin, and sleep when nothing is due.
func TestScheduler_L3_LoopSleepsUntilDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tun := DefaultTunables()
		tun.RatePerMin, tun.Burst = 120, 2
		c := NewCore(Config{Defaults: tun, Seed: 3, GlobalInflight: 4})
		q := newMemStore(c)
		const hosts, perHost = 20, 12 // more than a window holds: refills come too
		for i := range hosts * perHost {
			q.add(int64(i), fmt.Sprintf("h%d", i%hosts), time.Time{})
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		done, iterations, dispatched := 0, 0, 0
		start := time.Now()
		for {
			mu.Lock()
			finished := done == hosts*perHost
			mu.Unlock()
			if finished {
				break
			}
			iterations++
			d, ok, wake := q.next(time.Now())
			if ok {
				dispatched++
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(300 * time.Millisecond)
					mu.Lock() // counted before Observe wakes the loop, or the loop
					done++    // could see the wake-up, not the count, and sleep on
					mu.Unlock()
					c.Observe(d, Outcome{Status: 200, Attempts: 1}, time.Now())
				}()
				continue
			}
			if !wake.IsZero() {
				require.True(t, wake.After(time.Now()), "a wake in the past would spin")
				timer := time.NewTimer(time.Until(wake))
				select {
				case <-timer.C:
				case <-c.Changed():
				}
				timer.Stop()
			} else {
				select {
				case <-c.Changed():
				case <-time.After(time.Hour):
				}
			}
		}
		wg.Wait()
		elapsed := time.Since(start)
		assert.Equal(t, hosts*perHost, dispatched)
		assert.Less(t, iterations, 4*dispatched, "the loop wakes a bounded number of times per dispatch")
		// 12 jobs per host at 2/s with burst 2 need about 5 s, plus jitter.
		assert.Greater(t, elapsed, 3*time.Second)
		assert.Less(t, elapsed, 30*time.Second)
		_, ok, wake := c.Next(time.Now())
		assert.False(t, ok)
		assert.True(t, wake.IsZero(), "nothing queued: no wake time")
	})
}

func TestScheduler_AddRemove(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 3)
	assert.True(t, h.remove(2))
	assert.False(t, h.remove(2), "already removed")
	assert.False(t, h.remove(99), "never queued")
	h.add(3, "b", time.Time{}) // moves job 3 to b
	assert.Equal(t, 1, h.q.queued("a"))
	assert.Equal(t, 1, h.q.queued("b"))
	got := h.drain()
	ids := map[int64]string{}
	for _, d := range got {
		ids[d.JobID] = d.Host
	}
	assert.Equal(t, map[int64]string{1: "a", 3: "b"}, ids)
	assert.Equal(t, 0, h.q.queued(""))

	// A job added for later does not hold back one that is due now (R4).
	h.add(7, "d", h.now.Add(time.Hour))
	h.add(8, "d", time.Time{})
	assert.Equal(t, int64(8), h.mustNext().JobID)
	assert.Equal(t, h.now.Add(time.Hour), h.none())
	assert.True(t, h.remove(7))

	// Many removals leave the others to come, from storage.
	h.addN("c", 100, 500)
	for i := 100; i < 590; i++ {
		require.True(t, h.remove(int64(i)))
	}
	assert.LessOrEqual(t, len(h.c.byKey["c"].win), h.c.maxWindow(h.c.byKey["c"]))
	assert.Len(t, h.drain(), 10)
}

func TestScheduler_ChangedSignals(t *testing.T) {
	h := newHarness(t, fast())
	select {
	case <-h.c.Changed():
		t.Fatal("signalled before any change")
	default:
	}
	h.add(1, "a", time.Time{})
	select {
	case <-h.c.Changed():
	default:
		t.Fatal("Add must signal Changed")
	}
	d := h.mustNext()
	h.observe(d, 200, "")
	select {
	case <-h.c.Changed():
	default:
		t.Fatal("Observe must signal Changed")
	}
}

func TestScheduler_EventsOutsideLock(t *testing.T) {
	var c *Core
	var seen []HostSnapshot
	c = NewCore(Config{Now: func() time.Time { return t0 }, OnEvent: func(e Event) {
		s, _ := c.HostSnapshot(e.Host) // would deadlock if called under the core lock
		seen = append(seen, s)
	}})
	c.PauseHost("a", "because")
	require.Len(t, seen, 1)
	assert.True(t, seen[0].Paused)
}

func TestScheduler_N2_RedirectHop(t *testing.T) {
	tun := fast()
	tun.MaxInflight = 1
	h := newHarness(t, tun, func(c *Config) { c.GlobalInflight = 2 })
	h.addN("a", 1, 2)
	d := h.mustNext()
	h.observe(d, 302, "") // the redirect response frees a and the global slot
	hop, ok, _ := h.c.AcquireHop("b", h.now)
	require.True(t, ok)
	assert.True(t, hop.Hop)
	assert.Equal(t, 1, h.c.Stats().Inflight, "a hop holds a global slot like any request (L1)")
	_, ok, wake := h.c.AcquireHop("b", h.now)
	assert.False(t, ok, "b's in-flight cap applies to hops")
	assert.True(t, wake.IsZero())
	h.now = h.now.Add(time.Minute)
	d2 := h.mustNext() // a's second job takes the last global slot
	_, ok, wake = h.c.AcquireHop("c", h.now)
	assert.False(t, ok, "the global cap applies to hops (L1)")
	assert.True(t, wake.IsZero(), "wait for a slot to free")
	h.observe(hop, 429, "60")
	_, ok, wake = h.c.AcquireHop("b", h.now)
	assert.False(t, ok)
	assert.GreaterOrEqual(t, wake.Sub(h.now), 60*time.Second, "b's gate applies to hops")
	h.observe(d2, 200, "")
	assert.Equal(t, 0, h.c.Stats().Inflight)
	h.c.TripBreaker("c")
	_, ok, _ = h.c.AcquireHop("c", h.now)
	assert.False(t, ok, "and so does its breaker")
}

func TestTunables_Validate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Tunables)
		want string
	}{
		{"defaults ok", func(*Tunables) {}, ""},
		{"rate 0", func(t *Tunables) { t.RatePerMin = 0 }, "rate_per_min: 0 is out of range 0.01…600000"},
		{"rate too high", func(t *Tunables) { t.RatePerMin = 600001 }, "rate_per_min"},
		{"burst 0", func(t *Tunables) { t.Burst = 0 }, "burst: 0 is out of range 1…10000"},
		{"inflight 257", func(t *Tunables) { t.MaxInflight = 257 }, "max_inflight: 257 is out of range 1…256"},
		{"jitter too long", func(t *Tunables) { t.JitterMin = 11 * time.Minute; t.JitterMax = 11 * time.Minute }, "jitter_min"},
		{"jitter max below min", func(t *Tunables) { t.JitterMin = time.Second; t.JitterMax = 0 }, "jitter_max"},
		{"backoff base 0", func(t *Tunables) { t.BackoffBase = 0 }, "backoff_base"},
		{"backoff max below base", func(t *Tunables) { t.BackoffMax = time.Millisecond }, "backoff_max"},
		{"decay 0", func(t *Tunables) { t.DecayAfter = 0 }, "decay_after: 0 is out of range 1…1000"},
		{"throttle 200", func(t *Tunables) { t.ThrottleStatuses = []int{200} }, "throttle_statuses: 200"},
		{"max retry after", func(t *Tunables) { t.MaxRetryAfter = 0 }, "max_retry_after"},
		{"threshold 256", func(t *Tunables) { t.FailureThreshold = 256 }, "failure_threshold: 256 is out of range 1…255"},
		{"recovery 0", func(t *Tunables) { t.RecoveryTimeout = 0 }, "recovery_timeout"},
		{"attempts 0", func(t *Tunables) { t.Retry.MaxAttempts = 0 }, "retry.max_attempts"},
		{"strategy", func(t *Tunables) { t.Retry.Strategy = 7 }, "retry.strategy"},
		{"retry base", func(t *Tunables) { t.Retry.Base = -1 }, "retry.base"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tun := DefaultTunables()
			tc.mod(&tun)
			err := tun.Validate()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
	n := Tunables{JitterMin: time.Second, JitterMax: 0, ThrottleStatuses: []int{503, 429, 503}}.Normalize()
	assert.Equal(t, time.Second, n.JitterMax, "jitter max is clamped up to min")
	assert.Equal(t, []int{429, 503}, n.ThrottleStatuses)

	c := NewCore(Config{})
	assert.ErrorContains(t, c.SetHostTunables("a", Tunables{}), "rate_per_min")
	assert.ErrorContains(t, c.SetDefaults(Tunables{RatePerMin: 1}), "burst")
}

func TestTunables_DefaultsAndOverrides(t *testing.T) {
	h := newHarness(t, fast())
	h.addN("a", 1, 1)
	h.addN("b", 2, 1)
	own := fast()
	own.Burst = 7
	require.NoError(t, h.c.SetHostTunables("a", own))
	def := fast()
	def.Burst = 3
	require.NoError(t, h.c.SetDefaults(def))
	ta, ownA := h.c.HostTunables("a")
	tb, ownB := h.c.HostTunables("b")
	assert.True(t, ownA)
	assert.False(t, ownB)
	assert.Equal(t, 7, ta.Burst, "own tunables are not touched by new defaults")
	assert.Equal(t, 3, tb.Burst, "hosts following the defaults follow them live")
	h.c.ClearHostTunables("a")
	ta, ownA = h.c.HostTunables("a")
	assert.False(t, ownA)
	assert.Equal(t, 3, ta.Burst)
	assert.Equal(t, 3, h.c.Defaults().Burst)
	assert.Contains(t, h.kinds("a"), EventRetune)
}

func TestScheduler_SnapshotConcurrentWithDispatch(t *testing.T) {
	h := newHarness(t, fast())
	for i := range 2000 {
		h.add(int64(i), "h"+strconv.Itoa(i%700), time.Time{})
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var buf []HostSnapshot
		for range 20 {
			buf = h.c.SnapshotInto(buf, t0)
			for _, s := range buf {
				if s.Tokens < 0 {
					panic("negative tokens")
				}
			}
		}
	}()
	n := 0
	for {
		d, ok, _ := h.q.next(t0)
		if !ok {
			break
		}
		h.c.Observe(d, Outcome{Status: 200}, t0)
		n++
	}
	wg.Wait()
	assert.Equal(t, 2000, n)
	assert.Len(t, h.c.Snapshot(), 700)
}

// BenchmarkDispatch is pick + acquire + observe (+ re-queue) of one request
// among 10,000 hosts with default tunables.
func BenchmarkDispatch(b *testing.B) {
	now := t0
	c := NewCore(Config{Seed: 1, GlobalInflight: 1 << 20, Now: func() time.Time { return now }})
	const hosts = 10000
	keys := make([]string, hosts)
	for i := range hosts {
		keys[i] = fmt.Sprintf("host-%05d.example", i)
		for j := range 4 {
			c.Add(int64(i*4+j), keys[i], time.Time{})
		}
	}
	// Warm up into the steady state (buckets drained, heaps sized).
	step := func() bool {
		d, ok, wake := c.Next(now)
		if !ok {
			if wake.IsZero() {
				b.Fatal("nothing due")
			}
			now = wake
			return false
		}
		c.Observe(d, Outcome{Status: 200, Attempts: 1}, now)
		c.Add(d.JobID, d.Host, time.Time{})
		return true
	}
	for range 200000 {
		step()
	}
	c.DirtyHosts()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		if step() {
			i++
		}
	}
}

// BenchmarkSnapshot copies the state of 10,000 hosts into a reused buffer.
func BenchmarkSnapshot(b *testing.B) {
	c := NewCore(Config{Seed: 1, Now: func() time.Time { return t0 }})
	for i := range 10000 {
		c.Add(int64(i), fmt.Sprintf("host-%05d.example", i), time.Time{})
	}
	buf := c.Snapshot()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		buf = c.SnapshotInto(buf, t0)
	}
}
