package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"heed/engine/fetch"
)

// Tunables are the politeness settings of one host (SPEC §2, §3, §4).
// A host nobody configured follows the core's defaults; a configured host
// has its own full copy (no sparse overrides).
//
// The zero value is not useful: start from DefaultTunables. Durations are
// time.Duration, so in JSON they are integers in nanoseconds; every other
// field is a plain number. The storage layer persists the struct as JSON.
//
// Fields and defaults (bounds checked by Validate):
//
//   - RatePerMin (60; 0.01…600000): sustained requests per minute (G2).
//     0 is not a rate: pausing is separate (G9).
//   - Burst (4; 1…10000): requests that may start back to back (G2).
//   - MaxInflight (1; 1…256): requests in flight at once (G1).
//   - JitterMin, JitterMax (0, 250ms; 0…10m): extra spacing after each
//     dispatch, drawn uniformly from [JitterMin, JitterMax] (G4). Normalize
//     clamps JitterMax up to JitterMin.
//   - BackoffBase, BackoffMax (1s, 60s; base ≥ 1ms, max ≥ base): the
//     throttle backoff window min(base·2^(level−1), max) (G5).
//   - DecayAfter (4; 1…1000): successes that lower the level by one (G7).
//   - ThrottleStatuses (429, 503; each 400…599): responses that throttle.
//   - MaxRetryAfter (24h; ≥ 1s): a Retry-After longer than this pauses the
//     host with that reason instead of waiting (G5, G9).
//   - MaxCrawlDelay (60s; ≥ 1s): a robots.txt Crawl-delay longer than this
//     pauses the host with that reason instead of spacing it (W5). 0, as
//     in settings saved before it existed, reads as the default.
//   - FailureThreshold (5; 1…255): consecutive failures that open the
//     breaker (B1).
//   - RecoveryTimeout (30s; 1ms…24h): open → half-open delay (B2).
//   - Retry: the per-job retry policy (R1–R5), see RetryPolicy.
//   - Proxy ("": the environment's HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and
//     NO_PROXY): the proxy the host's requests go through, an http://,
//     https://, socks5:// or socks5h:// URL, or "direct" for none (N4). Its
//     password, if any, is shown and logged only masked (fetch.Redact).
//   - Headers (none): extra request headers, each "Name: value"
//     (fetch.ParseHeaders); one that may hold a secret is shown and logged
//     only masked (fetch.RedactHeader).
//   - BytesPerSec (0: no cap; 0…1 TiB): the host's downloads together get at
//     most this many bytes a second, beside the global cap (L2).
type Tunables struct {
	RatePerMin       float64       `json:"rate_per_min"`
	Burst            int           `json:"burst"`
	MaxInflight      int           `json:"max_inflight"`
	JitterMin        time.Duration `json:"jitter_min"`
	JitterMax        time.Duration `json:"jitter_max"`
	BackoffBase      time.Duration `json:"backoff_base"`
	BackoffMax       time.Duration `json:"backoff_max"`
	DecayAfter       int           `json:"decay_after"`
	ThrottleStatuses []int         `json:"throttle_statuses"`
	MaxRetryAfter    time.Duration `json:"max_retry_after"`
	MaxCrawlDelay    time.Duration `json:"max_crawl_delay"`
	FailureThreshold int           `json:"failure_threshold"`
	RecoveryTimeout  time.Duration `json:"recovery_timeout"`
	Retry            RetryPolicy   `json:"retry"`
	Proxy            string        `json:"proxy,omitempty"`
	Headers          []string      `json:"headers,omitempty"`
	BytesPerSec      int64         `json:"bytes_per_sec,omitempty"`
}

// Bounds of the tunables (SPEC §2–§4).
const (
	MinRatePerMin    = 0.01
	MaxRatePerMin    = 600000
	MaxBurst         = 10000
	MaxMaxInflight   = 256
	MaxJitter        = 600000 * time.Millisecond
	MinBackoffBase   = time.Millisecond
	MaxDecayAfter    = 1000
	MinMaxRetryAfter = time.Second
	MinMaxCrawlDelay = time.Second
	// DefaultMaxCrawlDelay is max_crawl_delay_s's default (W5).
	DefaultMaxCrawlDelay = 60 * time.Second
	MaxFailThreshold     = 255
	MinRecoveryTimeout   = time.Millisecond
	MaxRecoveryTimeout   = 86400000 * time.Millisecond
	MaxRetryAttempts     = 255
	MaxBytesPerSec       = 1 << 40
)

