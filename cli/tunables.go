package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"

	"heed/engine"
	"heed/engine/fetch"
)

// tunableFlags binds the politeness flags of SPEC §9 to a Tunables value.
// Only the flags a person set are applied (see apply), so `heed host H
// --rate 10` changes the rate and nothing else.
type tunableFlags struct {
	fs *pflag.FlagSet

	rate                       rateValue
	burst, inflight            wholeValue
	jitter                     jitterValue
	backoffBase, backoffMax    durationValue
	decayAfter                 wholeValue
	maxRetryAfter              durationValue // a bare number is seconds
	throttleStatuses           statusesValue
	breakerThreshold           wholeValue
	breakerTimeout             durationValue
	maxAttempts                wholeValue
	retry                      strategyValue
	retryBase, retryMax        durationValue
	retryJitter, noRetryJitter bool
	proxy                      string
	headers                    []string
	hostBandwidth              int64
}

// politeGroup is the annotation that puts a flag in the help's
// "Politeness" section (see usage).
const politeGroup = "politeness"

// tunableNames are the politeness flags, in the order help lists them.
var tunableNames = []string{"rate", "burst", "max-inflight", "jitter", "backoff-base", "backoff-max",
	"decay-after", "max-retry-after", "throttle-statuses", "breaker-threshold", "breaker-timeout",
	"max-attempts", "retry", "retry-base", "retry-max", "retry-jitter", "no-retry-jitter", "proxy",
	"header", "host-bandwidth"}

// registerTunables adds the politeness flags to fs. With showDefaults their
// help shows Heed's defaults (heed get, where they are the defaults of every
// host); without, none (heed host, where a flag not given keeps the host's
// value).
func registerTunables(fs *pflag.FlagSet, showDefaults bool) *tunableFlags {
	d := engine.DefaultTunables()
	t := &tunableFlags{fs: fs}
	t.rate = rateValue(d.RatePerMin)
	t.burst, t.inflight = wholeValue(d.Burst), wholeValue(d.MaxInflight)
	t.jitter = jitterValue{d.JitterMin, d.JitterMax}
	t.backoffBase, t.backoffMax = durationValue{d: d.BackoffBase}, durationValue{d: d.BackoffMax}
	t.decayAfter = wholeValue(d.DecayAfter)
	t.maxRetryAfter = durationValue{d: d.MaxRetryAfter, bareSeconds: true}
	t.throttleStatuses = statusesValue(d.ThrottleStatuses)
	t.breakerThreshold = wholeValue(d.FailureThreshold)
	t.breakerTimeout = durationValue{d: d.RecoveryTimeout}
	t.maxAttempts = wholeValue(d.Retry.MaxAttempts)
	t.retry = strategyValue(d.Retry.Strategy)
	t.retryBase, t.retryMax = durationValue{d: d.Retry.Base}, durationValue{d: d.Retry.Max}
	t.retryJitter = d.Retry.Jitter

	fs.Var(&t.rate, "rate", "at most N requests a minute to a host")
	fs.Var(&t.burst, "burst", "requests a host may get back to back after a quiet spell")
	fs.Var(&t.inflight, "max-inflight", "requests in flight at once to a host")
	fs.Var(&t.jitter, "jitter", "a random extra pause between MIN and MAX after each request to a host")
	fs.Var(&t.backoffBase, "backoff-base", "the wait after a host answers 429 or 503; it doubles with each such answer")
	fs.Var(&t.backoffMax, "backoff-max", "the longest that wait grows to")
	fs.Var(&t.decayAfter, "decay-after", "good answers in a row that undo one doubling of the wait")
	fs.Var(&t.maxRetryAfter, "max-retry-after", "the longest Retry-After waited out, a bare number in seconds; a longer one pauses the host")
	fs.Var(&t.throttleStatuses, "throttle-statuses", "the statuses that mean slow down, comma-separated")
	fs.Var(&t.breakerThreshold, "breaker-threshold", "failures in a row that open a host's circuit breaker: nothing is sent to it until a probe succeeds")
	fs.Var(&t.breakerTimeout, "breaker-timeout", "how long an open breaker waits before its probe")
	fs.Var(&t.maxAttempts, "max-attempts", "tries of a URL before it fails; a throttled try does not count")
	fs.Var(&t.retry, "retry", "how the wait between tries grows: fixed, linear or exponential")
	fs.Var(&t.retryBase, "retry-base", "the wait before the second try")
	fs.Var(&t.retryMax, "retry-max", "the longest wait between tries; 0 for no limit")
	fs.BoolVar(&t.retryJitter, "retry-jitter", t.retryJitter, "randomize the waits between tries")
	fs.BoolVar(&t.noRetryJitter, "no-retry-jitter", false, "do not randomize the waits between tries")
	fs.StringVar(&t.proxy, "proxy", "", `the proxy for a host: http://, https://, socks5:// or socks5h://HOST:PORT, "direct" for none, "" for HTTP_PROXY/HTTPS_PROXY/ALL_PROXY/NO_PROXY`)
	fs.StringArrayVar(&t.headers, "header", nil, `an extra request header for a host, "Name: value"; repeat it for more, "" for none`)
	fs.Int64Var(&t.hostBandwidth, "host-bandwidth", 0, "at most BYTES a second downloaded from one host (0: no limit but the global one)")
	name(fs, "header", "TEXT")
	name(fs, "host-bandwidth", "BYTES")
	name(fs, "proxy", "URL")
	fs.Lookup("header").DefValue = "" // none: help shows no "[]"
	for _, name := range tunableNames {
		f := fs.Lookup(name)
		if !showDefaults {
			f.DefValue = "" // help shows no default: a flag not given keeps the host's value
		}
		fs.SetAnnotation(name, politeGroup, []string{"true"})
	}
	return t
}

