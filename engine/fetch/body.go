package fetch

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The body of a good response, into the job's part (F4, F5, F7, F8).

// full handles a 2xx other than 206: the body is the whole file, so any part
// restarts from zero (C17, C19).
func (a *exchange) full(resp *http.Response) {
	total := resp.ContentLength
	if !a.preflight(total, 0) {
		return
	}
	a.res.ETag = resp.Header.Get("ETag")
	a.res.LastModified = resp.Header.Get("Last-Modified")
	a.res.Name = responseName(resp.Header, a.userURL())
	if a.file != nil {
		if !a.truncate() {
			return
		}
	} else if !a.createPart() {
		return
	}
	a.res.Size = total
	a.sum = sha256.New()
	a.stream(resp.Body, total, total)
}

// createPart creates the job's part file, or, if its name was taken since
// it was chosen, another one (Request.NewPart).
func (a *exchange) createPart() bool {
	part := a.req.Part
	if part == "" {
		part = a.f.PartFor(a.userURL(), nil)
	}
	for tries := 0; ; tries++ {
		file, err := a.f.createFile(part)
		if err == nil {
			a.file, a.res.Part = file, part
			return true
		}
		if !errors.Is(err, fs.ErrExist) || tries == 8 {
			a.fail(Disk, false, fmt.Errorf("create part file: %w", err))
			return false
		}
		if a.req.NewPart != nil {
			if part, err = a.req.NewPart(); err != nil {
				a.fail(Disk, false, fmt.Errorf("create part file: %w", err))
				return false
			}
		} else {
			part = a.f.PartFor(a.userURL(), nil)
		}
	}
}

// partial handles a 206 to our Range request. It is accepted only when it
// continues exactly where the part ends and describes the same file (C18).
func (a *exchange) partial(resp *http.Response) {
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
	a.res.Name = a.resumedName(resp.Header)
	a.res.Size = total
	if !a.hashPart() {
		return
	}
	// A server may send less than the rest it was asked for (a range
	// capped in size): what it sent is kept, and the rest asked for next.
	a.stream(io.LimitReader(resp.Body, end-start+1), total, end+1)
}

// resumedName is the final name of a resumed download: the response's
// Content-Disposition name, else the one an earlier exchange found, else
// the user's URL's (F2).
func (a *exchange) resumedName(h http.Header) string {
	if n := dispositionName(h.Values("Content-Disposition")); n != "" {
		return n
	}
	if n := sanitize(a.req.Name); n != "" {
		return n
	}
	return responseName(h, a.userURL())
}

// userURL is the URL the person gave: the source of the fallback file name.
func (a *exchange) userURL() *url.URL {
	if a.req.UserURL != nil {
		return a.req.UserURL
	}
	return a.req.URL
}

// rangeNotSatisfiable handles a 416 to our Range request: "bytes */N" with N
// equal to the part's size means the part is already the whole file (C20).
// The body (an error page) is never written.
func (a *exchange) rangeNotSatisfiable(resp *http.Response) {
	n, ok := parseUnsatisfiedRange(resp.Header.Get("Content-Range"))
	if !ok || n != a.have || a.req.Size >= 0 && n != a.req.Size {
		a.restart(fmt.Sprintf("resume rejected: 416 with Content-Range %q, part has %d bytes",
			resp.Header.Get("Content-Range"), a.have))
		return
	}
	a.drain(resp.Body)
	a.res.Name = a.resumedName(resp.Header)
	a.res.Size = n
	if !a.hashPart() {
		return
	}
	a.complete()
}

// restart empties the part so the next request starts from zero, and reports
// ResumeRejected (retryable at once).
func (a *exchange) restart(why string) {
	if !a.truncate() {
		return
	}
	a.res.Size, a.res.ETag, a.res.LastModified = -1, "", ""
	a.fail(ResumeRejected, true, errors.New(why))
}

// truncate empties the open part file.
func (a *exchange) truncate() bool {
	if err := a.file.Truncate(0); err != nil {
		a.fail(Disk, false, fmt.Errorf("truncate part: %w", err))
		return false
	}
	if _, err := a.file.Seek(0, io.SeekStart); err != nil {
		a.fail(Disk, false, fmt.Errorf("truncate part: %w", err))
		return false
	}
	a.have, a.res.Bytes = 0, 0
	return true
}

