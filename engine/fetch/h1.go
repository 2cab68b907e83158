package fetch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// h1Transport is the fetcher's transport (N1). A plain-HTTP GET that goes
// straight to its host runs on the calling goroutine, over keep-alive
// connections of its own: written with Request.Write, read with
// http.ReadResponse. Everything else — HTTPS and HTTP/2, a request through a
// proxy — goes to std, an *http.Transport.
//
// net/http's transport gives every connection a goroutine that writes and one
// that reads, and hands each request to them and its response back: three
// goroutine switches and their wake-ups per request. At 20,000 small files
// that was about a quarter of a plain client's CPU time; here a request costs
// none of them.
type h1Transport struct {
	std    *http.Transport
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	header time.Duration // ResponseHeaderTimeout; 0: none

	idleFor        time.Duration // an idle connection older than this is closed, not used
	maxIdle        int           // idle connections kept, over all hosts
	maxIdlePerHost int

	mu    sync.Mutex
	idle  map[string][]*h1Conn // by host:port, the most recently used last
	nIdle int
}

// maxHeaderBytes bounds a response's status line and headers, 1xx
// responses included, as net/http's transport does by default.
const maxHeaderBytes = 10 << 20

// max1xx is how many informational responses are skipped before the final one.
const max1xx = 5

// errHeaderTimeout is the ResponseHeaderTimeout running out.
var errHeaderTimeout error = timeoutError{"timeout awaiting response headers"}

type timeoutError struct{ msg string }

func (e timeoutError) Error() string   { return e.msg }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return true }

// h1Conn is one connection of h1Transport.
type h1Conn struct {
	conn   net.Conn
	in     countingReader // what br reads from
	br     *bufio.Reader
	bw     *bufio.Writer
	key    string
	idleAt time.Time
	timer  *time.Timer // closes it once idle for idleFor
	reused bool        // it served a request before this one
}

// stopTimer stops c's idle timer, which holds c, its buffers and the
// transport until it fires: a connection that leaves the pool must not wait
// out IdleConnTimeout in memory. Under t.mu, or once c is out of the pool.
func (c *h1Conn) stopTimer() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

// countingReader counts the bytes read from the connection and, while limit
// is set, refuses to read past it.
type countingReader struct {
	r     io.Reader
	n     int64 // bytes read since the count was reset
	limit int64 // 0: none
}

var errHeaderTooLong = errors.New("server's response headers exceeded 10 MiB")

func (c *countingReader) Read(p []byte) (int, error) {
	if c.limit > 0 {
		if c.n >= c.limit {
			return 0, errHeaderTooLong
		}
		p = p[:min(int64(len(p)), c.limit-c.n)]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle, t.nIdle = map[string][]*h1Conn{}, 0
	t.mu.Unlock()
	for _, l := range idle {
		for _, c := range l {
			c.stopTimer()
			c.conn.Close()
		}
	}
	t.std.CloseIdleConnections()
}

// direct reports whether req is one that h1Transport sends itself, and the
// host:port it goes to.
func (t *h1Transport) direct(req *http.Request) (string, bool) {
	u := req.URL
	if u == nil || u.Scheme != "http" || req.Method != http.MethodGet || (req.Body != nil && req.Body != http.NoBody) {
		return "", false
	}
	host := u.Hostname()
	if host == "" || !ascii(host) || req.Host != "" && req.Host != u.Host {
		return "", false
	}
	if t.std.Proxy != nil {
		if p, err := t.std.Proxy(req); p != nil || err != nil {
			return "", false
		}
	}
	// net/http refuses what it cannot write as a header; leave that to it.
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return "", false
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return "", false
			}
		}
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(host, port), true
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	key, ok := t.direct(req)
	if !ok {
		return t.std.RoundTrip(req)
	}
	ctx := req.Context()
	for {
		c, err := t.get(ctx, key)
		if err != nil {
			return nil, err
		}
		resp, err := t.exchange(ctx, c, req)
		if err == nil {
			return resp, nil
		}
		c.conn.Close()
		// A connection that waited idle may have been closed by its host
		// meanwhile: if nothing came back, the GET goes again on a fresh one,
		// as net/http does.
		if !c.reused || c.in.n > 0 || ctx.Err() != nil || errors.Is(err, errHeaderTimeout) {
			return nil, err
		}
	}
}

// get returns an idle connection to key, or dials one. A kept connection
// idle too long, or with something to read (see quiet), is closed instead.
func (t *h1Transport) get(ctx context.Context, key string) (*h1Conn, error) {
	for {
		t.mu.Lock()
		n := len(t.idle[key])
		var c *h1Conn
		if n > 0 {
			c = t.takeLocked(key, n-1) // the most recently used
		}
		t.mu.Unlock()
		if c == nil {
			break
		}
		if t.idleFor > 0 && time.Since(c.idleAt) > t.idleFor || !quiet(c.conn) {
			c.conn.Close()
			continue
		}
		c.reused = true
		return c, nil
	}
	nc, err := t.dial(ctx, "tcp", key)
	if err != nil {
		return nil, err
	}
	c := &h1Conn{conn: nc, key: key, in: countingReader{r: nc}}
	c.br = bufio.NewReaderSize(&c.in, 4<<10)
	c.bw = bufio.NewWriterSize(nc, 4<<10)
	return c, nil
}

