package quota

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unix and unixMilli write t as X-RateLimit-Reset does.
func unix(t time.Time) string      { return strconv.FormatInt(t.Unix(), 10) }
func unixMilli(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// date writes t as a Date header does.
func date(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

func TestQuota_G12_EpochAgainstDate(t *testing.T) {
	ahead, behind := now.Add(time.Hour), now.Add(-time.Hour)
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"server clock an hour ahead", hdr("Date", date(ahead), "X-RateLimit-Reset", unix(ahead.Add(30*time.Second))), 30 * time.Second},
		{"server clock an hour behind", hdr("Date", date(behind), "X-RateLimit-Reset", unix(behind.Add(30*time.Second))), 30 * time.Second},
		{"no Date: against now", hdr("X-RateLimit-Reset", unix(now.Add(30*time.Second))), 30 * time.Second},
		{"unparsable Date: against now", hdr("Date", "yesterday", "X-RateLimit-Reset", unix(now.Add(30*time.Second))), 30 * time.Second},
		{"Date in RFC 850 form", hdr("Date", ahead.Format(time.RFC850), "X-RateLimit-Reset", unix(ahead.Add(30*time.Second))), 30 * time.Second},
		{"Date in asctime form", hdr("Date", ahead.Format(time.ANSIC), "X-RateLimit-Reset", unix(ahead.Add(30*time.Second))), 30 * time.Second},
		{"milliseconds, clock ahead", hdr("Date", date(ahead), "X-RateLimit-Reset", unixMilli(ahead.Add(30*time.Second))), 30 * time.Second},
		{"milliseconds, clock behind", hdr("Date", date(behind), "X-RateLimit-Reset", unixMilli(behind.Add(1500*time.Millisecond))), 1500 * time.Millisecond},
		{"milliseconds with a fraction", hdr("X-RateLimit-Reset", unixMilli(now.Add(2*time.Second))+".5"), 2*time.Second + 500*time.Microsecond},
		{"milliseconds, no Date", hdr("X-RateLimit-Reset", unixMilli(now.Add(45*time.Second))), 45 * time.Second},
		{"reset in the past is 0", hdr("Date", date(ahead), "X-RateLimit-Reset", unix(now.Add(30*time.Minute))), 0},
		{"reset at the Date is 0", hdr("Date", date(now), "X-RateLimit-Reset", unix(now)), 0},
		{"a delta ignores the Date", hdr("Date", date(behind), "X-RateLimit-Reset", "30"), 30 * time.Second},
		{"exactly 10^9 is still a delta, capped", hdr("X-RateLimit-Reset", "1000000000"), MaxReset},
		{"just above 10^9 is a Unix time, long past", hdr("X-RateLimit-Reset", "1000000000.5"), 0},
		{"exactly 10^12 is Unix seconds, far ahead", hdr("X-RateLimit-Reset", "1000000000000"), MaxReset},
		{"just above 10^12 is Unix milliseconds, long past", hdr("X-RateLimit-Reset", "1000000000001"), 0},
		{"Reset-After is never a Unix time", hdr("X-RateLimit-Reset-After", unix(now)), MaxReset},
		{"RateLimit-Reset as a Unix time, clock ahead", hdr("Date", date(ahead), "RateLimit-Reset", unix(ahead.Add(time.Minute))), time.Minute},
		{"draft-07 reset is never a Unix time", hdr("RateLimit", "limit=1, reset="+unix(now)), MaxReset},
		{"current draft t is never a Unix time", hdr("RateLimit", `"a";r=1;t=`+unix(now)), MaxReset},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := Parse(tc.h, now)
			require.True(t, ok)
			require.Len(t, s.Policies, 1)
			assert.Equal(t, tc.want, s.Policies[0].ResetIn)
		})
	}
}

func TestQuota_G12_NowOnlyWithoutDate(t *testing.T) {
	h := hdr("Date", date(now), "X-RateLimit-Reset", unix(now.Add(time.Minute)))
	for _, arrived := range []time.Time{now, now.Add(time.Hour), now.Add(-time.Hour), {}} {
		s, ok := Parse(h, arrived)
		require.True(t, ok)
		assert.Equal(t, time.Minute, s.Policies[0].ResetIn, "arrived %v", arrived)
	}
	s, ok := Parse(hdr("X-RateLimit-Reset", unix(now.Add(time.Minute))), time.Time{})
	require.True(t, ok)
	assert.Equal(t, MaxReset, s.Policies[0].ResetIn, "a zero now puts every Unix time far ahead; the cap holds")
}

