package demo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// start runs cfg for the length of the test.
func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newClient is a plain client, as Heed's fetcher uses: no transparent
// decompression, no redirects needed.
func newClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// response is what one exchange gave.
type response struct {
	status int
	header http.Header
	body   []byte
	err    error // error reading the body, e.g. io.ErrUnexpectedEOF after a cut
}

func fetch(t *testing.T, c *http.Client, method, u string, hdr map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: body, err: err}
}

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// oneHost is a config with a single host of the given spec.
func oneHost(spec HostSpec, files, size int) Config {
	return Config{Hosts: []HostSpec{spec}, Files: files, FileSize: size, Seed: 42}
}

func TestStart_EachHostIsADistinctHostKey(t *testing.T) {
	s := start(t, DefaultConfig())
	hosts := s.Hosts()
	require.Len(t, hosts, 6)

	wantBehaviors := []Behavior{Healthy, Throttling, Flaky, Slow, Dropping, Quota}
	seen := map[string]bool{}
	for i, h := range hosts {
		assert.Equal(t, wantBehaviors[i], h.Behavior, h.Name)
		u, err := url.Parse(h.BaseURL)
		require.NoError(t, err)
		assert.Equal(t, "http", u.Scheme)
		assert.Equal(t, h.Addr, u.Host)
		ip := net.ParseIP(u.Hostname())
		require.NotNil(t, ip, h.BaseURL)
		assert.True(t, ip.IsLoopback(), "%s is not loopback", h.BaseURL)
		assert.False(t, seen[u.Host], "host key %s used twice", u.Host)
		seen[u.Host] = true
	}

	urls := s.URLs()
	assert.Len(t, urls, 6*60)
	assert.Equal(t, hosts[0].BaseURL+"/files/healthy-00000.bin", urls[0])
	assert.Equal(t, hosts[5].BaseURL+"/files/quota-00059.bin", urls[len(urls)-1])
}

func TestStart_RejectsBadConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
	}{
		{"no hosts", Config{Files: 1, FileSize: 1}},
		{"nameless host", oneHost(HostSpec{}, 1, 1)},
		{"duplicate name", Config{Hosts: []HostSpec{{Name: "a"}, {Name: "a"}}, Files: 1}},
		{"unknown behavior", oneHost(HostSpec{Name: "a", Behavior: Behavior(99)}, 1, 1)},
		{"negative size", oneHost(HostSpec{Name: "a"}, 1, -1)},
		{"unbindable explicit address", Config{Hosts: []HostSpec{{Name: "a"}}, Addr: func(int) string { return "192.0.2.1:0" }}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(tc.cfg)
			if s != nil {
				_ = s.Close()
			}
			assert.Error(t, err)
		})
	}
}

func TestListen_FallsBackToLocalhost(t *testing.T) {
	// 192.0.2.1 (TEST-NET-1) is never a local address, so binding it fails.
	ln, err := listen("192.0.2.1:0", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	host, _, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)

	_, err = listen("192.0.2.1:0", "")
	assert.Error(t, err, "without a fallback the failure is reported")
}

func TestHealthy_F7_BytesMatchExpectedSHA256(t *testing.T) {
	s := start(t, Config{Hosts: []HostSpec{{Name: "h"}}, Files: 20, FileSize: 1, MaxFileSize: 300 << 10, Seed: 3})
	c := newClient(t)
	for _, u := range s.URLs() {
		t.Run(u[strings.LastIndex(u, "/")+1:], func(t *testing.T) {
			r := fetch(t, c, http.MethodGet, u, nil)
			require.NoError(t, r.err)
			require.Equal(t, http.StatusOK, r.status)
			wantSum, wantSize := s.Expected(u)
			assert.Equal(t, strconv.FormatInt(wantSize, 10), r.header.Get("Content-Length"))
			assert.Len(t, r.body, int(wantSize))
			assert.Equal(t, wantSum, sumHex(r.body))
			assert.Equal(t, "application/octet-stream", r.header.Get("Content-Type"))
			assert.Empty(t, r.header.Get("Content-Encoding"), "F6: bytes go out as they are")

			etag := r.header.Get("ETag")
			assert.Regexp(t, `^"[0-9a-f]+"$`, etag, "strong ETag")
			lm, err := http.ParseTime(r.header.Get("Last-Modified"))
			require.NoError(t, err, "Last-Modified must parse")
			assert.False(t, lm.IsZero())

			head := fetch(t, c, http.MethodHead, u, nil)
			assert.Equal(t, http.StatusOK, head.status)
			assert.Equal(t, r.header.Get("Content-Length"), head.header.Get("Content-Length"))
			assert.Equal(t, etag, head.header.Get("ETag"))
			assert.Empty(t, head.body)
		})
	}
}

