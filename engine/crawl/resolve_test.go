package crawl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCrawl_W2_NonHTTPSchemesDropped(t *testing.T) {
	p := extract(t, `
		<a href="javascript:void(0)">j</a>
		<a href=" JavaScript:alert(1)">j</a>
		<a href="mailto:a@example.com">m</a>
		<a href="tel:+331234">t</a>
		<img src="data:image/png;base64,iVBORw0KGgo=">
		<img srcset="data:image/png;base64,AAA 1x, /ok.png 2x">
		<a href="ftp://example.com/f">f</a>
		<a href="file:///etc/passwd">f</a>
		<a href="HTTPS://Example.com/kept">k</a>`, nil)
	assert.Equal(t, []string{"http://example.com/ok.png", "https://Example.com/kept"}, linkURLs(p))
}

func TestCrawl_W2_NotUTF8(t *testing.T) {
	// windows-1252: "café" is 63 61 66 E9; "€" is 80.
	body := "<meta charset=windows-1252><a href=\"/caf\xe9\">x</a><a href=\"/q?s=\xe9t\xe9 \x80\">y</a>" +
		"<a href=\"/ent&eacute;\">z</a><a href=\"http://caf\xe9.example/\">bad host</a>"
	p := extract(t, body, nil)
	assert.Equal(t, []string{
		"http://example.com/caf%E9",
		"http://example.com/q?s=%E9t%E9%20%80",
		"http://example.com/ent%C3%A9",
	}, linkURLs(p))
}

func TestCrawl_W2_ReferenceFixes(t *testing.T) {
	cases := []struct {
		name, href, want string
	}{
		{"surrounding spaces", "  /a  ", "http://example.com/a"},
		{"tabs and newlines removed", "/a\n/b\tc\r", "http://example.com/a/bc"},
		{"backslashes are slashes", `\a\b`, "http://example.com/a/b"},
		{"backslash in query kept", `/a?x=\y`, `http://example.com/a?x=\y`},
		{"lone percent", "/100%", "http://example.com/100%25"},
		{"bad escape", "/a%zz", "http://example.com/a%25zz"},
		{"space in path", "/a b", "http://example.com/a%20b"},
		{"space and quotes in query", `/s?q=a b"<>'`, "http://example.com/s?q=a%20b%22%3C%3E%27"},
		{"control in path", "/a\x01b", "http://example.com/a%01b"},
		{"same scheme without slashes is relative", "http:x", "http://example.com/dir/x"},
		{"same scheme with one slash is a path", "http:/x", "http://example.com/x"},
		{"three slashes", "http:///host.example/p", "http://host.example/p"},
		{"other scheme without slashes", "https:host.example/p", "https://host.example/p"},
		{"same scheme alone is the page", "http:", pageURL},
		{"idn host", "http://Bücher.de/", "http://B%C3%BCcher.de/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := linkURLs(extract(t, `<a href='`+strings.ReplaceAll(tc.href, "'", "&#39;")+`'>`, nil))
			assert.Equal(t, []string{tc.want}, got)
		})
	}
}

func TestCrawl_W2_InvalidLinksDropped(t *testing.T) {
	p := extract(t, `<a href="http://[::1">
		<a href="http://exa mple.com/">
		<a href="http://example.com:99999/">
		<a href="http://xn--a.com/">
		<a href="http://">`, nil)
	assert.Empty(t, p.Links)
}

func TestCrawl_W2_ResolveWithoutBase(t *testing.T) {
	cases := []struct {
		name, ref, want string // want "" for refused
	}{
		{"absolute", " http://h/a#f ", "http://h/a"},
		{"relative refused", "/a", ""},
		{"scheme-relative refused", "//h/a", ""},
		{"scheme without slashes is a host", "https:h/a", "https://h/a"},
		{"other scheme refused", "ftp://h/", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, ok := resolve(nil, tc.ref, nil)
			if tc.want == "" {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tc.want, u.String())
		})
	}
}
