package fetch

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reject is one token of pasted text that is not an acceptable URL, with the
// 1-based line it was on and the reason in words (SPEC J1, RELIABILITY B16).
type Reject struct {
	Line   int
	Text   string
	Reason string
}

// Parsed is one URL of pasted text with the 1-based line it was on.
type Parsed struct {
	URL  *url.URL
	Line int
}

// maxRejectText is how much of a rejected token a Reject repeats: enough to
// recognise it, not a whole pasted file that had no line breaks.
const maxRejectText = 200

// ParseURLList splits pasted text into URLs (SPEC J1). URLs are separated by
// spaces, tabs or line breaks ("\n" or "\r\n"); blank lines are skipped, and so
// are comment lines, whose first character other than a space or tab is "#"
// (as in aria2's and wget's input files: a URL never starts with "#"). Only
// absolute http and https URLs with a host are accepted. A token holding a
// carriage return (a stray "\r" not part of a line ending), any other control
// character, that does not parse, or whose host has no host key, is rejected
// with its reason. Each URL comes in the form Heed stores (see canonical):
// its host is its host key. The order of the input is kept; duplicates are
// left for the caller to report (J2).
//
// It runs in linear time; a 100,000-line paste takes about a tenth of a
// second (see BenchmarkParseURLList).
func ParseURLList(text string) (urls []Parsed, rejects []Reject) {
	// A byte order mark some editors write.
	return ParseURLLines(strings.TrimPrefix(text, "\ufeff"), 0)
}

// CutLines cuts text after its first n lines: head holds them, each with its
// line break, tail the rest. ParseURLLines(tail, n) then goes on where
// ParseURLList(head) stopped, so that a long paste can be parsed a part at a
// time.
func CutLines(text string, n int) (head, tail string) {
	cut := 0
	for ; n > 0 && cut < len(text); n-- {
		i := strings.IndexByte(text[cut:], '\n')
		if i < 0 {
			return text, ""
		}
		cut += i + 1
	}
	return text[:cut], text[cut:]
}

// ParseURLLines is ParseURLList for lines that follow the first before lines
// of a paste (see CutLines): it numbers them from before+1 and takes no byte
// order mark off.
func ParseURLLines(text string, before int) (urls []Parsed, rejects []Reject) {
	line := before
	for len(text) > 0 {
		var l string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			l, text = text[:i], text[i+1:]
		} else {
			l, text = text, ""
		}
		line++
		l = strings.TrimSuffix(l, "\r")
		if strings.HasPrefix(strings.TrimLeftFunc(l, isSeparator), "#") {
			continue
		}
		for _, tok := range strings.FieldsFunc(l, isSeparator) {
			u, why := parseOne(tok)
			if why != "" {
				rejects = append(rejects, Reject{Line: line, Text: excerpt(tok), Reason: why})
				continue
			}
			urls = append(urls, Parsed{URL: u, Line: line})
		}
	}
	return urls, rejects
}

// excerpt is tok as a Reject repeats it: whole, or its first
// maxRejectText bytes (not cutting a character) and "…".
func excerpt(tok string) string {
	if len(tok) <= maxRejectText {
		return tok
	}
	cut := maxRejectText
	for cut > 0 && !utf8.RuneStart(tok[cut]) {
		cut--
	}
	return tok[:cut] + "…"
}

// OneURL makes arg, given as one URL (a command-line argument), one token of
// a URL list: the spaces and tabs around it are dropped and those inside it
// percent-encoded, as a browser or wget does with a path holding a space,
// so that "http://h/my report.pdf" is one URL, not "http://h/my" and a
// rejected "report.pdf". Line breaks are left for ParseURLList to see.
func OneURL(arg string) string {
	arg = strings.TrimFunc(arg, isSeparator)
	if strings.IndexFunc(arg, isSeparator) < 0 {
		return arg
	}
	var b strings.Builder
	for _, r := range arg {
		if !isSeparator(r) {
			b.WriteRune(r)
			continue
		}
		var enc [utf8.UTFMax]byte
		for _, c := range enc[:utf8.EncodeRune(enc[:], r)] {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// isSeparator reports the characters that separate URLs: spaces and tabs,
// but not CR or other control characters, which must be seen to be rejected.
func isSeparator(r rune) bool {
	return r == ' ' || r == '\t' || (r > 0x7f && unicode.IsSpace(r) && r != 0x85)
}

// parseOne checks one token; it returns a reason when the token is refused.
func parseOne(tok string) (*url.URL, string) {
	for _, r := range tok {
		switch {
		case r == '\r':
			return nil, "contains a carriage return (CR)"
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
			return nil, fmt.Sprintf("contains control character %U", r)
		}
	}
	u, err := url.Parse(tok)
	if err != nil {
		return nil, "not a URL: " + strings.TrimPrefix(err.Error(), "parse "+fmt.Sprintf("%q", tok)+": ")
	}
	switch u.Scheme {
	case "http", "https":
	case "":
		return nil, "not an absolute URL (no http:// or https://)"
	default:
		return nil, fmt.Sprintf("scheme %q not allowed: only http and https", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, "no host"
	}
	if err := canonical(u); err != nil {
		return nil, strings.TrimPrefix(err.Error(), "host key: ")
	}
	return u, ""
}

// canonical rewrites u in place to the form Heed stores, compares (J2) and
// requests, so that spellings of one URL are one job: its host as its host
// key (lower case, IDNA/punycode, a canonical IP literal, a canonical port,
// none when it is the scheme's default), an empty path as "/" (the request
// is the same), and no fragment (it is never sent). The path and query are
// kept as given.
func canonical(u *url.URL) error {
	host, err := HostKeyOf(u)
	if err != nil {
		return err
	}
	u.Host = host
	if u.Path == "" && u.RawPath == "" && u.Opaque == "" {
		u.Path = "/"
	}
	u.Fragment, u.RawFragment = "", ""
	return nil
}