func TestExpected_UnknownURLs(t *testing.T) {
	s := start(t, oneHost(HostSpec{Name: "h"}, 3, 100))
	base := s.Hosts()[0].BaseURL
	cases := []struct{ name, url string }{
		{"past the last file", base + "/files/h-00003.bin"},
		{"other spelling", base + "/files/h-1.bin"},
		{"another host's name", base + "/files/g-00000.bin"},
		{"index page", base + "/"},
		{"other host", "http://127.0.0.1:1/files/h-00000.bin"},
		{"not a URL", "::"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sum, size := s.Expected(tc.url)
			assert.Empty(t, sum)
			assert.EqualValues(t, -1, size)
		})
	}
	c := newClient(t)
	assert.Equal(t, http.StatusNotFound, fetch(t, c, http.MethodGet, base+"/files/h-1.bin", nil).status)
	assert.Equal(t, http.StatusNotFound, fetch(t, c, http.MethodGet, base+"/files/h-00003.bin", nil).status)
	assert.Equal(t, http.StatusMethodNotAllowed, fetch(t, c, http.MethodPost, base+"/files/h-00000.bin", nil).status)
	assert.Equal(t, http.StatusOK, fetch(t, c, http.MethodGet, base+"/files/h-00002.bin", nil).status)
}

func TestExpected_SameSeedSameBytesAcrossRuns(t *testing.T) {
	cfg := oneHost(HostSpec{Name: "h"}, 2, 5000)
	a := start(t, cfg)
	b := start(t, cfg)
	cfg.Seed++
	other := start(t, cfg)

	ua, ub, uo := a.URLs()[1], b.URLs()[1], other.URLs()[1]
	require.NotEqual(t, ua, ub, "two servers must not share a port")
	sa, _ := a.Expected(ua)
	sb, _ := b.Expected(ub)
	so, _ := other.Expected(uo)
	assert.Equal(t, sa, sb)
	assert.NotEqual(t, sa, so)
	r := fetch(t, newClient(t), http.MethodGet, ub, nil)
	assert.Equal(t, sa, sumHex(r.body))
}

func TestRange_F5_ResumeWithIfRange(t *testing.T) {
	s := start(t, oneHost(HostSpec{Name: "h"}, 1, 100_000))
	u := s.URLs()[0]
	c := newClient(t)
	full := fetch(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, full.status)
	etag := full.header.Get("ETag")
	lastMod := full.header.Get("Last-Modified")
	require.Regexp(t, `^"[0-9a-f]+"$`, etag, "If-Range needs a strong ETag")
	require.NotEmpty(t, lastMod)
	size := len(full.body)

	cases := []struct {
		name       string
		hdr        map[string]string
		wantStatus int
		wantRange  string // Content-Range
		wantBody   []byte
	}{
		{"range with matching ETag", map[string]string{"Range": "bytes=40000-", "If-Range": etag},
			http.StatusPartialContent, fmt.Sprintf("bytes 40000-%d/%d", size-1, size), full.body[40000:]},
		{"range with matching Last-Modified", map[string]string{"Range": "bytes=12345-", "If-Range": lastMod},
			http.StatusPartialContent, fmt.Sprintf("bytes 12345-%d/%d", size-1, size), full.body[12345:]},
		{"last byte", map[string]string{"Range": fmt.Sprintf("bytes=%d-", size-1), "If-Range": etag},
			http.StatusPartialContent, fmt.Sprintf("bytes %d-%d/%d", size-1, size-1, size), full.body[size-1:]},
		{"stale ETag gives the whole file", map[string]string{"Range": "bytes=40000-", "If-Range": `"stale"`},
			http.StatusOK, "", full.body},
		{"range past the end", map[string]string{"Range": fmt.Sprintf("bytes=%d-", size), "If-Range": etag},
			http.StatusRequestedRangeNotSatisfiable, fmt.Sprintf("bytes */%d", size), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := fetch(t, c, http.MethodGet, u, tc.hdr)
			require.NoError(t, r.err)
			assert.Equal(t, tc.wantStatus, r.status)
			assert.Equal(t, tc.wantRange, r.header.Get("Content-Range"))
			if tc.wantBody != nil {
				assert.Equal(t, strconv.Itoa(len(tc.wantBody)), r.header.Get("Content-Length"))
				assert.Equal(t, sumHex(tc.wantBody), sumHex(r.body))
			}
		})
	}
}

