// Package quota reads what a server says about its rate limit (G12).
//
// Many APIs and CDNs state their quota on every response, so a polite
// client can slow down before the first 429 rather than after it. This
// package only reads: Parse turns a response's header into a plain,
// validated Statement; deciding what to do with it is the governor's job.
//
// Four forms are in use, and Parse reads them in this order of preference,
// returning the first that states anything usable:
//
//  1. RateLimit (draft-ietf-httpapi-ratelimit-headers-08 and later): the
//     Structured Field Lists
//     RateLimit-Policy: "burst";q=100;w=60, "daily";q=1000;w=86400
//     RateLimit: "burst";r=3;t=20
//     A RateLimit item belongs to the RateLimit-Policy item of the same name.
//  2. RateLimit (draft-07): a Dictionary
//     RateLimit: limit=10, remaining=5, reset=3
//     with, optionally, RateLimit-Policy: 10;w=1, 50;w=60.
//  3. RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (drafts up to
//     06, and GitLab), where RateLimit-Limit may carry policies too:
//     RateLimit-Limit: 10, 10;w=1, 50;w=60.
//  4. X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset and
//     X-RateLimit-Reset-After (GitHub, Reddit, Discord and many more; also
//     spelled X-Rate-Limit-*, as Twitter does).
//
// Everything a server sends is checked, and anything malformed reads as not
// stated, as the drafts require ("Malformed RateLimit header fields MUST be
// ignored"). Parse never fails as a whole because one field is bad:
//
//   - A field that is not valid RFC 9651 syntax is ignored whole, as RFC 9651
//     says. Within a field that parses, each number is checked on its own: one
//     of the wrong type (a Decimal, a String, a Boolean), negative, or zero
//     where the draft wants it positive (w) reads as not stated, and the rest
//     of the item still counts. A quota unit (qu) that is not one of the three
//     the draft defines makes the policy UnknownUnit, which never binds.
//   - A repeated parameter or dictionary key means its last value, as
//     RFC 9651 says.
//   - Numbers in X- fields are plain decimals ("599.0" is accepted, Reddit
//     sends it); no sign, no exponent, no NaN or Inf. Counts are rounded down,
//     so a fraction never promises a request the server did not grant. A field
//     whose lines (or comma-separated members) disagree is ambiguous and is
//     ignored. The Structured Field forms take Integers only, as the drafts say.
//   - No number may have more than 15 integer digits, the range of an RFC 9651
//     Integer; a longer one is malformed. So no value ever overflows.
//
// A wait is never negative and never longer than MaxReset; a window is never
// longer than MaxWindow. A response served from a cache (Age above 0) states
// nothing: its counters describe an earlier moment, and the draft says to
// ignore them.
package quota

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MaxReset is the longest ResetIn Parse reports. A server asking for longer
// is read as asking for a day: the caller comes back then, reads a fresh
// statement and waits again if the server still means it. This bounds the
// harm of a misconfigured or hostile value (the draft's Denial of Service
// section asks clients for such a threshold) while covering daily quotas,
// the longest common window.
const MaxReset = 24 * time.Hour

// MaxWindow is the longest Window Parse reports. Windows longer than a year
// are not seen in practice; a longer one is read as a year so that the
// Duration cannot overflow.
const MaxWindow = 366 * 24 * time.Hour

// The names Statement.Form takes, one per form, in order of preference.
const (
	FormRateLimit      = "RateLimit"            // draft-08 and later
	FormDraft07        = "RateLimit (draft-07)" // Dictionary RateLimit, or an Integer RateLimit-Policy alone
	FormRateLimitLimit = "RateLimit-Limit"      // RateLimit-Limit/-Remaining/-Reset (drafts up to 06)
	FormXRateLimit     = "X-RateLimit"          // X-RateLimit-* and X-Rate-Limit-*
)

// Unit is what a quota counts.
type Unit uint8

const (
	// Requests counts requests; it is the default when the server names no
	// unit, and the only unit in every form but the current draft.
	Requests Unit = iota
	// ContentBytes counts content bytes ("content-bytes").
	ContentBytes
	// ConcurrentRequests counts requests in flight at once
	// ("concurrent-requests"); it limits concurrency, not pace.
	ConcurrentRequests
	// UnknownUnit is a unit the server named that this package does not know,
	// or a malformed "qu"; such a quota counts something unknown and never binds.
	UnknownUnit
)

// String returns the unit's registered name, or "unknown".
func (u Unit) String() string {
	switch u {
	case Requests:
		return "requests"
	case ContentBytes:
		return "content-bytes"
	case ConcurrentRequests:
		return "concurrent-requests"
	}
	return "unknown"
}

// Policy is one quota the server states: Limit units per Window, with, when
// the server said so, Remaining units left until the window resets ResetIn
// after the response. Every field the server did not state (or stated
// malformed) holds its "not stated" value, so a Policy never needs checking
// for negative or overflowing numbers beyond that.
type Policy struct {
	Name      string        // the policy's name ("burst"), or "" when the form has no names
	Limit     int64         // units per Window (q, limit); -1 when not stated
	Window    time.Duration // whole seconds (w), at most MaxWindow; 0 when not stated
	Unit      Unit          // what Limit and Remaining count
	Remaining int64         // units left in the current window (r, remaining); -1 when not stated
	ResetIn   time.Duration // from the response until more units come (t, reset), 0 to MaxReset; -1 when not stated
}

// Statement is everything one response said about its quota.
type Statement struct {
	Policies []Policy // in the order the server sent them; never empty when Parse reports ok
	Form     string   // the form they were read from: FormRateLimit, FormDraft07, FormRateLimitLimit or FormXRateLimit
}

