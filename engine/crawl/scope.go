package crawl

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// DefaultDepth is the --depth a crawl uses when none is given (W1): links
// up to five hops from a seed are followed. Depth 0 fetches the seeds only.
// The engine counts the depth; Scope does not know it.
const DefaultDepth = 5

// Mode says how far from its seeds a crawl may go (W1).
type Mode uint8

const (
	// ScopeHost follows links to the seed's host key only: same host name
	// (case, IDNA and trailing dots aside) and same port, http and https
	// alike ("http://example.com/" and "https://example.com/" share the
	// key "example.com"; "example.com:8080" is another host).
	ScopeHost Mode = iota
	// ScopeDomain follows links within the seed's registrable domain, by
	// the public suffix list including its private section: www.example.co.uk
	// and example.co.uk are one domain, a.github.io and b.github.io are two.
	// Ports do not matter. A host that has no registrable domain (an IP
	// address, "localhost", a public suffix itself) is its own domain.
	ScopeDomain
	// ScopePrefix follows links under the seed's URL up to its last "/",
	// like wget --no-parent: seed "http://h/docs/guide.html" allows
	// "http://h/docs/…", seed "http://h/docs" allows all of "http://h/".
	// The host key must match as in ScopeHost; the path is compared in key
	// form (Key), case-sensitively; the seed's query does not count.
	ScopePrefix
)

// String returns the mode's --scope word.
func (m Mode) String() string {
	switch m {
	case ScopeHost:
		return "host"
	case ScopeDomain:
		return "domain"
	case ScopePrefix:
		return "prefix"
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// ParseMode parses a --scope word: "host", "domain" or "prefix" (any case,
// surrounding spaces ignored). The empty string is ScopeHost, the default.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "host":
		return ScopeHost, nil
	case "domain":
		return ScopeDomain, nil
	case "prefix":
		return ScopePrefix, nil
	}
	return 0, fmt.Errorf("unknown scope %q (want host, domain or prefix)", s)
}

// Scope decides which discovered URLs a crawl follows (W1). Out-of-scope
// links are counted by the engine, never fetched.
//
// A URL is allowed when it is http or https, lies within the mode's reach
// of at least one seed, matches no --exclude expression and, if any
// --include expressions were given, matches at least one of them.
//
// Every decision depends on Key(u) only, so two spellings of one URL get
// one answer; in particular the expressions see the URL in key form:
// lower-case scheme and host, punycode, no default port, no fragment.
// A Scope is immutable and safe for concurrent use.
type Scope struct {
	mode     Mode
	hosts    map[string]bool // ScopeHost: host keys; ScopeDomain: domains
	prefixes []prefix        // ScopePrefix
	include  []*regexp.Regexp
	exclude  []*regexp.Regexp
}

// prefix is one seed's reach in ScopePrefix.
type prefix struct {
	host string // host key
	dir  string // key path up to and including its last "/"
}

// NewScope returns the scope of a crawl from seeds. Every seed must be an
// absolute http or https URL with a valid host. include and exclude are
// Go regular expressions (RE2 syntax), matched anywhere in the URL (anchor
// them with ^ and $ to match all of it); an error names the expression
// that does not compile.
func NewScope(mode Mode, seeds []*url.URL, include, exclude []string) (*Scope, error) {
	if mode > ScopePrefix {
		return nil, fmt.Errorf("scope: unknown mode %d", mode)
	}
	if len(seeds) == 0 {
		return nil, errors.New("scope: no seed URLs")
	}
	s := &Scope{mode: mode, hosts: make(map[string]bool)}
	for _, u := range seeds {
		if u == nil {
			return nil, errors.New("scope: nil seed URL")
		}
		if !isHTTP(u.Scheme) || u.Opaque != "" {
			return nil, fmt.Errorf("scope: seed %q is not an http or https URL", u.Redacted())
		}
		hk, err := hostKeyOf(u)
		if err != nil {
			return nil, fmt.Errorf("scope: seed %q: %v", u.Redacted(), err)
		}
		switch mode {
		case ScopeHost:
			s.hosts[hk] = true
		case ScopeDomain:
			name := hostName(u)
			s.hosts[domainOf(name)] = true
		case ScopePrefix:
			p := keyPath(u)
			if p == "" {
				p = "/"
			}
			s.prefixes = append(s.prefixes, prefix{host: hk, dir: p[:strings.LastIndexByte(p, '/')+1]})
		}
	}
	var err error
	if s.include, err = compileAll("--include", include); err != nil {
		return nil, err
	}
	if s.exclude, err = compileAll("--exclude", exclude); err != nil {
		return nil, err
	}
	return s, nil
}

func compileAll(flag string, exprs []string) ([]*regexp.Regexp, error) {
	res := make([]*regexp.Regexp, 0, len(exprs))
	for _, e := range exprs {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("scope: %s %q: %v", flag, e, err)
		}
		res = append(res, re)
	}
	return res, nil
}

// domainOf is the registrable domain (eTLD+1) of a canonical host name,
// or the name itself when it has none (IP address, a public suffix).
func domainOf(name string) string {
	if net.ParseIP(name) != nil {
		return name
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(name)
	if err != nil {
		return name
	}
	return d
}

// Mode returns the scope's mode.
func (s *Scope) Mode() Mode { return s.mode }

// Allows reports whether the crawl follows u, and if not, why, in words
// for the user: "not an http or https URL", "invalid host: …",
// "out of scope (host)" (or domain, prefix), "excluded by --exclude REGEX",
// "not matched by --include". The checks run in that order.
func (s *Scope) Allows(u *url.URL) (ok bool, why string) {
	if u == nil || !isHTTP(u.Scheme) || u.Opaque != "" {
		return false, "not an http or https URL"
	}
	hk, err := hostKeyOf(u)
	if err != nil {
		return false, "invalid host: " + strings.TrimPrefix(err.Error(), "host key: ")
	}
	if !s.reaches(u, hk) {
		return false, "out of scope (" + s.mode.String() + ")"
	}
	if len(s.exclude) == 0 && len(s.include) == 0 {
		return true, ""
	}
	k := Key(u)
	for _, re := range s.exclude {
		if re.MatchString(k) {
			return false, "excluded by --exclude " + re.String()
		}
	}
	if len(s.include) == 0 {
		return true, ""
	}
	for _, re := range s.include {
		if re.MatchString(k) {
			return true, ""
		}
	}
	return false, "not matched by --include"
}

// reaches applies the mode: is u, whose host key is hk, within reach of
// any seed?
func (s *Scope) reaches(u *url.URL, hk string) bool {
	switch s.mode {
	case ScopeHost:
		return s.hosts[hk]
	case ScopeDomain:
		name := hostName(u)
		return s.hosts[domainOf(name)]
	}
	p := keyPath(u)
	if p == "" {
		p = "/"
	}
	for _, pr := range s.prefixes {
		if pr.host == hk && strings.HasPrefix(p, pr.dir) {
			return true
		}
	}
	return false
}