// any reports whether any politeness flag was given.
func (t *tunableFlags) any() bool {
	for _, n := range tunableNames {
		if t.fs.Changed(n) {
			return true
		}
	}
	return false
}

// apply returns base with the given flags applied, normalized and validated:
// the error names the flag and the bounds.
func (t *tunableFlags) apply(base engine.Tunables) (engine.Tunables, error) {
	out := base
	out.ThrottleStatuses = append([]int(nil), base.ThrottleStatuses...)
	set := t.fs.Changed
	if set("rate") {
		out.RatePerMin = float64(t.rate)
	}
	for _, w := range []struct {
		name string
		v    wholeValue
		dst  *int
	}{
		{"burst", t.burst, &out.Burst},
		{"max-inflight", t.inflight, &out.MaxInflight},
		{"decay-after", t.decayAfter, &out.DecayAfter},
		{"breaker-threshold", t.breakerThreshold, &out.FailureThreshold},
		{"max-attempts", t.maxAttempts, &out.Retry.MaxAttempts},
	} {
		if set(w.name) {
			*w.dst = int(w.v)
		}
	}
	if set("jitter") {
		out.JitterMin, out.JitterMax = t.jitter.min, t.jitter.max
	}
	for _, d := range []struct {
		name string
		v    durationValue
		dst  *time.Duration
	}{
		{"backoff-base", t.backoffBase, &out.BackoffBase},
		{"backoff-max", t.backoffMax, &out.BackoffMax},
		{"max-retry-after", t.maxRetryAfter, &out.MaxRetryAfter},
		{"breaker-timeout", t.breakerTimeout, &out.RecoveryTimeout},
		{"retry-base", t.retryBase, &out.Retry.Base},
		{"retry-max", t.retryMax, &out.Retry.Max},
	} {
		if set(d.name) {
			*d.dst = d.v.d
		}
	}
	if set("throttle-statuses") {
		out.ThrottleStatuses = append([]int(nil), t.throttleStatuses...)
	}
	if set("retry") {
		out.Retry.Strategy = engine.Strategy(t.retry)
	}
	if set("retry-jitter") {
		out.Retry.Jitter = t.retryJitter
	}
	if set("no-retry-jitter") && t.noRetryJitter {
		out.Retry.Jitter = false
	}
	if set("proxy") {
		if _, err := fetch.ParseProxy(t.proxy); err != nil {
			return base, errors.New("--" + err.Error()) // said here: flagNames would rewrite "proxy:" inside the value
		}
		out.Proxy = t.proxy
	}
	if set("header") {
		out.Headers = nil
		for _, h := range t.headers {
			if h != "" {
				out.Headers = append(out.Headers, h)
			}
		}
		if _, err := fetch.ParseHeaders(out.Headers); err != nil {
			return base, errors.New("--" + err.Error()) // said here: flagNames would rewrite inside the value
		}
	}
	if set("host-bandwidth") {
		out.BytesPerSec = t.hostBandwidth
	}
	out = out.Normalize()
	if err := out.Validate(); err != nil {
		return base, errors.New(flagNames.Replace(err.Error()))
	}
	return out, nil
}

// flagNames renames the settings that Tunables.Validate names after their
// flags, so that an error says which flag to change.
var flagNames = strings.NewReplacer(
	"rate_per_min", "--rate",
	"max_inflight", "--max-inflight",
	"jitter_min", "--jitter MIN",
	"jitter_max", "--jitter MAX",
	"backoff_base", "--backoff-base",
	"backoff_max", "--backoff-max",
	"decay_after", "--decay-after",
	"throttle_statuses", "--throttle-statuses",
	"max_retry_after", "--max-retry-after",
	"failure_threshold", "--breaker-threshold",
	"recovery_timeout", "--breaker-timeout",
	"retry.max_attempts", "--max-attempts",
	"retry.strategy", "--retry",
	"retry.base", "--retry-base",
	"retry.max", "--retry-max",
	"burst:", "--burst:",
	"bytes_per_sec", "--host-bandwidth",
)