// hashPart feeds the bytes already in the part to the hash and leaves the
// file offset at its end, so the digest covers the whole file (F7).
func (a *exchange) hashPart() bool {
	a.sum = sha256.New()
	if d := a.req.Digest; d != nil && d.part == a.res.Part && d.bytes == a.have {
		// The exchange before in this attempt hashed these bytes: go on
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
func (a *exchange) preflight(total, keep int64) bool {
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

// free returns the free space of the folder, when it is known.
func (a *exchange) free() (int64, bool) {
	free, err := a.f.freeSpace()
	if err != nil || free < 0 {
		return 0, false
	}
	return free, true
}

// stream copies body to the part file. total is the expected final size
// (-1 when unknown), upto where this body should end. The idle timer runs
// only while Read is blocked, so time spent waiting for the bandwidth
// limiter never counts as idle (N1, L2).
func (a *exchange) stream(body io.Reader, total, upto int64) {
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
		for _, l := range a.caps() {
			if b := l.Burst(); b > 0 && b < n {
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
		if m > 0 && !a.write(buf[:m], budget) {
			return
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

// buffers keep the read buffers of bodies that ended, for the next ones, by
// size: small for small files, 256 KiB for a body of a megabyte or more or
// of unknown length, so large downloads cost few system calls per byte. A
// crawl reads hundreds of small bodies a second, and a fresh buffer for each
// was a third of all it allocated. What goes through a buffer (the part
// file, the hash) keeps none of it.
var (
	smallBuffers = sync.Pool{New: func() any { return new([32 << 10]byte) }}
	largeBuffers = sync.Pool{New: func() any { return new([256 << 10]byte) }}
)

// getBuffer returns a read buffer for a body of total bytes (-1 unknown).
func getBuffer(total int64) []byte {
	if total > 1<<20 || total < 0 {
		return largeBuffers.Get().(*[256 << 10]byte)[:]
	}
	return smallBuffers.Get().(*[32 << 10]byte)[:]
}

// putBuffer gives back a buffer getBuffer returned.
func putBuffer(b []byte) {
	if len(b) == 256<<10 {
		largeBuffers.Put((*[256 << 10]byte)(b))
	} else {
		smallBuffers.Put((*[32 << 10]byte)(b))
	}
}

// caps are the bandwidth caps that apply now: the global one and the
// host's (L2). A limiter at rate.Inf (its owner lifted the cap) limits
// nothing, whatever its burst.
func (a *exchange) caps() []*rate.Limiter {
	var ls []*rate.Limiter
	for _, l := range [...]*rate.Limiter{a.f.bw, a.req.Bandwidth} {
		if l != nil && l.Limit() != rate.Inf {
			ls = append(ls, l)
		}
	}
	return ls
}

// write appends p to the part, enforcing the size cap, the free-space budget
// and the bandwidth limit.
func (a *exchange) write(p []byte, budget int64) bool {
	m := int64(len(p))
	if a.f.maxSize > 0 && a.have+m > a.f.maxSize {
		// The file can never fit: drop the part rather than keep a useless
		// prefix (B12). No final file is made.
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
	for _, l := range a.caps() {
		for rest := len(p); rest > 0; {
			k := min(rest, max(l.Burst(), 1))
			if err := l.WaitN(a.ctx, k); err != nil {
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
	a.progress(a.have)
	return true
}

// complete syncs the finished part and reports it done (F4, F7): its bytes
// are on disk before the engine records it done and names it.
func (a *exchange) complete() {
	err := a.file.Sync()
	if cerr := a.file.Close(); err == nil {
		err = cerr
	}
	a.file = nil
	if err != nil {
		a.fail(Disk, false, fmt.Errorf("sync %s: %w", a.res.Part, err))
		return
	}
	a.res.SHA256 = hex.EncodeToString(a.sum.Sum(nil))
	a.res.Bytes = a.have
	a.res.Done = true
	a.res.Class, a.res.Retryable, a.res.Err = OK, false, nil
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
