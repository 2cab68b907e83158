package fetch

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
)

// trickle is a response body that yields one byte every gap, and after
// stallAfter bytes (when ≥ 0) stops sending until the request is cancelled.
type trickle struct {
	ctx        context.Context
	data       string
	gap        time.Duration
	stallAfter int
	sent       int
}

func (b *trickle) Read(p []byte) (int, error) {
	if b.sent == len(b.data) {
		return 0, io.EOF
	}
	wait := b.gap
	if b.stallAfter >= 0 && b.sent >= b.stallAfter {
		wait = 365 * 24 * time.Hour
	}
	select {
	case <-time.After(wait):
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	}
	p[0] = b.data[b.sent]
	b.sent++
	return 1, nil
}

func (b *trickle) Close() error { return nil }

// memTransport answers every request in memory (usable inside a synctest
// bubble, where loopback servers hang).
type memTransport func(*http.Request) *http.Response

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) { return m(r), nil }

func trickleServer(data string, gap time.Duration, stallAfter int) memTransport {
	return func(r *http.Request) *http.Response {
		return &http.Response{
			StatusCode:    200,
			Status:        "200 OK",
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        http.Header{"Content-Length": {strconv.Itoa(len(data))}},
			ContentLength: int64(len(data)),
			Body:          &trickle{ctx: r.Context(), data: data, gap: gap, stallAfter: stallAfter},
			Request:       r,
		}
	}
}

// newBubbleFetcher makes a Fetcher with the default N1 idle timeout (60 s)
// over tr, in a fresh folder.
func newBubbleFetcher(t *testing.T, tr http.RoundTripper, bw *rate.Limiter) (*Fetcher, string) {
	dir := t.TempDir()
	f, err := New(Config{Dir: dir, Transport: tr, Bandwidth: bw, FreeSpace: func() (int64, error) { return 1 << 30, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f, dir
}

func TestFetch_E27_SlowTrickleSurvivesIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		data := body(40) // 40 bytes, one every 10 s: 400 s in all, far beyond the 60 s idle timeout
		f, dir := newBubbleFetcher(t, trickleServer(data, 10*time.Second, -1), nil)
		res := f.Do(context.Background(), Request{URL: mustURL(t, "http://slow.example/f.bin"), Size: -1}, nil)
		require.True(t, res.Done, "%v", res.Err)
		assert.Equal(t, "f.bin", res.Name)
		got, err := os.ReadFile(filepath.Join(dir, res.Part)) // complete, synced, to be named by the engine
		require.NoError(t, err)
		assert.Equal(t, data, string(got))
	})
}

func TestFetch_E27_StalledTrickleKilledByIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, dir := newBubbleFetcher(t, trickleServer(body(40), 10*time.Second, 5), nil)
		res := f.Do(context.Background(), Request{URL: mustURL(t, "http://slow.example/f.bin"), Size: -1}, nil)
		assert.Equal(t, Timeout, res.Class, "%v", res.Err)
		assert.ErrorIs(t, res.Err, errIdle)
		assert.True(t, res.Retryable)
		assert.Equal(t, int64(5), res.Bytes)
		got, err := os.ReadFile(filepath.Join(dir, "f.bin.part"))
		require.NoError(t, err)
		assert.Equal(t, body(5), string(got))
	})
}

func TestFetch_L2_N1_BandwidthWaitIsNotIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The server sends at once, but the global cap allows 100 bytes/s with
		// a burst of 8000: the second 8000-byte chunk waits 80 s on our side,
		// longer than the 60 s idle timeout, which must not fire because the
		// server is not idle.
		data := body(16_000)
		instant := memTransport(func(r *http.Request) *http.Response {
			return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{},
				ContentLength: int64(len(data)), Body: io.NopCloser(strings.NewReader(data)), Request: r}
		})
		bw := rate.NewLimiter(100, 8000)
		start := time.Now()
		f, dir := newBubbleFetcher(t, instant, bw)
		res := f.Do(context.Background(), Request{URL: mustURL(t, "http://capped.example/f.bin"), Size: -1}, nil)
		require.True(t, res.Done, "%v", res.Err)
		assert.Equal(t, "f.bin", res.Name)
		got, err := os.ReadFile(filepath.Join(dir, res.Part)) // complete, synced, to be named by the engine
		require.NoError(t, err)
		assert.Equal(t, data, string(got))
		// Virtual time, not wall time: proves the cap was applied.
		assert.GreaterOrEqual(t, time.Since(start), 79*time.Second)
	})
}