// DefaultTunables returns the defaults of SPEC §2–§4: 60 requests a minute,
// burst 4, one in flight, jitter 0–250 ms, backoff 1 s doubling to 60 s,
// decay after 4 successes, throttle on 429 and 503, Retry-After up to a day,
// breaker opening after 5 failures for 30 s, and 5 exponential retries from
// 2 s capped at 5 minutes, with jitter.
func DefaultTunables() Tunables {
	return Tunables{
		RatePerMin:       60,
		Burst:            4,
		MaxInflight:      1,
		JitterMin:        0,
		JitterMax:        250 * time.Millisecond,
		BackoffBase:      time.Second,
		BackoffMax:       60 * time.Second,
		DecayAfter:       4,
		ThrottleStatuses: []int{429, 503},
		MaxRetryAfter:    86400 * time.Second,
		MaxCrawlDelay:    DefaultMaxCrawlDelay,
		FailureThreshold: 5,
		RecoveryTimeout:  30 * time.Second,
		Retry:            DefaultRetryPolicy(),
	}
}

// Normalize returns t with the one silent correction SPEC §2 allows:
// JitterMax is clamped up to JitterMin; and a MaxCrawlDelay of 0 (settings
// saved before it existed) takes its default. The throttle statuses are copied,
// sorted and de-duplicated so the result shares no memory with t.
// Core.SetDefaults and Core.SetHostTunables normalize before Validate.
func (t Tunables) Normalize() Tunables {
	if t.JitterMax < t.JitterMin {
		t.JitterMax = t.JitterMin
	}
	if t.MaxCrawlDelay == 0 {
		t.MaxCrawlDelay = DefaultMaxCrawlDelay
	}
	t.ThrottleStatuses = slices.Compact(slices.Sorted(slices.Values(t.ThrottleStatuses)))
	t.Headers = slices.Clone(t.Headers)
	return t
}

// clone returns t sharing no memory with it.
func (t Tunables) clone() Tunables {
	t.ThrottleStatuses = slices.Clone(t.ThrottleStatuses)
	t.Headers = slices.Clone(t.Headers)
	return t
}

// Validate reports the first tunable out of its bound, naming the field as
// in JSON and the bound, e.g. "rate_per_min: 0 is out of range 0.01…600000".
// It checks t as given: call Normalize first to clamp the jitter.
func (t Tunables) Validate() error {
	if !(t.RatePerMin >= MinRatePerMin && t.RatePerMin <= MaxRatePerMin) { // also rejects NaN
		return fmt.Errorf("rate_per_min: %s is out of range 0.01…600000", strconv.FormatFloat(t.RatePerMin, 'g', -1, 64))
	}
	if err := intRange("burst", t.Burst, 1, MaxBurst); err != nil {
		return err
	}
	if err := intRange("max_inflight", t.MaxInflight, 1, MaxMaxInflight); err != nil {
		return err
	}
	if err := durRange("jitter_min", t.JitterMin, 0, MaxJitter); err != nil {
		return err
	}
	if err := durRange("jitter_max", t.JitterMax, 0, MaxJitter); err != nil {
		return err
	}
	if t.JitterMax < t.JitterMin {
		return fmt.Errorf("jitter_max: %v is below jitter_min %v", t.JitterMax, t.JitterMin)
	}
	if t.BackoffBase < MinBackoffBase {
		return fmt.Errorf("backoff_base: %v is below the minimum 1ms", t.BackoffBase)
	}
	if t.BackoffMax < t.BackoffBase {
		return fmt.Errorf("backoff_max: %v is below backoff_base %v", t.BackoffMax, t.BackoffBase)
	}
	if err := intRange("decay_after", t.DecayAfter, 1, MaxDecayAfter); err != nil {
		return err
	}
	for _, s := range t.ThrottleStatuses {
		if s < 400 || s > 599 {
			return fmt.Errorf("throttle_statuses: %d is out of range 400…599", s)
		}
	}
	if t.MaxRetryAfter < MinMaxRetryAfter {
		return fmt.Errorf("max_retry_after: %v is below the minimum 1s", t.MaxRetryAfter)
	}
	if t.MaxCrawlDelay < MinMaxCrawlDelay {
		return fmt.Errorf("max_crawl_delay: %v is below the minimum 1s", t.MaxCrawlDelay)
	}
	if err := intRange("failure_threshold", t.FailureThreshold, 1, MaxFailThreshold); err != nil {
		return err
	}
	if err := durRange("recovery_timeout", t.RecoveryTimeout, MinRecoveryTimeout, MaxRecoveryTimeout); err != nil {
		return err
	}
	if _, err := fetch.ParseProxy(t.Proxy); err != nil {
		return err
	}
	if _, err := fetch.ParseHeaders(t.Headers); err != nil {
		return err
	}
	if t.BytesPerSec < 0 || t.BytesPerSec > MaxBytesPerSec {
		return fmt.Errorf("bytes_per_sec: %d is out of range 0…%d", t.BytesPerSec, int64(MaxBytesPerSec))
	}
	return t.Retry.Validate()
}

func intRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s: %d is out of range %d…%d", name, v, lo, hi)
	}
	return nil
}

func durRange(name string, v, lo, hi time.Duration) error {
	if v < lo || v > hi {
		return fmt.Errorf("%s: %v is out of range %v…%v", name, v, lo, hi)
	}
	return nil
}

// throttleSet is a bitset of the statuses 400…599 a host treats as throttle.
type throttleSet [4]uint64

func makeThrottleSet(statuses []int) throttleSet {
	var s throttleSet
	for _, st := range statuses {
		if st >= 400 && st <= 599 {
			i := st - 400
			s[i>>6] |= 1 << (i & 63)
		}
	}
	return s
}

func (s *throttleSet) has(status int) bool {
	if status < 400 || status > 599 {
		return false
	}
	i := status - 400
	return s[i>>6]&(1<<(i&63)) != 0
}

// retuned says what a retune changed, for the host's timeline (U3):
// "recovery timeout 30s → 1m0s, max attempts 5 → 9", or that it changed
// nothing.
func retuned(was, now Tunables) string {
	var out []string
	diff := func(name string, a, b any) {
		if x, y := fmt.Sprint(a), fmt.Sprint(b); x != y {
			out = append(out, name+" "+x+" → "+y)
		}
	}
	diff("rate/min", was.RatePerMin, now.RatePerMin)
	diff("burst", was.Burst, now.Burst)
	diff("in flight", was.MaxInflight, now.MaxInflight)
	diff("jitter", fmt.Sprint(was.JitterMin, "–", was.JitterMax), fmt.Sprint(now.JitterMin, "–", now.JitterMax))
	diff("backoff base", was.BackoffBase, now.BackoffBase)
	diff("backoff max", was.BackoffMax, now.BackoffMax)
	diff("decay after", was.DecayAfter, now.DecayAfter)
	diff("throttle statuses", was.ThrottleStatuses, now.ThrottleStatuses)
	diff("max Retry-After", was.MaxRetryAfter, now.MaxRetryAfter)
	diff("max Crawl-delay", was.MaxCrawlDelay, now.MaxCrawlDelay)
	diff("breaker failures", was.FailureThreshold, now.FailureThreshold)
	diff("recovery timeout", was.RecoveryTimeout, now.RecoveryTimeout)
	diff("max attempts", was.Retry.MaxAttempts, now.Retry.MaxAttempts)
	diff("retry", was.Retry.Strategy, now.Retry.Strategy)
	diff("retry base", was.Retry.Base, now.Retry.Base)
	diff("retry max", was.Retry.Max, now.Retry.Max)
	diff("retry jitter", was.Retry.Jitter, now.Retry.Jitter)
	diff("proxy", proxyWords(was.Proxy), proxyWords(now.Proxy))
	diff("headers", headerWords(was.Headers), headerWords(now.Headers))
	diff("bandwidth", bandwidthWords(was.BytesPerSec), bandwidthWords(now.BytesPerSec))
	if len(out) == 0 {
		return fmt.Sprintf("own settings, as before: rate %g/min, burst %d, in flight %d", now.RatePerMin, now.Burst, now.MaxInflight)
	}
	return strings.Join(out, ", ")
}

// headerWords are extra headers as the timeline shows them, secrets masked.
func headerWords(h []string) string {
	if len(h) == 0 {
		return "none"
	}
	shown := make([]string, len(h))
	for i, line := range h {
		shown[i] = fetch.RedactHeader(line)
	}
	return "[" + strings.Join(shown, "; ") + "]"
}

// bandwidthWords is a host's bandwidth cap in words.
func bandwidthWords(bps int64) string {
	if bps == 0 {
		return "no cap"
	}
	return strconv.FormatInt(bps, 10) + " B/s"
}

// proxyWords is a proxy setting as the timeline shows it, without its
// password.
func proxyWords(p string) string {
	if p == "" {
		return "environment"
	}
	return fetch.Redact(p)
}
