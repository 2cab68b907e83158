package ui

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// U1: every wait in plain words, with how long it lasts and why, as a
// person would say it.
func TestWords_U1_HostWaitsInPlainWordsWithCountdowns(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := engine.HostSnapshot{Host: "h.example", At: at, RatePerMin: 60, Burst: 4, MaxInflight: 1}
	with := func(f func(s *engine.HostSnapshot)) engine.HostSnapshot {
		s := base
		f(&s)
		return s
	}
	cases := []struct {
		name  string
		s     engine.HostSnapshot
		facts hostFacts
		long  string
		short string
	}{
		{"waiting for a token", with(func(s *engine.HostSnapshot) {
			s.Waiting, s.NextDue = engine.WaitToken, at.Add(400*time.Millisecond)
		}), hostFacts{}, "next request in 0.4 s (60/min)", "next in 0.4 s"},
		{"spacing", with(func(s *engine.HostSnapshot) {
			s.Waiting, s.NextDue = engine.WaitJitter, at.Add(120*time.Millisecond)
		}), hostFacts{}, "next request in 0.2 s (random spacing)", "next in 0.2 s"},
		{"backing off after throttles, with what the server asked", with(func(s *engine.HostSnapshot) {
			s.Waiting, s.Level, s.GateIn = engine.WaitGate, 7, 48200*time.Millisecond
		}), hostFacts{retryAfter: time.Second}, "backing off 49 s after 7 throttles (server asked 1 s)", "backing off 49 s"},
		{"one throttle, Retry-After unknown", with(func(s *engine.HostSnapshot) {
			s.Waiting, s.Level, s.GateIn = engine.WaitGate, 1, 2*time.Second
		}), hostFacts{}, "backing off 2 s after 1 throttle", "backing off 2 s"},
		{"a Retry-After on a good answer", with(func(s *engine.HostSnapshot) {
			s.Waiting, s.GateIn = engine.WaitGate, 90*time.Second
		}), hostFacts{retryAfter: 90 * time.Second}, "waiting 1 min 30 s as the server asked", "waiting 1 min 30 s"},
		{"breaker opened by failures", with(func(s *engine.HostSnapshot) {
			s.Breaker, s.Failures, s.HalfOpenIn, s.Waiting = engine.Open, 5, 27300*time.Millisecond, engine.WaitBreaker
		}), hostFacts{}, "breaker open: 5 failures in a row, probe in 28 s", "open · probe in 28 s"},
		{"breaker tripped by hand", with(func(s *engine.HostSnapshot) {
			s.Breaker, s.HalfOpenIn = engine.Open, 30*time.Second
		}), hostFacts{}, "breaker open (tripped by hand), probe in 30 s", "open · probe in 30 s"},
		{"probing", with(func(s *engine.HostSnapshot) {
			s.Breaker, s.ProbeOut, s.Inflight = engine.HalfOpen, true, 0
		}), hostFacts{}, "probing: one request decides whether the breaker closes", "probing"},
		{"paused from the window", with(func(s *engine.HostSnapshot) {
			s.Paused, s.PauseReason, s.Waiting = true, "paused from the window", engine.WaitPaused
		}), hostFacts{}, "paused by you", "paused by you"},
		{"everything paused", with(func(s *engine.HostSnapshot) { s.Waiting = engine.WaitPaused }),
			hostFacts{}, "paused: everything is paused (Resume all)", "paused (all)"},
		{"paused for a Retry-After too long", with(func(s *engine.HostSnapshot) {
			s.Paused, s.Waiting = true, engine.WaitPaused
			s.PauseReason = "Retry-After 3h0m0s exceeds max_retry_after 24h0m0s"
		}), hostFacts{}, "paused: the server asked to wait 3 h, more than Max Retry-After (24 h)", "paused (Retry-After)"},
		{"downloading", with(func(s *engine.HostSnapshot) { s.Inflight = 1 }),
			hostFacts{}, "downloading: 1 request in flight", "downloading (1)"},
		{"retry delay", with(func(s *engine.HostSnapshot) {
			s.Waiting, s.NextDue = engine.WaitRetryDelay, at.Add(12*time.Second)
		}), hostFacts{}, "next try in 12 s (retry delay after an error)", "retry in 12 s"},
		{"the server's quota", with(func(s *engine.HostSnapshot) {
			s.Waiting, s.NextDue, s.Quota = engine.WaitQuota, at.Add(6700*time.Millisecond), "3 left of 20 per 30s, resets in 20s — spacing 6.7s"
		}), hostFacts{}, "next request in 6.7 s (the server's quota: 3 left of 20 per 30s, resets in 20s — spacing 6.7s)", "next in 6.7 s"},
		{"idle", with(func(s *engine.HostSnapshot) { s.Waiting = engine.WaitEmpty }),
			hostFacts{}, "idle: nothing queued", "idle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := hostSentence(&c.s, c.facts)
			assert.Equal(t, c.long, w[0])
			assert.Equal(t, c.short, w[len(w)-1])
		})
	}
}

