package fetch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

func TestParseHeaders(t *testing.T) {
	h, err := ParseHeaders([]string{"X-Team: blue", "accept-language:  de, en ", "X-Team: red", "User-Agent: Mirror/2"})
	require.NoError(t, err)
	assert.Equal(t, http.Header{"X-Team": {"blue", "red"}, "Accept-Language": {"de, en"}, "User-Agent": {"Mirror/2"}}, h)

	for _, tc := range []struct{ line, want string }{
		{"X-Team blue", "want Name: value"},
		{"X Team: blue", "is not a header name"},
		{": blue", "is not a header name"},
		{"X-Team: a\nb", "characters a header cannot"},
		{"Range: bytes=0-", "to resume"},
		{"accept-encoding: gzip", "as stored"},
		{"Host: other.example", "the URL's host"},
	} {
		_, err := ParseHeaders([]string{tc.line})
		require.Error(t, err, tc.line)
		assert.Contains(t, err.Error(), tc.want, tc.line)
	}
	// An error shows no secret.
	_, err = ParseHeaders([]string{"Authorization: Bearer s3cret\x7f"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cret")
}

func TestRedactHeader(t *testing.T) {
	for line, want := range map[string]string{
		"Authorization: Bearer abc": "Authorization: ***",
		"Cookie: sid=1":             "Cookie: ***",
		"X-Api-Key: k":              "X-Api-Key: ***",
		"X-Auth-Token: t":           "X-Auth-Token: ***",
		"X-Team: blue":              "X-Team: blue",
		"Accept-Language: de":       "Accept-Language: de",
	} {
		assert.Equal(t, want, RedactHeader(line))
	}
}

// N5: extra headers go out with the request, a User-Agent among them
// replaces Heed's, and Heed's own Range and Accept-Encoding stay its own.
func TestFetch_N5_ExtraHeadersSent(t *testing.T) {
	srv, seen := serveFile(t, body(100), `"v1"`, nil)
	e := newEnv(t, nil)
	h, err := ParseHeaders([]string{"X-Team: blue", "User-Agent: Mirror/2"})
	require.NoError(t, err)
	res := e.do(srv.URL+"/f.bin", func(r *Request) { r.Header = h })
	require.True(t, res.Done, "%v", res.Err)
	got := (*seen)[0]
	assert.Equal(t, "blue", got.Get("X-Team"))
	assert.Equal(t, []string{"Mirror/2"}, got.Values("User-Agent"))
	assert.Equal(t, "identity", got.Get("Accept-Encoding"))
}

func TestReadCookies(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	file := strings.Join([]string{
		"# Netscape HTTP Cookie File",
		"",
		".example.com\tTRUE\t/\tFALSE\t0\tsid\tabc",
		"#HttpOnly_shop.example.com\tFALSE\t/cart\tTRUE\t1900000000\tcart\t42",
		"old.example.org\tFALSE\t/\tFALSE\t1700000000\tgone\tx",
		"example.com\tFALSE\t/\tFALSE\t0\tempty", // the value's tab trimmed
	}, "\n")
	jar := newJar(t)
	n, err := readCookies(strings.NewReader(file), jar, now)
	require.NoError(t, err)
	assert.Equal(t, 3, n, "the expired cookie is left out")
	names := func(raw string) []string {
		var out []string
		for _, c := range jar.Cookies(mustURL(t, raw)) {
			out = append(out, c.Name+"="+c.Value)
		}
		return out
	}
	assert.ElementsMatch(t, []string{"sid=abc", "empty="}, names("http://example.com/"))
	assert.ElementsMatch(t, []string{"sid=abc"}, names("http://www.example.com/"), "a domain cookie reaches subdomains")
	assert.ElementsMatch(t, []string{"sid=abc", "cart=42"}, names("https://shop.example.com/cart/1"))
	assert.ElementsMatch(t, []string{"sid=abc"}, names("http://shop.example.com/cart/1"), "a secure cookie goes over https only")
	assert.Empty(t, names("http://old.example.org/"))

	for _, bad := range []string{"example.com\tTRUE\t/\n", "example.com\tTRUE\t/\tFALSE\tsoon\tn\tv\n", "\tTRUE\t/\tFALSE\t0\tn\tv\n"} {
		_, err := readCookies(strings.NewReader(bad), newJar(t), now)
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "line 1", "%q", bad)
	}
}

// N5: the cookies of a cookies.txt are sent to their host and no other,
// and what a server sets is sent back on the next request.
func TestFetch_N5_CookiesFromFileAndServer(t *testing.T) {
	var mu sync.Mutex
	var cookies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		cookies = append(cookies, r.Header.Get("Cookie"))
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "seen", Value: "1", Path: "/"})
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	host := mustURL(t, srv.URL).Hostname()
	path := filepath.Join(t.TempDir(), "cookies.txt")
	require.NoError(t, os.WriteFile(path, []byte(host+"\tFALSE\t/\tFALSE\t0\tsid\tabc\n"+
		"other.example\tFALSE\t/\tFALSE\t0\tnot\tfor-you\n"), 0o600))
	jar, n, err := ReadCookies(path)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	e := newEnv(t, func(c *Config) { c.Cookies = jar })
	require.True(t, e.do(srv.URL+"/a.txt", nil).Done)
	require.True(t, e.do(srv.URL+"/b.txt", nil).Done)
	assert.Equal(t, []string{"sid=abc", "sid=abc; seen=1"}, cookies)

	_, _, err = ReadCookies(filepath.Join(t.TempDir(), "missing.txt"))
	assert.ErrorContains(t, err, "cookies")
}