func TestThrottling_G8_EveryNth429WithParseableRetryAfter(t *testing.T) {
	spec := HostSpec{Name: "t", Behavior: Throttling, ThrottleEvery: 3, DateEvery: 2, RetryAfter: 2 * time.Second}
	s := start(t, oneHost(spec, 4, 2000))
	c := newClient(t)
	u := s.URLs()[1]
	wantSum, _ := s.Expected(u)

	var dates, deltas int
	for n := 1; n <= 12; n++ {
		before := time.Now()
		r := fetch(t, c, http.MethodGet, u, nil)
		require.NoError(t, r.err)
		if n%3 != 0 {
			assert.Equal(t, http.StatusOK, r.status, "request %d", n)
			assert.Equal(t, wantSum, sumHex(r.body))
			assert.Empty(t, r.header.Get("Retry-After"))
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, r.status, "request %d", n)
		ra := r.header.Get("Retry-After")
		require.NotEmpty(t, ra, "429 must carry Retry-After")
		if secs, err := strconv.Atoi(ra); err == nil {
			deltas++
			assert.Equal(t, 2, secs)
		} else {
			dates++
			when, err := http.ParseTime(ra)
			require.NoError(t, err, "Retry-After %q is neither seconds nor an HTTP-date", ra)
			assert.Equal(t, http.TimeFormat, "Mon, 02 Jan 2006 15:04:05 GMT")
			assert.True(t, strings.HasSuffix(ra, " GMT"))
			// A date is never earlier than the wait it stands for (it is
			// rounded up), measured from before the request was sent.
			assert.False(t, when.Before(before.Add(2*time.Second).Truncate(time.Second)), "date %s too early", ra)
		}
	}
	assert.Equal(t, 2, deltas, "every other 429 uses delta-seconds")
	assert.Equal(t, 2, dates, "every other 429 uses an HTTP-date")
	assert.EqualValues(t, 4, s.Stats()[0].Throttled)
}

func TestThrottling_FractionMode(t *testing.T) {
	spec := HostSpec{Name: "t", Behavior: Throttling, ThrottleFraction: 0.5}
	s := start(t, oneHost(spec, 1, 10))
	c := newClient(t)
	counts := map[int]int{}
	for range 200 {
		r := fetch(t, c, http.MethodHead, s.URLs()[0], nil)
		counts[r.status]++
		if r.status == http.StatusTooManyRequests {
			assert.Equal(t, "2", r.header.Get("Retry-After"), "default RetryAfter is 2s")
		}
	}
	assert.Equal(t, 200, counts[http.StatusOK]+counts[http.StatusTooManyRequests], "only 200 and 429: %v", counts)
	assert.InDelta(t, 100, counts[http.StatusTooManyRequests], 40, "about half throttled: %v", counts)
}

