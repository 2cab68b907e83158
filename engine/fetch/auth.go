package fetch

// What a person adds to Heed's requests, beside its own headers: extra
// headers a host wants, the cookies of a browser's cookies.txt, and the
// logins of ~/.netrc. Each is read and checked here; the request carries it
// in sendOn. Secrets read here are sent, never shown: RedactHeader masks a
// header that may carry one, and nothing here logs a value.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/publicsuffix"
)

// heedOwns are the request headers Heed sets itself, or that only the
// transport may: an extra header cannot replace them, or resuming (Range,
// If-Range, an identity encoding, F5, F6) or framing would break.
var heedOwns = map[string]string{
	"Host":              "Heed sends the URL's host",
	"Range":             "Heed asks for ranges itself to resume",
	"If-Range":          "Heed asks for ranges itself to resume",
	"Accept-Encoding":   "Heed asks for the file as stored, so that it can resume and check it",
	"Content-Length":    "a download sends no body",
	"Transfer-Encoding": "a download sends no body",
	"Connection":        "the connection is the transport's",
	"Keep-Alive":        "the connection is the transport's",
	"Proxy-Connection":  "the connection is the transport's",
	"Upgrade":           "the connection is the transport's",
	"Te":                "the connection is the transport's",
	"Trailer":           "a download sends no body",
}

// ParseHeaders reads extra request headers, each "Name: value" as curl's -H
// takes them; a repeated name sends each value. The error names the line and
// what is wrong with it.
func ParseHeaders(lines []string) (http.Header, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	h := http.Header{}
	for _, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		shown := RedactHeader(line)
		switch {
		case !ok:
			return nil, fmt.Errorf("header %q: want Name: value", shown)
		case !httpguts.ValidHeaderFieldName(name):
			return nil, fmt.Errorf("header %q: %q is not a header name", shown, name)
		case !httpguts.ValidHeaderFieldValue(value):
			return nil, fmt.Errorf("header %q: its value holds characters a header cannot (line breaks, control characters)", shown)
		}
		name = http.CanonicalHeaderKey(name)
		if why, owned := heedOwns[name]; owned {
			return nil, fmt.Errorf("header %q: %s", shown, why)
		}
		h.Add(name, value)
	}
	return h, nil
}

// RedactHeader masks the value of a "Name: value" header line that may hold
// a secret (credentials, cookies, tokens, keys), for everything that shows
// or logs one.
func RedactHeader(line string) string {
	name, _, ok := strings.Cut(line, ":")
	if !ok || !secretHeader(strings.TrimSpace(name)) {
		return line
	}
	return name + ": ***"
}

// secretHeader reports a header name that may carry a secret:
// Authorization, Proxy-Authorization and Cookie among them.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "token", "key", "secret", "session", "password", "cookie"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// ReadCookies loads a Netscape cookies.txt, as browsers' extensions, curl
// and wget write it, into a cookie jar that also keeps what servers set
// while Heed runs (in memory only: the file is never written). Lines are
// domain, include-subdomains, path, secure, expiry (Unix seconds, 0 for a
// session cookie), name and value, separated by tabs; "#HttpOnly_" before
// the domain is kept, other lines starting with # are comments. Cookies
// already expired are left out; the count is of those kept.
func ReadCookies(path string) (http.CookieJar, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("cookies: %w", err)
	}
	defer f.Close()
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List}) // never fails
	n, err := readCookies(f, jar, time.Now())
	if err != nil {
		return nil, 0, fmt.Errorf("cookies: %s %w", filepath.Base(path), err)
	}
	return jar, n, nil
}

func readCookies(r io.Reader, jar http.CookieJar, now time.Time) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	kept := 0
	for no := 1; sc.Scan(); no++ {
		line := strings.TrimRight(sc.Text(), "\r")
		httpOnly := false
		if rest, ok := strings.CutPrefix(line, "#HttpOnly_"); ok {
			line, httpOnly = rest, true
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) == 6 { // an empty value, its tab trimmed by an editor
			f = append(f, "")
		}
		if len(f) != 7 {
			return kept, fmt.Errorf("line %d: want 7 fields separated by tabs (domain, subdomains, path, secure, expiry, name, value), found %d", no, len(f))
		}
		domain, sub, path, secure, expiry, name, value := f[0], f[1], f[2], f[3], f[4], f[5], f[6]
		exp, err := strconv.ParseInt(expiry, 10, 64)
		if err != nil {
			return kept, fmt.Errorf("line %d: expiry %q is not a number of seconds", no, expiry)
		}
		host := strings.TrimPrefix(domain, ".")
		if host == "" || name == "" {
			return kept, fmt.Errorf("line %d: a cookie needs a domain and a name", no)
		}
		c := &http.Cookie{Name: name, Value: value, Path: path, Secure: strings.EqualFold(secure, "TRUE"), HttpOnly: httpOnly}
		if strings.EqualFold(sub, "TRUE") {
			c.Domain = host
		}
		if exp != 0 {
			c.Expires = time.Unix(exp, 0)
			if !c.Expires.After(now) {
				continue
			}
		}
		scheme := "http"
		if c.Secure {
			scheme = "https"
		}
		jar.SetCookies(&url.URL{Scheme: scheme, Host: host, Path: "/"}, []*http.Cookie{c})
		kept++
	}
	return kept, sc.Err()
}

