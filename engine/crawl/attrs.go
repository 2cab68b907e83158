package crawl

import (
	"net/http"
	"strconv"
	"strings"
)

// This file holds the small attribute grammars of W2: srcset, meta
// refresh, and the nofollow forms (rel, robots meta, X-Robots-Tag).

// parseSrcset returns the URLs of a srcset attribute ("a.jpg 1x, b.jpg 2x",
// "s.jpg 320w, l.jpg 1024w") by the HTML spec's "parse a srcset attribute"
// algorithm: candidates are separated by commas that follow a URL and
// whitespace, so a URL may itself contain commas ("a,b.jpg 2x" is the URL
// "a,b.jpg"); a descriptor list ends at a comma outside parentheses.
// Like a browser, it drops a candidate whose descriptors are invalid
// ("a.jpg 2q", "a.jpg 1x 2x", "a.jpg 0w").
func parseSrcset(s string) []string {
	var out []string
	pos := 0
	for {
		for pos < len(s) && (isHTMLSpace(s[pos]) || s[pos] == ',') {
			pos++
		}
		if pos >= len(s) {
			return out
		}
		start := pos
		for pos < len(s) && !isHTMLSpace(s[pos]) {
			pos++
		}
		u := s[start:pos]
		var descs []string
		if strings.HasSuffix(u, ",") {
			u = strings.TrimRight(u, ",")
		} else {
			descs, pos = srcsetDescriptors(s, pos)
		}
		if validDescriptors(descs) {
			out = append(out, u)
		}
	}
}

// srcsetDescriptors is the spec's descriptor tokenizer, from pos to the
// comma that ends the candidate (or the end); it returns the descriptors
// and the position after them.
func srcsetDescriptors(s string, pos int) ([]string, int) {
	const (
		inDescriptor = iota
		inParens
		afterDescriptor
	)
	for pos < len(s) && isHTMLSpace(s[pos]) {
		pos++
	}
	var descs []string
	state, cur := inDescriptor, -1 // cur: start of the current descriptor
	for ; pos < len(s); pos++ {
		c := s[pos]
		switch state {
		case inDescriptor:
			switch {
			case isHTMLSpace(c):
				if cur >= 0 {
					descs, cur = append(descs, s[cur:pos]), -1
				}
				state = afterDescriptor
			case c == ',':
				if cur >= 0 {
					descs = append(descs, s[cur:pos])
				}
				return descs, pos + 1
			default:
				if cur < 0 {
					cur = pos
				}
				if c == '(' {
					state = inParens
				}
			}
		case inParens:
			if c == ')' {
				state = inDescriptor
			}
		case afterDescriptor:
			if !isHTMLSpace(c) {
				state = inDescriptor
				pos-- // reconsume
			}
		}
	}
	if cur >= 0 {
		descs = append(descs, s[cur:])
	}
	return descs, pos
}

// validDescriptors is the spec's descriptor parser: at most one width
// ("640w", a positive integer) or one density ("2x", "1.5x", not
// negative), and a future-compatible height ("480h") only with a width.
func validDescriptors(descs []string) bool {
	var width, density, height bool
	for _, d := range descs {
		if d == "" {
			return false
		}
		v := d[:len(d)-1]
		switch d[len(d)-1] {
		case 'w':
			if width || density || !positiveInt(v) {
				return false
			}
			width = true
		case 'x':
			if width || density || height || !validFloat(v) {
				return false
			}
			if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 {
				return false
			}
			density = true
		case 'h':
			if height || density || !positiveInt(v) {
				return false
			}
			height = true
		default:
			return false
		}
	}
	return !height || width
}

// positiveInt reports whether s is a valid non-negative integer above 0.
func positiveInt(s string) bool {
	if s == "" {
		return false
	}
	zero := true
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
		zero = zero && s[i] == '0'
	}
	return !zero
}

