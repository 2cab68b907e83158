// Package robots decides which paths of a host a crawler may fetch, by
// reading the host's robots.txt as RFC 9309 (the Robots Exclusion Protocol)
// says, and gives the host's Crawl-delay and Sitemap lines.
//
// The engine fetches /robots.txt itself (following up to five redirects,
// refetching after the host's backoff, keeping a cached copy) and hands the
// outcome to Verdict, which maps it to the Rules that apply (SPEC W4):
//
//	rules, temporary := robots.Verdict(resp.StatusCode, body, "heed")
//	...
//	if ok, rule := rules.Allowed(u.RequestURI()); !ok {
//		// skip u; rule says why, e.g. "Disallow: /private/"
//	}
//	if d, ok := rules.CrawlDelay(); ok {
//		spacing = max(spacing, d) // a floor on the host's spacing (W5)
//	}
//
// A Rules holds only what one robots.txt says to one product token, made
// ready for matching: Allowed parses nothing, and most rules that cannot
// match a path are passed over with a few bit operations. Rules are
// immutable and safe for concurrent use.
//
// # What the RFC leaves open
//
// Where RFC 9309 is silent this package follows Google's open-source
// reference parser (github.com/google/robotstxt), unless that would break
// the RFC:
//
//   - A rule whose pattern starts with neither "/" nor "*" ("Disallow:
//     private/") matches nothing, like an empty one: patterns are anchored at
//     the start of the path, which always starts with "/".
//   - The most specific rule is the one with the longest pattern, counted in
//     octets of its canonical form (see below), "*" and "$" included. Allow
//     wins ties.
//   - Patterns and paths are compared in one canonical percent-encoding
//     (RFC 9309 §2.2.2): encoded unreserved characters are decoded ("%62"
//     is "b", which Google does not do but the RFC's examples require),
//     other escapes are upper-cased ("%2f" is "%2F"), non-ASCII octets and
//     octets never bare in a URI (space, controls, `"<>\^{|}`) are encoded.
//     Reserved characters keep their two spellings apart ("/" is not
//     "%2F"), except "*" and "$": in a path they equal "%2A" and "%24",
//     which is how §2.2.3 says to write them literally in a pattern.
//   - A group starts at a user-agent line that follows a rule (or opens the
//     file); every user-agent line before the group's first Allow, Disallow
//     or Crawl-delay joins it. Crawl-delay counts as a member of the group
//     it follows, as the crawlers that read it define it. Sitemap, unknown
//     and blank lines do not end the run of user-agent lines, so in
//     "User-agent: a", "Sitemap: …", "User-agent: b", "Disallow: /" both
//     agents share the rule.
//   - A user-agent value is reduced to its product token, the leading run
//     of letters, "_" and "-" (RFC 9309 §2.2.1 allows no others): "heed/1.0"
//     and "Heed bot" name heed, "heedbot" does not. Digits end the token
//     too, so "heed2" names heed. A value that is "*", or "*" and a space
//     and anything, names every crawler.
//   - Keys are case-insensitive and a few frequent misspellings are read as
//     what they obviously mean: "useragent" and "user agent" for
//     User-agent, "dissallow", "dissalow", "disalow", "diasllow" and
//     "disallaw" for Disallow, "site-map" for Sitemap, "crawldelay" and
//     "crawl delay" for Crawl-delay. A line of exactly two words without
//     a colon ("Disallow /tmp") reads as if the colon were there.
//   - /robots.txt is allowed with any query; a fragment in the path given
//     to Allowed is ignored.
//   - A UTF-8 byte order mark, whole or cut short, is skipped at the start
//     of the file and nowhere else.
//   - Google's "index.html at the end of an Allow also allows the
//     directory" shortcut is not copied.
package robots

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// MaxSize is how many bytes of a robots.txt are parsed; the rest is
// ignored, and a line cut by the limit is dropped whole. RFC 9309 §2.5
// requires parsing at least 500 KiB.
const MaxSize = 500 << 10

// Rules is what one robots.txt says to one product token: the Allow and
// Disallow rules of the group or groups that apply, their Crawl-delay, and
// the file's Sitemap lines. Make one with Parse, Verdict, AllowAll or
// DisallowAll. A nil *Rules, like the zero Rules, allows everything.
type Rules struct {
	// rules are ordered best first: longest pattern first, Allow before
	// Disallow at equal length, then file order. The first that matches
	// a path decides it.
	rules []rule
	// pairs[i] is rules[i].pairs(), kept apart so that the scan in Allowed
	// reads one small array.
	pairs    []pairSet
	delay    time.Duration
	hasDelay bool
	sitemaps []string
	// group names whose rules apply, for String: the product token given
	// to Parse, "*", or "" when no group applied.
	group string
	// blanket is set by AllowAll and DisallowAll, for String.
	blanket string
}