// Netrc is the logins of a .netrc file (the format of ftp, curl and wget):
// "machine HOST login NAME password SECRET", and a "default" entry for any
// other host.
type Netrc struct {
	machines []netrcLogin // in the file's order; the first match wins
	dflt     *netrcLogin
}

type netrcLogin struct{ host, login, password string }

// NetrcPath is where the netrc is read from: $NETRC, else ~/.netrc.
func NetrcPath() string {
	if p := os.Getenv("NETRC"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".netrc")
}

// ReadNetrc reads the netrc at path. A missing file is no logins, not an
// error.
func ReadNetrc(path string) (*Netrc, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Netrc{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netrc: %w", err)
	}
	n, err := parseNetrc(string(b))
	if err != nil {
		return nil, fmt.Errorf("netrc: %s %w", path, err)
	}
	return n, nil
}

func parseNetrc(text string) (*Netrc, error) {
	n := &Netrc{}
	var cur *netrcLogin
	toks := netrcTokens(text)
	for i := 0; i < len(toks); i++ {
		next := func() (string, error) {
			if i+1 >= len(toks) {
				return "", fmt.Errorf("%q at the end of the file has no value", toks[i])
			}
			i++
			return toks[i], nil
		}
		switch toks[i] {
		case "machine":
			h, err := next()
			if err != nil {
				return nil, err
			}
			n.machines = append(n.machines, netrcLogin{host: strings.ToLower(h)})
			cur = &n.machines[len(n.machines)-1]
		case "default":
			n.dflt = &netrcLogin{}
			cur = n.dflt
		case "login", "password", "account":
			key := toks[i]
			v, err := next()
			if err != nil {
				return nil, err
			}
			if cur == nil {
				return nil, fmt.Errorf("%q comes before any machine", key)
			}
			switch key {
			case "login":
				cur.login = v
			case "password":
				cur.password = v
			}
		case "macdef": // a macro runs to the next empty line: skipped by netrcTokens
			if _, err := next(); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%q is not a netrc keyword (machine, default, login, password, account, macdef)", toks[i])
		}
	}
	return n, nil
}

// netrcTokens splits a netrc into its words: double quotes hold spaces (a
// backslash escapes the next character), and a macdef's body, up to the
// next empty line, is left out.
func netrcTokens(text string) []string {
	var toks []string
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for l := 0; l < len(lines); l++ {
		line := lines[l]
		for s := line; ; {
			s = strings.TrimLeft(s, " \t")
			if s == "" || s[0] == '#' {
				break
			}
			var tok string
			if s[0] == '"' {
				var b strings.Builder
				j := 1
				for ; j < len(s) && s[j] != '"'; j++ {
					if s[j] == '\\' && j+1 < len(s) {
						j++
					}
					b.WriteByte(s[j])
				}
				tok, s = b.String(), s[min(j+1, len(s)):]
			} else {
				end := strings.IndexAny(s, " \t")
				if end < 0 {
					end = len(s)
				}
				tok, s = s[:end], s[end:]
			}
			toks = append(toks, tok)
			if len(toks) >= 2 && toks[len(toks)-2] == "macdef" {
				for l+1 < len(lines) && strings.TrimSpace(lines[l+1]) != "" {
					l++
				}
				break
			}
		}
	}
	return toks
}

// For returns the login for host (no port; compared without regard to
// case): its machine's, else the default's.
func (n *Netrc) For(host string) (login, password string, ok bool) {
	if n == nil {
		return "", "", false
	}
	host = strings.ToLower(host)
	for _, m := range n.machines {
		if m.host == host {
			return m.login, m.password, m.login != "" || m.password != ""
		}
	}
	if d := n.dflt; d != nil {
		return d.login, d.password, d.login != "" || d.password != ""
	}
	return "", "", false
}
