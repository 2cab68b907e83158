package fetch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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

// MaxLineBytes is the longest line of a URL list Heed reads (G43): a longer
// one is rejected with its line number, and the list goes on after it.
const MaxLineBytes = 64 << 10

// maxSkip is how far past MaxLineBytes a line may run before the input is
// taken for something that is not a list at all (/dev/zero, a binary file).
const maxSkip = 16 << 20

// ErrNotAList says an input ran maxSkip bytes without a line break.
var ErrNotAList = errors.New("no line break in 16 MiB: this is not a list of URLs")

// ParseURLList splits pasted text into URLs (SPEC J1); see ListReader for
// the rules.
func ParseURLList(text string) (urls []Parsed, rejects []Reject) {
	l := NewListReader(strings.NewReader(text))
	for {
		u, r, err := l.Next(1 << 16)
		urls, rejects = append(urls, u...), append(rejects, r...)
		if err != nil {
			return urls, rejects
		}
	}
}

// ListReader reads a list of URLs as it comes (J1, G43), holding at most a
// line of it in memory. URLs are separated by spaces, tabs or line breaks
// ("\n" or "\r\n"); blank lines are skipped, and so are comment lines, whose
// first character other than a space or tab is "#" (as in aria2's and
// wget's input files: a URL never starts with "#"). A UTF-8 byte order
// mark at the start is dropped. Only absolute http and https URLs with a
// host are accepted. A token holding a carriage return (a stray "\r" not
// part of a line ending), any other control character, over MaxURLBytes,
// that does not parse, or whose host has no host key, is rejected with its
// reason, and so is a line over MaxLineBytes. Each URL comes in the form
// Heed stores (see canonical): its host is its host key. The order of the
// input is kept; duplicates are left for the caller to report (J2).
type ListReader struct {
	r    *bufio.Reader
	line int
	bom  bool
}

// NewListReader reads the list r holds.
func NewListReader(r io.Reader) *ListReader {
	return &ListReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// maxPartBytes bounds the text of the URLs one Next returns, so that a
// part of a list is held in memory at most once this size, however long
// its URLs (G43).
const maxPartBytes = 8 << 20

// Next returns the URLs and rejects of the next lines, stopping after the
// line that brings the URLs to at least n (or their text to maxPartBytes).
// At the end of the input err is io.EOF (with the last lines' URLs); a read
// error or ErrNotAList (naming the line) ends it too.
func (l *ListReader) Next(n int) (urls []Parsed, rejects []Reject, err error) {
	for size := 0; len(urls) < n && size < maxPartBytes; {
		text, long, err := l.readLine()
		size += len(text)
		if text != "" || long {
			l.line++
			if long {
				rejects = append(rejects, Reject{Line: l.line, Text: excerpt(text), Reason: fmt.Sprintf("line is longer than %d KiB", MaxLineBytes>>10)})
			} else {
				urls, rejects = parseLine(text, l.line, urls, rejects)
			}
		} else if err == nil {
			l.line++ // an empty line
		}
		if errors.Is(err, ErrNotAList) {
			return urls, rejects, fmt.Errorf("line %d: %w", l.line, err)
		}
		if err != nil {
			return urls, rejects, err
		}
	}
	return urls, rejects, nil
}

// readLine returns the next line without its line break, or the first
// MaxLineBytes of a longer one with long set (the rest skipped).
func (l *ListReader) readLine() (text string, long bool, err error) {
	var buf []byte
	for {
		frag, ferr := l.r.ReadSlice('\n')
		if len(buf)+len(frag) <= MaxLineBytes+1 {
			buf = append(buf, frag...)
		} else if !long {
			long = true
			buf = append(buf, frag[:max(MaxLineBytes-len(buf), 0)]...)
		}
		if errors.Is(ferr, bufio.ErrBufferFull) {
			if long && len(buf) >= MaxLineBytes {
				if err := l.skip(); err != nil {
					return string(buf), true, err
				}
				return string(buf), true, nil
			}
			continue
		}
		if !l.bom {
			l.bom = true
			buf = []byte(strings.TrimPrefix(string(buf), "\ufeff"))
		}
		s := strings.TrimSuffix(strings.TrimSuffix(string(buf), "\n"), "\r")
		if len(s) > MaxLineBytes {
			return s[:MaxLineBytes], true, ferr
		}
		return s, long, ferr
	}
}

// skip reads past the rest of an overlong line, up to maxSkip bytes.
func (l *ListReader) skip() error {
	for skipped := 0; ; {
		frag, err := l.r.ReadSlice('\n')
		skipped += len(frag)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return err
		case skipped > maxSkip:
			return ErrNotAList
		}
	}
}

// parseLine adds the URLs and rejects of one line.
func parseLine(l string, line int, urls []Parsed, rejects []Reject) ([]Parsed, []Reject) {
	if strings.HasPrefix(strings.TrimLeftFunc(l, isSeparator), "#") {
		return urls, rejects
	}
	for _, tok := range strings.FieldsFunc(l, isSeparator) {
		u, why := parseOne(tok)
		if why != "" {
			rejects = append(rejects, Reject{Line: line, Text: excerpt(Redact(tok)), Reason: why})
			continue
		}
		urls = append(urls, Parsed{URL: u, Line: line})
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
	if len(tok) > MaxURLBytes {
		return nil, fmt.Sprintf("URL is %d bytes long, over the limit of %d", len(tok), MaxURLBytes)
	}
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

// Redact returns rawURL with its password, if it has one, masked as
// "user:***@", for everything Heed shows, logs or exports (G44). A URL that
// does not parse is returned as it is: Heed stores none.
func Redact(rawURL string) string {
	if !strings.Contains(rawURL, "@") {
		return rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return rawURL
	}
	if _, has := u.User.Password(); !has {
		return rawURL
	}
	u.User = url.User(u.User.Username())
	s := u.String() // "scheme://name@host…": the mask goes before the "@"
	at := strings.Index(s, "@")
	return s[:at] + ":***" + s[at:]
}
