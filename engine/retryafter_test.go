package engine

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

var raNow = time.Date(1994, 11, 6, 8, 49, 0, 0, time.UTC)

func TestParseRetryAfter_G8(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"delta seconds", "120", 120 * time.Second, true},
		{"zero", "0", 0, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"outer spaces trimmed", " 7 ", 7 * time.Second, true},
		{"tab trimmed", "\t7", 7 * time.Second, true},
		{"saturates", "9999999999999", math.MaxInt64, true},
		{"saturates huge", strings.Repeat("9", 400), math.MaxInt64, true},
		{"largest exact", strconv.FormatInt(maxDeltaSeconds, 10), time.Duration(maxDeltaSeconds) * time.Second, true},
		{"imf-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT", 37 * time.Second, true},
		{"rfc850", "Sunday, 06-Nov-94 08:49:37 GMT", 37 * time.Second, true},
		{"asctime", "Sun Nov  6 08:49:37 1994", 37 * time.Second, true},
		{"past date is zero", "Sun, 06 Nov 1994 08:00:00 GMT", 0, true},
		{"negative", "-5", 0, false},
		{"plus sign", "+3", 0, false},
		{"fraction", "1.5", 0, false},
		{"inner space", "1 2", 0, false},
		{"junk", "abc", 0, false},
		{"empty", "", 0, false},
		{"only spaces", "   ", 0, false},
		{"imf with PST", "Sun, 06 Nov 1994 08:49:37 PST", 0, false},
		{"rfc850 with PST", "Sunday, 06-Nov-94 08:49:37 PST", 0, false},
		{"rfc850 with GMT offset", "Sunday, 06-Nov-94 08:49:37 GMT+3", 0, false},
		{"31 Feb", "Tue, 31 Feb 1995 08:49:37 GMT", 0, false},
		{"rfc3339 not accepted", "1994-11-06T08:49:37Z", 0, false},
		{"unicode digits", "١٢", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := ParseRetryAfter(tc.in, raNow)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, d)
		})
	}
}

// oracleRetryAfter restates G8 with different tools (strconv, http.ParseTime
// and the parsed zone) so the fuzz target checks "exactly these forms".
func oracleRetryAfter(v string) (digits bool, date bool) {
	s := strings.Trim(v, " \t")
	if s == "" {
		return false, false
	}
	if strings.Trim(s, "0123456789") == "" {
		return true, false
	}
	t, err := http.ParseTime(s)
	if err != nil {
		return false, false
	}
	name, off := t.Zone()
	return false, off == 0 && (name == "UTC" || name == "GMT")
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"120", " 7", "-5", "+3", "1.5", "abc", "9999999999999",
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
		"Sun, 06 Nov 1994 08:49:37 PST", "Tue, 31 Feb 1995 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT+3", "", "18700000000000000000A"} {
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, v string, nowSec int64) {
		now := time.Unix(nowSec%(1<<40), 0)
		d, ok := ParseRetryAfter(v, now)
		if d < 0 {
			t.Fatalf("negative wait %v for %q", d, v)
		}
		digits, date := oracleRetryAfter(v)
		if ok != (digits || date) {
			t.Fatalf("ParseRetryAfter(%q) ok=%v, want digits=%v date=%v", v, ok, digits, date)
		}
		if !ok && d != 0 {
			t.Fatalf("ignored value %q returned %v", v, d)
		}
		if digits {
			n, err := strconv.ParseUint(strings.Trim(v, " \t"), 10, 64)
			if err == nil && n <= uint64(maxDeltaSeconds) && d != time.Duration(n)*time.Second {
				t.Fatalf("%q: got %v, want %ds", v, d, n)
			}
			if (err != nil || n > uint64(maxDeltaSeconds)) && d != math.MaxInt64 {
				t.Fatalf("%q: got %v, want saturation", v, d)
			}
		}
	})
}
