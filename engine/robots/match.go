package robots

import "strings"

// This file holds the comparison half of RFC 9309 §2.2.2 and §2.2.3: the
// canonical form that patterns and paths are both rewritten into, and the
// wildcard match on canonical strings.
//
// Canonical form. The same octets can be spelled several ways in a URI
// ("/a" and "/%61", "%aa" and "%AA", "ツ" and "%E3%83%84"), and a pattern
// matches a path when the two agree octet for octet. So before any
// comparison both sides are rewritten so that each octet has one spelling:
//
//   - "%XY" naming an unreserved character (RFC 3986 §2.3: letters,
//     digits, "-", ".", "_", "~") is decoded: "%62" becomes "b".
//   - any other "%XY" stays encoded, hex in upper case: "%2f" becomes
//     "%2F". Reserved characters (RFC 3986 §2.2) mean something different
//     encoded and bare, so "/a%2Fb" does not match "/a/b".
//   - octets that may not appear bare in a URI are encoded: non-ASCII
//     (UTF-8 "ツ" becomes "%E3%83%84"), controls, space, `"<>\^{|}` and
//     the backquote. A "%" not followed by two hex digits becomes "%25".
//   - "*" and "$" are always encoded ("%2A", "%24") on the path side and
//     wherever they are not operators on the pattern side: RFC 9309 §2.2.3
//     tells authors to write "%2A" and "%24" to match a literal "*" and "$",
//     since a bare one in a pattern is a wildcard or an end anchor.
//   - every other octet (unreserved and the other reserved characters) is
//     kept as it is. Matching is case-sensitive.

// plain[c] reports whether octet c is kept bare in canonical form.
var plain = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range []byte("-._~" + ":/?[]@!&'()+,;=") {
		t[c] = true
	}
	return t
}()

// unreserved reports whether c is an RFC 3986 unreserved character, the
// ones whose percent-encoded form is decoded before comparison.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

const upperHex = "0123456789ABCDEF"

// unhex returns the value of hex digit c, or -1.
func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// escape reports, for the "%" at s[i], the octet it encodes and whether it
// is a well-formed escape at all.
func escape(s string, i int) (byte, bool) {
	if i+2 >= len(s) {
		return 0, false
	}
	hi, lo := unhex(s[i+1]), unhex(s[i+2])
	if hi < 0 || lo < 0 {
		return 0, false
	}
	return byte(hi<<4 | lo), true
}

// canonical rewrites s into canonical form (see the top of this file),
// treating every octet as data: "*" and "$" come out encoded. Strings that
// are canonical already, as most request paths are, are returned as they
// are without allocating.
func canonical(s string) string {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			v, ok := escape(s, i)
			if !ok || unreserved(v) || s[i+1] >= 'a' || s[i+2] >= 'a' {
				break // malformed, decodable or lower-case: needs rewriting
			}
			i += 2
			continue
		}
		if !plain[c] {
			break
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if c == '%' {
			if v, ok := escape(s, i); ok {
				i += 2
				if unreserved(v) {
					b.WriteByte(v)
				} else {
					writeEscaped(&b, v)
				}
				continue
			}
		}
		if plain[c] {
			b.WriteByte(c)
		} else {
			writeEscaped(&b, c)
		}
	}
	return b.String()
}

func writeEscaped(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(upperHex[c>>4])
	b.WriteByte(upperHex[c&15])
}

// canonicalPath turns the path and query of a request ("/a/b?c=d") into the
// canonical form rules are matched against. A fragment, which is never sent,
// is dropped; anything not starting with "/" gets one, so "" means "/".
func canonicalPath(pathQuery string) string {
	if i := strings.IndexByte(pathQuery, '#'); i >= 0 {
		pathQuery = pathQuery[:i]
	}
	if pathQuery == "" || pathQuery[0] != '/' {
		pathQuery = "/" + pathQuery
	}
	return canonical(pathQuery)
}

