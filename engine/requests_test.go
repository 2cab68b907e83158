package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/publicsuffix"

	"heed/engine"
	"heed/engine/fetch"
)

// headerLog serves "ok" and remembers the headers of every request, by path.
type headerLog struct {
	mu   sync.Mutex
	seen map[string]http.Header
}

func (l *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	if l.seen == nil {
		l.seen = map[string]http.Header{}
	}
	l.seen[r.Host+r.URL.Path] = r.Header.Clone()
	l.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "set", Value: "by-server-s3cret", Path: "/"})
	io.WriteString(w, "ok")
}

func (l *headerLog) of(host, path string) http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[host+path]
}

// N5: a host's extra headers go with its requests and with no other
// host's, a redirect's next hop included; cookies from a cookie jar reach
// their host; and none of those secrets is written to the history, the
// host's timeline or the log.
func TestEngine_N5_HostHeadersAndCookiesStayWithTheirHost(t *testing.T) {
	log := &headerLog{}
	otherSrv := httptest.NewServer(log)
	defer otherSrv.Close()
	// Cookies keep no port apart (RFC 6265): the other host has another name.
	other := struct{ URL string }{strings.Replace(otherSrv.URL, "127.0.0.1", "localhost", 1)}
	mux := http.NewServeMux()
	mux.Handle("/", log)
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/landed.txt", http.StatusFound)
	})
	own := httptest.NewServer(mux)
	defer own.Close()
	ownHost, otherHost := hostOf(t, own.URL), hostOf(t, other.URL)

	jar, err := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	require.NoError(t, err)
	ownURL, _ := url.Parse(own.URL)
	jar.SetCookies(ownURL, []*http.Cookie{{Name: "sid", Value: "c00kie-s3cret"}})
	var logged bytes.Buffer
	r := newRig(t, engine.Options{Fetch: fetch.Config{Cookies: jar}, Log: slog.New(slog.NewTextHandler(&logged, nil))})

	tun := fast()
	tun.Headers = []string{"X-Team: blue", "Authorization: Bearer token-s3cret"}
	tun.BytesPerSec = 10 << 20
	require.NoError(t, r.eng.SetHostTunables(context.Background(), ownHost, tun))
	r.add(own.URL+"/a.txt", own.URL+"/away")
	r.runIdle()

	a := log.of(ownHost, "/a.txt")
	require.NotNil(t, a)
	assert.Equal(t, "blue", a.Get("X-Team"))
	assert.Equal(t, "Bearer token-s3cret", a.Get("Authorization"))
	assert.Contains(t, a.Get("Cookie"), "sid=c00kie-s3cret")
	landed := log.of(otherHost, "/landed.txt")
	require.NotNil(t, landed, "the redirect was followed")
	assert.Empty(t, landed.Get("X-Team"), "another host gets none of this host's headers")
	assert.Empty(t, landed.Get("Authorization"))
	assert.NotContains(t, landed.Get("Cookie"), "c00kie")

	var written bytes.Buffer
	hist := r.history(engine.HistoryQuery{})
	require.NotEmpty(t, hist)
	require.NoError(t, json.NewEncoder(&written).Encode(hist))
	for _, h := range []string{ownHost, otherHost} {
		events, err := r.db.HostEvents(context.Background(), h, 0)
		require.NoError(t, err)
		require.NoError(t, json.NewEncoder(&written).Encode(events))
	}
	assert.Contains(t, written.String(), "Authorization: ***", "the retune is on the timeline, masked")
	written.Write(logged.Bytes())
	for _, secret := range []string{"token-s3cret", "c00kie-s3cret", "by-server-s3cret"} {
		assert.NotContains(t, written.String(), secret)
	}
}