// validFloat reports whether s is an HTML valid floating-point number:
// "-"? (digits | digits "." digits | "." digits) (("e"|"E") ("-"|"+")? digits)?
func validFloat(s string) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	n := digits()
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	} else if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// parseRefresh returns the URL of a meta refresh content value by the HTML
// spec's "shared declarative refresh steps": a time ("5", "0.5", ".5"),
// then ";" or "," or whitespace, then the URL, optionally after "url="
// (any case, spaces around "=") and optionally in quotes, which end it.
// "5; url=/next", "0;URL='/next'", "5, /next" and `3;url="/a b"` all have
// a URL; "5", "url=/next" (no time) and "5x; url=/n" have none.
func parseRefresh(s string) (string, bool) {
	i := 0
	skipSpace := func() {
		for i < len(s) && isHTMLSpace(s[i]) {
			i++
		}
	}
	skipSpace()
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == start && (i >= len(s) || s[i] != '.') {
		return "", false
	}
	for i < len(s) && (isDigit(s[i]) || s[i] == '.') {
		i++
	}
	if i < len(s) {
		if c := s[i]; c != ';' && c != ',' && !isHTMLSpace(c) {
			return "", false
		}
		skipSpace()
		if i < len(s) && (s[i] == ';' || s[i] == ',') {
			i++
		}
		skipSpace()
	}
	if i >= len(s) {
		return "", false // a refresh of the page itself
	}
	rest := s[i:]
	if s[i]|0x20 == 'u' {
		i++
		if i >= len(s) || s[i]|0x20 != 'r' {
			return rest, true
		}
		i++
		if i >= len(s) || s[i]|0x20 != 'l' {
			return rest, true
		}
		i++
		skipSpace()
		if i >= len(s) || s[i] != '=' {
			return rest, true
		}
		i++
		skipSpace()
	}
	u := s[i:]
	if u != "" && (u[0] == '\'' || u[0] == '"') {
		q := u[0]
		u = u[1:]
		if j := strings.IndexByte(u, q); j >= 0 {
			u = u[:j]
		}
	}
	return u, true
}

// hasToken reports whether the space-separated token list v (a rel value)
// holds tok, in any case.
func hasToken(v, tok string) bool {
	for _, t := range strings.FieldsFunc(v, func(r rune) bool { return r < 0x80 && isHTMLSpace(byte(r)) }) {
		if strings.EqualFold(t, tok) {
			return true
		}
	}
	return false
}

// hasDirective reports whether a robots directive list says nofollow:
// it holds "nofollow" or "none" (any case), separated by any of seps.
func hasDirective(v, seps string) bool {
	for _, t := range strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		if strings.EqualFold(t, "nofollow") || strings.EqualFold(t, "none") {
			return true
		}
	}
	return false
}

// robotsNofollow reports whether the X-Robots-Tag headers of h say
// nofollow for agent. Each header value is a comma-separated list of
// directives ("noindex, nofollow"); "name: " before a directive makes it
// and the directives after it in that value apply to robot name only
// ("heed: nofollow", "otherbot: noindex, nofollow"). Directives that take
// a value after a colon ("unavailable_after: …", "max-snippet: 20") are
// not robot names.
func robotsNofollow(h http.Header, agent string) bool {
	for _, v := range h.Values("X-Robots-Tag") {
		target := ""
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if name, rest, ok := strings.Cut(part, ":"); ok {
				name = strings.ToLower(strings.TrimSpace(name))
				if isProductToken(name) && !valuedDirectives[name] {
					target, part = name, strings.TrimSpace(rest)
				}
			}
			if target != "" && target != agent {
				continue
			}
			if strings.EqualFold(part, "nofollow") || strings.EqualFold(part, "none") {
				return true
			}
		}
	}
	return false
}

// valuedDirectives are the robots directives written "name: value".
var valuedDirectives = map[string]bool{
	"unavailable_after": true, "max-snippet": true,
	"max-image-preview": true, "max-video-preview": true,
}

// isProductToken reports whether s is a robot name (RFC 9309 product
// token, digits allowed).
func isProductToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
