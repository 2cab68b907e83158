package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

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
	backoffBase, backoffMax    time.Duration
	breakerThreshold           float64
	breakerTimeout             time.Duration
	maxAttempts                float64
	retry                      string
	retryBase, retryMax        time.Duration
	decayAfter, maxRetryAfterS float64
	throttleStatuses           string
	retryJitter, noRetryJitter bool
}

func registerTunables(fs *flag.FlagSet) *tunableFlags {
	t := &tunableFlags{fs: fs}
	fs.Float64Var(&t.rate, "rate", 0, "requests per `minute` per host (G2)")
	fs.Float64Var(&t.burst, "burst", 0, "token bucket size per host (G2)")
	fs.Float64Var(&t.inflight, "max-inflight", 0, "requests in flight per host (G1)")
	fs.Var(&t.jitter, "jitter", "extra spacing `MIN-MAX` between requests to a host, e.g. 0-250ms (G4)")
	fs.DurationVar(&t.backoffBase, "backoff-base", 0, "first throttle backoff window (G5)")
	fs.DurationVar(&t.backoffMax, "backoff-max", 0, "largest throttle backoff window (G5)")
	fs.Float64Var(&t.decayAfter, "decay-after", 0, "successes that lower the backoff level by one (G7)")
	fs.Float64Var(&t.maxRetryAfterS, "max-retry-after", 0, "longest Retry-After in `seconds` that Heed waits out; longer pauses the host")
	fs.StringVar(&t.throttleStatuses, "throttle-statuses", "", "comma-separated statuses that throttle, e.g. 429,503")
	fs.Float64Var(&t.breakerThreshold, "breaker-threshold", 0, "consecutive failures that open the breaker (B1)")
	fs.DurationVar(&t.breakerTimeout, "breaker-timeout", 0, "open breaker's wait before a probe (B2)")
	fs.Float64Var(&t.maxAttempts, "max-attempts", 0, "attempts per job before it fails (R5)")
	fs.StringVar(&t.retry, "retry", "", "retry strategy: fixed, linear or exponential (R1)")
	fs.DurationVar(&t.retryBase, "retry-base", 0, "retry base delay (R1)")
	fs.DurationVar(&t.retryMax, "retry-max", 0, "retry delay cap, 0 = none (R1)")
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
		if v != float64(int(v)) {
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
		out.BackoffBase = t.backoffBase
	}
	if t.set["backoff-max"] {
		out.BackoffMax = t.backoffMax
	}
	if t.set["max-retry-after"] {
		out.MaxRetryAfter = time.Duration(t.maxRetryAfterS * float64(time.Second))
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
		out.RecoveryTimeout = t.breakerTimeout
	}
	if t.set["retry"] {
		s, err := engine.ParseStrategy(t.retry)
		if err != nil {
			return base, fmt.Errorf("--retry: %w", err)
		}
		out.Retry.Strategy = s
	}
	if t.set["retry-base"] {
		out.Retry.Base = t.retryBase
	}
	if t.set["retry-max"] {
		out.Retry.Max = t.retryMax
	}
	if t.set["retry-jitter"] {
		out.Retry.Jitter = t.retryJitter
	}
	if t.set["no-retry-jitter"] && t.noRetryJitter {
		out.Retry.Jitter = false
	}
	out = out.Normalize()
	if err := out.Validate(); err != nil {
		return base, err
	}
	return out, nil
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
	parse := func(v string) (time.Duration, error) {
		if v == "0" {
			return 0, nil
		}
		return time.ParseDuration(v)
	}
	a, err := parse(lo)
	if err != nil {
		return err
	}
	b, err := parse(hi)
	if err != nil {
		return err
	}
	if a < 0 || b < 0 {
		return fmt.Errorf("jitter cannot be negative")
	}
	j.min, j.max = a, b
	return nil
}