func TestQuota_G12_MalformedIgnored(t *testing.T) {
	runParse(t, []parseCase{
		{"garbage RateLimit", hdr("RateLimit", "garbage!!"), "", nil},
		{"garbage everywhere", hdr("RateLimit", "{}", "RateLimit-Policy", "<>", "RateLimit-Limit", "ten", "RateLimit-Remaining", "x",
			"RateLimit-Reset", "soon", "X-RateLimit-Limit", "lots", "X-RateLimit-Remaining", "-", "X-RateLimit-Reset", "later"), "", nil},
		{"empty fields", hdr("RateLimit", "", "RateLimit-Policy", "", "X-RateLimit-Limit", ""), "", nil},
		{"negative r, good t", hdr("RateLimit", `"b";r=-3;t=20`), FormRateLimit, []Policy{pol("b", -1, 0, -1, 20)}},
		{"decimal r", hdr("RateLimit", `"b";r=3.5;t=20`), FormRateLimit, []Policy{pol("b", -1, 0, -1, 20)}},
		{"string r and no t", hdr("RateLimit", `"b";r="3"`), "", nil},
		{"boolean r", hdr("RateLimit", `"b";r=?1`), "", nil},
		{"bare r", hdr("RateLimit", `"b";r`), "", nil},
		{"date t", hdr("RateLimit", `"b";r=1;t=@1700000000`), FormRateLimit, []Policy{pol("b", -1, 0, 1, -1)}},
		{"16-digit r fails the field", hdr("RateLimit", `"b";r=1234567890123456;t=1, "c";r=1`), "", nil},
		{"20-digit q fails the field", hdr("RateLimit-Policy", `"b";q=12345678901234567890;w=1`), "", nil},
		{"zero window", hdr("RateLimit-Policy", `"b";q=10;w=0`), FormRateLimit, []Policy{pol("b", 10, 0, -1, -1)}},
		{"negative window", hdr("RateLimit-Policy", `"b";q=10;w=-60`), FormRateLimit, []Policy{pol("b", 10, 0, -1, -1)}},
		{"decimal window", hdr("RateLimit-Policy", `"b";q=10;w=0.5`), FormRateLimit, []Policy{pol("b", 10, 0, -1, -1)}},
		{"negative quota", hdr("RateLimit-Policy", `"b";q=-10;w=60`), "", nil},
		{"missing quota", hdr("RateLimit-Policy", `"b";w=60`), "", nil},
		{"inner list", hdr("RateLimit-Policy", `("a" "b");q=1;w=1, "c";q=2;w=1`), FormRateLimit, []Policy{pol("c", 2, 1, -1, -1)}},
		{"integer name in RateLimit", hdr("RateLimit", `5;r=1`), "", nil},
		{"display string name", hdr("RateLimit", `%"b";r=1`), "", nil},
		{"byte sequence name", hdr("RateLimit", `:AAAA:;r=1`), "", nil},
		{"partition key not bytes joins anyway", hdr("RateLimit-Policy", `"u";q=1;w=1;pk="me"`, "RateLimit", `"u";r=0;pk=:AAAA:`),
			FormRateLimit, []Policy{pol("u", 1, 1, 0, -1)}},
		{"unit not a string", hdr("RateLimit-Policy", `"u";q=1;w=1;qu=5`), FormRateLimit, []Policy{in(UnknownUnit, pol("u", 1, 1, -1, -1))}},
		{"unit in capitals", hdr("RateLimit-Policy", `"u";q=1;w=1;qu="Requests"`), FormRateLimit, []Policy{in(UnknownUnit, pol("u", 1, 1, -1, -1))}},
		{"trailing comma fails the field", hdr("RateLimit", `"b";r=1,`), "", nil},
		{"unterminated string fails the field", hdr("RateLimit", `"b;r=1`), "", nil},
		{"draft-07 negative limit", hdr("RateLimit", "limit=-1, reset=3"), FormDraft07, []Policy{pol("", -1, 0, -1, 3)}},
		{"draft-07 inner list", hdr("RateLimit", "limit=(1 2), reset=3"), FormDraft07, []Policy{pol("", -1, 0, -1, 3)}},
		{"draft-07 decimal reset", hdr("RateLimit", "limit=10, reset=3.5"), FormDraft07, []Policy{pol("", 10, 0, -1, -1)}},
		{"draft-07 string limit", hdr("RateLimit", `limit="10", reset=3`), FormDraft07, []Policy{pol("", -1, 0, -1, 3)}},
		{"draft-07 bare key", hdr("RateLimit", "limit, remaining=2"), FormDraft07, []Policy{pol("", -1, 0, 2, -1)}},
		{"draft-07 upper-case key fails the field", hdr("RateLimit", "Limit=10, reset=3"), "", nil},
		{"draft-07 policies of the wrong type", hdr("RateLimit-Policy", `"10";w=1, ?1;w=1, 1.5;w=1`), "", nil},
		{"three fields: token limit", hdr("RateLimit-Limit", "ten", "RateLimit-Remaining", "5"), FormRateLimitLimit, []Policy{pol("", -1, 0, 5, -1)}},
		{"three fields: negative reset", hdr("RateLimit-Limit", "10", "RateLimit-Reset", "-5"), FormRateLimitLimit, []Policy{pol("", 10, 0, -1, -1)}},
		{"three fields: 20-digit reset", hdr("RateLimit-Limit", "10", "RateLimit-Reset", "99999999999999999999"), FormRateLimitLimit, []Policy{pol("", 10, 0, -1, -1)}},
		{"three fields: inner list limit", hdr("RateLimit-Limit", "(10)", "RateLimit-Reset", "1"), FormRateLimitLimit, []Policy{pol("", -1, 0, -1, 1)}},
	})
}

