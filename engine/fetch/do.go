package fetch

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// errIdle is the cancellation cause when no body byte arrived within the
// idle timeout (N1).
var errIdle = errors.New("no data received within the idle timeout")

// drainLimit is how much of a discarded body (redirect, error page) is read
// so the connection can be reused.
const drainLimit = 64 << 10

// Do performs one HTTP exchange for req and reports it. It never panics on
// hostile input and never returns without filling Result.Class.
//
// progress, if not nil, is called from Do's goroutine after every write with
// the number of bytes now in the part file (resumed bytes included). It must
// be quick; throttle UI updates on the receiving side.
func (f *Fetcher) Do(ctx context.Context, req Request, progress func(bytesSoFar int64)) Result {
	a := &attempt{
		f:        f,
		req:      req,
		progress: progress,
		res: Result{
			Part:         req.Part,
			Size:         req.Size,
			ETag:         req.ETag,
			LastModified: req.LastModified,
		},
	}
	if a.progress == nil {
		a.progress = func(int64) {}
	}
	a.run(ctx)
	if a.file != nil {
		if a.held != nil {
			a.keepHeld()
		}
		a.file.Close()
	}
	return a.res
}

// attempt is the state of one Do call.
type attempt struct {
	f        *Fetcher
	req      Request
	res      Result
	progress func(int64)

	file    *os.File  // open part file, nil until there is one
	held    *holding  // the body is in a file with no name (see hold)
	have    int64     // bytes in the part file
	flushed int64     // bytes of it whose writeback was started
	sum     hash.Hash // SHA-256 of the bytes in the part file, once streaming

	parent context.Context
	ctx    context.Context // the request's context
	cancel context.CancelCauseFunc
}

func (a *attempt) fail(c Class, retryable bool, err error) {
	a.res.Class, a.res.Retryable, a.res.Err = c, retryable, err
}

func (a *attempt) run(parent context.Context) {
	req := a.req
	if req.URL == nil || !httpScheme(req.URL) {
		a.fail(Refused, false, fmt.Errorf("only http and https URLs are fetched, not %q", schemeOf(req.URL)))
		return
	}
	if req.Hop > MaxHops {
		a.fail(Redirects, false, fmt.Errorf("more than %d redirects", MaxHops))
		return
	}
	if req.Part != "" {
		file, size, err := a.f.openPart(req.Part)
		switch {
		case err == nil:
			a.file, a.have, a.flushed = file, size, size
		case errors.Is(err, fs.ErrNotExist):
			a.res.Part = "" // lost; start afresh under a new part name
		case errors.Is(err, errConfined):
			a.fail(Confinement, false, err)
			return
		default:
			a.fail(Disk, false, fmt.Errorf("open part: %w", err))
			return
		}
	}
	a.res.Bytes = a.have

	a.parent = parent
	a.ctx, a.cancel = context.WithCancelCause(parent)
	defer a.cancel(nil)

	// The request is built from the URL as it stands, not from its text
	// parsed again as http.NewRequest would; its header slices are shared by
	// every request and only ever replaced, never written into.
	u := *req.URL
	u.Host = strings.TrimSuffix(u.Host, ":") // an empty port, as http.NewRequest does
	hreq := (&http.Request{
		Method: http.MethodGet, URL: &u, Host: u.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		// An explicit Accept-Encoding also stops any transport from
		// decompressing transparently (F6).
		Header: http.Header{"User-Agent": a.f.uaHeader, "Accept-Encoding": identity},
	}).WithContext(a.ctx)
	resuming := false
	if a.have > 0 {
		// Without a validator a changed file could be spliced: restart
		// instead (C21).
		if v := ifRange(req.ETag, req.LastModified); v != "" {
			resuming = true
			hreq.Header.Set("Range", "bytes="+strconv.FormatInt(a.have, 10)+"-")
			hreq.Header.Set("If-Range", v)
		}
	}

	client := a.f.client.Load()
	resp, err := client.Do(hreq)
	a.f.rotate()
	defer a.f.retire(client) // after the body is closed, below
	if err != nil {
		if why, bad := malformed(err); bad {
			a.fail(Refused, false, why)
			return
		}
		a.failErr(err, false)
		return
	}
	defer resp.Body.Close()
	a.res.Status = resp.StatusCode
	a.res.Header = resp.Header
	a.res.RetryAfter = resp.Header.Get("Retry-After")

	switch code := resp.StatusCode; {
	case isRedirect(code):
		a.redirect(resp)
	case code == http.StatusRequestedRangeNotSatisfiable && resuming:
		a.rangeNotSatisfiable(resp)
	case code == http.StatusPartialContent && resuming:
		a.partial(resp)
	case code >= 200 && code < 300 && code != http.StatusPartialContent:
		a.full(resp)
	default:
		io.CopyN(io.Discard, resp.Body, drainLimit)
		a.fail(HTTPStatus, retryableStatus(code), fmt.Errorf("server answered %q", resp.Status))
	}
}

