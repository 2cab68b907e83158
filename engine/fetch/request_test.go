package fetch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