// Parse reads the rate-limit fields of a response's header h. now is when the
// response arrived; it is used only to turn a reset given as a Unix time into
// a wait when the response has no usable Date header. ok is false when the
// response states no usable quota: no rate-limit fields, all of them
// malformed, or Age above 0. h is read through Header.Values, so its keys
// must be in canonical form, as net/http makes them.
//
// Resets given as Unix times (X-RateLimit-Reset, and GitLab's
// RateLimit-Reset) are measured against the response's own Date, not against
// now, so a server whose clock runs an hour ahead still gets the wait it
// meant. A value above 10^9 is read as Unix seconds and one above 10^12 as
// Unix milliseconds; smaller values are seconds from the response. A reset in
// the past means 0.
func Parse(h http.Header, now time.Time) (s Statement, ok bool) {
	if len(h) == 0 || cached(h) {
		return Statement{}, false
	}
	if ps := currentForm(h); len(ps) > 0 {
		return Statement{Policies: ps, Form: FormRateLimit}, true
	}
	older := integerPolicies(sfList(h, "Ratelimit-Policy"))
	if p, ok := draft07Form(h); ok {
		return Statement{Policies: withPolicies(p, older), Form: FormDraft07}, true
	}
	at := responseTime(h, now)
	if ps := threeFieldForm(h, at, older); len(ps) > 0 {
		return Statement{Policies: ps, Form: FormRateLimitLimit}, true
	}
	if len(older) > 0 {
		return Statement{Policies: older, Form: FormDraft07}, true
	}
	if p, ok := xForm(h, at); ok {
		return Statement{Policies: []Policy{p}, Form: FormXRateLimit}, true
	}
	return Statement{}, false
}

// Rate is the pace p allows from the response on, in units per second: the
// lower of Remaining/ResetIn (what is left of this window, spread over the
// time until it resets) and Limit/Window (the pace over a whole window),
// among those the server stated. Taking the lower follows the draft's
// warning that Remaining/ResetIn alone can invite a burst the policy never
// meant. ok is false when neither ratio is stated; a ResetIn of 0 (the window
// resets now) says nothing of the pace after it.
func (p Policy) Rate() (perSecond float64, ok bool) {
	rate := math.Inf(1)
	if p.Remaining >= 0 && p.ResetIn > 0 {
		rate = min(rate, float64(p.Remaining)/p.ResetIn.Seconds())
		ok = true
	}
	if p.Limit >= 0 && p.Window > 0 {
		rate = min(rate, float64(p.Limit)/p.Window.Seconds())
		ok = true
	}
	if !ok {
		return 0, false
	}
	return rate, true
}

// Binding returns the request policy that limits hardest: the one whose Rate
// is lowest. Policies in other units are skipped (content bytes and
// concurrency are not request paces; see InUnit), and so are policies whose
// Rate is not stated. On a tie the first wins. ok is false when no policy
// qualifies.
func (s Statement) Binding() (p Policy, ok bool) {
	best := math.Inf(1)
	for _, q := range s.Policies {
		if q.Unit != Requests {
			continue
		}
		r, rok := q.Rate()
		if rok && (!ok || r < best) {
			p, best, ok = q, r, true
		}
	}
	return p, ok
}

// InUnit returns the policies that count u, in order: InUnit(ContentBytes)
// for a byte budget, InUnit(ConcurrentRequests) for a cap on requests in
// flight.
func (s Statement) InUnit(u Unit) []Policy {
	var out []Policy
	for _, p := range s.Policies {
		if p.Unit == u {
			out = append(out, p)
		}
	}
	return out
}

// String says the statement as a person would, policy by policy.
func (s Statement) String() string {
	if len(s.Policies) == 0 {
		return "no quota stated"
	}
	parts := make([]string, len(s.Policies))
	for i, p := range s.Policies {
		parts[i] = p.String()
	}
	return s.Form + ": " + strings.Join(parts, "; ")
}

// String says the policy as a person would:
// `"burst": 3 left of 100 per 60s, resets in 20s`. Parts the server did not
// state are left out; a unit other than requests is named.
func (p Policy) String() string {
	var b strings.Builder
	if p.Name != "" {
		b.WriteString(strconv.Quote(p.Name) + ": ")
	}
	unit := ""
	if p.Unit != Requests {
		unit = " " + p.Unit.String()
	}
	var said []string
	var counts string
	switch {
	case p.Remaining >= 0 && p.Limit >= 0:
		counts = strconv.FormatInt(p.Remaining, 10) + " left of " + strconv.FormatInt(p.Limit, 10) + unit
	case p.Remaining >= 0:
		counts = strconv.FormatInt(p.Remaining, 10) + unit + " left"
	case p.Limit >= 0:
		counts = strconv.FormatInt(p.Limit, 10) + unit
	}
	if p.Window > 0 {
		if counts == "" {
			counts = "window"
		}
		counts += " per " + seconds(p.Window)
	}
	if counts != "" {
		said = append(said, counts)
	}
	switch {
	case p.ResetIn == 0:
		said = append(said, "resets now")
	case p.ResetIn > 0:
		said = append(said, "resets in "+seconds(p.ResetIn))
	}
	if len(said) == 0 {
		said = append(said, "no quota stated")
	}
	b.WriteString(strings.Join(said, ", "))
	return b.String()
}

// seconds formats d in seconds ("60s"), falling back to Duration's own form
// for a fraction of a second ("1.5s").
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// usable reports whether p states anything a pacer can act on.
func usable(p Policy) bool {
	return p.Limit >= 0 || p.Remaining >= 0 || p.ResetIn >= 0
}

// unstated is a Policy with every field at its "not stated" value.
func unstated(name string) Policy {
	return Policy{Name: name, Limit: -1, Remaining: -1, ResetIn: -1}
}