// identity is the Accept-Encoding of every request.
var identity = []string{"identity"}

// ifRange picks the If-Range validator: a strong ETag, else a valid
// Last-Modified date, else "" (F5, C21).
func ifRange(etag, lastModified string) string {
	if isStrongETag(etag) {
		return etag
	}
	if _, err := http.ParseTime(lastModified); err == nil {
		return lastModified
	}
	return ""
}

// isStrongETag reports a quoted entity tag without the W/ weakness prefix.
func isStrongETag(e string) bool {
	return len(e) >= 2 && e[0] == '"' && e[len(e)-1] == '"' && !strings.ContainsAny(e[1:len(e)-1], "\"\r\n")
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// retryableStatus applies R2 to a status: 408 and 5xx are retried; 429 is a
// throttle response (R3) and is retried too, paced by the governor.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500 && code <= 599
}

func schemeOf(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Scheme
}

// redirect validates the Location of a 3xx (N2, A8) and discards the body.
func (a *attempt) redirect(resp *http.Response) {
	io.CopyN(io.Discard, resp.Body, drainLimit)
	loc := resp.Header.Get("Location")
	if loc == "" {
		a.fail(HTTPStatus, false, fmt.Errorf("server answered %q without a Location", resp.Status))
		return
	}
	target, err := a.req.URL.Parse(loc)
	if err != nil {
		a.fail(Refused, false, fmt.Errorf("redirect to an unparsable Location: %w", err))
		return
	}
	if !httpScheme(target) {
		a.fail(Refused, false, fmt.Errorf("redirect to %q refused: only http and https are followed", target.Scheme+":"))
		return
	}
	// The next hop's request is built from target's fields, not its text
	// parsed again (see run): a target whose text does not parse, as a
	// scheme-relative "//h:80:/x" resolves to, is refused here instead.
	if _, err := url.Parse(target.String()); err != nil {
		a.fail(Refused, false, fmt.Errorf("redirect to an unparsable Location: %w", err))
		return
	}
	if strings.EqualFold(a.req.URL.Scheme, "https") && target.Scheme == "http" && !a.f.downgrade {
		a.fail(Refused, false, fmt.Errorf("redirect from https to http refused (downgrade not allowed)"))
		return
	}
	if a.req.Hop >= MaxHops {
		a.fail(Redirects, false, fmt.Errorf("stopped after %d redirects", MaxHops))
		return
	}
	target.Fragment, target.RawFragment = "", ""
	a.res.Redirect = target
}

// full handles a 2xx other than 206: the body is the whole file, so any part
// restarts from zero (C17, C19).
func (a *attempt) full(resp *http.Response) {
	total := resp.ContentLength
	if !a.preflight(total, 0) {
		return
	}
	a.res.ETag = resp.Header.Get("ETag")
	a.res.LastModified = resp.Header.Get("Last-Modified")
	if a.file != nil {
		if !a.truncate() {
			return
		}
	} else {
		user := a.req.UserURL
		if user == nil && a.req.Hop == 0 {
			user = a.req.URL
		}
		name := responseName(resp.Header, user)
		if !a.hold(total, name) {
			file, part, err := a.f.createPart(name, a.req.Job)
			if err != nil {
				a.fail(Disk, false, fmt.Errorf("create part file: %w", err))
				return
			}
			a.file, a.res.Part = file, part
		}
	}
	a.res.Size = total
	a.sum = sha256.New()
	a.stream(resp.Body, total, total)
}

// holdMax is the largest announced body that hold keeps in a file with no
// name.
const holdMax = 64 << 10