func TestQuota_G12_XNumbersMalformed(t *testing.T) {
	for _, v := range []string{
		"-5", "+5", "1e3", "1E3", "NaN", "nan", "Inf", "+Inf", "-Inf", "Infinity", "0x10", "0b1", "1_000", "5 5", "", " ",
		".5", "5.", "1.2.3", "1,", ",1", "١٢", "５", "1234567890123456", "12345678901234567890", "99999999999999999999.5",
		"5;w=1", `"5"`, "5s", "\x00", "1\r\n2",
	} {
		t.Run(strconv.Quote(v), func(t *testing.T) {
			s, ok := Parse(hdr("X-RateLimit-Limit", "10", "X-RateLimit-Remaining", v, "X-RateLimit-Reset", v, "X-RateLimit-Reset-After", v), now)
			require.True(t, ok)
			assert.Equal(t, []Policy{pol("", 10, 0, -1, -1)}, s.Policies)
		})
	}
}

func TestQuota_G12_ResetCapped(t *testing.T) {
	cases := []struct {
		name   string
		h      http.Header
		reset  time.Duration
		window time.Duration
	}{
		{"largest t", hdr("RateLimit", `"a";r=1;t=999999999999999`), MaxReset, 0},
		{"largest w", hdr("RateLimit-Policy", `"a";q=1;w=999999999999999`), -1, MaxWindow},
		{"a year of window is kept", hdr("RateLimit-Policy", `"a";q=1;w=31536000`), -1, 365 * 24 * time.Hour},
		{"a day of reset is kept", hdr("RateLimit", "limit=1, reset=86400"), MaxReset, 0},
		{"a second short of a day", hdr("RateLimit", "limit=1, reset=86399"), MaxReset - time.Second, 0},
		{"a second past a day", hdr("RateLimit-Reset", "86401"), MaxReset, 0},
		{"largest Reset-After", hdr("X-RateLimit-Reset-After", "999999999999999.999999999"), MaxReset, 0},
		{"largest millisecond Unix time", hdr("X-RateLimit-Reset", "999999999999999"), MaxReset, 0},
		{"Date in 1900", hdr("Date", "Mon, 01 Jan 1900 00:00:00 GMT", "X-RateLimit-Reset", unix(now)), MaxReset, 0},
		{"Date in 9999", hdr("Date", "Fri, 31 Dec 9999 23:59:59 GMT", "X-RateLimit-Reset", unix(now)), 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := Parse(tc.h, now)
			require.True(t, ok)
			require.Len(t, s.Policies, 1)
			assert.Equal(t, tc.reset, s.Policies[0].ResetIn)
			assert.Equal(t, tc.window, s.Policies[0].Window)
		})
	}
}

