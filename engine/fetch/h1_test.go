package fetch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// h1Env is a transport as the fetcher builds it, with its dials counted.
type h1Env struct {
	tr    *h1Transport
	c     *http.Client
	dials atomic.Int64
}

func newH1Env(t *testing.T, cfg Config) *h1Env {
	e := &h1Env{}
	e.tr = newTransport(cfg, func() { e.dials.Add(1) })
	e.c = newClient(e.tr)
	t.Cleanup(e.tr.CloseIdleConnections)
	return e
}

// getAll fetches u with c and reads the body to its end.
func getAll(c *http.Client, u string) (*http.Response, string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// getAtOnce fetches u n times with every body open at once, then reads each
// to its end and closes it: n connections, given back together.
func getAtOnce(t *testing.T, c *http.Client, u string, n int) {
	resps := make([]*http.Response, n)
	for i := range resps {
		resp, err := c.Get(u)
		require.NoError(t, err)
		resps[i] = resp
	}
	for _, r := range resps {
		io.ReadAll(r.Body)
		r.Body.Close()
	}
}

// connCounter counts the connections a test server sees opened.
func connCounter(ts *httptest.Server) *atomic.Int64 {
	var n atomic.Int64
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

func h1Server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	ts := httptest.NewUnstartedServer(h)
	n := connCounter(ts)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, n
}

// connServer answers each connection with serve, requests and all, for responses net/http's
// server will not send.
func connServer(t *testing.T, serve func(c net.Conn, r *bufio.Reader)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// readRequest reads one request's head from r.
func readRequest(r *bufio.Reader) error {
	_, err := http.ReadRequest(r)
	return err
}

// N1: plain-HTTP requests to one host go one after the other over one
// connection, on the caller's goroutine.
func TestH1_N1_KeepAlive(t *testing.T) {
	ts, opened := h1Server(t, func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "identity", r.Header.Get("Accept-Encoding"))
		io.WriteString(w, "hello "+r.URL.Path)
	})
	e := newH1Env(t, Config{})
	for i := range 5 {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/f%d", ts.URL, i), nil)
		require.NoError(t, err)
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := e.c.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, fmt.Sprintf("hello /f%d", i), string(b))
		assert.Equal(t, int64(len(b)), resp.ContentLength, "length from the headers")
	}
	assert.Equal(t, int64(1), opened.Load(), "one connection for all five")
	assert.Equal(t, int64(1), e.dials.Load())
}

// N1: a connection its host closed while it waited idle is found out when it
// is next used, and the GET goes again over a fresh one, as with net/http.
func TestH1_N1_HostClosedIdleConnection(t *testing.T) {
	ts, opened := h1Server(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	e := newH1Env(t, Config{})
	_, body, err := getAll(e.c, ts.URL+"/a")
	require.NoError(t, err)
	require.Equal(t, "x", body)
	ts.CloseClientConnections()
	time.Sleep(50 * time.Millisecond) // let the close reach the client's side
	_, body, err = getAll(e.c, ts.URL+"/b")
	require.NoError(t, err, "the GET goes again on a fresh connection")
	assert.Equal(t, "x", body)
	assert.Equal(t, int64(2), opened.Load())
}

// N1: a fresh connection that fails is not tried again: the error is the
// caller's, to classify and retry under its host's governor (R2).
func TestH1_N1_FreshConnectionFailureNotRetried(t *testing.T) {
	var conns atomic.Int64
	u := connServer(t, func(c net.Conn, r *bufio.Reader) {
		conns.Add(1)
		readRequest(r)
	})
	e := newH1Env(t, Config{})
	_, _, err := getAll(e.c, u+"/a")
	require.Error(t, err)
	assert.Equal(t, int64(1), conns.Load())
}

// N1: a body closed before its end closes its connection — it is neither
// drained (the rest may be endless) nor used again.
func TestH1_N1_EarlyCloseDropsConnection(t *testing.T) {
	ts, opened := h1Server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/endless" {
			for r.Context().Err() == nil {
				if _, err := w.Write(make([]byte, 64<<10)); err != nil {
					return
				}
			}
			return
		}
		io.WriteString(w, "x")
	})
	e := newH1Env(t, Config{})
	resp, err := e.c.Get(ts.URL + "/endless")
	require.NoError(t, err)
	_, err = io.ReadFull(resp.Body, make([]byte, 1000))
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() { resp.Body.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close read the endless body")
	}
	_, err = resp.Body.Read(make([]byte, 10))
	assert.Error(t, err, "no read after Close")
	_, body, err := getAll(e.c, ts.URL+"/small")
	require.NoError(t, err)
	assert.Equal(t, "x", body)
	assert.Equal(t, int64(2), opened.Load(), "the early-closed connection is not used again")
}