// holdFor is how long a body may stay held: one still arriving then takes
// its part name, so that a crash leaves what came of it to resume (F5, S2).
const holdFor = 20 * time.Millisecond

// holding is a body held in a file with no name (see hold).
type holding struct {
	name  string // the name it is to take
	timer *time.Timer

	mu   sync.Mutex
	part string // the part name it took after holdFor, if it did
	over bool   // the attempt is done with the file: the timer leaves it alone
}

// settle ends the hold, and returns the part name the body took after
// holdFor ("" if none).
func (h *holding) settle() string {
	h.timer.Stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.over = true
	return h.part
}

// hold opens a file with no name for a new body of total bytes, announced
// and at most holdMax, that is to take name. Such a body nearly always
// arrives whole at once; from that file it takes its final name in one
// link once complete and synced (NameParts), so no final file is ever
// partial (F4), and it never has a part name: no part to create, mark and
// rename, which is most of what a small download costs the file system,
// and each of those changes locks the folder against the other downloads.
// A body still arriving after holdFor takes its part name then, and one
// whose attempt ends before it is whole when the attempt ends (keepHeld),
// to be resumed like any part (F5). It reports false where the system has
// no files without a name; the caller then creates a part.
func (a *attempt) hold(total int64, name string) bool {
	if total < 0 || total > holdMax || a.f.dir == nil || a.f.noHeld.Load() {
		return false
	}
	file, err := openUnnamed(a.f.dir, name)
	if err != nil {
		if errors.Is(err, errNoUnnamed) {
			a.f.noHeld.Store(true)
		}
		return false
	}
	h := &holding{name: name}
	started := a.res // what the part is to be recorded with
	started.Size, started.Bytes = total, 0
	h.timer = time.AfterFunc(holdFor, func() {
		h.mu.Lock()
		if !h.over {
			h.part, _ = a.nameAsPart(file, name)
		}
		part := h.part
		h.mu.Unlock()
		if part != "" && a.req.Started != nil {
			started.Part = part
			a.req.Started(started)
		}
	})
	a.file, a.held, a.res.Part = file, h, ""
	return true
}

// keepHeld gives the bytes of a held body whose attempt ended before it was
// whole their part name (F5), unless it took one after holdFor. Where that
// fails, they are dropped and the retry starts from zero.
func (a *attempt) keepHeld() {
	part := a.held.settle()
	if part == "" && a.have > 0 {
		part, _ = a.nameAsPart(a.file, a.held.name)
	}
	a.held = nil
	a.res.Part = part
	if part == "" {
		a.res.Bytes = 0
	}
}

// nameAsPart gives file, which has no name, a part name for name as
// createPart would (F3), marked as the job's before it has that name.
func (a *attempt) nameAsPart(file *os.File, name string) (string, error) {
	if a.f.owner != "" && a.req.Job > 0 {
		markPart(file, partMark(a.f.owner, a.req.Job))
	}
	return linkFirstFree(int(file.Fd()), a.f.dir, func(yield func(string) bool) {
		a.f.freeCandidates(name, partSuffix, yield)
	}, isPartName)
}

// partial handles a 206 to our Range request. It is accepted only when it
// continues exactly where the part ends and describes the same file (C18).
func (a *attempt) partial(resp *http.Response) {
	start, end, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
	var why string
	switch {
	case !ok || total < 0 || end < start:
		why = fmt.Sprintf("unusable Content-Range %q", resp.Header.Get("Content-Range"))
	case start != a.have:
		why = fmt.Sprintf("range starts at %d, part has %d bytes", start, a.have)
	case a.req.Size >= 0 && total != a.req.Size:
		why = fmt.Sprintf("total changed from %d to %d", a.req.Size, total)
	case end >= total:
		why = fmt.Sprintf("range end %d beyond total %d", end, total)
	case resp.ContentLength >= 0 && resp.ContentLength != end-start+1:
		why = fmt.Sprintf("Content-Length %d disagrees with Content-Range %d-%d", resp.ContentLength, start, end)
	case isStrongETag(a.req.ETag) && resp.Header.Get("ETag") != "" && resp.Header.Get("ETag") != a.req.ETag:
		why = "ETag changed"
	}
	if why != "" {
		a.restart("resume rejected: " + why)
		return
	}
	if !a.preflight(total, a.have) {
		return
	}
	if e := resp.Header.Get("ETag"); e != "" {
		a.res.ETag = e
	}
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		a.res.LastModified = lm
	}
	a.res.Size = total
	if !a.hashPart() {
		return
	}
	// A server may send less than the rest it was asked for (a range
	// capped in size): what it sent is kept, and the rest asked for next.
	a.stream(io.LimitReader(resp.Body, end-start+1), total, end+1)
}

