package demo

import (
	"fmt"
	"hash/fnv"
	"html"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// host is one listener with its Behavior.
type host struct {
	s     *Server
	spec  HostSpec
	ln    net.Listener
	srv   *http.Server
	base  string
	files []fileInfo
	counters

	mu       sync.Mutex // guards rng, seq, throttle, window, used
	rng      *rand.Rand
	seq      int       // file requests so far
	throttle int       // 429s sent so far
	window   time.Time // Quota: when the current window began
	used     int       // Quota: requests served in it
}

func newHost(s *Server, spec HostSpec, index int, ln net.Listener) *host {
	h := &host{s: s, spec: spec, ln: ln, base: "http://" + ln.Addr().String()}
	minSize, maxSize := int64(s.cfg.FileSize), int64(s.cfg.MaxFileSize)
	h.files = make([]fileInfo, s.cfg.Files)
	for i := range h.files {
		h.files[i] = newFileInfo(s.cfg.Seed, spec.Name, i, minSize, maxSize)
	}
	nh := fnv.New64a()
	nh.Write([]byte(spec.Name))
	h.rng = rand.New(rand.NewPCG(uint64(s.cfg.Seed), nh.Sum64()^uint64(index)))
	h.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				h.conns.Add(1)
			}
		},
	}
	return h
}

// decision is what a host chose to do with one file request.
type decision struct {
	status     int     // 0: serve the file; else this error status
	retryAfter string  // Retry-After value for an error status, "" for none
	cutAt      float64 // > 0: cut the body after this fraction of it
}

// decide draws the fate of one file request from the host's Behavior.
func (h *host) decide(now time.Time) decision {
	sp := &h.spec
	switch sp.Behavior {
	case Throttling:
		h.mu.Lock()
		h.seq++
		hit := false
		if sp.ThrottleEvery > 0 {
			hit = h.seq%sp.ThrottleEvery == 0
		} else {
			hit = h.rng.Float64() < sp.ThrottleFraction
		}
		if !hit {
			h.mu.Unlock()
			return decision{}
		}
		h.throttle++
		useDate := sp.DateEvery > 0 && h.throttle%sp.DateEvery == 0
		h.mu.Unlock()
		return decision{status: http.StatusTooManyRequests, retryAfter: retryAfterValue(now, sp.RetryAfter, useDate)}
	case Flaky:
		h.mu.Lock()
		hit := h.rng.Float64() < sp.FailFraction
		withHeader := hit && h.rng.Float64() < sp.RetryAfterFraction
		h.mu.Unlock()
		if !hit {
			return decision{}
		}
		d := decision{status: http.StatusServiceUnavailable}
		if withHeader {
			d.retryAfter = retryAfterValue(now, sp.RetryAfter, false)
		}
		return d
	case Dropping:
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.rng.Float64() < sp.DropFraction {
			return decision{cutAt: 0.25 + 0.5*h.rng.Float64()}
		}
	}
	return decision{}
}

// quota counts a file request against a Quota host's window (or not, past
// it) and returns the fields that say the quota, and whether it is past.
func (h *host) quota(now time.Time) (hdr http.Header, over bool, wait time.Duration) {
	sp := &h.spec
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.window.IsZero() || now.Sub(h.window) >= sp.QuotaWindow {
		h.window, h.used = now, 0
	}
	over = h.used >= sp.QuotaLimit
	if !over {
		h.used++
	}
	left := sp.QuotaLimit - h.used
	reset := h.window.Add(sp.QuotaWindow)
	wait = reset.Sub(now)
	secs := int64((wait + time.Second - 1) / time.Second)
	hdr = http.Header{}
	if sp.QuotaForm == "x" {
		clock := now.Add(sp.ClockAhead)
		hdr.Set("Date", clock.UTC().Format(http.TimeFormat))
		hdr.Set("X-RateLimit-Limit", strconv.Itoa(sp.QuotaLimit))
		hdr.Set("X-RateLimit-Remaining", strconv.Itoa(left))
		hdr.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Add(sp.ClockAhead).Add(time.Second-1).Unix(), 10))
		return hdr, over, wait
	}
	hdr.Set("RateLimit-Policy", fmt.Sprintf(`"demo";q=%d;w=%d`, sp.QuotaLimit, int64(sp.QuotaWindow/time.Second)))
	hdr.Set("RateLimit", fmt.Sprintf(`"demo";r=%d;t=%d`, left, secs))
	return hdr, over, wait
}

// retryAfterValue formats a wait of d as delta-seconds, rounded up, or as an
// IMF-fixdate no earlier than now+d.
func retryAfterValue(now time.Time, d time.Duration, asDate bool) string {
	if asDate {
		t := now.Add(d)
		if tt := t.Truncate(time.Second); tt.Before(t) {
			t = tt.Add(time.Second)
		}
		return t.UTC().Format(http.TimeFormat)
	}
	secs := (d + time.Second - 1) / time.Second
	return strconv.FormatInt(int64(secs), 10)
}