// N1: a response that says Connection: close, or an HTTP/1.0 one, is the
// last on its connection.
func TestH1_N1_ConnectionClose(t *testing.T) {
	ts, opened := h1Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "x")
	})
	e := newH1Env(t, Config{})
	for range 3 {
		_, body, err := getAll(e.c, ts.URL+"/a")
		require.NoError(t, err)
		assert.Equal(t, "x", body)
	}
	assert.Equal(t, int64(3), opened.Load())

	var conns atomic.Int64
	u := connServer(t, func(c net.Conn, r *bufio.Reader) {
		conns.Add(1)
		for readRequest(r) == nil {
			io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\ny")
		}
	})
	for range 2 {
		_, body, err := getAll(e.c, u+"/a")
		require.NoError(t, err)
		assert.Equal(t, "y", body)
	}
	assert.Equal(t, int64(2), conns.Load(), "HTTP/1.0 without keep-alive")
}

// N1: bytes a host sent past the end of a response leave its connection
// unused: they would be read as the next response.
func TestH1_N1_BytesAfterTheBody(t *testing.T) {
	var conns atomic.Int64
	u := connServer(t, func(c net.Conn, r *bufio.Reader) {
		conns.Add(1)
		for readRequest(r) == nil {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nzHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforge")
		}
	})
	e := newH1Env(t, Config{})
	for range 2 {
		_, body, err := getAll(e.c, u+"/a")
		require.NoError(t, err)
		assert.Equal(t, "z", body)
	}
	assert.Equal(t, int64(2), conns.Load())
}

// N1: informational responses (103 Early Hints) are passed over for the
// final one; 101 to a GET, or more than five 1xx, is an error.
func TestH1_N1_Informational(t *testing.T) {
	ts, _ := h1Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		io.WriteString(w, "final")
	})
	e := newH1Env(t, Config{})
	resp, body, err := getAll(e.c, ts.URL+"/a")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "final", body)

	for _, head := range []string{
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
		strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", 6) + "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
	} {
		u := connServer(t, func(c net.Conn, r *bufio.Reader) {
			readRequest(r)
			io.WriteString(c, head)
			io.Copy(io.Discard, r)
		})
		_, _, err := getAll(e.c, u+"/a")
		assert.ErrorContains(t, err, "unexpected response")
	}
}

// N1: response headers are bounded: a host that sends headers without end
// gets an error, not all of Heed's memory.
func TestH1_N1_EndlessHeaders(t *testing.T) {
	u := connServer(t, func(c net.Conn, r *bufio.Reader) {
		readRequest(r)
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := []byte("X-Pad: " + strings.Repeat("a", 1000) + "\r\n")
		for {
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	})
	e := newH1Env(t, Config{})
	_, _, err := getAll(e.c, u+"/a")
	require.Error(t, err)
	assert.ErrorIs(t, err, errHeaderTooLong)
}

// N1: ResponseHeaderTimeout bounds the wait for the headers and is reported
// as a timeout; it does not bound a slow body.
func TestH1_N1_ResponseHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	u := connServer(t, func(c net.Conn, r *bufio.Reader) {
		readRequest(r)
		<-release
	})
	e := newH1Env(t, Config{ResponseHeaderTimeout: 100 * time.Millisecond})
	start := time.Now()
	_, _, err := getAll(e.c, u+"/a")
	require.Error(t, err)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "%v", err)
	assert.ErrorContains(t, err, "awaiting response headers")
	assert.Less(t, time.Since(start), 5*time.Second)

	ts, _ := h1Server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		io.WriteString(w, "a")
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "b")
	})
	_, body, err := getAll(e.c, ts.URL+"/slow-body")
	require.NoError(t, err, "the header timeout is cleared once the headers are in")
	assert.Equal(t, "ab", body)
}