// rangeNotSatisfiable handles a 416 to our Range request: "bytes */N" with N
// equal to the part's size means the part is already the whole file (C20).
// The body (an error page) is never written.
func (a *attempt) rangeNotSatisfiable(resp *http.Response) {
	n, ok := parseUnsatisfiedRange(resp.Header.Get("Content-Range"))
	if !ok || n != a.have || a.req.Size >= 0 && n != a.req.Size {
		a.restart(fmt.Sprintf("resume rejected: 416 with Content-Range %q, part has %d bytes",
			resp.Header.Get("Content-Range"), a.have))
		return
	}
	a.res.Size = n
	if !a.hashPart() {
		return
	}
	a.complete()
}

// restart empties the part so the next attempt starts from zero, and reports
// ResumeRejected (retryable at once).
func (a *attempt) restart(why string) {
	if !a.truncate() {
		return
	}
	a.res.Size, a.res.ETag, a.res.LastModified = -1, "", ""
	a.fail(ResumeRejected, true, errors.New(why))
}

// truncate empties the open part file.
func (a *attempt) truncate() bool {
	if err := a.file.Truncate(0); err != nil {
		a.fail(Disk, false, fmt.Errorf("truncate part: %w", err))
		return false
	}
	if _, err := a.file.Seek(0, io.SeekStart); err != nil {
		a.fail(Disk, false, fmt.Errorf("truncate part: %w", err))
		return false
	}
	a.have, a.res.Bytes, a.flushed = 0, 0, 0
	return true
}

// hashPart feeds the bytes already in the part to the hash and leaves the
// file offset at its end, so the digest covers the whole file (F7).
func (a *attempt) hashPart() bool {
	a.sum = sha256.New()
	if d := a.req.Digest; d != nil && d.part == a.res.Part && d.bytes == a.have {
		// The request before in this attempt hashed these bytes: go on
		// from its state, writing after them.
		if a.sum.(encoding.BinaryUnmarshaler).UnmarshalBinary(d.state) == nil {
			if _, err := a.file.Seek(a.have, io.SeekStart); err != nil {
				a.fail(Disk, false, fmt.Errorf("read part: %w", err))
				return false
			}
			return true
		}
		a.sum = sha256.New()
	}
	if _, err := a.file.Seek(0, io.SeekStart); err != nil {
		a.fail(Disk, false, fmt.Errorf("read part: %w", err))
		return false
	}
	n, err := io.Copy(a.sum, io.LimitReader(a.file, a.have))
	if err == nil && n != a.have {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		a.fail(Disk, false, fmt.Errorf("read part: %w", err))
		return false
	}
	return true
}

// preflight refuses a download whose announced size exceeds the cap or the
// free space before a byte is written (F8, B11). keep is the number of bytes
// of the part that stay (the rest of the part is truncated away first and
// so counts as free).
func (a *attempt) preflight(total, keep int64) bool {
	if total < 0 {
		return true
	}
	if a.f.maxSize > 0 && total > a.f.maxSize {
		a.fail(SizeLimit, false, fmt.Errorf("file is %d bytes, over the %d-byte size cap", total, a.f.maxSize))
		return false
	}
	need, discard := total-keep, a.have-keep
	if free, ok := a.free(); ok && need > free+discard {
		a.fail(Disk, false, fmt.Errorf("file needs %d more bytes, only %d free", need, free+discard))
		return false
	}
	return true
}

func (a *attempt) free() (int64, bool) {
	free, err := a.f.freeSpace()
	if err != nil || free < 0 {
		return 0, false
	}
	return free, true
}

