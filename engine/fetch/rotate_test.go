package fetch

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withTransportDials sets transportDials to n for the test.
func withTransportDials(t *testing.T, n int64) {
	prev := transportDials
	transportDials = n
	t.Cleanup(func() { transportDials = prev })
}

// countingHosts starts n hosts that answer "x" after delay, counting the
// connections they see opened and closed.
func countingHosts(t *testing.T, n int, delay time.Duration, opened, closed *atomic.Int64) []*httptest.Server {
	hosts := make([]*httptest.Server, n)
	for i := range hosts {
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(delay)
			io.WriteString(w, "x")
		}))
		ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				opened.Add(1)
			case http.StateClosed:
				closed.Add(1)
			}
		}
		ts.Start()
		t.Cleanup(ts.Close)
		hosts[i] = ts
	}
	return hosts
}

// slowHost serves /slow.bin as "x", then "y" once release closes; it
// counts the connections it saw closed and whether they spoke HTTP/2.
type slowHost struct {
	ts      *httptest.Server
	started chan struct{}
	release chan struct{}
	closed  atomic.Int64
	h2      atomic.Bool
}

func newSlowHost(t *testing.T, tlsH2 bool) *slowHost {
	h := &slowHost{started: make(chan struct{}, 1), release: make(chan struct{})}
	h.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h.h2.Store(true)
		}
		w.Header().Set("Content-Length", "2")
		io.WriteString(w, "x")
		w.(http.Flusher).Flush()
		h.started <- struct{}{}
		<-h.release
		io.WriteString(w, "y")
	}))
	h.ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			h.closed.Add(1)
		}
	}
	if tlsH2 {
		h.ts.EnableHTTP2 = true
		h.ts.StartTLS()
	} else {
		h.ts.Start()
	}
	t.Cleanup(h.ts.Close)
	return h
}

func plainHost(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") }))
	t.Cleanup(ts.Close)
	return ts
}

// rotateWhileBusy starts a download from slow, rotates the transport while it
// streams (a second host makes the second dial), runs between(old client)
// and then lets the download finish on the old transport.
func rotateWhileBusy(t *testing.T, e *env, slow *slowHost, between func(old *http.Client)) {
	withTransportDials(t, 2)
	old := e.f.client.Load()
	done := make(chan Result, 1)
	go func() {
		done <- e.f.Do(context.Background(), Request{URL: mustURL(t, slow.ts.URL+"/slow.bin"), Size: -1}, nil)
	}()
	<-slow.started
	other := plainHost(t)
	res := e.f.Do(context.Background(), Request{URL: mustURL(t, other.URL+"/f.bin"), Size: -1}, nil)
	require.Equal(t, OK, res.Class, "%v", res.Err)
	require.NotSame(t, old, e.f.client.Load(), "rotated")
	if between != nil {
		between(old)
	}
	close(slow.release)
	r := <-done
	require.Equal(t, OK, r.Class, "%v", r.Err)
}

// After transportDials connections the fetcher moves to a fresh transport,
// so that what net/http keeps for each host it dialed is let go; the old
// transport's connections are closed, and downloads go on over the new one.
func TestFetch_N1_FreshTransportAfterManyDials(t *testing.T) {
	withTransportDials(t, 3)
	e := newEnv(t, nil)
	var opened, closed atomic.Int64
	hosts := countingHosts(t, 5, 0, &opened, &closed)
	first := e.f.client.Load()
	for i, ts := range hosts[:3] {
		res := e.f.Do(context.Background(), Request{URL: mustURL(t, fmt.Sprintf("%s/f%d.bin", ts.URL, i)), Size: -1}, nil)
		require.Equal(t, OK, res.Class, "%v", res.Err)
	}
	assert.NotSame(t, first, e.f.client.Load(), "a fresh transport after 3 dials")
	assert.Eventually(t, func() bool { return closed.Load() == 3 }, 5*time.Second, 10*time.Millisecond,
		"the old transport's connections are closed")
	for i, ts := range hosts[3:] {
		res := e.f.Do(context.Background(), Request{URL: mustURL(t, fmt.Sprintf("%s/g%d.bin", ts.URL, i)), Size: -1}, nil)
		require.Equal(t, OK, res.Class, "%v", res.Err)
	}
	assert.Equal(t, int64(2), e.f.dials.Load(), "the fresh transport dialed the next two")
}

// N1: an HTTP/1 connection busy as the fetcher moves to a fresh transport is
// closed once its download ends.
func TestFetch_N1_RotateBusyConnClosedOnceIdle(t *testing.T) {
	e := newEnv(t, nil)
	slow := newSlowHost(t, false)
	rotateWhileBusy(t, e, slow, nil)
	assert.Eventually(t, func() bool { return slow.closed.Load() == 1 }, 2*time.Second, 10*time.Millisecond)
}

// N1: a request that took the old transport just before the move turns its
// closing of newly idle connections off again (net/http's queueForIdleConn);
// the busy connection is closed once its download ends all the same, not
// after IdleConnTimeout (90 s).
func TestFetch_N1_RotateConnClosedAfterALateRequest(t *testing.T) {
	e := newEnv(t, nil)
	slow := newSlowHost(t, false)
	rotateWhileBusy(t, e, slow, func(old *http.Client) {
		resp, err := old.Get(plainHost(t).URL + "/stale")
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	assert.Eventually(t, func() bool { return slow.closed.Load() == 1 }, 2*time.Second, 10*time.Millisecond,
		"the old transport's connection is closed once its download ends")
}

// N1: an HTTP/2 connection busy at the move is closed once its download
// ends (http2's CloseIdleConnections closes only what is idle at the call).
func TestFetch_N1_RotateHTTP2ConnClosedOnceIdle(t *testing.T) {
	e := newEnv(t, nil)
	slow := newSlowHost(t, true)
	e.f.ownedTr.std.TLSClientConfig = &tls.Config{RootCAs: slow.ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	rotateWhileBusy(t, e, slow, nil)
	require.True(t, slow.h2.Load(), "spoke HTTP/2")
	assert.Eventually(t, func() bool { return slow.closed.Load() == 1 }, 2*time.Second, 10*time.Millisecond,
		"the old transport's HTTP/2 connection is closed once its download ends")
}

// N1: many downloads at once, the fetcher moving to a fresh transport every
// 8 dials: once the current transport's idle connections are closed, no
// connection is left open in an old one.
func TestFetch_N1_RotateLeavesNoConnOpen(t *testing.T) {
	withTransportDials(t, 8)
	e := newEnv(t, nil)
	var opened, closed atomic.Int64
	hosts := countingHosts(t, 40, time.Millisecond, &opened, &closed)
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				ts := hosts[(w*7+i)%len(hosts)]
				res := e.f.Do(context.Background(), Request{URL: mustURL(t, fmt.Sprintf("%s/w%d-%d.bin", ts.URL, w, i)), Size: -1}, nil)
				assert.Equal(t, OK, res.Class, "%v", res.Err)
			}
		}()
	}
	wg.Wait()
	e.f.trMu.Lock()
	e.f.ownedTr.CloseIdleConnections()
	e.f.trMu.Unlock()
	time.Sleep(time.Second)
	t.Logf("opened %d, closed %d", opened.Load(), closed.Load())
	assert.Equal(t, opened.Load(), closed.Load(), "connections left open in old transports")
}