// N1: ending the request's context ends a request blocked on its host, in
// the headers or in the body, with the context's cause.
func TestH1_N1_Cancel(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ts, _ := h1Server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Header().Set("Content-Length", "2")
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	e := newH1Env(t, Config{})
	cause := errors.New("the person paused the host")

	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/head", nil)
	_, err := e.c.Do(req)
	assert.ErrorIs(t, err, cause)

	ctx, cancel = context.WithCancelCause(context.Background())
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/body", nil)
	resp, err := e.c.Do(req)
	require.NoError(t, err)
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	_, err = io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, cause)
	resp.Body.Close()
	assert.Zero(t, e.tr.nIdle, "the cancelled request's connection is not kept")
}

// N1: a request through a proxy, or to an HTTPS host, goes to net/http's
// transport.
func TestH1_N1_ProxyGoesToNetHTTP(t *testing.T) {
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		assert.True(t, r.URL.IsAbs(), "a proxy is asked for the absolute URL")
		io.WriteString(w, "via proxy")
	}))
	t.Cleanup(proxy.Close)
	e := newH1Env(t, Config{})
	pu, _ := url.Parse(proxy.URL)
	e.tr.std.Proxy = http.ProxyURL(pu)
	_, body, err := getAll(e.c, "http://heed.invalid/file")
	require.NoError(t, err)
	assert.Equal(t, "via proxy", body)
	assert.Equal(t, int64(1), proxied.Load())
}

// N1: idle connections are bounded per host and over all hosts, the oldest
// making way; one idle past IdleConnTimeout is closed, not used.
func TestH1_N1_IdleBounds(t *testing.T) {
	ts, opened := h1Server(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	other, _ := h1Server(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "y") })
	e := newH1Env(t, Config{})
	e.tr.maxIdlePerHost, e.tr.maxIdle = 2, 3

	// Three bodies open at once: three connections, of which two are kept.
	getAtOnce(t, e.c, ts.URL+"/a", 3)
	assert.Equal(t, 2, e.tr.nIdle)
	assert.Len(t, e.tr.idle[ts.Listener.Addr().String()], 2)

	// Two more on the other host: the pool holds three, the oldest goes.
	getAtOnce(t, e.c, other.URL+"/b", 2)
	assert.Equal(t, 3, e.tr.nIdle)
	assert.Len(t, e.tr.idle[ts.Listener.Addr().String()], 1)
	assert.Len(t, e.tr.idle[other.Listener.Addr().String()], 2)

	// Past the idle timeout, the kept connection is closed and a fresh one dialed.
	e.tr.idleFor = time.Nanosecond
	before := opened.Load()
	_, body, err := getAll(e.c, ts.URL+"/c")
	require.NoError(t, err)
	assert.Equal(t, "x", body)
	assert.Equal(t, before+1, opened.Load())
}

// bothTransports returns net/http's transport (as newTransport configures it)
// and h1Transport, each behind the fetcher's client, for side-by-side runs.
func bothTransports(t *testing.T, cfg Config) map[string]*http.Client {
	h1 := newTransport(cfg, func() {})
	std := newTransport(cfg, func() {}).std
	t.Cleanup(h1.CloseIdleConnections)
	t.Cleanup(std.CloseIdleConnections)
	return map[string]*http.Client{"net/http": newClient(std), "h1": newClient(h1)}
}

