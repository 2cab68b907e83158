package quota

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// now is when the test responses "arrive".
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// hdr builds a header from name, value pairs; a name given twice makes two
// field lines, as a server sending the field twice would.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// pol builds a request Policy; window and reset are in seconds, and -1 (or 0
// for window) means not stated.
func pol(name string, limit, window, remaining, reset int64) Policy {
	p := Policy{Name: name, Limit: limit, Window: time.Duration(window) * time.Second, Remaining: remaining, ResetIn: -1}
	if reset >= 0 {
		p.ResetIn = time.Duration(reset) * time.Second
	}
	return p
}

// in returns p counting u.
func in(u Unit, p Policy) Policy { p.Unit = u; return p }

// parseCase is one response and what Parse should make of it; an empty form
// means Parse should report nothing.
type parseCase struct {
	name string
	h    http.Header
	form string
	want []Policy
}

func runParse(t *testing.T, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := Parse(tc.h, now)
			if tc.form == "" {
				assert.False(t, ok, "got %v", s)
				assert.Equal(t, Statement{}, s)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tc.form, s.Form)
			assert.Equal(t, tc.want, s.Policies)
		})
	}
}

func TestQuota_G12_CurrentDraft(t *testing.T) {
	runParse(t, []parseCase{
		{"burst and daily, burst counters",
			hdr("RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400`, "RateLimit", `"burst";r=3;t=20`),
			FormRateLimit, []Policy{pol("burst", 100, 60, 3, 20), pol("daily", 1000, 86400, -1, -1)}},
		{"counters alone", hdr("RateLimit", `"default";r=50;t=30`),
			FormRateLimit, []Policy{pol("default", -1, 0, 50, 30)}},
		{"policy alone", hdr("RateLimit-Policy", `"default";q=100;w=10`),
			FormRateLimit, []Policy{pol("default", 100, 10, -1, -1)}},
		{"two policies without spaces", hdr("RateLimit-Policy", `"permin";q=50;w=60,"perhr";q=1000;w=3600`),
			FormRateLimit, []Policy{pol("permin", 50, 60, -1, -1), pol("perhr", 1000, 3600, -1, -1)}},
		{"policy with partition key", hdr("RateLimit-Policy", `"peruser";q=100;w=60;pk=:cHsdsRa894==:`),
			FormRateLimit, []Policy{pol("peruser", 100, 60, -1, -1)}},
		{"content bytes", hdr("RateLimit-Policy", `"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`),
			FormRateLimit, []Policy{in(ContentBytes, pol("peruser", 65535, 10, -1, -1))}},
		{"counters with partition key and no reset", hdr("RateLimit", `"default";r=999;pk=:dHJpYWwxMjEzMjM=:`),
			FormRateLimit, []Policy{pol("default", -1, 0, 999, -1)}},
		{"exhausted", hdr("RateLimit", `"default";r=0;t=50`),
			FormRateLimit, []Policy{pol("default", -1, 0, 0, 50)}},
		{"daily only", hdr("RateLimit", `"dayLimit";r=100;t=36000`),
			FormRateLimit, []Policy{pol("dayLimit", -1, 0, 100, 36000)}},
		{"counters before policy in the header", hdr("RateLimit", `"fixedwindow";r=99;t=50`, "RateLimit-Policy", `"fixedwindow";q=100;w=60`),
			FormRateLimit, []Policy{pol("fixedwindow", 100, 60, 99, 50)}},
		{"token names (draft-08)", hdr("RateLimit-Policy", `burst;q=100;w=60`, "RateLimit", `burst;r=3;t=20`),
			FormRateLimit, []Policy{pol("burst", 100, 60, 3, 20)}},
		{"matching partition keys join", hdr("RateLimit-Policy", `"u";q=10;w=1;pk=:AAAA:`, "RateLimit", `"u";r=4;t=1;pk=:AAAA:`),
			FormRateLimit, []Policy{pol("u", 10, 1, 4, 1)}},
		{"one side without partition key joins", hdr("RateLimit-Policy", `"u";q=10;w=1`, "RateLimit", `"u";r=4;t=1;pk=:AAAA:`),
			FormRateLimit, []Policy{pol("u", 10, 1, 4, 1)}},
		{"different partition keys stay apart", hdr("RateLimit-Policy", `"u";q=10;w=1;pk=:AAAA:`, "RateLimit", `"u";r=4;t=1;pk=:BBBB:`),
			FormRateLimit, []Policy{pol("u", 10, 1, -1, -1), pol("u", -1, 0, 4, 1)}},
		{"same name twice, each partition its own", hdr(
			"RateLimit-Policy", `"u";q=10;w=1;pk=:AAAA:, "u";q=20;w=1;pk=:BBBB:`,
			"RateLimit", `"u";r=7;t=1;pk=:BBBB:, "u";r=3;t=1;pk=:AAAA:`),
			FormRateLimit, []Policy{pol("u", 10, 1, 3, 1), pol("u", 20, 1, 7, 1)}},
		{"counters for an unlisted policy come last", hdr("RateLimit-Policy", `"a";q=10;w=1`, "RateLimit", `"b";r=1;t=5`),
			FormRateLimit, []Policy{pol("a", 10, 1, -1, -1), pol("b", -1, 0, 1, 5)}},
		{"concurrent requests", hdr("RateLimit-Policy", `"par";q=4;qu="concurrent-requests"`, "RateLimit", `"par";r=1`),
			FormRateLimit, []Policy{in(ConcurrentRequests, pol("par", 4, 0, 1, -1))}},
		{"unknown unit is kept as unknown, counters too", hdr("RateLimit-Policy", `"bw";q=5;w=1;qu="megabits"`, "RateLimit", `"bw";r=2;t=1`),
			FormRateLimit, []Policy{in(UnknownUnit, pol("bw", 5, 1, 2, 1))}},
		{"registry spelling request", hdr("RateLimit-Policy", `"a";q=5;w=1;qu="request"`),
			FormRateLimit, []Policy{pol("a", 5, 1, -1, -1)}},
		{"explicit requests unit", hdr("RateLimit-Policy", `"a";q=5;w=1;qu="requests"`),
			FormRateLimit, []Policy{pol("a", 5, 1, -1, -1)}},
		{"unknown parameters are comments", hdr("RateLimit-Policy", `"a";q=10;w=1;acme-burst=5;comment="fixed window"`, "RateLimit", `"a";r=1;acme-x=?1`),
			FormRateLimit, []Policy{pol("a", 10, 1, 1, -1)}},
		{"repeated parameter means the last", hdr("RateLimit-Policy", `"a";q=10;q=20;w=1`, "RateLimit", `"a";r=9;r=2;t=1`),
			FormRateLimit, []Policy{pol("a", 20, 1, 2, 1)}},
		{"zero quota is stated", hdr("RateLimit-Policy", `"closed";q=0;w=60`),
			FormRateLimit, []Policy{pol("closed", 0, 60, -1, -1)}},
		{"empty name is a name", hdr("RateLimit", `"";r=1;t=1`),
			FormRateLimit, []Policy{pol("", -1, 0, 1, 1)}},
	})
}

func TestQuota_G12_Draft07(t *testing.T) {
	runParse(t, []parseCase{
		{"counters with two policies", hdr("RateLimit", `limit=10, remaining=5, reset=3`, "RateLimit-Policy", `10;w=1, 50;w=60`),
			FormDraft07, []Policy{pol("", 10, 1, 5, 3), pol("", 50, 60, -1, -1)}},
		{"draft example", hdr("RateLimit-Policy", `100;w=10`, "RateLimit", `limit=100, remaining=50, reset=5`),
			FormDraft07, []Policy{pol("", 100, 10, 50, 5)}},
		{"counters alone", hdr("RateLimit", `limit=10, remaining=1, reset=7`),
			FormDraft07, []Policy{pol("", 10, 0, 1, 7)}},
		{"remaining is optional", hdr("RateLimit", `limit=10, reset=1`),
			FormDraft07, []Policy{pol("", 10, 0, -1, 1)}},
		{"keys in any order", hdr("RateLimit", `reset=7, limit=10, remaining=0`),
			FormDraft07, []Policy{pol("", 10, 0, 0, 7)}},
		{"parameters on keys are ignored", hdr("RateLimit", `limit=10;w=99, remaining=5;x="y", reset=3`),
			FormDraft07, []Policy{pol("", 10, 0, 5, 3)}},
		{"unknown keys are ignored", hdr("RateLimit", `limit=10, reset=3, acme=1`),
			FormDraft07, []Policy{pol("", 10, 0, -1, 3)}},
		{"repeated key means the last", hdr("RateLimit", `limit=10, limit=20, reset=1`),
			FormDraft07, []Policy{pol("", 20, 0, -1, 1)}},
		{"limit matching no policy", hdr("RateLimit", `limit=7, reset=1`, "RateLimit-Policy", `10;w=1`),
			FormDraft07, []Policy{pol("", 7, 0, -1, 1), pol("", 10, 1, -1, -1)}},
		{"policies alone", hdr("RateLimit-Policy", `10;w=1, 50;w=60, 1000;w=3600, 5000;w=86400`),
			FormDraft07, []Policy{pol("", 10, 1, -1, -1), pol("", 50, 60, -1, -1), pol("", 1000, 3600, -1, -1), pol("", 5000, 86400, -1, -1)}},
		{"policy extension parameters", hdr("RateLimit-Policy", `10;w=1;burst=1000, 1000;w=3600`),
			FormDraft07, []Policy{pol("", 10, 1, -1, -1), pol("", 1000, 3600, -1, -1)}},
		{"two policies with one quota make the policy field invalid", hdr("RateLimit", `limit=10, reset=1`, "RateLimit-Policy", `10;w=1, 10;w=60`),
			FormDraft07, []Policy{pol("", 10, 0, -1, 1)}},
		{"policy without window", hdr("RateLimit-Policy", `10`),
			FormDraft07, []Policy{pol("", 10, 0, -1, -1)}},
	})
}

func TestQuota_G12_ThreeFields(t *testing.T) {
	runParse(t, []parseCase{
		{"draft-06 example", hdr("RateLimit-Limit", "10", "RateLimit-Remaining", "1", "RateLimit-Reset", "7"),
			FormRateLimitLimit, []Policy{pol("", 10, 0, 1, 7)}},
		{"policies in RateLimit-Limit (drafts up to 05)", hdr("RateLimit-Limit", "10, 10;w=1, 50;w=60", "RateLimit-Remaining", "5", "RateLimit-Reset", "3"),
			FormRateLimitLimit, []Policy{pol("", 10, 1, 5, 3), pol("", 50, 60, -1, -1)}},
		{"window from RateLimit-Policy (draft-06)", hdr("RateLimit-Policy", "100;w=10", "RateLimit-Limit", "100"),
			FormRateLimitLimit, []Policy{pol("", 100, 10, -1, -1)}},
		{"a policy in both fields counts once", hdr("RateLimit-Limit", "10, 10;w=1", "RateLimit-Policy", "10;w=1, 50;w=60", "RateLimit-Reset", "3"),
			FormRateLimitLimit, []Policy{pol("", 10, 1, -1, 3), pol("", 50, 60, -1, -1)}},
		{"parameters on the limit are ignored", hdr("RateLimit-Limit", "10;w=5", "RateLimit-Reset", "2"),
			FormRateLimitLimit, []Policy{pol("", 10, 0, -1, 2)}},
		{"policies in RateLimit-Limit, its limit malformed", hdr("RateLimit-Limit", "ten, 10;w=1, 50;w=60"),
			FormRateLimitLimit, []Policy{pol("", 10, 1, -1, -1), pol("", 50, 60, -1, -1)}},
		{"remaining alone", hdr("RateLimit-Remaining", "0"),
			FormRateLimitLimit, []Policy{pol("", -1, 0, 0, -1)}},
		{"reset alone", hdr("RateLimit-Reset", "50"),
			FormRateLimitLimit, []Policy{pol("", -1, 0, -1, 50)}},
		{"a decimal is not an Integer", hdr("RateLimit-Limit", "10", "RateLimit-Remaining", "5.0", "RateLimit-Reset", "3"),
			FormRateLimitLimit, []Policy{pol("", 10, 0, -1, 3)}},
		{"GitLab, with its Unix-time reset", hdr("Date", "Tue, 05 Jan 2021 10:59:30 GMT", "RateLimit-Limit", "60", "RateLimit-Observed", "67",
			"RateLimit-Remaining", "0", "RateLimit-Reset", "1609844400", "RateLimit-ResetTime", "Tue, 05 Jan 2021 11:00:00 GMT"),
			FormRateLimitLimit, []Policy{pol("", 60, 0, 0, 30)}},
	})
}

func TestQuota_G12_XRateLimit(t *testing.T) {
	discord := pol("", 5, 0, 1, -1)
	discord.ResetIn = 1234 * time.Millisecond
	fractionalReset := pol("", 10, 0, -1, -1)
	fractionalReset.ResetIn = 1500 * time.Millisecond
	discordEpoch := pol("", 5, 0, 1, -1)
	discordEpoch.ResetIn = 1123 * time.Millisecond
	runParse(t, []parseCase{
		{"GitHub", hdr("Date", "Mon, 01 Jul 2024 10:00:00 GMT", "X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999",
			"X-RateLimit-Used", "1", "X-RateLimit-Reset", "1719831600", "X-RateLimit-Resource", "core"),
			FormXRateLimit, []Policy{pol("", 5000, 0, 4999, 3600)}},
		{"Reddit floats", hdr("X-Ratelimit-Used", "1", "X-Ratelimit-Remaining", "599.0", "X-Ratelimit-Reset", "540"),
			FormXRateLimit, []Policy{pol("", -1, 0, 599, 540)}},
		{"Discord prefers Reset-After", hdr("X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "1",
			"X-RateLimit-Reset", "1470173023.123", "X-RateLimit-Reset-After", "1.234", "X-RateLimit-Bucket", "abcd1234"),
			FormXRateLimit, []Policy{discord}},
		{"fractional epoch against Date", hdr("Date", time.Unix(1470173022, 0).UTC().Format(http.TimeFormat),
			"X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "1470173023.123"),
			FormXRateLimit, []Policy{discordEpoch}},
		{"malformed Reset-After falls back to Reset", hdr("X-RateLimit-Reset-After", "soon", "X-RateLimit-Reset", "20"),
			FormXRateLimit, []Policy{pol("", -1, 0, -1, 20)}},
		{"Twitter spelling", hdr("X-Rate-Limit-Limit", "900", "X-Rate-Limit-Remaining", "899", "X-Rate-Limit-Reset", "30"),
			FormXRateLimit, []Policy{pol("", 900, 0, 899, 30)}},
		{"X-RateLimit wins over X-Rate-Limit", hdr("X-Rate-Limit-Limit", "900", "X-RateLimit-Limit", "60"),
			FormXRateLimit, []Policy{pol("", 60, 0, -1, -1)}},
		{"counts round down", hdr("X-RateLimit-Limit", "10.5", "X-RateLimit-Remaining", "2.999"),
			FormXRateLimit, []Policy{pol("", 10, 0, 2, -1)}},
		{"fractional delta reset", hdr("X-RateLimit-Limit", "10", "X-RateLimit-Reset", "1.5"),
			FormXRateLimit, []Policy{fractionalReset}},
		{"fraction digits past nine are dropped", hdr("X-RateLimit-Reset", "0.0000000019"),
			FormXRateLimit, []Policy{{Limit: -1, Remaining: -1, ResetIn: time.Nanosecond}}},
		{"repeated agreeing lines", hdr("X-RateLimit-Limit", "60", "X-RateLimit-Limit", "60, 60.0"),
			FormXRateLimit, []Policy{pol("", 60, 0, -1, -1)}},
		{"repeated disagreeing lines are ignored", hdr("X-RateLimit-Limit", "60", "X-RateLimit-Limit", "30", "X-RateLimit-Remaining", "5"),
			FormXRateLimit, []Policy{pol("", -1, 0, 5, -1)}},
		{"surrounding spaces", hdr("X-RateLimit-Limit", " 60\t"),
			FormXRateLimit, []Policy{pol("", 60, 0, -1, -1)}},
		{"used alone says nothing", hdr("X-RateLimit-Used", "3"), "", nil},
	})
}

func TestQuota_G12_SplitFields(t *testing.T) {
	runParse(t, []parseCase{
		{"policy list over two lines", hdr("RateLimit-Policy", `"burst";q=100;w=60`, "RateLimit-Policy", `"daily";q=1000;w=86400`, "RateLimit", `"daily";r=7;t=600`),
			FormRateLimit, []Policy{pol("burst", 100, 60, -1, -1), pol("daily", 1000, 86400, 7, 600)}},
		{"counters over two lines", hdr("RateLimit-Policy", `"a";q=10;w=1, "b";q=100;w=60`, "RateLimit", `"a";r=1;t=1`, "RateLimit", `"b";r=50;t=30`),
			FormRateLimit, []Policy{pol("a", 10, 1, 1, 1), pol("b", 100, 60, 50, 30)}},
		{"a line cannot continue an item", hdr("RateLimit-Policy", `"burst";q=100`, "RateLimit-Policy", `;w=60`, "RateLimit", `"burst";r=3;t=20`),
			FormRateLimit, []Policy{pol("burst", -1, 0, 3, 20)}},
		{"draft-07 dictionary over lines", hdr("RateLimit", "limit=10", "RateLimit", "remaining=5, reset=3"),
			FormDraft07, []Policy{pol("", 10, 0, 5, 3)}},
		{"draft-07 policies over lines", hdr("RateLimit", "limit=10, reset=3", "RateLimit-Policy", "10;w=1", "RateLimit-Policy", "50;w=60"),
			FormDraft07, []Policy{pol("", 10, 1, -1, 3), pol("", 50, 60, -1, -1)}},
		{"RateLimit-Limit over lines", hdr("RateLimit-Limit", "10", "RateLimit-Limit", "10;w=1", "RateLimit-Reset", "4"),
			FormRateLimitLimit, []Policy{pol("", 10, 1, -1, 4)}},
		{"an Item field cannot repeat", hdr("RateLimit-Limit", "10", "RateLimit-Remaining", "5", "RateLimit-Remaining", "5"),
			FormRateLimitLimit, []Policy{pol("", 10, 0, -1, -1)}},
	})
}
