package engine

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Strategy is how the retry delay grows with the attempts made (R1).
type Strategy int

const (
	// Exponential waits base·2^n before attempt n+1 (the default).
	Exponential Strategy = iota
	// Fixed waits base before every retry.
	Fixed
	// Linear waits base·(n+1) before attempt n+1.
	Linear
)

// String returns "exponential", "fixed" or "linear".
func (s Strategy) String() string {
	switch s {
	case Exponential:
		return "exponential"
	case Fixed:
		return "fixed"
	case Linear:
		return "linear"
	}
	return fmt.Sprintf("strategy(%d)", int(s))
}

// ParseStrategy is the inverse of Strategy.String (case-insensitive, also
// accepting "exp").
func ParseStrategy(s string) (Strategy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "exponential", "exp":
		return Exponential, nil
	case "fixed":
		return Fixed, nil
	case "linear":
		return Linear, nil
	}
	return 0, fmt.Errorf("retry strategy: %q is not fixed, linear or exponential", s)
}

// MarshalText makes a Strategy a JSON string ("exponential").
func (s Strategy) MarshalText() ([]byte, error) {
	if s < Exponential || s > Linear {
		return nil, fmt.Errorf("retry strategy: invalid value %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText parses what MarshalText wrote.
func (s *Strategy) UnmarshalText(b []byte) error {
	v, err := ParseStrategy(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// RetryPolicy is the per-job retry policy (SPEC §4). Defaults
// (DefaultRetryPolicy): 5 attempts, exponential from 2 s, capped at 5 min,
// with jitter.
//
//   - MaxAttempts (1…255): attempts a job may make; throttle responses do
//     not count (R3).
//   - Strategy: Fixed, Linear or Exponential (R1).
//   - Base (≥ 0): the first delay.
//   - Max (≥ 0, 0 = no cap): cap applied after saturation and after jitter.
//   - Jitter: add a uniform draw in [0, d/2] to each delay.
type RetryPolicy struct {
	MaxAttempts int           `json:"max_attempts"`
	Strategy    Strategy      `json:"strategy"`
	Base        time.Duration `json:"base"`
	Max         time.Duration `json:"max"`
	Jitter      bool          `json:"jitter"`
}

// DefaultRetryPolicy returns the SPEC §4 defaults.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 5, Strategy: Exponential, Base: 2 * time.Second, Max: 300 * time.Second, Jitter: true}
}

// Validate reports the first field out of its bound, named as in JSON.
func (p RetryPolicy) Validate() error {
	if err := intRange("retry.max_attempts", p.MaxAttempts, 1, MaxRetryAttempts); err != nil {
		return err
	}
	if p.Strategy < Exponential || p.Strategy > Linear {
		return fmt.Errorf("retry.strategy: %d is not fixed, linear or exponential", int(p.Strategy))
	}
	if p.Base < 0 {
		return fmt.Errorf("retry.base: %v is below 0", p.Base)
	}
	if p.Max < 0 {
		return fmt.Errorf("retry.max: %v is below 0 (0 means no cap)", p.Max)
	}
	return nil
}

// Delay is R1: the wait before attempt n+1, where n counts the attempts
// made from 0 (n = 0 is the first retry, after the first attempt failed):
// fixed = base, linear = base·(n+1), exponential = base·2^n. The arithmetic
// saturates at the largest time.Duration and never wraps; Max (when not 0)
// caps the saturated value; with Jitter a uniform draw in [0, d/2] is added
// (saturating) and Max caps again. rnd(k) must return a uniform value in
// [0, k); it is only called when Jitter is on and d/2 > 0.
func (p RetryPolicy) Delay(n int, rnd func(k int64) int64) time.Duration {
	if n < 0 {
		n = 0
	}
	base := p.Base
	if base < 0 {
		base = 0
	}
	var d time.Duration
	switch p.Strategy {
	case Fixed:
		d = base
	case Linear:
		d = satMul(base, int64(n)+1)
	default:
		d = satShift(base, n)
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	if p.Jitter && d/2 > 0 && rnd != nil {
		half := int64(d / 2)
		var j int64
		if half == math.MaxInt64 {
			j = rnd(half) // [0, half), close enough at this size
		} else {
			j = rnd(half + 1) // [0, half]
		}
		d = satAdd(d, time.Duration(j))
		if p.Max > 0 && d > p.Max {
			d = p.Max
		}
	}
	return d
}

// satMul returns d·k (k ≥ 0) saturated at math.MaxInt64.
func satMul(d time.Duration, k int64) time.Duration {
	if d <= 0 || k <= 0 {
		return 0
	}
	if int64(d) > math.MaxInt64/k {
		return math.MaxInt64
	}
	return d * time.Duration(k)
}

// satShift returns d·2^n saturated at math.MaxInt64.
func satShift(d time.Duration, n int) time.Duration {
	if d <= 0 {
		return 0
	}
	if n >= 63 || int64(d) > math.MaxInt64>>uint(n) {
		return math.MaxInt64
	}
	return d << uint(n)
}

// satAdd returns a+b (both ≥ 0) saturated at math.MaxInt64.
func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ErrClass classifies why an attempt ended without a usable response, so
// the core can decide retry (R2) and breaker (B1) without knowing the
// fetcher's error types. The fetcher maps its errors onto these.
type ErrClass uint8

const (
	// ClassNone: the attempt got an HTTP response; look at Outcome.Status.
	ClassNone ErrClass = iota
	// ClassTransport: connection reset, DNS failure, protocol error. Retried; a breaker failure.
	ClassTransport
	// ClassTimeout: connect, TLS-handshake, header or idle timeout (N1). Retried; a breaker failure.
	ClassTimeout
	// ClassHTTPStatus: the response status itself is the error (Status says which).
	ClassHTTPStatus
	// ClassTLS: certificate or TLS verification error. Not retried (R2); not a breaker failure.
	ClassTLS
	// ClassRefused: refused scheme, downgrade or too many redirects. Not retried.
	ClassRefused
	// ClassConfinement: the file would land outside the download folder (F1). Not retried.
	ClassConfinement
	// ClassSizeLimit: larger than the free space or size cap (F8). Not retried.
	ClassSizeLimit
	// ClassTruncated: the body ended early. Retried (resumed, F5); a breaker failure.
	ClassTruncated
	// ClassCanceled: the user or shutdown cancelled the attempt. Neither retried nor failed.
	ClassCanceled
)

var errClassNames = [...]string{"none", "transport", "timeout", "http-status", "tls", "refused", "confinement", "size-limit", "truncated", "canceled"}

// String returns a short lower-case name ("timeout", "tls" …).
func (c ErrClass) String() string {
	if int(c) < len(errClassNames) {
		return errClassNames[c]
	}
	return fmt.Sprintf("errclass(%d)", int(c))
}

// Retryable is R2 for an attempt that ended with class c and HTTP status
// status (0 when there was no response): retried are transport errors,
// timeouts, truncated bodies, 408 and 5xx; everything else fails at once.
// A 2xx/3xx response is not an error and is not "retryable".
func Retryable(c ErrClass, status int) bool {
	switch c {
	case ClassTransport, ClassTimeout, ClassTruncated:
		return true
	case ClassNone, ClassHTTPStatus:
		return status == 408 || (status >= 500 && status <= 599)
	}
	return false
}

// BreakerFailure reports whether an attempt counts as a failure of the host
// for the breaker (SPEC §1): transport errors, timeouts, truncated bodies,
// 5xx and 429. Other 4xx are the URL's fault; TLS, refusal, confinement,
// size and cancellation are neither.
func BreakerFailure(c ErrClass, status int) bool {
	switch c {
	case ClassTransport, ClassTimeout, ClassTruncated:
		return true
	case ClassNone, ClassHTTPStatus:
		return status == 429 || (status >= 500 && status <= 599)
	}
	return false
}

// errReason renders the last error of an outcome for Decision.Reason.
func errReason(o Outcome) string {
	switch {
	case o.Err != nil && o.Status > 0:
		return fmt.Sprintf("HTTP %d: %v", o.Status, o.Err)
	case o.Err != nil:
		return fmt.Sprintf("%v: %v", o.Class, o.Err)
	case o.Status > 0:
		return fmt.Sprintf("HTTP %d", o.Status)
	}
	return o.Class.String()
}

// ErrGaveUp wraps the reason of a job that used all its attempts (R5).
var ErrGaveUp = errors.New("gave up")
