package quota

import (
	"math"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fuzzFields are the fields FuzzRateLimitHeaders fills, in argument order.
var fuzzFields = [...]string{
	"RateLimit-Policy", "RateLimit",
	"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset",
	"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Reset-After",
	"Date", "Age",
}

// positiveAge restates the Age rule with a regular expression: the first
// member of the first line, trimmed, is all digits and not all zeros.
var positiveAge = regexp.MustCompile(`^[ \t]*0*[1-9][0-9]*[ \t]*$`)

// FuzzRateLimitHeaders feeds arbitrary values to every field Parse reads (a
// "\n" in a value splits it into several field lines) and checks that Parse
// never panics and never states a negative or overflowing number: ResetIn is
// -1 or within [0, MaxReset], Window within [0, MaxWindow] and whole
// seconds, Limit and Remaining at least -1; that a cached response states
// nothing; and that Binding and String hold up on whatever comes out.
func FuzzRateLimitHeaders(f *testing.F) {
	seed := func(v ...string) {
		var a [len(fuzzFields)]string
		copy(a[:], v)
		f.Add(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], now.Unix())
	}
	seed(`"burst";q=100;w=60, "daily";q=1000;w=86400`, `"burst";r=3;t=20`)
	seed(`"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`, `"peruser";r=300000000;t=60;pk=:QXBwLTk5OQ==:`)
	seed(`"a";q=10;w=1;pk=:AAAA:, "a";q=20;w=1`, `"a";r=1;t=1;pk=:AAAA:, "a";r=2`)
	seed("10;w=1, 50;w=60", "limit=10, remaining=5, reset=3")
	seed("10;w=1, 10;w=60", "limit=10, limit=20, reset=999999999999999")
	seed("", "", "10, 10;w=1, 50;w=60", "5", "3")
	seed("", "", "60", "0", "1609844400", "", "", "", "", "Tue, 05 Jan 2021 10:59:30 GMT")
	seed("", "", "", "", "", "5000", "4999", "1719831600", "", "Mon, 01 Jul 2024 10:00:00 GMT")
	seed("", "", "", "", "", "5", "1", "1470173023.123", "1.234")
	seed("", "", "", "", "", "", "599.0", "540")
	seed("", "", "", "", "", "60\n60, 60.0", "1e3", "1000000000001", "999999999999999.999999999")
	seed(`"b";r=-3;t=20`, `"b";r=1234567890123456`, "ten", "-5", "99999999999999999999", "NaN", "+5", "-1", "Inf")
	seed(`"a";q=1;w=1`, `"a";r=1;t=1`, "", "", "", "", "", "", "", "", "5, 0")
	seed(`"burst";q=100`+"\n"+`;w=60`, `("a" "b");q=1, %"x";r=1, :AAAA:;r=1`)

	f.Fuzz(func(t *testing.T, policy, ratelimit, limit, remaining, reset, xLimit, xRemaining, xReset, xResetAfter, dateV, age string, nowUnix int64) {
		values := [...]string{policy, ratelimit, limit, remaining, reset, xLimit, xRemaining, xReset, xResetAfter, dateV, age}
		h := http.Header{}
		for i, v := range values {
			if v == "" {
				continue
			}
			for _, line := range strings.Split(v, "\n") {
				h.Add(fuzzFields[i], line)
			}
		}
		arrived := time.Unix(nowUnix, 0)

		s, ok := Parse(h, arrived)
		again, ok2 := Parse(h, arrived)
		if ok != ok2 || s.String() != again.String() {
			t.Fatalf("Parse is not deterministic: %v / %v", s, again)
		}
		firstAge, _, _ := strings.Cut(strings.Split(age, "\n")[0], ",")
		if age != "" && positiveAge.MatchString(firstAge) && ok {
			t.Fatalf("Age %q is a cached response, yet Parse stated %v", age, s)
		}
		if !ok {
			if s.Form != "" || s.Policies != nil {
				t.Fatalf("not ok, yet Parse returned %#v", s)
			}
			return
		}
		switch s.Form {
		case FormRateLimit, FormDraft07, FormRateLimitLimit, FormXRateLimit:
		default:
			t.Fatalf("unknown form %q", s.Form)
		}
		if len(s.Policies) == 0 {
			t.Fatal("ok with no policies")
		}
		for _, p := range s.Policies {
			checkPolicy(t, p)
		}
		_ = s.String()
		if b, ok := s.Binding(); ok {
			br, _ := b.Rate()
			if b.Unit != Requests {
				t.Fatalf("binding policy %v is not a request policy", b)
			}
			for _, p := range s.Policies {
				if r, rok := p.Rate(); rok && p.Unit == Requests && r < br {
					t.Fatalf("binding %v allows %v/s but %v allows %v/s", b, br, p, r)
				}
			}
		}
	})
}

// checkPolicy fails t when p holds a value outside what Policy promises.
func checkPolicy(t *testing.T, p Policy) {
	t.Helper()
	if p.ResetIn != -1 && (p.ResetIn < 0 || p.ResetIn > MaxReset) {
		t.Fatalf("ResetIn %v out of range in %#v", p.ResetIn, p)
	}
	if p.Window < 0 || p.Window > MaxWindow || p.Window%time.Second != 0 {
		t.Fatalf("Window %v out of range in %#v", p.Window, p)
	}
	if p.Limit < -1 || p.Remaining < -1 {
		t.Fatalf("negative count in %#v", p)
	}
	if p.Unit > UnknownUnit {
		t.Fatalf("unit %d out of range in %#v", p.Unit, p)
	}
	if !usable(p) {
		t.Fatalf("policy states nothing: %#v", p)
	}
	if r, ok := p.Rate(); ok && (r < 0 || math.IsNaN(r) || math.IsInf(r, 0)) {
		t.Fatalf("rate %v in %#v", r, p)
	}
	if p.String() == "" {
		t.Fatalf("empty String for %#v", p)
	}
}
