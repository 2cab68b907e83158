package crawl

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func seeds(t *testing.T, ss ...string) []*url.URL {
	t.Helper()
	var us []*url.URL
	for _, s := range ss {
		us = append(us, mustParse(t, s))
	}
	return us
}

type scopeCase struct {
	name string
	url  string
	ok   bool
	why  string
}

func checkScope(t *testing.T, s *Scope, cases []scopeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := s.Allows(mustParse(t, tc.url))
			assert.Equal(t, tc.ok, ok, "why: %s", why)
			assert.Equal(t, tc.why, why)
		})
	}
}

func TestCrawl_W1_ParseMode(t *testing.T) {
	cases := []struct {
		name, in string
		want     Mode
	}{
		{"host", "host", ScopeHost},
		{"domain", "domain", ScopeDomain},
		{"prefix", "prefix", ScopePrefix},
		{"any case and spaces", " Domain ", ScopeDomain},
		{"empty is the default", "", ScopeHost},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMode(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, m)
			assert.NotEmpty(t, m.String())
		})
	}
	_, err := ParseMode("site")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"site"`)
	assert.Equal(t, "prefix", ScopePrefix.String())
}

func TestCrawl_W1_HostScope(t *testing.T) {
	s, err := NewScope(ScopeHost, seeds(t, "http://Example.com/start"), nil, nil)
	require.NoError(t, err)
	checkScope(t, s, []scopeCase{
		{"same host", "http://example.com/other", true, ""},
		{"case and default port", "HTTP://EXAMPLE.COM:80/x", true, ""},
		{"https is the same host key", "https://example.com/x", true, ""},
		{"subdomain is another host", "http://www.example.com/", false, "out of scope (host)"},
		{"other port is another host", "http://example.com:8080/", false, "out of scope (host)"},
		{"other host", "http://example.org/", false, "out of scope (host)"},
		{"not http", "ftp://example.com/", false, "not an http or https URL"},
		{"mailto", "mailto:a@example.com", false, "not an http or https URL"},
		{"bad port", "http://example.com:99999/", false, `invalid host: port "99999" of "example.com" is not a number 0…65535`},
	})
}

func TestCrawl_W1_HostScopeIDNAndIP(t *testing.T) {
	s, err := NewScope(ScopeHost, seeds(t, "http://Bücher.de/", "http://127.0.0.1:8080/", "http://[::1]/"), nil, nil)
	require.NoError(t, err)
	checkScope(t, s, []scopeCase{
		{"punycode of the seed", "http://xn--bcher-kva.de/a", true, ""},
		{"ip with its port", "http://127.0.0.1:8080/a", true, ""},
		{"ip on another port", "http://127.0.0.1:9090/a", false, "out of scope (host)"},
		{"ip without port", "http://127.0.0.1/a", false, "out of scope (host)"},
		{"ipv6", "http://[0::1]:80/a", true, ""},
	})
}

func TestCrawl_W1_GithubIOIsNotOneDomain(t *testing.T) {
	s, err := NewScope(ScopeDomain, seeds(t, "https://a.github.io/"), nil, nil)
	require.NoError(t, err)
	checkScope(t, s, []scopeCase{
		{"same project site", "https://a.github.io/page", true, ""},
		{"subdomain of the site", "https://x.a.github.io/", true, ""},
		{"another user's site", "https://b.github.io/", false, "out of scope (domain)"},
		{"the suffix itself", "https://github.io/", false, "out of scope (domain)"},
		{"github.com", "https://github.com/", false, "out of scope (domain)"},
	})
}

func TestCrawl_W1_DomainScope(t *testing.T) {
	s, err := NewScope(ScopeDomain, seeds(t, "http://www.example.co.uk/"), nil, nil)
	require.NoError(t, err)
	checkScope(t, s, []scopeCase{
		{"bare registrable domain", "http://example.co.uk/", true, ""},
		{"other subdomain", "https://shop.example.co.uk/", true, ""},
		{"any port", "http://example.co.uk:8080/", true, ""},
		{"other domain under the same suffix", "http://other.co.uk/", false, "out of scope (domain)"},
		{"same label other suffix", "http://example.com/", false, "out of scope (domain)"},
	})
}

func TestCrawl_W1_DomainScopeIPAndLocalhost(t *testing.T) {
	s, err := NewScope(ScopeDomain, seeds(t, "http://127.0.0.1:8080/", "http://localhost/"), nil, nil)
	require.NoError(t, err)
	checkScope(t, s, []scopeCase{
		{"ip is its own domain on any port", "http://127.0.0.1:9090/", true, ""},
		{"other ip", "http://127.0.0.2:8080/", false, "out of scope (domain)"},
		{"localhost", "http://localhost:3000/", true, ""},
	})
}

func TestCrawl_W1_PrefixScope(t *testing.T) {
	cases := []struct {
		name string
		seed string
		url  string
		ok   bool
	}{
		{"file seed allows its directory", "http://h/docs/guide.html", "http://h/docs/other.html", true},
		{"file seed allows subdirectories", "http://h/docs/guide.html", "http://h/docs/a/b", true},
		{"file seed refuses parent", "http://h/docs/guide.html", "http://h/index.html", false},
		{"directory seed allows below", "http://h/docs/", "http://h/docs/a", true},
		{"directory seed allows itself", "http://h/docs/", "http://h/docs/", true},
		{"directory seed refuses the name without slash", "http://h/docs/", "http://h/docs", false},
		{"directory seed refuses sibling", "http://h/docs/", "http://h/docs2/a", false},
		{"no trailing slash means the parent", "http://h/docs", "http://h/docs2/a", true},
		{"root seed allows all the host", "http://h", "http://h/anything", true},
		{"other host", "http://h/docs/", "http://g/docs/a", false},
		{"https and default port", "http://h/docs/", "https://H:443/docs/a", true},
		{"dot segments do not escape", "http://h/docs/", "http://h/docs/../secret", false},
		{"escapes normalised", "http://h/%7Euser/", "http://h/~user/a", true},
		{"seed query ignored", "http://h/docs/?a=/b/", "http://h/docs/x", true},
		{"path is case-sensitive", "http://h/docs/", "http://h/DOCS/a", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewScope(ScopePrefix, seeds(t, tc.seed), nil, nil)
			require.NoError(t, err)
			ok, why := s.Allows(mustParse(t, tc.url))
			assert.Equal(t, tc.ok, ok, why)
			if !tc.ok {
				assert.Equal(t, "out of scope (prefix)", why)
			}
		})
	}
}

func TestCrawl_W1_SeveralSeeds(t *testing.T) {
	s, err := NewScope(ScopeHost, seeds(t, "http://a.example/", "http://b.example/"), nil, nil)
	require.NoError(t, err)
	checkScope(t, s, []scopeCase{
		{"first seed's host", "http://a.example/x", true, ""},
		{"second seed's host", "http://b.example/x", true, ""},
		{"neither", "http://c.example/x", false, "out of scope (host)"},
	})
}

func TestCrawl_W1_IncludeExclude(t *testing.T) {
	s, err := NewScope(ScopeHost, seeds(t, "http://h/"), []string{`/docs/`, `\.pdf$`}, []string{`/private/`, `[?&]sid=`})
	require.NoError(t, err)
	checkScope(t, s, []scopeCase{
		{"matches first include", "http://h/docs/a", true, ""},
		{"matches second include", "http://h/files/a.pdf", true, ""},
		{"include sees the key: no fragment", "http://h/files/a.pdf#page=2", true, ""},
		{"matches no include", "http://h/blog/", false, "not matched by --include"},
		{"exclude wins over include", "http://h/docs/private/a", false, "excluded by --exclude /private/"},
		{"second exclude", "http://h/docs/a?x=1&sid=9", false, "excluded by --exclude [?&]sid="},
		{"mode first", "http://g/docs/a", false, "out of scope (host)"},
	})
}

func TestCrawl_W1_ExcludeOnly(t *testing.T) {
	s, err := NewScope(ScopeHost, seeds(t, "http://h/"), nil, []string{`^http://h/logout`})
	require.NoError(t, err)
	checkScope(t, s, []scopeCase{
		{"not excluded", "http://h/a", true, ""},
		{"anchored exclude on the key", "HTTP://H/logout?now", false, "excluded by --exclude ^http://h/logout"},
	})
}

func TestCrawl_W1_NewScopeErrors(t *testing.T) {
	cases := []struct {
		name             string
		mode             Mode
		seeds            []string
		include, exclude []string
		want             string
	}{
		{"no seeds", ScopeHost, nil, nil, nil, "no seed"},
		{"seed not http", ScopeHost, []string{"ftp://h/"}, nil, nil, `seed "ftp://h/" is not an http or https URL`},
		{"seed relative", ScopeHost, []string{"/a"}, nil, nil, "is not an http or https URL"},
		{"seed without host", ScopeHost, []string{"http:///a"}, nil, nil, "no host"},
		{"bad include named", ScopeHost, []string{"http://h/"}, []string{"ok", "(unclosed"}, nil, `--include "(unclosed"`},
		{"bad exclude named", ScopeHost, []string{"http://h/"}, nil, []string{"[z-a]"}, `--exclude "[z-a]"`},
		{"bad mode", Mode(9), []string{"http://h/"}, nil, nil, "unknown mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ss []*url.URL
			for _, s := range tc.seeds {
				ss = append(ss, mustParse(t, s))
			}
			_, err := NewScope(tc.mode, ss, tc.include, tc.exclude)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
