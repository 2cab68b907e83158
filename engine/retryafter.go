package engine

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// ParseRetryAfter parses an HTTP Retry-After header value (G8) into a wait
// measured from now (a wall-clock instant; only its wall reading is used
// for the date form).
//
// Accepted, after trimming leading and trailing spaces and tabs (HTTP
// optional whitespace, so " 7" and "7 " mean 7 s):
//
//   - delta-seconds: ASCII digits only. The value saturates at the largest
//     time.Duration (about 292 years); it never overflows or goes negative.
//   - HTTP-date in one of the three forms of RFC 9110 §5.6.7, GMT only:
//     IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850
//     "Sunday, 06-Nov-94 08:49:37 GMT" and asctime "Sun Nov  6 08:49:37 1994".
//     A date in the past (or now) means 0.
//
// Everything else is ignored as if the header were absent (ok is false):
// empty, a sign ("+3", "-5"), a fraction ("1.5"), inner whitespace
// ("1 2"), junk, another zone ("… PST", "GMT+3") or an impossible date
// ("31 Feb").
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		return parseDeltaSeconds(v), true
	}
	t, ok := parseHTTPDateGMT(v)
	if !ok {
		return 0, false
	}
	d = t.Sub(now.Round(0)) // Sub saturates; Round(0) drops the monotonic reading
	if d < 0 {
		d = 0
	}
	return d, true
}

// isDigits reports whether s is non-empty and all ASCII digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// maxDeltaSeconds is the largest whole number of seconds a Duration holds.
const maxDeltaSeconds = int64(math.MaxInt64 / int64(time.Second))

// parseDeltaSeconds converts an all-digit string to a Duration, saturating.
func parseDeltaSeconds(s string) time.Duration {
	var n int64
	for i := 0; i < len(s); i++ {
		n = n*10 + int64(s[i]-'0')
		if n > maxDeltaSeconds {
			return math.MaxInt64
		}
	}
	return time.Duration(n) * time.Second
}

// httpDateLayouts are the layouts net/http.ParseTime tries, in its order.
var httpDateLayouts = [...]string{http.TimeFormat, time.RFC850, time.ANSIC}

// parseHTTPDateGMT parses the three HTTP-date forms and insists on GMT.
// http.TimeFormat carries a literal "GMT" and asctime carries no zone (it
// is GMT by definition), but RFC 850's layout accepts any abbreviation, so
// for it the value must end in " GMT".
func parseHTTPDateGMT(v string) (time.Time, bool) {
	for _, layout := range httpDateLayouts {
		t, err := time.Parse(layout, v)
		if err != nil {
			continue
		}
		if layout == time.RFC850 && !strings.HasSuffix(v, " GMT") {
			return time.Time{}, false
		}
		return t, true
	}
	return time.Time{}, false
}
