package quota

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuota_G12_SeveralPolicies(t *testing.T) {
	h := hdr(
		"RateLimit-Policy", `"permin";q=50;w=60, "perhr";q=1000;w=3600, "bytes";q=65535;qu="content-bytes";w=10, "par";q=4;qu="concurrent-requests"`,
		"RateLimit", `"permin";r=10;t=30, "perhr";r=900;t=1800, "bytes";r=100;t=10, "par";r=2`,
	)
	s, ok := Parse(h, now)
	require.True(t, ok)
	assert.Equal(t, FormRateLimit, s.Form)
	assert.Equal(t, []Policy{
		pol("permin", 50, 60, 10, 30),
		pol("perhr", 1000, 3600, 900, 1800),
		in(ContentBytes, pol("bytes", 65535, 10, 100, 10)),
		in(ConcurrentRequests, pol("par", 4, 0, 2, -1)),
	}, s.Policies)
	assert.Equal(t, []Policy{in(ContentBytes, pol("bytes", 65535, 10, 100, 10))}, s.InUnit(ContentBytes))
	assert.Equal(t, []Policy{in(ConcurrentRequests, pol("par", 4, 0, 2, -1))}, s.InUnit(ConcurrentRequests))
	assert.Empty(t, s.InUnit(UnknownUnit))

	b, ok := s.Binding()
	require.True(t, ok)
	assert.Equal(t, "perhr", b.Name, "perhr allows min(900/1800, 1000/3600) = 0.28/s, permin min(10/30, 50/60) = 0.33/s")
}

func TestQuota_G12_BindingPolicy(t *testing.T) {
	cases := []struct {
		name     string
		policies []Policy
		want     string // "" when no policy binds
	}{
		{"the burst window, nearly spent", []Policy{pol("burst", 100, 60, 3, 20), pol("daily", 100000, 86400, -1, -1)}, "burst"},
		{"the daily quota, spread over the day", []Policy{pol("burst", 100, 60, 3, 20), pol("daily", 1000, 86400, -1, -1)}, "daily"},
		{"exhausted binds hardest", []Policy{pol("daily", 1000, 86400, -1, -1), pol("burst", 100, 60, 0, 20)}, "burst"},
		{"zero quota binds hardest", []Policy{pol("a", 10, 1, -1, -1), pol("closed", 0, 60, -1, -1)}, "closed"},
		{"bytes never bind", []Policy{in(ContentBytes, pol("bytes", 1, 60, 0, 60)), pol("req", 100, 1, -1, -1)}, "req"},
		{"concurrency never binds", []Policy{in(ConcurrentRequests, pol("par", 1, 0, 0, 60)), pol("req", 100, 1, -1, -1)}, "req"},
		{"an unknown unit never binds", []Policy{in(UnknownUnit, pol("bw", 1, 60, 0, 60))}, ""},
		{"a tie goes to the first", []Policy{pol("a", 60, 60, -1, -1), pol("b", 1, 1, -1, -1)}, "a"},
		{"no pace stated", []Policy{pol("a", 10, 0, -1, -1), pol("b", -1, 0, 5, -1)}, ""},
		{"a window resetting now says no pace", []Policy{pol("a", -1, 0, 0, 0)}, ""},
		{"nothing", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := Statement{Policies: tc.policies}.Binding()
			if tc.want == "" {
				assert.False(t, ok, "got %v", b)
				assert.Equal(t, Policy{}, b)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tc.want, b.Name)
		})
	}
}

func TestQuota_G12_Rate(t *testing.T) {
	cases := []struct {
		name string
		p    Policy
		want float64
		ok   bool
	}{
		{"remaining over reset", pol("", -1, 0, 3, 20), 0.15, true},
		{"limit over window", pol("", 100, 60, -1, -1), 100.0 / 60, true},
		{"both: the lower", pol("", 100, 60, 3, 20), 0.15, true},
		// The draft's resource-exhaustion example: r/t alone says 1000/s, the policy 10/s.
		{"both: a burst the policy never meant", pol("", 10000, 1000, 10000, 10), 10, true},
		{"exhausted", pol("", 100, 60, 0, 20), 0, true},
		{"reset now: the window's pace", pol("", 100, 60, 0, 0), 100.0 / 60, true},
		{"reset now, no window", pol("", -1, 0, 5, 0), 0, false},
		{"limit without window", pol("", 100, 0, -1, -1), 0, false},
		{"remaining without reset", pol("", -1, 0, 5, -1), 0, false},
		{"nothing", unstated(""), 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := tc.p.Rate()
			assert.Equal(t, tc.ok, ok)
			assert.InDelta(t, tc.want, r, 1e-9)
		})
	}
}

func TestQuota_G12_String(t *testing.T) {
	frac := pol("", -1, 0, -1, -1)
	frac.ResetIn = 1234 * time.Millisecond
	cases := []struct {
		name string
		p    Policy
		want string
	}{
		{"everything", pol("burst", 100, 60, 3, 20), `"burst": 3 left of 100 per 60s, resets in 20s`},
		{"no name", pol("", 100, 60, 3, 20), "3 left of 100 per 60s, resets in 20s"},
		{"limit only", pol("", 5000, 0, -1, -1), "5000"},
		{"limit and window", pol("daily", 1000, 86400, -1, -1), `"daily": 1000 per 86400s`},
		{"remaining only", pol("", -1, 0, 5, -1), "5 left"},
		{"reset only", pol("", -1, 0, -1, 30), "resets in 30s"},
		{"resets now", pol("", -1, 0, 0, 0), "0 left, resets now"},
		{"fraction of a second", frac, "resets in 1.234s"},
		{"bytes", in(ContentBytes, pol("up", 65535, 10, 300, 10)), `"up": 300 left of 65535 content-bytes per 10s, resets in 10s`},
		{"bytes left only", in(ContentBytes, pol("", -1, 0, 300, -1)), "300 content-bytes left"},
		{"window only", pol("", -1, 60, -1, -1), "window per 60s"},
		{"odd name is quoted", pol("a\"b", 1, 0, -1, -1), `"a\"b": 1`},
		{"nothing", unstated(""), "no quota stated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.p.String())
		})
	}
}

func TestQuota_G12_StatementString(t *testing.T) {
	s, ok := Parse(hdr("RateLimit-Policy", `"burst";q=100;w=60, "daily";q=1000;w=86400`, "RateLimit", `"burst";r=3;t=20`), now)
	require.True(t, ok)
	assert.Equal(t, `RateLimit: "burst": 3 left of 100 per 60s, resets in 20s; "daily": 1000 per 86400s`, s.String())
	assert.Equal(t, "no quota stated", Statement{}.String())
}

func TestQuota_G12_UnitNames(t *testing.T) {
	assert.Equal(t, "requests", Requests.String())
	assert.Equal(t, "content-bytes", ContentBytes.String())
	assert.Equal(t, "concurrent-requests", ConcurrentRequests.String())
	assert.Equal(t, "unknown", UnknownUnit.String())
	assert.Equal(t, "unknown", Unit(200).String())
}

func TestQuota_G12_NothingStated(t *testing.T) {
	for name, h := range map[string]http.Header{
		"nil header":        nil,
		"empty header":      {},
		"unrelated fields":  hdr("Content-Type", "text/html", "Retry-After", "120", "Date", date(now)),
		"non-canonical key": {"ratelimit": {`"a";r=1;t=1`}},
	} {
		t.Run(name, func(t *testing.T) {
			s, ok := Parse(h, now)
			assert.False(t, ok)
			assert.Equal(t, Statement{}, s)
		})
	}
}
