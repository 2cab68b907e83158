package crawl

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustParse(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err, "parse %q", s)
	return u
}

func TestCrawl_W3_Key(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"scheme and host lower-cased", "HTTP://Example.COM/Path", "http://example.com/Path"},
		{"path case kept", "http://example.com/A/b", "http://example.com/A/b"},
		{"idna to punycode", "http://Bücher.de/", "http://xn--bcher-kva.de/"},
		{"punycode stays", "http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"},
		{"http default port dropped", "http://example.com:80/", "http://example.com/"},
		{"https default port dropped", "https://example.com:443/", "https://example.com/"},
		{"port with leading zero", "http://example.com:0080/", "http://example.com/"},
		{"other port kept", "http://example.com:8080/", "http://example.com:8080/"},
		{"https on port 80 kept", "https://example.com:80/", "https://example.com:80/"},
		{"empty port dropped", "http://example.com:/a", "http://example.com/a"},
		{"trailing dot dropped", "http://example.com./a", "http://example.com/a"},
		{"fragment dropped", "http://example.com/a#top", "http://example.com/a"},
		{"dot segments", "http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"dot segments past root", "http://example.com/../../a", "http://example.com/a"},
		{"trailing dot segment keeps slash", "http://example.com/a/b/..", "http://example.com/a/"},
		{"escaped dots are dots", "http://example.com/a/%2e%2E/b", "http://example.com/b"},
		{"tilde escaped lower", "http://example.com/%7euser", "http://example.com/~user"},
		{"tilde escaped upper", "http://example.com/%7Euser", "http://example.com/~user"},
		{"tilde plain", "http://example.com/~user", "http://example.com/~user"},
		{"unreserved letter decoded", "http://example.com/%41%62", "http://example.com/Ab"},
		{"reserved escape kept and upper-cased", "http://example.com/a%2fb", "http://example.com/a%2Fb"},
		{"space escaped", "http://example.com/a%20b", "http://example.com/a%20b"},
		{"non-ascii escaped", "http://example.com/ü", "http://example.com/%C3%BC"},
		{"empty path is slash", "http://example.com", "http://example.com/"},
		{"empty path with query", "http://example.com?a=1", "http://example.com/?a=1"},
		{"query order kept", "http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"},
		{"query plus kept", "http://example.com/?q=a+b", "http://example.com/?q=a+b"},
		{"query escapes normalised", "http://example.com/?q=%7e%2f", "http://example.com/?q=~%2F"},
		{"query raw space escaped", "http://example.com/?q=a b", "http://example.com/?q=a%20b"},
		{"empty query dropped", "http://example.com/a?", "http://example.com/a"},
		{"userinfo kept", "http://User@Example.com/", "http://User@example.com/"},
		{"ipv4", "http://127.0.0.1:80/", "http://127.0.0.1/"},
		{"ipv6 canonical", "http://[0:0::1]:8080/", "http://[::1]:8080/"},
		{"invalid idna kept lower-cased", "http://XN--A.com/", "http://xn--a.com/"},
		{"opaque", "mailto:Someone@Example.com", "mailto:Someone@Example.com"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := mustParse(t, tc.in)
			before := u.String()
			assert.Equal(t, tc.want, Key(u))
			assert.Equal(t, before, u.String(), "Key must not change u")
		})
	}
	assert.Equal(t, "", Key(nil))
}

func TestCrawl_W3_SameKey(t *testing.T) {
	groups := []struct {
		name string
		urls []string
	}{
		{"idna", []string{"http://Bücher.de/", "http://xn--bcher-kva.de/", "HTTP://BÜCHER.DE:80"}},
		{"tilde", []string{"http://h/%7e", "http://h/~", "http://h/%7E"}},
		{"default port", []string{"https://h/", "https://h:443/", "https://H"}},
		{"fragment", []string{"http://h/a", "http://h/a#x", "http://h/a#"}},
		{"dot segments", []string{"http://h/a/./b/../c", "http://h/a/c", "http://h/a/b/../c"}},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			want := Key(mustParse(t, g.urls[0]))
			for _, s := range g.urls[1:] {
				assert.Equal(t, want, Key(mustParse(t, s)), s)
			}
		})
	}
}

func TestCrawl_W3_DifferentKey(t *testing.T) {
	pairs := []struct {
		name, a, b string
	}{
		{"query order matters", "http://h/?a=1&b=2", "http://h/?b=2&a=1"},
		{"path case matters", "http://h/A", "http://h/a"},
		{"scheme matters", "http://h/", "https://h/"},
		{"port matters", "http://h/", "http://h:8080/"},
		{"escaped slash is not a slash", "http://h/a%2Fb", "http://h/a/b"},
		{"plus is not space", "http://h/?q=a+b", "http://h/?q=a%20b"},
		{"trailing slash matters", "http://h/a", "http://h/a/"},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			assert.NotEqual(t, Key(mustParse(t, p.a)), Key(mustParse(t, p.b)))
		})
	}
}

func TestCrawl_W3_KeyIdempotent(t *testing.T) {
	for _, s := range []string{
		"HTTP://Bücher.DE:80/a/./b/../%7e?x=%2f#f",
		"http://[fe80::1%25en0]:8080/",
		"http://h/a%zz",
		"http://xn--a.com:99999/",
		"//host/path",
		"relative/a:b",
		"http:///only/path",
	} {
		u, err := url.Parse(s)
		if err != nil {
			continue
		}
		k := Key(u)
		u2, err := url.Parse(k)
		require.NoError(t, err, "key %q of %q", k, s)
		assert.Equal(t, k, Key(u2), s)
	}
}

func FuzzKey(f *testing.F) {
	for _, s := range []string{
		"http://Example.COM:80/a/./b/../c?q=1#f", "https://Bücher.de/%7e", "http://[::1]:8080/",
		"http://h/%2e%2e/x", "mailto:x@y", "//h/p", "a/b", "http://u:p@h/?a b", "http:///x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		k := Key(u)
		u2, err := url.Parse(k)
		if err != nil {
			t.Fatalf("Key(%q) = %q does not parse: %v", s, k, err)
		}
		if k2 := Key(u2); k2 != k {
			t.Fatalf("Key not idempotent for %q: %q then %q", s, k, k2)
		}
	})
}
