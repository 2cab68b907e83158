package fetch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// N2, R2: a scheme-relative Location whose host ends in a stray colon after
// its port ("//127.0.0.1:PORT:/file") parses as a reference, and resolves
// against an http base to a URL whose text does not parse ("invalid port"):
// it is refused, not fetched with the colon trimmed.
func TestFetch_N2_RedirectToUnparsableHostRefused(t *testing.T) {
	e := newEnv(t, nil)
	var fetched int
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			w.Header().Set("Location", "//"+strings.TrimPrefix(ts.URL, "http://")+":/file")
			w.WriteHeader(http.StatusFound)
			return
		}
		fetched++
		io.WriteString(w, "data")
	}))
	defer ts.Close()

	// Followed as the package doc's loop does.
	user := mustURL(t, ts.URL+"/start")
	req := Request{URL: user, UserURL: user, Size: -1}
	var res got
	for {
		res = e.doReq(context.Background(), req, nil)
		if res.Redirect == nil {
			break
		}
		t.Logf("redirect target: Host %q, text %q", res.Redirect.Host, res.Redirect.String())
		req.URL, req.Hop = res.Redirect, req.Hop+1
	}
	t.Logf("hop %d: class %v done %v err %v", req.Hop, res.Class, res.Done, res.Err)
	assert.Equal(t, Refused, res.Class)
	assert.Zero(t, fetched, "the server was asked for /file")
}

// N3, F6: the User-Agent and Accept-Encoding values every request shares stay
// as they are across plain requests, one with userinfo (net/http's Client
// adds Authorization to a copy) and a resume (Range and If-Range set).
func TestFetch_N3_SharedHeaderValuesUntouched(t *testing.T) {
	e := newEnv(t, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, []string{"identity"}, r.Header["Accept-Encoding"])
		assert.Equal(t, []string{"Heed/0.1.0"}, r.Header["User-Agent"])
		io.WriteString(w, "data")
	}))
	defer ts.Close()
	for i := 0; i < 3; i++ {
		res := e.do(ts.URL+"/f", nil)
		require.Equal(t, OK, res.Class, "%v", res.Err)
	}
	// userinfo: net/http's Client forks the request to add Authorization
	withUser := strings.Replace(ts.URL, "http://", "http://u:p@", 1)
	res := e.do(withUser+"/g", nil)
	require.Equal(t, OK, res.Class, "%v", res.Err)
	// a resume: Range and If-Range are Set on the request's own map
	e.writePart("h.part", "da")
	res = e.do(ts.URL+"/h", func(r *Request) { r.Part, r.ETag, r.Size = "h.part", `"v1"`, 4 })
	require.Equal(t, OK, res.Class, "%v", res.Err)
	assert.Equal(t, []string{"identity"}, identity)
	assert.Equal(t, []string{"Heed/0.1.0"}, e.f.ua)
	assert.Equal(t, 1, cap(identity))
}

// G38, G39: whatever Location a redirect carries, Do never panics, and a
// target it hands back is an http(s) URL with a host key, no longer than
// MaxURLBytes, so the engine can neither loop on a URL it cannot key nor
// store a huge one; a refusal says why in a bounded message.
func FuzzRedirectLocation(f *testing.F) {
	for _, s := range []string{"/next", "http://127.0.0.2:99999/y", "http://:80/y", "http://-a-.example/y",
		"http://xn--a.example/y", "//h:80:/x", "ftp://x/y", "http://a..b/", "https://[::1]:443/x", "\x00", "http://\u00e9.example/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		tr := memTransport(func(r *http.Request) *http.Response {
			return &http.Response{StatusCode: 302, Status: "302 Found", Header: http.Header{"Location": {loc}},
				Body: io.NopCloser(strings.NewReader("")), Request: r}
		})
		f, err := New(Config{Dir: t.TempDir(), Transport: tr})
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		u, _ := url.Parse("http://start.example/a/b")
		res := f.Do(context.Background(), Request{URL: u, UserURL: u, Size: -1}, nil)
		if res.Redirect != nil {
			if n := len(res.Redirect.String()); n > MaxURLBytes {
				t.Fatalf("Location %q: a target of %d bytes", loc, n)
			}
			if _, err := HostKeyOf(res.Redirect); err != nil || !httpScheme(res.Redirect) {
				t.Fatalf("Location %q: target %q has no host key: %v", loc, res.Redirect, err)
			}
		}
		if res.Err != nil && len(res.Err.Error()) > MaxURLBytes+512 {
			t.Fatalf("Location %q: a %d-byte reason", loc, len(res.Err.Error()))
		}
	})
}