// ServeHTTP answers / with the index and /files/NNNNN.bin per Behavior.
func (h *host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.s.enter() {
		http.Error(w, "demo server closing", http.StatusServiceUnavailable)
		return
	}
	defer h.s.handlers.Done()
	h.requests.Add(1)

	rw := &responseWriter{ResponseWriter: w, h: h, done: h.s.done, req: r}
	var start time.Time
	if !h.s.cfg.Fast {
		start = time.Now()
	}
	// Deferred so that it also runs when a Dropping cut unwinds with
	// http.ErrAbortHandler.
	defer func() {
		h.bytes.Add(rw.written)
		if rw.cut {
			h.cut.Add(1)
		}
		if h.s.cfg.Fast {
			return
		}
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		h.s.record(Request{
			Time: start, Host: h.spec.Name, Method: r.Method, Path: r.URL.Path,
			Range: r.Header.Get("Range"), IfRange: r.Header.Get("If-Range"),
			Status: status, RetryAfter: rw.Header().Get("Retry-After"),
			Bytes: rw.written, Cut: rw.cut,
		})
	}()

	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rw.Header().Set("Allow", "GET, HEAD")
		http.Error(rw, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/" {
		h.serveIndex(rw)
		return
	}
	i, ok := parseFilePath(r.URL.Path, h.spec.Name, len(h.files))
	if !ok {
		http.NotFound(rw, r)
		return
	}

	d := h.decide(time.Now())
	if h.spec.Behavior == Quota {
		hdr, over, wait := h.quota(time.Now())
		for k, v := range hdr {
			rw.Header()[k] = v
		}
		if over {
			d = decision{status: http.StatusTooManyRequests, retryAfter: retryAfterValue(time.Now(), wait, false)}
		}
	}
	if d.status != 0 {
		if d.retryAfter != "" {
			rw.Header().Set("Retry-After", d.retryAfter)
		}
		switch d.status {
		case http.StatusTooManyRequests:
			h.throttled.Add(1)
		case http.StatusServiceUnavailable:
			h.failed.Add(1)
		}
		http.Error(rw, http.StatusText(d.status), d.status)
		return
	}

	f := &h.files[i]
	hdr := rw.Header()
	hdr.Set("Content-Type", "application/octet-stream")
	hdr.Set("ETag", f.etag)
	rw.cutAt = d.cutAt
	if h.spec.Behavior == Slow {
		rw.rate = h.spec.Rate
	}
	// ServeContent sets Content-Length and Last-Modified and handles Range,
	// If-Range, If-None-Match, HEAD and 416 with "bytes */size".
	http.ServeContent(rw, r, "", f.modTime, &content{f: f, block: h.s.block})
}

// serveIndex writes a small HTML page linking every file of the host.
func (h *host) serveIndex(w http.ResponseWriter) {
	var b strings.Builder
	name := html.EscapeString(h.spec.Name)
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Heed demo: %s</title></head><body>\n", name)
	fmt.Fprintf(&b, "<h1>Heed demo host %s</h1>\n<p>Behavior: %s. %d files.</p>\n<ul>\n", name, h.spec.Behavior, len(h.files))
	for i := range h.files {
		p := filePath(h.spec.Name, i)
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a> %d bytes</li>\n", p, p[len("/files/"):], h.files[i].size)
	}
	b.WriteString("</ul>\n</body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = w.Write([]byte(b.String()))
}

// responseWriter counts what is written and applies Slow pacing and
// Dropping cuts to the body.
type responseWriter struct {
	http.ResponseWriter
	h    *host
	req  *http.Request
	done <-chan struct{}

	status  int
	written int64

	cutAt float64 // > 0: cut the body after this fraction of Content-Length
	limit int64   // bytes of body allowed before the cut; -1 for no cut
	cut   bool

	rate    int // > 0: pace the body at this many bytes/s
	started time.Time
}

// WriteHeader records the status and, for a body that will be cut, fixes
// where the cut falls from the Content-Length being sent.
func (w *responseWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	w.limit = -1
	if w.cutAt > 0 && (code == http.StatusOK || code == http.StatusPartialContent) && w.req.Method != http.MethodHead {
		if n, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64); err == nil && n >= 2 {
			w.limit = min(max(int64(float64(n)*w.cutAt), 1), n-1)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write passes p on, pacing it for a Slow host and cutting the connection
// once a Dropping host's limit is reached.
func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	total := 0
	for len(p) > 0 {
		chunk := p
		if w.rate > 0 {
			chunk = chunk[:min(len(chunk), max(w.rate/16, 1))]
			if err := w.pace(); err != nil {
				return total, err
			}
		}
		if w.limit >= 0 && w.written+int64(len(chunk)) > w.limit {
			chunk = chunk[:w.limit-w.written]
		}
		n, err := w.ResponseWriter.Write(chunk)
		total += n
		w.written += int64(n)
		if err != nil {
			return total, err
		}
		if w.limit >= 0 && w.written >= w.limit {
			w.abort()
		}
		if w.rate > 0 {
			w.flush()
		}
		p = p[n:]
	}
	return total, nil
}

// pace waits until the bytes written so far are no ahead of rate. It gives
// up when the client goes away or the server closes.
func (w *responseWriter) pace() error {
	if w.started.IsZero() {
		w.started = time.Now()
		return nil
	}
	due := w.started.Add(time.Duration(float64(w.written) / float64(w.rate) * float64(time.Second)))
	wait := time.Until(due)
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-w.req.Context().Done():
		return w.req.Context().Err()
	case <-w.done:
		return http.ErrServerClosed
	}
}

func (w *responseWriter) flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// abort sends what was written and closes the connection without finishing
// the body: net/http treats a panic with http.ErrAbortHandler as exactly
// that, and logs nothing.
func (w *responseWriter) abort() {
	w.cut = true
	w.flush()
	panic(http.ErrAbortHandler)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