func TestFlaky_503SomeWithRetryAfter(t *testing.T) {
	spec := HostSpec{Name: "f", Behavior: Flaky, FailFraction: 0.3, RetryAfterFraction: 0.5, RetryAfter: 1500 * time.Millisecond}
	s := start(t, oneHost(spec, 5, 3000))
	c := newClient(t)
	var ok, failed, withRA int
	for i := range 300 {
		u := s.URLs()[i%5]
		r := fetch(t, c, http.MethodGet, u, nil)
		require.NoError(t, r.err)
		switch r.status {
		case http.StatusOK:
			ok++
			want, _ := s.Expected(u)
			assert.Equal(t, want, sumHex(r.body))
		case http.StatusServiceUnavailable:
			failed++
			if ra := r.header.Get("Retry-After"); ra != "" {
				withRA++
				assert.Equal(t, "2", ra, "1.5s rounds up to 2 whole seconds")
			}
		default:
			t.Errorf("unexpected status %d", r.status)
		}
	}
	assert.Equal(t, 300, ok+failed)
	assert.InDelta(t, 90, failed, 40, "about 30%% fail")
	assert.Greater(t, withRA, 0, "some 503s carry Retry-After")
	assert.Less(t, withRA, failed, "some 503s carry none")
	assert.EqualValues(t, failed, s.Stats()[0].Failed)
}

func TestFlaky_NeverRetryAfter(t *testing.T) {
	spec := HostSpec{Name: "f", Behavior: Flaky, FailFraction: 1, RetryAfterFraction: -1}
	s := start(t, oneHost(spec, 1, 10))
	c := newClient(t)
	for range 20 {
		r := fetch(t, c, http.MethodGet, s.URLs()[0], nil)
		assert.Equal(t, http.StatusServiceUnavailable, r.status)
		assert.Empty(t, r.header.Get("Retry-After"))
	}
}

func TestDropping_F5_CutBodyResumesByteExact(t *testing.T) {
	spec := HostSpec{Name: "d", Behavior: Dropping, DropFraction: 1} // cut every body
	s := start(t, oneHost(spec, 1, 200_000))
	u := s.URLs()[0]
	wantSum, size := s.Expected(u)
	c := newClient(t)

	first := fetch(t, c, http.MethodGet, u, nil)
	require.Equal(t, http.StatusOK, first.status)
	require.ErrorIs(t, first.err, io.ErrUnexpectedEOF, "the body must be cut short")
	assert.Equal(t, strconv.FormatInt(size, 10), first.header.Get("Content-Length"), "full length announced")
	require.Greater(t, len(first.body), 0, "cut mid-way, not before the body")
	require.Less(t, int64(len(first.body)), size)
	etag := first.header.Get("ETag")
	require.Regexp(t, `^"[0-9a-f]+"$`, etag, "resume needs a strong ETag")

	got := first.body
	for rounds := 0; int64(len(got)) < size; rounds++ {
		require.Less(t, rounds, 100, "resume must make progress")
		r := fetch(t, c, http.MethodGet, u, map[string]string{
			"Range": fmt.Sprintf("bytes=%d-", len(got)), "If-Range": etag,
		})
		require.Equal(t, http.StatusPartialContent, r.status)
		assert.Equal(t, fmt.Sprintf("bytes %d-%d/%d", len(got), size-1, size), r.header.Get("Content-Range"))
		if int64(len(got)) < size-1 {
			assert.ErrorIs(t, r.err, io.ErrUnexpectedEOF, "every body of 2+ bytes is cut")
		}
		require.NotEmpty(t, r.body)
		got = append(got, r.body...)
	}
	assert.EqualValues(t, size, len(got))
	assert.Equal(t, wantSum, sumHex(got), "resumed pieces must join to the exact file")

	var cut int
	for _, e := range s.Log() {
		if e.Cut {
			cut++
			assert.Less(t, e.Bytes, size)
		}
	}
	assert.Greater(t, cut, 1)
	assert.EqualValues(t, cut, s.Stats()[0].Cut)
}

