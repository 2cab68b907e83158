package crawl

import (
	"heed/engine/fetch"
	"net"
	"net/url"
	"strings"
)

// Key returns the de-duplication key of u (W3): the crawl runs one job per
// key, so two spellings of one URL are fetched once. It does not change u;
// the job fetches the URL as it was written, the key only decides
// "seen before".
//
// The key is u in a normal form (RFC 3986 §6.2.2, plus the host rule of
// Heed's host keys):
//
//   - the scheme is lower case;
//   - the host is lower-case IDNA/punycode without trailing dots, an IP
//     address is in its canonical form, and the port is dropped when it is
//     the scheme's default ("HTTP://Bücher.DE:80" → "http://xn--bcher-kva.de");
//     the host part is exactly the engine's host key (SPEC §1);
//   - percent-escapes are upper case ("%7e" → "%7E"), and escapes of
//     unreserved characters (letters, digits, "-", ".", "_", "~") are
//     decoded ("%7E" → "~", "%41" → "A"), in the path and in the query;
//     escapes of anything else stay escaped ("%2F" is not "/"), and bytes
//     that may not appear unescaped (space, non-ASCII, "<", …) are escaped;
//   - dot-segments are resolved ("/a/./b/../c" → "/a/c") and an empty path
//     is "/";
//   - the fragment is dropped, and so is an empty query ("/a?" is "/a");
//   - the query is otherwise kept as written: parameters are not sorted,
//     since servers may depend on their order, and "+" is not " ".
//
// User information is kept. A host that is not a valid name (bad IDNA, a
// port over 65535) is kept lower-cased instead of failing: Key always
// returns a key, and Key(parse(Key(u))) == Key(u). Key(nil) is "".
func Key(u *url.URL) string { return key(u, nil) }

// key is Key with host keys looked up in c (which may be nil).
func key(u *url.URL, c hostCache) string {
	if u == nil {
		return ""
	}
	k := url.URL{Scheme: lowerASCII(u.Scheme), User: u.User}
	if u.Opaque != "" {
		k.Opaque = u.Opaque
		k.RawQuery = normEscapes(u.RawQuery, queryByte)
		return k.String()
	}
	if u.Host != "" {
		if h, err := c.hostKey(u); err == nil {
			k.Host = h
		} else {
			k.Host = lowerASCII(u.Host)
		}
	}
	p := keyPath(u)
	if p == "" && k.Host != "" {
		p = "/"
	}
	k.RawPath = p
	k.Path, _ = url.PathUnescape(p) // p holds only valid escapes
	k.RawQuery = normEscapes(u.RawQuery, queryByte)
	return k.String()
}

// keyPath is the escaped path of u in key form: escapes normalised and,
// for an absolute URL, dot-segments resolved. It is also what the scope
// prefix and the trap rules look at.
func keyPath(u *url.URL) string {
	ep := u.EscapedPath()
	if ep == "*" { // EscapedPath spells the path "*" unescaped, for "OPTIONS *"
		ep = "%2A"
	}
	p := normEscapes(ep, pathByte)
	if u.Scheme != "" && strings.HasPrefix(p, "/") {
		p = removeDotSegments(p)
	}
	return p
}

// normEscapes rewrites s so that every escape is upper case, escapes of
// unreserved characters are decoded, a "%" that starts no escape becomes
// "%25" and every byte for which allowed is false is escaped.
func normEscapes(s string, allowed func(byte) bool) string {
	clean := true
	for i := 0; i < len(s) && clean; i++ {
		clean = s[i] != '%' && allowed(s[i])
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			d := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(d) {
				b.WriteByte(d)
			} else {
				writeEscape(&b, d)
			}
			i += 2
		case c == '%' || !allowed(c):
			writeEscape(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

func writeEscape(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(upperHex[c>>4])
	b.WriteByte(upperHex[c&15])
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// isUnreserved reports whether c is an RFC 3986 unreserved character,
// which means the same escaped or not.
func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// pathByte reports whether c may appear unescaped in a path: pchar or "/".
func pathByte(c byte) bool {
	if isUnreserved(c) {
		return true
	}
	switch c {
	case '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/':
		return true
	}
	return false
}

// queryByte reports whether c may appear unescaped in a query.
func queryByte(c byte) bool { return pathByte(c) || c == '?' }

// removeDotSegments is RFC 3986 §5.2.4 for a path that starts with "/".
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	out := make([]string, 0, strings.Count(p, "/"))
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// lowerASCII lower-cases ASCII letters only, leaving every other byte
// (even invalid UTF-8) as it is.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// hostKeyOf is the host key of u (SPEC §1), as Heed's fetcher keys hosts:
// the host part of a Key is the host key.
func hostKeyOf(u *url.URL) (string, error) { return fetch.HostKeyOf(u) }

// hostName is the name part of u's host key, without its port (an IPv6
// address without brackets); "" when u has no host key.
func hostName(u *url.URL) string {
	k, err := fetch.HostKeyOf(u)
	if err != nil {
		return ""
	}
	if h, _, err := net.SplitHostPort(k); err == nil {
		k = h
	}
	return strings.Trim(k, "[]")
}

// hostCache remembers host keys by scheme and host, for the many links of
// one page that share a few hosts: IDNA is the costly part of a key.
type hostCache map[string]hostEntry

type hostEntry struct {
	key string
	err error
}

// maxHostCache bounds a hostCache; past it, keys are computed each time.
const maxHostCache = 1024

// hostKey is hostKeyOf(u), remembered; a nil cache remembers nothing.
func (c hostCache) hostKey(u *url.URL) (string, error) {
	if c == nil {
		return hostKeyOf(u)
	}
	ck := u.Scheme + "://" + u.Host
	if e, ok := c[ck]; ok {
		return e.key, e.err
	}
	k, err := hostKeyOf(u)
	if len(c) < maxHostCache {
		c[ck] = hostEntry{k, err}
	}
	return k, err
}

// defaultPort is the port a scheme uses when none is written.
func defaultPort(scheme string) string {
	switch lowerASCII(scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// isHTTP reports whether scheme is http or https (any case).
func isHTTP(scheme string) bool {
	s := lowerASCII(scheme)
	return s == "http" || s == "https"
}
