package crawl

import (
	"fmt"
	"net/url"
	"strings"
)

// The trap limits of W6. A crawler trap is a site that makes up URLs without
// end — a calendar with a "next month" link, relative links that nest a
// path one level deeper on each page, a session id added to every link.
// The first two grow the URL, and these limits catch them; see Trap.
const (
	// MaxURLBytes is the longest URL a crawl fetches, in bytes as sent
	// (without the fragment).
	MaxURLBytes = 2048
	// MaxSegmentRepeats is how often one path segment may occur in a path.
	MaxSegmentRepeats = 3
	// MaxSegments is how many segments a path may have.
	MaxSegments = 20
)

// Trap reports whether u is caught by a trap rule (W6), and if so the rule
// in words. The engine skips such an in-scope URL and shows why. The rules,
// checked in this order, the first that catches u wins:
//
//   - "URL over 2,048 bytes": u.String() without the fragment is longer
//     than MaxURLBytes;
//   - "more than 20 path segments": the path has more than MaxSegments
//     segments ("/a/b/" has two: a trailing "/" adds none);
//   - `path segment "x" repeated 4 times`: one segment occurs more than
//     MaxSegmentRepeats times anywhere in the path, together or not
//     ("/a/a/a/a/" and "/a/b/a/b/a/b/a/b" are caught; "/cal/2026/01/01"
//     is not). Empty segments ("//") count too.
//
// Segments are compared in key form (Key): escapes normalised,
// dot-segments resolved, case-sensitive.
//
// The query is not a trap rule: a session id or a calendar parameter in
// the query ("?sid=…", "?month=2026-02") makes a new URL on each page
// without growing it, and the crawl's --depth and --max-pages bound those.
func Trap(u *url.URL) (why string, trapped bool) {
	if u == nil {
		return "", false
	}
	sent := *u
	sent.Fragment, sent.RawFragment = "", ""
	if len(sent.String()) > MaxURLBytes {
		return "URL over 2,048 bytes", true
	}
	p := keyPath(u)
	p = strings.TrimPrefix(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", false
	}
	segs := strings.Split(p, "/")
	if len(segs) > MaxSegments {
		return fmt.Sprintf("more than %d path segments", MaxSegments), true
	}
	count := make(map[string]int, len(segs))
	for _, s := range segs {
		count[s]++
	}
	for _, s := range segs {
		if n := count[s]; n > MaxSegmentRepeats {
			return fmt.Sprintf("path segment %q repeated %d times", s, n), true
		}
	}
	return "", false
}