// stream copies body to the part file. total is the expected final size
// (-1 when unknown). The idle timer runs only while Read is blocked, so time
// spent waiting for the bandwidth limiter never counts as idle (N1, L2).
func (a *attempt) stream(body io.Reader, total, upto int64) {
	budget := int64(-1)
	if total < 0 {
		if free, ok := a.free(); ok {
			budget = a.have + free // stop before the disk is full (B12)
		}
	}
	var idle *time.Timer
	if a.f.idle > 0 {
		idle = time.AfterFunc(time.Hour, func() { a.cancel(errIdle) })
		idle.Stop()
		defer idle.Stop()
	}
	if a.req.Started != nil {
		r := a.res
		r.Bytes = a.have
		a.req.Started(r)
	}
	buf := getBuffer(total)
	defer putBuffer(buf)
	for {
		n := len(buf)
		if a.capped() {
			if b := a.f.bw.Burst(); b > 0 && b < n {
				n = b
			}
		}
		if idle != nil {
			idle.Reset(a.f.idle)
		}
		m, rerr := body.Read(buf[:n])
		if idle != nil {
			idle.Stop()
		}
		if m > 0 {
			if !a.write(buf[:m], budget) {
				return
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			a.failErr(rerr, true)
			return
		}
	}
	if upto >= 0 && a.have != upto {
		a.fail(Truncated, true, fmt.Errorf("body ended at %d of %d bytes", a.have, upto))
		return
	}
	if upto < total {
		a.fail(MoreRanges, true, fmt.Errorf("server sent the file up to byte %d of %d", a.have, total))
		if st, err := a.sum.(encoding.BinaryMarshaler).MarshalBinary(); err == nil {
			a.res.Digest = &Digest{part: a.res.Part, bytes: a.have, state: st}
		}
		return
	}
	a.complete()
}

// bufferFor is the read size for a body of total bytes (-1 unknown): small
// for small files, 256 KiB from a megabyte on, so large downloads cost
// few system calls per byte.
func bufferFor(total int64) int {
	if total > 1<<20 || total < 0 {
		return 256 << 10
	}
	return 32 << 10
}

// Read buffers are reused: at thousands of small files a second, a fresh
// 32 KiB buffer per file was most of what the collector had to clean.
var buffers = [2]sync.Pool{
	{New: func() any { b := make([]byte, 32<<10); return &b }},
	{New: func() any { b := make([]byte, 256<<10); return &b }},
}

func pool(size int) *sync.Pool {
	if size > 32<<10 {
		return &buffers[1]
	}
	return &buffers[0]
}

// getBuffer returns a read buffer of bufferFor(total) bytes; give it back
// with putBuffer.
func getBuffer(total int64) []byte {
	return *pool(bufferFor(total)).Get().(*[]byte)
}

func putBuffer(b []byte) { pool(len(b)).Put(&b) }

// capped reports whether a bandwidth cap applies now: a limiter at
// rate.Inf (the owner lifted the cap) limits nothing, whatever its burst.
func (a *attempt) capped() bool {
	return a.f.bw != nil && a.f.bw.Limit() != rate.Inf
}

// write appends p to the part, enforcing the size cap, the free-space budget
// and the bandwidth limit.
func (a *attempt) write(p []byte, budget int64) bool {
	m := int64(len(p))
	if a.f.maxSize > 0 && a.have+m > a.f.maxSize {
		// The file can never fit: drop the part rather than keep a useless
		// prefix (B12). No final file is made.
		if a.held != nil {
			a.res.Part, a.held = a.held.settle(), nil
		}
		a.file.Close()
		a.file = nil
		if a.res.Part != "" {
			a.f.root.Remove(a.res.Part)
		}
		a.res.Part, a.res.Bytes, a.have = "", 0, 0
		a.fail(SizeLimit, false, fmt.Errorf("body exceeds the %d-byte size cap", a.f.maxSize))
		return false
	}
	if budget >= 0 && a.have+m > budget {
		a.fail(Disk, false, fmt.Errorf("not enough free space: stopped at %d bytes", a.have))
		return false
	}
	if a.capped() {
		for rest := len(p); rest > 0; {
			k := min(rest, max(a.f.bw.Burst(), 1))
			if err := a.f.bw.WaitN(a.ctx, k); err != nil {
				a.failErr(err, true)
				return false
			}
			rest -= k
		}
	}
	if _, err := a.file.Write(p); err != nil {
		a.fail(Disk, false, fmt.Errorf("write part: %w", err))
		return false
	}
	a.sum.Write(p)
	a.have += m
	a.res.Bytes = a.have
	a.res.Received += m
	if a.have-a.flushed >= writeBehind {
		// Start writing this stretch to disk now, without waiting for it:
		// the sync before the final name (F4) then has little left to do,
		// instead of a large file's every byte.
		startWriteback(a.file, a.flushed, a.have-a.flushed)
		a.flushed = a.have
	}
	a.progress(a.have)
	return true
}

// writeBehind is how many bytes of a part may wait in memory before the
// system is asked to start writing them out.
const writeBehind = 8 << 20

// complete records the finished body and, unless the caller defers it,
// makes the part final (F3, F4, F7).
func (a *attempt) complete() {
	a.res.Pending = &Pending{file: a.file, part: a.res.Part}
	if a.held != nil {
		if part := a.held.settle(); part != "" {
			a.res.Part, a.res.Pending.part = part, part // it took its part name after holdFor
		} else {
			a.res.Pending.held = a.held.name
		}
		a.held = nil
	}
	a.file = nil
	a.res.SHA256 = hex.EncodeToString(a.sum.Sum(nil))
	a.res.Bytes = a.have
	a.res.Class, a.res.Retryable, a.res.Err = OK, false, nil
	if !a.req.Defer {
		a.f.FinishParts([]*Result{&a.res})
	}
}

// failErr classifies a transport error. inBody tells whether the response
// headers had already arrived.
func (a *attempt) failErr(err error, inBody bool) {
	c, retry := classify(a.parent, a.ctx, err, inBody)
	if ue, ok := err.(*url.Error); ok {
		// `Get "http://…": dial tcp …`: the URL is already beside every
		// reason Heed shows, and the method is always GET.
		err = ue.Err
	}
	if c == Timeout && errors.Is(context.Cause(a.ctx), errIdle) {
		err = fmt.Errorf("%w (%s)", errIdle, a.f.idle)
	}
	a.fail(c, retry, err)
}

// classify maps an error from the transport or the body to a Class and its
// R2 retryability.
func classify(parent, reqCtx context.Context, err error, inBody bool) (Class, bool) {
	if errors.Is(context.Cause(reqCtx), errIdle) {
		return Timeout, true
	}
	if parent.Err() != nil {
		if errors.Is(context.Cause(parent), context.DeadlineExceeded) {
			return Timeout, true
		}
		return Canceled, false
	}
	var (
		verr  *tls.CertificateVerificationError
		uaerr x509.UnknownAuthorityError
		herr  x509.HostnameError
		cierr x509.CertificateInvalidError
	)
	if errors.As(err, &verr) || errors.As(err, &uaerr) || errors.As(err, &herr) || errors.As(err, &cierr) {
		return TLS, false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Timeout, true
	}
	if inBody && errors.Is(err, io.ErrUnexpectedEOF) {
		return Truncated, true
	}
	return Transport, true
}

// malformed recognises a redirect whose Location net/http could not parse,
// which it reports as an error of the exchange: it is refused at once (A8,
// R2) like one Heed parses and refuses itself (see redirect), not retried as
// a broken connection. Responses whose framing is malformed stay connection
// errors (B15).
func malformed(err error) (error, bool) {
	if strings.Contains(err.Error(), "failed to parse Location header") {
		return fmt.Errorf("redirect to an unparsable Location: %w", err), true
	}
	return nil, false
}

// parseContentRange parses "bytes first-last/total" (total may be "*",
// reported as -1).
func parseContentRange(v string) (first, last, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, 0, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, 0, false
	}
	first, err1 := parseNonNeg(a)
	last, err2 := parseNonNeg(b)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	total = -1
	if tot != "*" {
		t, err := parseNonNeg(tot)
		if err != nil {
			return 0, 0, 0, false
		}
		total = t
	}
	return first, last, total, true
}

// parseUnsatisfiedRange parses the "bytes */N" of a 416.
func parseUnsatisfiedRange(v string) (int64, bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes */")
	if !found {
		return 0, false
	}
	n, err := parseNonNeg(rest)
	return n, err == nil
}

// parseNonNeg accepts only plain decimal digits (no sign, no spaces) that
// fit an int64.
func parseNonNeg(s string) (int64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("not a byte count: %q", s)
	}
	return strconv.ParseInt(s, 10, 64)
}