// A rule is one Allow or Disallow line of an applying group.
type rule struct {
	pattern
	allow bool
	line  string // as written, key spelled properly: "Disallow: /private/"
}

// AllowAll returns Rules that allow every path: what applies when the
// robots.txt is unavailable (a 4xx other than 429, RFC 9309 §2.3.1.3).
func AllowAll() *Rules {
	return &Rules{blanket: "allow all"}
}

// DisallowAll returns Rules that allow no path but /robots.txt, as if the
// file said "User-agent: *" and "Disallow: /": what applies while the
// robots.txt is unreachable (RFC 9309 §2.3.1.4).
func DisallowAll() *Rules {
	return &Rules{
		rules:   []rule{{pattern: compile("/"), line: "Disallow: /"}},
		pairs:   make([]pairSet, 1), // "/" has no pairs
		group:   "*",
		blanket: "disallow all",
	}
}

// Allowed reports whether the path may be fetched, and the rule that decided
// it ("Disallow: /private/"), empty when no rule matched (which allows).
//
// pathQuery is the path of the URL with its query, as sent in the request
// line: "/a/b?c=d" (url.URL.RequestURI gives it). It is matched as RFC 9309
// §2.2.2 says: the rule with the longest matching pattern decides, and of an
// Allow and a Disallow of the same length the Allow. "/robots.txt" itself is
// always allowed.
func (r *Rules) Allowed(pathQuery string) (ok bool, rule string) {
	if r == nil || len(r.rules) == 0 {
		return true, ""
	}
	p := canonicalPath(pathQuery)
	if isRobotsTxt(p) {
		return true, ""
	}
	var have pairSet
	have.addPairs(p)
	for i := range r.pairs {
		if r.pairs[i].within(&have) && r.rules[i].match(p) {
			return r.rules[i].allow, r.rules[i].line
		}
	}
	return true, ""
}

// CrawlDelay returns the Crawl-delay of the group that applies, which the
// engine keeps as a floor on the spacing of requests to the host (W5). The
// value is in seconds and may have a fraction ("0.5"); digits and one point
// only, so junk, signs and exponents are ignored, and a huge value
// saturates at the largest time.Duration. If the applying groups give
// several, the first valid one counts. ok is false when there is none.
func (r *Rules) CrawlDelay() (d time.Duration, ok bool) {
	if r == nil {
		return 0, false
	}
	return r.delay, r.hasDelay
}

// Sitemaps returns the values of every Sitemap line in the file, in file
// order, without duplicates. Sitemap lines belong to no group (RFC 9309
// §2.2.4), so they are the same whichever agent the file was parsed for.
func (r *Rules) Sitemaps() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.sitemaps)
}

// String sums the Rules up for the UI: "3 rules for heed, crawl-delay 5s",
// "allow all" or "disallow all".
func (r *Rules) String() string {
	if r == nil {
		return "allow all"
	}
	var b strings.Builder
	switch {
	case r.blanket != "":
		b.WriteString(r.blanket)
	case len(r.rules) == 0:
		b.WriteString("allow all")
	case len(r.rules) == 1:
		fmt.Fprintf(&b, "1 rule for %s", r.group)
	default:
		fmt.Fprintf(&b, "%d rules for %s", len(r.rules), r.group)
	}
	if r.hasDelay {
		fmt.Fprintf(&b, ", crawl-delay %v", r.delay)
	}
	return b.String()
}

// Verdict maps the outcome of fetching a robots.txt to the Rules that
// apply (W4, RFC 9309 §2.3.1):
//
//   - 2xx: the body is parsed for agent (see Parse).
//   - 4xx other than 429: the file is unavailable; everything is allowed.
//   - 3xx: the engine follows up to five redirects, so a 3xx here means it
//     gave up on them, which §2.3.1.2 also counts as unavailable.
//   - 429, 5xx, and status 0 for a network error: the file is unreachable;
//     nothing but /robots.txt is allowed for now. Any other status (1xx,
//     600 and up) is taken the same way.
//
// temporary is true when the verdict stands only until the next fetch: the
// engine fetches again after the host's backoff and, meanwhile, may use a
// cached copy younger than 30 days instead of these Rules.
func Verdict(status int, body []byte, agent string) (r *Rules, temporary bool) {
	switch {
	case 200 <= status && status <= 299:
		return Parse(body, agent), false
	case status == 429:
		return DisallowAll(), true
	case 300 <= status && status <= 499:
		return AllowAll(), false
	default:
		return DisallowAll(), true
	}
}