// put keeps c for the next request to its host, or closes it if enough are
// kept: the oldest idle connection makes way when all hosts' are.
func (t *h1Transport) put(c *h1Conn) {
	c.idleAt = time.Now()
	var drop *h1Conn
	t.mu.Lock()
	if len(t.idle[c.key]) >= t.maxIdlePerHost {
		drop = c
	} else {
		if t.nIdle >= t.maxIdle {
			drop = t.oldestLocked()
		}
		t.idle[c.key] = append(t.idle[c.key], c)
		t.nIdle++
		if t.idleFor > 0 {
			c.timer = time.AfterFunc(t.idleFor, func() { t.expire(c) })
		}
	}
	t.mu.Unlock()
	if drop != nil {
		drop.conn.Close()
	}
}

// expire closes c if it is still idle.
func (t *h1Transport) expire(c *h1Conn) {
	t.mu.Lock()
	i := slices.Index(t.idle[c.key], c)
	if i >= 0 {
		t.takeLocked(c.key, i)
	}
	t.mu.Unlock()
	if i >= 0 {
		c.conn.Close()
	}
}

// oldestLocked takes the connection idle the longest out of the pool.
func (t *h1Transport) oldestLocked() *h1Conn {
	var oldest *h1Conn
	for _, l := range t.idle {
		if c := l[0]; oldest == nil || c.idleAt.Before(oldest.idleAt) {
			oldest = c
		}
	}
	return t.takeLocked(oldest.key, 0)
}

// takeLocked takes the i-th idle connection to key out of the pool and stops
// its idle timer.
func (t *h1Transport) takeLocked(key string, i int) *h1Conn {
	l := t.idle[key]
	c := l[i]
	if l = slices.Delete(l, i, i+1); len(l) == 0 {
		delete(t.idle, key)
	} else {
		t.idle[key] = l
	}
	t.nIdle--
	c.stopTimer()
	return c
}

// aLongTimeAgo is a deadline that has passed: set on a connection, it ends
// any read or write in progress on it at once.
var aLongTimeAgo = time.Unix(1, 0)

// exchange writes req on c and reads the response's headers. The body is
// read by the caller; closing it gives c back to the pool when it was read to
// its end.
func (t *h1Transport) exchange(ctx context.Context, c *h1Conn, req *http.Request) (*http.Response, error) {
	// Ending the request's context ends what is blocked on the connection.
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		} else if t.header > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			err = errHeaderTimeout
		}
		return nil, err
	}
	if t.header > 0 {
		c.conn.SetReadDeadline(time.Now().Add(t.header))
	}
	c.in.n, c.in.limit = 0, maxHeaderBytes
	if err := req.Write(c.bw); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		return fail(err)
	}
	var resp *http.Response
	for n := 0; ; n++ {
		var err error
		resp, err = http.ReadResponse(c.br, req)
		if err != nil {
			return fail(err)
		}
		code := resp.StatusCode
		if code < 100 || code > 199 {
			break
		}
		if code == http.StatusSwitchingProtocols || n == max1xx {
			return fail(fmt.Errorf("unexpected response %q to a GET", resp.Status))
		}
	}
	c.in.limit = 0
	if t.header > 0 {
		c.conn.SetReadDeadline(time.Time{})
		if ctx.Err() != nil { // the context ended before the clearing: end it again
			c.conn.SetDeadline(aLongTimeAgo)
		}
	}
	b := &h1Body{t: t, c: c, rc: resp.Body, ctx: ctx, stop: stop, keep: !resp.Close && !req.Close}
	if resp.Body == http.NoBody {
		b.eof.Store(true)
	}
	resp.Body = b
	return resp, nil
}

// h1Body is a response body of h1Transport.
type h1Body struct {
	t    *h1Transport
	c    *h1Conn
	rc   io.ReadCloser
	ctx  context.Context
	stop func() bool
	keep bool // the connection may serve another request once the body is read

	eof  atomic.Bool
	once sync.Once
}

func (b *h1Body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.eof.Store(true)
	case err != nil && b.ctx.Err() != nil:
		err = context.Cause(b.ctx)
	}
	return n, err
}

// Close gives the connection back for the next request to its host if the
// body was read to its end, and closes it otherwise: a body closed early is
// not read to its end, as net/http's transport does not either.
func (b *h1Body) Close() error {
	b.once.Do(func() {
		stopped := b.stop() // false: the context ended, and so did the connection
		if b.keep && stopped && b.eof.Load() && b.c.br.Buffered() == 0 {
			b.rc.Close()
			b.t.put(b.c)
			return
		}
		b.c.conn.Close()
		b.rc.Close()
	})
	return nil
}