func TestDropping_CutsAFraction(t *testing.T) {
	spec := HostSpec{Name: "d", Behavior: Dropping} // default 25 %
	s := start(t, oneHost(spec, 10, 20_000))
	c := newClient(t)
	var cut int
	for i := range 200 {
		u := s.URLs()[i%10]
		r := fetch(t, c, http.MethodGet, u, nil)
		require.Equal(t, http.StatusOK, r.status)
		want, size := s.Expected(u)
		if r.err != nil {
			require.ErrorIs(t, r.err, io.ErrUnexpectedEOF)
			assert.Less(t, int64(len(r.body)), size)
			cut++
			continue
		}
		assert.Equal(t, want, sumHex(r.body))
	}
	assert.InDelta(t, 50, cut, 30, "about a quarter cut")
	// HEAD has no body to cut.
	for range 20 {
		assert.Equal(t, http.StatusOK, fetch(t, c, http.MethodHead, s.URLs()[0], nil).status)
	}
}

func TestSlow_TricklesBodyIntact(t *testing.T) {
	const rate = 128 << 10
	spec := HostSpec{Name: "s", Behavior: Slow, Rate: rate}
	s := start(t, oneHost(spec, 1, 48<<10))
	u := s.URLs()[0]
	c := newClient(t)

	began := time.Now()
	r := fetch(t, c, http.MethodGet, u, nil)
	elapsed := time.Since(began)
	require.NoError(t, r.err)
	require.Equal(t, http.StatusOK, r.status)
	want, size := s.Expected(u)
	assert.Equal(t, want, sumHex(r.body))
	// Loose, one-sided: pacing makes the server no faster than its rate
	// (the first chunk goes at once), whatever the machine's load.
	minTime := time.Duration(float64(size-rate/16) / rate * float64(time.Second))
	assert.GreaterOrEqual(t, elapsed, minTime/2, "body came faster than the rate allows")

	// Resuming from a slow host works like any other.
	part := fetch(t, c, http.MethodGet, u, map[string]string{"Range": "bytes=40000-", "If-Range": r.header.Get("ETag")})
	assert.Equal(t, http.StatusPartialContent, part.status)
	assert.Equal(t, sumHex(r.body[40000:]), sumHex(part.body))
}

func TestClose_FreesPortsAndStopsSlowBodies(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Hosts[3].Rate = 1024 // a 4+ KiB file takes seconds: Close must not wait for it
	s, err := Start(cfg)
	require.NoError(t, err)
	addrs := []string{}
	for _, h := range s.Hosts() {
		addrs = append(addrs, h.Addr)
	}

	c := newClient(t)
	resp, err := c.Get(s.URLs()[3*60])
	require.NoError(t, err)
	defer resp.Body.Close()
	buf := make([]byte, 10)
	_, err = io.ReadFull(resp.Body, buf) // the slow body has begun
	require.NoError(t, err)

	require.NoError(t, s.Close())
	assert.NoError(t, s.Close(), "a second Close is harmless")

	_, err = io.ReadAll(resp.Body)
	assert.Error(t, err, "the slow body is cut by Close")
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if assert.NoError(t, err, "port %s still held after Close", a) {
			_ = ln.Close()
		}
	}
	_, err = c.Get(s.URLs()[0])
	assert.Error(t, err)
}

func TestIndex_ListsEveryFile(t *testing.T) {
	s := start(t, Config{Hosts: []HostSpec{{Name: "<idx>", Behavior: Throttling, ThrottleEvery: 1}}, Files: 7, FileSize: 10})
	base := s.Hosts()[0].BaseURL
	r := fetch(t, newClient(t), http.MethodGet, base+"/", nil)
	require.Equal(t, http.StatusOK, r.status, "the index is never throttled")
	assert.Equal(t, "text/html; charset=utf-8", r.header.Get("Content-Type"))
	page := string(r.body)
	assert.Contains(t, page, "&lt;idx&gt;", "host name is escaped")
	assert.NotContains(t, page, "<idx>")
	for _, u := range s.URLs() {
		assert.Contains(t, page, `href="`+strings.TrimPrefix(u, base)+`"`)
	}
}

