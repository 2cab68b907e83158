package engine

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostKey_Words(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"upper case and default port", "HTTP://Example.COM:80/a", "example.com"},
		{"plain", "http://example.com/b", "example.com"},
		{"https default port", "https://example.com:443/", "example.com"},
		{"non-default port kept", "http://example.com:8080/x", "example.com:8080"},
		{"https on 80 keeps port", "https://example.com:80/", "example.com:80"},
		{"leading zero port", "http://example.com:0080/", "example.com"},
		{"idna to punycode", "https://Bücher.DE/x", "xn--bcher-kva.de"},
		{"already punycode", "https://xn--bcher-kva.de/", "xn--bcher-kva.de"},
		{"trailing dot", "http://example.com./", "example.com"},
		{"trailing dots", "http://example.com../", "example.com"},
		{"ipv4", "http://127.0.0.1:8080/", "127.0.0.1:8080"},
		{"ipv6 default port", "http://[::1]:80/", "[::1]"},
		{"ipv6 port", "http://[::1]:8080/", "[::1]:8080"},
		{"userinfo ignored", "http://user:pw@Example.com/", "example.com"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HostKey(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestHostKey_Errors(t *testing.T) {
	cases := []struct {
		name, in, wantSub string
	}{
		{"no host", "http:///path", "no host"},
		{"not a url", "http://[::1", "host key"},
		{"bad port", "http://example.com:99999/", "port"},
		{"invalid idna", "http://xn--a.com/", "invalid host name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := HostKey(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantSub)
		})
	}
	_, err := HostKeyOf(nil)
	assert.Error(t, err)
}

func TestHostKeyOf_SameAsHostKey(t *testing.T) {
	u, err := url.Parse("HTTPS://WWW.Example.org:443/q?x=1")
	require.NoError(t, err)
	k, err := HostKeyOf(u)
	require.NoError(t, err)
	assert.Equal(t, "www.example.org", k)
}