// rateValue is a number of requests a minute (fractions allowed: 0.5 is
// one request every two minutes).
type rateValue float64

func (r *rateValue) String() string { return strconv.FormatFloat(float64(*r), 'f', -1, 64) }
func (r *rateValue) Type() string   { return "N" }
func (r *rateValue) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%q is not a number", s)
	}
	*r = rateValue(v)
	return nil
}

// wholeValue is a whole number. It is read as a number first, so that a
// mistake is said plainly: "1.5 is not a whole number", "1e+20 is out of
// range".
type wholeValue int

func (w *wholeValue) String() string { return strconv.Itoa(int(*w)) }
func (w *wholeValue) Type() string   { return "N" }
func (w *wholeValue) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), math.IsNaN(v):
		return fmt.Errorf("%q is not a whole number", s)
	case math.Abs(v) > math.MaxInt32:
		return fmt.Errorf("%v is out of range", v)
	case v != math.Trunc(v):
		return fmt.Errorf("%v is not a whole number", v)
	}
	*w = wholeValue(v)
	return nil
}

// durationValue is a Go duration ("250ms", "30s", "1h"); a bare number is
// refused with a hint, or taken as seconds when bareSeconds is set.
type durationValue struct {
	d           time.Duration
	bareSeconds bool
}

func (f *durationValue) String() string { return shortDuration(f.d) }
func (f *durationValue) Type() string   { return "DURATION" }
func (f *durationValue) Set(s string) error {
	d, err := parseDuration(s, f.bareSeconds)
	if err != nil {
		return err
	}
	f.d = d
	return nil
}

// shortDuration is d as people write it: 1m, not 1m0s; 24h, not 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// parseDuration reads a Go duration, or with bareSeconds a number of
// seconds; its error says what a duration looks like.
func parseDuration(s string, bareSeconds bool) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && bareSeconds && math.Abs(v) < float64(math.MaxInt64/int64(time.Second)):
		return time.Duration(v * float64(time.Second)), nil
	case err == nil && v == 0:
		return 0, nil
	case err == nil:
		return 0, fmt.Errorf("%q has no unit: write it as %ss or %sms, for example", s, s, s)
	}
	return 0, fmt.Errorf("%q is not a duration, such as 250ms, 30s, 5m or 1h", s)
}

// jitterValue parses MIN-MAX as two Go durations ("0-250ms", "100ms-1s").
type jitterValue struct{ min, max time.Duration }

func (j *jitterValue) Type() string { return "MIN-MAX" }
func (j *jitterValue) String() string {
	lo := "0"
	if j.min != 0 {
		lo = shortDuration(j.min)
	}
	return lo + "-" + shortDuration(j.max)
}

func (j *jitterValue) Set(s string) error {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return fmt.Errorf("want MIN-MAX, such as 0-250ms")
	}
	if lo == "" {
		return fmt.Errorf("jitter cannot be negative")
	}
	b, err := parseDuration(hi, false)
	if err != nil {
		return err
	}
	// "100-250ms": a bare MIN takes MAX's unit, as people write ranges; only
	// when MAX is one number and one unit ("500-1m30s" is refused: 500 what?).
	if _, err := strconv.ParseFloat(lo, 64); err == nil {
		num := strings.TrimRightFunc(hi, unicode.IsLetter)
		if _, err := strconv.ParseFloat(num, 64); err == nil {
			lo += hi[len(num):]
		}
	}
	a, err := parseDuration(lo, false)
	if err != nil {
		return err
	}
	if a < 0 || b < 0 {
		return fmt.Errorf("jitter cannot be negative")
	}
	j.min, j.max = a, b
	return nil
}

// strategyValue is a retry strategy: fixed, linear or exponential.
type strategyValue engine.Strategy

func (s *strategyValue) String() string { return engine.Strategy(*s).String() }
func (s *strategyValue) Type() string   { return "STRATEGY" }
func (s *strategyValue) Set(v string) error {
	st, err := engine.ParseStrategy(v)
	if err != nil {
		return err
	}
	*s = strategyValue(st)
	return nil
}

// statusesValue is a comma-separated list of HTTP statuses ("429,503").
type statusesValue []int

func (s *statusesValue) Type() string { return "CODES" }
func (s *statusesValue) String() string {
	parts := make([]string, len(*s))
	for i, c := range *s {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}

func (s *statusesValue) Set(v string) error {
	var codes []int
	for _, p := range strings.Split(v, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("%q is not a status code", p)
		}
		codes = append(codes, c)
	}
	*s = codes
	return nil
}