func TestLog_RecordsWhatEachHostReceived(t *testing.T) {
	cfg := Config{
		Hosts: []HostSpec{
			{Name: "ok"},
			{Name: "busy", Behavior: Throttling, ThrottleEvery: 1, RetryAfter: 3 * time.Second},
		},
		Files: 2, FileSize: 500,
	}
	s := start(t, cfg)
	c := newClient(t)
	okURL, busyURL := s.URLs()[1], s.URLs()[2]
	fetch(t, c, http.MethodGet, okURL, map[string]string{"Range": "bytes=100-", "If-Range": `"x"`})
	fetch(t, c, http.MethodGet, busyURL, nil)

	log := s.Log()
	require.Len(t, log, 2)
	byHost := map[string]Request{}
	for _, e := range log {
		byHost[e.Host] = e
		assert.False(t, e.Time.IsZero())
	}
	assert.Equal(t, Request{
		Time: byHost["ok"].Time, Host: "ok", Method: "GET", Path: "/files/ok-00001.bin",
		Range: "bytes=100-", IfRange: `"x"`, Status: http.StatusOK, Bytes: 500,
	}, byHost["ok"])
	busy := byHost["busy"]
	assert.Equal(t, http.StatusTooManyRequests, busy.Status)
	assert.Equal(t, "3", busy.RetryAfter)
	assert.Equal(t, "/files/busy-00000.bin", busy.Path)

	st := s.Stats()
	assert.EqualValues(t, 1, st[0].Requests)
	assert.EqualValues(t, 500, st[0].Bytes)
	assert.EqualValues(t, 1, st[1].Throttled)
}

func TestFast_KeepsCountersNotLog(t *testing.T) {
	s := start(t, FastConfig(2, 3, 1024))
	c := newClient(t)
	for _, u := range s.URLs() {
		r := fetch(t, c, http.MethodGet, u, nil)
		require.Equal(t, http.StatusOK, r.status)
		want, _ := s.Expected(u)
		assert.Equal(t, want, sumHex(r.body))
	}
	assert.Empty(t, s.Log())
	assert.EqualValues(t, 6, s.Requests())
	assert.EqualValues(t, 2, s.Conns(), "one kept-alive connection a host")
	for _, h := range s.Hosts() {
		assert.Equal(t, Healthy, h.Behavior)
	}
}

func TestBehavior_StringRoundTrips(t *testing.T) {
	for _, b := range []Behavior{Healthy, Throttling, Flaky, Slow, Dropping} {
		got, err := ParseBehavior(strings.ToUpper(b.String()))
		require.NoError(t, err)
		assert.Equal(t, b, got)
	}
	_, err := ParseBehavior("grumpy")
	assert.Error(t, err)
	assert.Equal(t, "behavior(9)", Behavior(9).String())
}

// G12: a Quota host serves its quota per window and no more, says so on
// every response in the form asked for, and answers 429 past it.
func TestQuota_G12_EnforcedAndSaid(t *testing.T) {
	for _, form := range []string{"", "x"} {
		t.Run("form "+form, func(t *testing.T) {
			s := start(t, oneHost(HostSpec{Name: "q", Behavior: Quota, QuotaLimit: 3, QuotaWindow: time.Hour,
				QuotaForm: form, ClockAhead: time.Hour}, 5, 10))
			var codes []int
			for _, u := range s.URLs() {
				resp, err := http.Get(u)
				require.NoError(t, err)
				resp.Body.Close()
				codes = append(codes, resp.StatusCode)
				if form == "x" {
					assert.Equal(t, "3", resp.Header.Get("X-RateLimit-Limit"))
					assert.NotEmpty(t, resp.Header.Get("X-RateLimit-Reset"))
					date, err := http.ParseTime(resp.Header.Get("Date"))
					require.NoError(t, err)
					assert.Greater(t, date.Sub(time.Now()), 59*time.Minute, "the server's clock runs an hour ahead")
				} else {
					assert.Equal(t, `"demo";q=3;w=3600`, resp.Header.Get("RateLimit-Policy"))
					assert.NotEmpty(t, resp.Header.Get("RateLimit"))
				}
			}
			assert.Equal(t, []int{200, 200, 200, 429, 429}, codes)
		})
	}
}
