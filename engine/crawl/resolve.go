package crawl

import (
	"net/url"
	"strings"
)

// This file holds how a link reference as written in a page (or a sitemap)
// becomes a URL to fetch (W2).

// resolve turns a reference as written in a page into an absolute http or
// https URL, resolved against base (nil: the reference must be absolute).
// It fixes the reference first the way a browser's URL parser would (see
// Extract), drops the fragment, and refuses other schemes and invalid hosts.
//
// Host keys are looked up in c, which may be nil.
func resolve(base *url.URL, ref string, c hostCache) (*url.URL, bool) {
	s := strings.TrimFunc(ref, isSpaceOrControl)
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}
	s, _, _ = strings.Cut(s, "#")
	pathPart, query, hasQuery := strings.Cut(s, "?")
	pathPart = strings.ReplaceAll(pathPart, `\`, "/")
	if scheme, rest, ok := splitScheme(pathPart); ok {
		if !isHTTP(scheme) {
			return nil, false
		}
		scheme = lowerASCII(scheme)
		slashes := len(rest) - len(strings.TrimLeft(rest, "/"))
		if base != nil && scheme == lowerASCII(base.Scheme) && slashes < 2 {
			pathPart = rest // "http:x" and "http:/x" are relative
			if first, _, _ := strings.Cut(rest, "/"); strings.Contains(first, ":") {
				pathPart = "./" + rest
			}
		} else {
			pathPart = scheme + "://" + rest[slashes:] // "http:///x" is host x
		}
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	fixEscapes(&b, pathPart, func(c byte) bool { return c >= 0x20 && c != 0x7f })
	if hasQuery {
		b.WriteByte('?')
		fixEscapes(&b, query, func(c byte) bool {
			return c > 0x20 && c < 0x7f && c != '"' && c != '<' && c != '>' && c != '\''
		})
	}
	r, err := url.Parse(b.String())
	if err != nil {
		return nil, false
	}
	u := r
	if base != nil {
		u = base.ResolveReference(r)
	}
	if !isHTTP(u.Scheme) || u.Opaque != "" || u.Host == "" {
		return nil, false
	}
	if _, err := c.hostKey(u); err != nil {
		return nil, false
	}
	u.Fragment, u.RawFragment = "", ""
	return u, true
}

// fixEscapes writes s to b with every byte for which keep is false escaped
// and every "%" that starts no escape written as "%25".
func fixEscapes(b *strings.Builder, s string, keep func(byte) bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && !(i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2])):
			b.WriteString("%25")
		case !keep(c):
			writeEscape(b, c)
		default:
			b.WriteByte(c)
		}
	}
}

// splitScheme splits "scheme:rest" when s starts with an RFC 3986 scheme.
func splitScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return s[:i], s[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// isSpaceOrControl is the set a URL parser trims from both ends of its
// input: C0 controls and space.
func isSpaceOrControl(r rune) bool { return r <= 0x20 }

// isHTMLSpace reports whether c is ASCII whitespace in the HTML sense.
func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
