package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"heed/engine"
)

// tunableFlags binds the politeness flags of SPEC §9 to a Tunables value.
// Only the flags a person set are applied (see apply), so `heed host H
// --rate 10` changes the rate and nothing else.
type tunableFlags struct {
	fs  *flag.FlagSet
	set map[string]bool

	rate, burst, inflight      float64
	jitter                     jitterFlag
	backoffBase, backoffMax    durationFlag
	breakerThreshold           float64
	breakerTimeout             durationFlag
	maxAttempts                float64
	retry                      string
	retryBase, retryMax        durationFlag
	decayAfter                 float64
	maxRetryAfter              durationFlag // a bare number is seconds
	throttleStatuses           string
	retryJitter, noRetryJitter bool
}

func registerTunables(fs *flag.FlagSet) *tunableFlags {
	t := &tunableFlags{fs: fs}
	fs.Float64Var(&t.rate, "rate", 0, "requests per `minute` per host (G2)")
	fs.Float64Var(&t.burst, "burst", 0, "token bucket size per host (G2)")
	fs.Float64Var(&t.inflight, "max-inflight", 0, "requests in flight per host (G1)")
	fs.Var(&t.jitter, "jitter", "extra spacing `MIN-MAX` between requests to a host, e.g. 0-250ms (G4)")
	fs.Var(&t.backoffBase, "backoff-base", "first throttle backoff window, e.g. 1s (G5)")
	fs.Var(&t.backoffMax, "backoff-max", "largest throttle backoff window, e.g. 10m (G5)")
	fs.Float64Var(&t.decayAfter, "decay-after", 0, "successes that lower the backoff level by one (G7)")
	t.maxRetryAfter.bareSeconds = true
	fs.Var(&t.maxRetryAfter, "max-retry-after", "longest Retry-After that Heed waits out, e.g. 1h (a bare number is seconds); longer pauses the host")
	fs.StringVar(&t.throttleStatuses, "throttle-statuses", "", "comma-separated statuses that throttle, e.g. 429,503")
	fs.Float64Var(&t.breakerThreshold, "breaker-threshold", 0, "consecutive failures that open the breaker (B1)")
	fs.Var(&t.breakerTimeout, "breaker-timeout", "open breaker's wait before a probe, e.g. 30s (B2)")
	fs.Float64Var(&t.maxAttempts, "max-attempts", 0, "attempts per job before it fails (R5)")
	fs.StringVar(&t.retry, "retry", "", "retry strategy: fixed, linear or exponential (R1)")
	fs.Var(&t.retryBase, "retry-base", "retry base delay, e.g. 2s (R1)")
	fs.Var(&t.retryMax, "retry-max", "retry delay cap, e.g. 5m; 0 = none (R1)")
	fs.BoolVar(&t.retryJitter, "retry-jitter", false, "add jitter to retry delays (R1, the default)")
	fs.BoolVar(&t.noRetryJitter, "no-retry-jitter", false, "no jitter on retry delays")
	return t
}

// visited records which flags were set; call after parsing.
func (t *tunableFlags) visited() {
	t.set = map[string]bool{}
	t.fs.Visit(func(f *flag.Flag) { t.set[f.Name] = true })
}

// any reports whether any politeness flag was given.
func (t *tunableFlags) any() bool {
	for _, n := range []string{"rate", "burst", "max-inflight", "jitter", "backoff-base", "backoff-max",
		"decay-after", "max-retry-after", "throttle-statuses", "breaker-threshold", "breaker-timeout",
		"max-attempts", "retry", "retry-base", "retry-max", "retry-jitter", "no-retry-jitter"} {
		if t.set[n] {
			return true
		}
	}
	return false
}

// apply returns base with the given flags applied, normalized and validated:
// the error names the flag's tunable and its bounds.
func (t *tunableFlags) apply(base engine.Tunables) (engine.Tunables, error) {
	out := base
	whole := func(name string, v float64, dst *int) error {
		if !t.set[name] {
			return nil
		}
		if math.Abs(v) > math.MaxInt32 {
			return fmt.Errorf("--%s: %v is out of range", name, v)
		}
		if v != math.Trunc(v) {
			return fmt.Errorf("--%s: %v is not a whole number", name, v)
		}
		*dst = int(v)
		return nil
	}
	if t.set["rate"] {
		out.RatePerMin = t.rate
	}
	for _, w := range []struct {
		name string
		v    float64
		dst  *int
	}{
		{"burst", t.burst, &out.Burst},
		{"max-inflight", t.inflight, &out.MaxInflight},
		{"decay-after", t.decayAfter, &out.DecayAfter},
		{"breaker-threshold", t.breakerThreshold, &out.FailureThreshold},
		{"max-attempts", t.maxAttempts, &out.Retry.MaxAttempts},
	} {
		if err := whole(w.name, w.v, w.dst); err != nil {
			return base, err
		}
	}
	if t.set["jitter"] {
		out.JitterMin, out.JitterMax = t.jitter.min, t.jitter.max
	}
	if t.set["backoff-base"] {
		out.BackoffBase = t.backoffBase.d
	}
	if t.set["backoff-max"] {
		out.BackoffMax = t.backoffMax.d
	}
	if t.set["max-retry-after"] {
		out.MaxRetryAfter = t.maxRetryAfter.d
	}
	if t.set["throttle-statuses"] {
		var codes []int
		for _, s := range strings.Split(t.throttleStatuses, ",") {
			var c int
			if _, err := fmt.Sscanf(strings.TrimSpace(s), "%d", &c); err != nil {
				return base, fmt.Errorf("--throttle-statuses: %q is not a status code", s)
			}
			codes = append(codes, c)
		}
		out.ThrottleStatuses = codes
	}
	if t.set["breaker-timeout"] {
		out.RecoveryTimeout = t.breakerTimeout.d
	}
	if t.set["retry"] {
		s, err := engine.ParseStrategy(t.retry)
		if err != nil {
			return base, fmt.Errorf("--retry: %w", err)
		}
		out.Retry.Strategy = s
	}
	if t.set["retry-base"] {
		out.Retry.Base = t.retryBase.d
	}
	if t.set["retry-max"] {
		out.Retry.Max = t.retryMax.d
	}
	if t.set["retry-jitter"] {
		out.Retry.Jitter = t.retryJitter
	}
	if t.set["no-retry-jitter"] && t.noRetryJitter {
		out.Retry.Jitter = false
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
)

// durationFlag is a Go duration ("250ms", "30s", "1h"); a bare number is
// refused with a hint, or taken as seconds when bareSeconds is set.
type durationFlag struct {
	d           time.Duration
	bareSeconds bool
}

func (f *durationFlag) String() string {
	if f == nil || f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f *durationFlag) Set(s string) error {
	d, err := parseDuration(s, f.bareSeconds)
	if err != nil {
		return err
	}
	f.d = d
	return nil
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

// jitterFlag parses MIN-MAX as two Go durations ("0-250ms", "100ms-1s").
type jitterFlag struct{ min, max time.Duration }

func (j *jitterFlag) String() string {
	if j == nil {
		return ""
	}
	return j.min.String() + "-" + j.max.String()
}

func (j *jitterFlag) Set(s string) error {
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