// U1: a countdown is rounded up, so it never says 0 while the wait is on,
// and reads like speech.
func TestWords_U1_Durations(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                         "0 s",
		30 * time.Millisecond:     "0.1 s",
		400 * time.Millisecond:    "0.4 s",
		9950 * time.Millisecond:   "10 s",
		49 * time.Second:          "49 s",
		60 * time.Second:          "1 min",
		192 * time.Second:         "3 min 12 s",
		2*time.Hour + time.Minute: "2 h 01 min",
		24 * time.Hour:            "24 h",
		72 * time.Hour:            "3 d",
	} {
		assert.Equal(t, want, fmtDur(d), d.String())
	}
}

// G11, U1: tokens are shown rounded down: a part of a token buys nothing,
// so 2.97 of 4 is "2 / 4", never "3.0 / 4".
func TestWords_G11_TokensRoundedDown(t *testing.T) {
	for tokens, want := range map[float64]string{
		2.97: "2 / 4", 3.0: "3 / 4", 0.99: "0 / 4", 4: "4 / 4", 3.9999999999: "4 / 4", -0.5: "0 / 4",
	} {
		s := engine.HostSnapshot{Tokens: tokens, Burst: 4}
		assert.Equal(t, want, tokensText(&s), "%v tokens", tokens)
	}
}

// U3: durations in the edit form read "1 min", "30 s", "250 ms" and are
// read back in those forms, in Go's, and in words; a bare number is
// refused, since 30 ms and 30 s are both plausible.
func TestWords_U3_SettingDurations(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0 s", 250 * time.Millisecond: "250 ms", time.Second: "1 s", 1500 * time.Millisecond: "1.5 s",
		30 * time.Second: "30 s", time.Minute: "1 min", 90 * time.Second: "1 min 30 s", 24 * time.Hour: "24 h",
		5 * time.Minute: "5 min",
	} {
		assert.Equal(t, want, fmtSetting(d))
		back, err := parseSetting(want)
		require.NoError(t, err, want)
		assert.Equal(t, d, back, want)
	}
	for in, want := range map[string]time.Duration{
		"1m0s": time.Minute, "250ms": 250 * time.Millisecond, "2 minutes": 2 * time.Minute, " 30 sec ": 30 * time.Second,
		"1.5s": 1500 * time.Millisecond, "2 hours": 2 * time.Hour, "1 h 30 min": 90 * time.Minute, "1 d": 24 * time.Hour,
	} {
		got, err := parseSetting(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"30", "soon", "5 parsecs", ""} {
		_, err := parseSetting(bad)
		assert.Error(t, err, bad)
	}
	_, err := parseSetting("30")
	assert.ErrorContains(t, err, "needs a unit, such as 30 s or 30 ms")
}

// U6, R3: history numbers throttled tries apart: every throttled retry is
// the same attempt, and said so.
func TestWords_R3_ThrottledTriesNumbered(t *testing.T) {
	assert.Equal(t, "1", tryText(&engine.Attempt{Attempt: 1}))
	assert.Equal(t, "1 (after 1 throttled)", tryText(&engine.Attempt{Attempt: 1, Throttled: 1}))
	assert.Equal(t, "2 (after 3 throttled)", tryText(&engine.Attempt{Attempt: 2, Throttled: 3}))
	assert.Equal(t, "stopped", outcomeWords("canceled"), "an attempt cut off is not a cancelled job")
	assert.Equal(t, "canceled", outcomeOf("stopped"))
	assert.Equal(t, "throttled", outcomeWords("throttled"))
}