func TestParseNetrc(t *testing.T) {
	n, err := parseNetrc(`# logins
machine files.example login ann password "two words"
machine FILES.example login shadowed password no
macdef init
cd /pub
get x

machine api.example
	login bob
	password p\ass
default login anonymous password guest@
`)
	require.NoError(t, err)
	check := func(host, login, password string, ok bool) {
		t.Helper()
		l, p, found := n.For(host)
		assert.Equal(t, []any{login, password, ok}, []any{l, p, found}, host)
	}
	check("files.example", "ann", "two words", true)
	check("Files.Example", "ann", "two words", true)
	check("api.example", "bob", `p\ass`, true)
	check("else.example", "anonymous", "guest@", true)

	n, err = parseNetrc("machine a.example login x")
	require.NoError(t, err)
	_, _, ok := n.For("b.example")
	assert.False(t, ok, "no default: no login for another host")

	for _, bad := range []string{"login x", "machine", "machine a login", "machine a user x"} {
		_, err := parseNetrc(bad)
		assert.Error(t, err, bad)
	}
	missing, err := ReadNetrc(filepath.Join(t.TempDir(), "none"))
	require.NoError(t, err, "a missing netrc is no logins")
	_, _, ok = missing.For("a.example")
	assert.False(t, ok)
}

// N5: a netrc login is sent as Basic authorization over https, never over
// plain http, and never in place of the request's own Authorization.
func TestFetch_N5_NetrcOverHTTPSOnly(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, "ok")
	})
	tls := httptest.NewTLSServer(handler)
	defer tls.Close()
	plain := httptest.NewServer(handler)
	defer plain.Close()
	netrc, err := parseNetrc("default login ann password s3cret")
	require.NoError(t, err)
	e := newEnv(t, func(c *Config) {
		c.Transport = tls.Client().Transport
		c.Netrc = netrc
	})
	require.True(t, e.do(tls.URL+"/a.txt", nil).Done)
	require.True(t, e.do(plain.URL+"/b.txt", nil).Done)
	own := http.Header{"Authorization": {"Bearer mine"}}
	require.True(t, e.do(tls.URL+"/c.txt", func(r *Request) { r.Header = own }).Done)
	assert.Equal(t, []string{"Basic YW5uOnMzY3JldA==", "", "Bearer mine"}, auths)
}

// L2: a host's own bandwidth cap slows its download as the global one
// does, and with both the lower one governs.
func TestFetch_L2_HostBandwidthCap(t *testing.T) {
	for _, tc := range []struct {
		name         string
		global, host rate.Limit
	}{
		{"host only", 0, 100},
		{"host below global", 1000, 100},
		{"global below host", 100, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				data := body(16_000)
				instant := memTransport(func(r *http.Request) *http.Response {
					return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{},
						ContentLength: int64(len(data)), Body: io.NopCloser(strings.NewReader(data)), Request: r}
				})
				var global *rate.Limiter
				if tc.global > 0 {
					global = rate.NewLimiter(tc.global, 8000)
				}
				start := time.Now()
				f, _ := newBubbleFetcher(t, instant, global)
				res := f.Do(context.Background(), Request{URL: mustURL(t, "http://capped.example/f.bin"), Size: -1,
					Bandwidth: rate.NewLimiter(tc.host, 8000)}, nil)
				require.True(t, res.Done, "%v", res.Err)
				took := time.Since(start)
				// 16,000 bytes with a burst of 8,000 at 100 B/s: 80 s of
				// virtual time; at 1,000 B/s it would be 8 s.
				assert.GreaterOrEqual(t, took, 79*time.Second)
				assert.Less(t, took, 90*time.Second)
			})
		})
	}
}

func newJar(t *testing.T) http.CookieJar {
	t.Helper()
	jar, _, err := ReadCookies(os.DevNull)
	require.NoError(t, err)
	return jar
}