func TestQuota_G12_CachedResponseIgnored(t *testing.T) {
	fields := []string{"RateLimit-Policy", `"a";q=10;w=1`, "RateLimit", `"a";r=1;t=1`, "X-RateLimit-Remaining", "5"}
	cases := []struct {
		name   string
		age    []string
		stated bool
	}{
		{"no Age", nil, true},
		{"Age 0", []string{"0"}, true},
		{"Age 00", []string{"00"}, true},
		{"Age 1", []string{"1"}, false},
		{"Age 007", []string{"007"}, false},
		{"Age huge", []string{"99999999999999999999999"}, false},
		{"Age with spaces", []string{" 3 "}, false},
		{"Age list takes its first member", []string{"5, 0"}, false},
		{"Age list first member 0", []string{"0, 5"}, true},
		{"Age over lines takes the first", []string{"0", "5"}, true},
		{"invalid Age is ignored", []string{"abc"}, true},
		{"negative Age is invalid", []string{"-1"}, true},
		{"fractional Age is invalid", []string{"1.5"}, true},
		{"empty Age is invalid", []string{""}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := hdr(fields...)
			for _, a := range tc.age {
				h.Add("Age", a)
			}
			s, ok := Parse(h, now)
			assert.Equal(t, tc.stated, ok)
			if !tc.stated {
				assert.Equal(t, Statement{}, s)
			}
		})
	}
}

func TestQuota_G12_Precedence(t *testing.T) {
	current := []string{"RateLimit-Policy", `"a";q=10;w=1`, "RateLimit", `"a";r=1;t=1`}
	draft07 := []string{"RateLimit", "limit=20, remaining=2, reset=2"}
	three := []string{"RateLimit-Limit", "30", "RateLimit-Remaining", "3", "RateLimit-Reset", "3"}
	x := []string{"X-RateLimit-Limit", "40", "X-RateLimit-Remaining", "4", "X-RateLimit-Reset", "4"}
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	runParse(t, []parseCase{
		{"all four: current draft", hdr(join(current, three, x)...), FormRateLimit, []Policy{pol("a", 10, 1, 1, 1)}},
		{"draft-07 over three fields and X-", hdr(join(draft07, three, x)...), FormDraft07, []Policy{pol("", 20, 0, 2, 2)}},
		{"three fields over X-", hdr(join(three, x)...), FormRateLimitLimit, []Policy{pol("", 30, 0, 3, 3)}},
		{"X- alone", hdr(x...), FormXRateLimit, []Policy{pol("", 40, 0, 4, 4)}},
		{"unusable current draft falls through", hdr(join([]string{"RateLimit-Policy", `"a";w=1`}, three)...),
			FormRateLimitLimit, []Policy{pol("", 30, 0, 3, 3)}},
		{"malformed draft-07 falls through", hdr(join([]string{"RateLimit", "limit=?1"}, x)...), FormXRateLimit, []Policy{pol("", 40, 0, 4, 4)}},
		{"draft-07 policies join the three fields", hdr(join([]string{"RateLimit-Policy", "30;w=60, 300;w=3600"}, three, x)...),
			FormRateLimitLimit, []Policy{pol("", 30, 60, 3, 3), pol("", 300, 3600, -1, -1)}},
		{"draft-07 policies alone over X-", hdr(join([]string{"RateLimit-Policy", "30;w=60"}, x)...),
			FormDraft07, []Policy{pol("", 30, 60, -1, -1)}},
		{"current policies over a draft-07 dictionary", hdr(join([]string{"RateLimit-Policy", `"a";q=10;w=1`}, draft07)...),
			FormRateLimit, []Policy{pol("a", 10, 1, -1, -1)}},
	})
}