// U5, U6: a URL too long for its column is shortened in its middle, where
// one host's URLs differ least: its host and its file name stay.
func TestWords_U5_URLsShortenInTheMiddle(t *testing.T) {
	fitsIn := func(n int) func(string) bool {
		return func(s string) bool { return len([]rune(s)) <= n }
	}
	u := "https://example.com/archive/2024/reports/quarterly/file-0042.bin"
	got := shortenMiddle(u, fitsIn(40))
	assert.Equal(t, "https://example.com/…/file-0042.bin", got)
	got = shortenMiddle(u, fitsIn(45))
	assert.True(t, strings.HasPrefix(got, "https://example.com/…") && strings.HasSuffix(got, "/quarterly/file-0042.bin"),
		"as much of the path as fits, from its end: %s", got)
	assert.LessOrEqual(t, len([]rune(got)), 45)
	got = shortenMiddle(u, fitsIn(20))
	assert.True(t, strings.HasSuffix(got, "0042.bin"), "too narrow for the host: the end still shows: %s", got)
	assert.Contains(t, got, "…")
	assert.LessOrEqual(t, len([]rune(got)), 20)
	assert.Equal(t, u, shortenMiddle(u, fitsIn(100)))
}

// Columns: the explanatory column takes the spare width; with less room,
// the other columns give theirs up first, down to their least.
func TestTable_ColumnsStretchAndShrink(t *testing.T) {
	cols := []column{{width: 100, min: 50}, {width: 200, min: 100, grow: 1}, {width: 100, min: 60}}
	sum := func(ws []float32) (s float32) {
		for _, w := range ws {
			s += w
		}
		return s
	}
	wide := fitWidths(cols, 600)
	assert.Equal(t, []float32{100, 400, 100}, wide, "the spare width to the growing column")
	mid := fitWidths(cols, 320)
	assert.Equal(t, float32(200), mid[1], "the growing column keeps its width while others can give")
	assert.InDelta(t, 320, sum(mid), 0.01)
	assert.GreaterOrEqual(t, mid[0], float32(50))
	narrow := fitWidths(cols, 250)
	assert.Equal(t, []float32{50, 140, 60}, narrow)
	assert.Equal(t, []float32{50, 100, 60}, fitWidths(cols, 100), "never below the least: the table scrolls")
}

// U1: the window learns a host's last Retry-After from its timeline, in the
// engine's words, and forgets it when a throttle comes without one.
func TestWords_G5_RetryAfterFromTheTimeline(t *testing.T) {
	for detail, want := range map[string]time.Duration{
		"HTTP 429: level 1, wait 2.608s, Retry-After 2.484s":       2484 * time.Millisecond,
		"HTTP 503 from before level 3: level kept, Retry-After 1s": time.Second,
	} {
		got, ok := retryAfterOf(engine.Event{Kind: engine.EventThrottle, Detail: detail})
		require.True(t, ok, detail)
		assert.Equal(t, want, got, detail)
	}
	got, ok := retryAfterOf(engine.Event{Kind: engine.EventRetryAfter, Detail: "HTTP 200 with Retry-After 1m30s"})
	assert.True(t, ok)
	assert.Equal(t, 90*time.Second, got)
	_, ok = retryAfterOf(engine.Event{Kind: engine.EventThrottle, Detail: "HTTP 429: level 2, wait 1.5s"})
	assert.False(t, ok)

	p := newPoller(nil, nil)
	p.learn([]engine.Event{{Host: "h", Kind: engine.EventThrottle, Detail: "HTTP 429: level 1, wait 2s, Retry-After 2s"}}, nil)
	assert.Equal(t, 2*time.Second, p.facts["h"].retryAfter)
	changed := p.learn([]engine.Event{{Host: "h", Kind: engine.EventThrottle, Detail: "HTTP 503: level 2, wait 3s"}}, nil)
	assert.Zero(t, p.facts["h"].retryAfter, "a throttle without Retry-After: the last one no longer holds")
	assert.True(t, changed["h"])
}