// isRobotsTxt reports whether canonical path p names /robots.txt itself,
// with or without a query; RFC 9309 §2.2.2 allows it implicitly.
func isRobotsTxt(p string) bool {
	const name = "/robots.txt"
	return p == name || strings.HasPrefix(p, name+"?")
}

// A pattern is the value of an Allow or Disallow line made ready to match
// canonical paths (RFC 9309 §2.2.3): "*" matches any run of octets, even an
// empty one, and a "$" that is the last character anchors the match at the
// end of the path. Without that "$", a pattern only has to match a prefix
// of the path. A "$" anywhere else is an ordinary character.
type pattern struct {
	// parts are the canonical literal pieces between the stars: "/a/*.php$"
	// has parts "/a/" and ".php". The first must start the path; empty
	// pieces from runs of stars ("**") are dropped, except the first and
	// last, which keep their place.
	parts []string
	// anchored is set when the pattern ended in "$": the last part must
	// then end the path.
	anchored bool
	// length is the number of octets in the canonical pattern, stars and
	// the final "$" included. RFC 9309 §2.2.2 makes the rule with the
	// most octets win.
	length int
}

// compile prepares the value of an Allow or Disallow line. The value must
// be non-empty and start with "/" or "*"; Parse drops the others.
func compile(value string) pattern {
	var p pattern
	if strings.HasSuffix(value, "$") {
		p.anchored = true
		p.length++
		value = value[:len(value)-1]
	}
	pieces := strings.Split(value, "*")
	p.length += len(pieces) - 1 // the stars
	p.parts = make([]string, 0, len(pieces))
	for i, piece := range pieces {
		c := strings.Clone(canonical(piece)) // don't pin the whole file
		p.length += len(c)
		if c == "" && i != 0 && i != len(pieces)-1 {
			continue
		}
		p.parts = append(p.parts, c)
	}
	return p
}

// match reports whether p matches canonical path s.
//
// It takes each piece at its leftmost possible place. That is exact for
// patterns whose only wildcard is "*": whatever later pieces could match
// after some occurrence of a piece, they can also match after the leftmost
// one, because it leaves the longest rest of the path. So match never
// backtracks; it scans the path once, piece by piece, and its cost is linear
// in the lengths of path and pattern however many stars there are.
func (p *pattern) match(s string) bool {
	first := p.parts[0]
	if !strings.HasPrefix(s, first) {
		return false
	}
	if len(p.parts) == 1 { // no star
		return !p.anchored || len(s) == len(first)
	}
	rest := s[len(first):]
	last := len(p.parts) - 1
	for _, piece := range p.parts[1:last] {
		i := strings.Index(rest, piece)
		if i < 0 {
			return false
		}
		rest = rest[i+len(piece):]
	}
	if p.anchored {
		return strings.HasSuffix(rest, p.parts[last])
	}
	return strings.Contains(rest, p.parts[last])
}

// A pairSet is a 256-bit Bloom filter of the adjacent octet pairs of some
// canonical strings. Every pair of a pattern's literal pieces occurs in any
// path the pattern matches, so when a pattern's set is not within a path's
// set the pattern cannot match that path. Allowed uses this to skip most
// rules with a few AND operations instead of a string comparison.
type pairSet [4]uint64

// addPairs adds the adjacent pairs of s.
func (ps *pairSet) addPairs(s string) {
	for i := 1; i < len(s); i++ {
		h := (uint32(s[i-1])<<8 | uint32(s[i])) * 0x9E3779B1 >> 24
		ps[h>>6] |= 1 << (h & 63)
	}
}

// within reports whether every pair of ps may be in path.
func (ps *pairSet) within(path *pairSet) bool {
	return ps[0]&^path[0]|ps[1]&^path[1]|ps[2]&^path[2]|ps[3]&^path[3] == 0
}

// pairs returns the pairSet of p's literal pieces.
func (p *pattern) pairs() pairSet {
	var ps pairSet
	for _, part := range p.parts {
		ps.addPairs(part)
	}
	return ps
}