// N1: a host that ends an idle keep-alive connection with a 408 (as several
// servers and proxies do on their keep-alive timeout) does not have that 408
// read as the response to the next GET: a connection that received anything
// while idle is dropped, as net/http does.
func TestH1_N1_Unsolicited408OnIdleConn(t *testing.T) {
	for _, name := range []string{"net/http", "h1"} {
		t.Run(name, func(t *testing.T) {
			var conns atomic.Int64
			u := connServer(t, func(c net.Conn, r *bufio.Reader) {
				n := conns.Add(1)
				if readRequest(r) != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood")
				if n == 1 {
					// keep-alive timeout: say so, and hang up
					time.Sleep(50 * time.Millisecond)
					io.WriteString(c, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
					c.(*net.TCPConn).CloseWrite()
					io.Copy(io.Discard, r)
				}
			})
			c := bothTransports(t, Config{})[name]
			for i := range 2 {
				resp, b, err := getAll(c, u+"/f")
				require.NoError(t, err)
				assert.Equal(t, http.StatusOK, resp.StatusCode, "request %d", i)
				assert.Equal(t, "good", b, "request %d", i)
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

// N1: bytes a host sends past a response's Content-Length may stay in the
// socket, not in the connection's buffer, when the body is read with the
// fetcher's large reads; they never become the next download's file.
func TestH1_N1_BytesAfterALargeBodyNotTheNextFile(t *testing.T) {
	big := body(64 << 10)
	forged := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforge"
	for _, name := range []string{"net/http", "h1"} {
		t.Run(name, func(t *testing.T) {
			u := connServer(t, func(c net.Conn, r *bufio.Reader) {
				for {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					if req.URL.Path == "/a.bin" {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n"+big+forged)
					} else {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood")
					}
				}
			})
			e := newEnv(t, func(cfg *Config) {
				if name == "net/http" {
					cfg.Transport = newTransport(*cfg, func() {}).std
				}
			})
			res := e.do(u+"/a.bin", nil)
			require.True(t, res.Done, "%v", res.Err)
			time.Sleep(100 * time.Millisecond)
			res = e.do(u+"/b.bin", nil)
			require.True(t, res.Done, "%v", res.Err)
			assert.Equal(t, "good", e.files()["b.bin"], "b.bin's bytes")
		})
	}
}

// N1: ResponseHeaderTimeout running out on a kept connection is the
// request's error: the GET is not sent again behind the host governor's back,
// nor does the caller wait twice the timeout.
func TestH1_N1_HeaderTimeoutOnReusedConnNotRetried(t *testing.T) {
	for _, name := range []string{"net/http", "h1"} {
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			var reqs atomic.Int64
			u := connServer(t, func(c net.Conn, r *bufio.Reader) {
				for readRequest(r) == nil {
					if reqs.Add(1) == 1 {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
						continue
					}
					<-release // the host stalls from now on
					return
				}
			})
			c := bothTransports(t, Config{ResponseHeaderTimeout: 300 * time.Millisecond})[name]
			_, _, err := getAll(c, u+"/a")
			require.NoError(t, err)

			start := time.Now()
			_, err = c.Get(u + "/b")
			took := time.Since(start)
			var ne net.Error
			require.True(t, errors.As(err, &ne) && ne.Timeout(), "%v", err)
			assert.Equal(t, int64(2), reqs.Load(), "GETs the host received")
			assert.Less(t, took, 550*time.Millisecond, "one header timeout of 300ms")
		})
	}
}

// N1: an idle connection is closed when IdleConnTimeout runs out, whether or
// not another request to its host comes, as net/http does.
func TestH1_N1_IdleConnClosedAfterIdleTimeout(t *testing.T) {
	for _, name := range []string{"net/http", "h1"} {
		t.Run(name, func(t *testing.T) {
			closed := make(chan bool, 1)
			u := connServer(t, func(c net.Conn, r *bufio.Reader) {
				readRequest(r)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				_, err := r.ReadByte()
				closed <- errors.Is(err, io.EOF)
			})
			h1 := newTransport(Config{}, func() {})
			h1.idleFor, h1.std.IdleConnTimeout = 200*time.Millisecond, 200*time.Millisecond
			var rt http.RoundTripper = h1
			if name == "net/http" {
				rt = h1.std
			}
			t.Cleanup(h1.CloseIdleConnections)
			c := newClient(rt)
			_, _, err := getAll(c, u+"/a")
			require.NoError(t, err)
			assert.True(t, <-closed, "the idle connection was closed by the client within 2s (idle timeout 200ms)")
		})
	}
}

// deadlineConn lets a test run code at the moment the transport clears the
// read deadline, and reports when a deadline in the past is set.
type deadlineConn struct {
	net.Conn
	onClear func()
	past    chan struct{}
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	if t.IsZero() && c.onClear != nil {
		c.onClear()
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	err := c.Conn.SetDeadline(t)
	if !t.IsZero() && t.Before(time.Now()) {
		select {
		case c.past <- struct{}{}:
		default:
		}
	}
	return err
}

// N1: a request whose context ends just as its response headers are in is
// ended all the same. The test forces the cancel into the window before the
// header timeout's read deadline is cleared, where the clearing would undo it
// and leave the body's Read waiting on a stalled host for good (the idle
// timer cannot help: it cancels a context already cancelled).
func TestH1_N1_CancelAsHeadersArriveIsNotLost(t *testing.T) {
	release := make(chan struct{})
	var once atomic.Bool
	unblock := func() {
		if once.CompareAndSwap(false, true) {
			close(release)
		}
	}
	t.Cleanup(unblock)
	u := connServer(t, func(c net.Conn, r *bufio.Reader) {
		readRequest(r)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"+strings.Repeat("a", 100))
		<-release // then stalls
	})
	e := newEnv(t, func(cfg *Config) { cfg.IdleTimeout = 300 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	tr := e.f.ownedTr
	dial := tr.dial
	tr.dial = func(dctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(dctx, network, addr)
		if err != nil {
			return nil, err
		}
		dc := &deadlineConn{Conn: c, past: make(chan struct{}, 1)}
		dc.onClear = func() {
			cancel() // the person pauses the download right now
			select {
			case <-dc.past:
			case <-time.After(time.Second):
			}
		}
		return dc, nil
	}
	done := make(chan Result, 1)
	go func() { done <- e.f.Do(ctx, Request{URL: mustURL(t, u+"/f.bin"), Size: -1}, nil) }()
	select {
	case res := <-done:
		assert.Equal(t, Canceled, res.Class, "%v", res.Err)
	case <-time.After(3 * time.Second):
		t.Error("Do still running 3s after its context was cancelled (idle timeout 300ms)")
		unblock() // the host hangs up, so the test ends
		res := <-done
		t.Logf("after the host hung up: %v %v", res.Class, res.Err)
	}
}

// N1: a kept connection that its host closes as the next GET arrives (it
// looked quiet when taken) costs that GET nothing: it goes again over a fresh
// connection, as with net/http, since nothing came back.
func TestH1_N1_KeptConnectionClosedAsTheGETArrives(t *testing.T) {
	var conns atomic.Int64
	u := connServer(t, func(c net.Conn, r *bufio.Reader) {
		first := conns.Add(1) == 1
		if readRequest(r) != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
		if first {
			readRequest(r) // the second GET: hang up without an answer
		}
	})
	e := newH1Env(t, Config{})
	for i := range 2 {
		_, body, err := getAll(e.c, fmt.Sprintf("%s/%d", u, i))
		require.NoError(t, err, "GET %d", i)
		assert.Equal(t, "x", body)
	}
	assert.Equal(t, int64(2), conns.Load())
}

// N1: a connection the pool lets go — evicted for a newer one, or closed
// with the idle ones — is not held in memory until its idle timeout would
// have run out: a crawl over many hosts lets go of thousands a minute.
func TestH1_N1_ConnLetGoIsNotHeld(t *testing.T) {
	ts, _ := h1Server(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	other, _ := h1Server(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "y") })
	e := newH1Env(t, Config{})
	e.tr.maxIdle = 1
	kept := func(ts *httptest.Server) weak.Pointer[h1Conn] {
		e.tr.mu.Lock()
		defer e.tr.mu.Unlock()
		l := e.tr.idle[ts.Listener.Addr().String()]
		require.Len(t, l, 1)
		return weak.Make(l[0])
	}
	collected := func(w weak.Pointer[h1Conn]) bool {
		runtime.GC()
		return w.Value() == nil
	}

	_, _, err := getAll(e.c, ts.URL+"/a")
	require.NoError(t, err)
	first := kept(ts)
	_, _, err = getAll(e.c, other.URL+"/b") // the pool holds one: the first makes way
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return collected(first) }, 2*time.Second, 10*time.Millisecond,
		"the evicted connection is collected")

	second := kept(other)
	e.tr.CloseIdleConnections()
	assert.Eventually(t, func() bool { return collected(second) }, 2*time.Second, 10*time.Millisecond,
		"a connection closed with the idle ones is collected")
}
