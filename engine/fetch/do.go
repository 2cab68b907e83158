package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// errIdle is the cancellation cause when no body byte arrived within the
// idle timeout (N1).
var errIdle = errors.New("no data received within the idle timeout")

// errDrain is the cancellation cause when a discarded body (an error page, a
// redirect's) did not arrive within drainFor: the connection is closed
// instead of kept (G37).
var errDrain = errors.New("discarded body stalled")

// drainLimit and drainFor bound how much of a discarded body (redirect,
// error page) is read, and for how long, so its connection can be reused;
// past either the connection is closed instead (G37).
const (
	drainLimit = 64 << 10
	drainFor   = time.Second
)

// Do performs one HTTP exchange for req and reports it. It never panics on
// hostile input and never returns without filling Result.Class.
//
// progress, if not nil, is called from Do's goroutine after every write with
// the number of bytes now in the part file (resumed bytes included). It must
// be quick; throttle UI updates on the receiving side.
func (f *Fetcher) Do(ctx context.Context, req Request, progress func(bytesSoFar int64)) Result {
	a := &exchange{
		f:        f,
		req:      req,
		progress: progress,
		res:      Result{Part: req.Part, Size: req.Size, ETag: req.ETag, LastModified: req.LastModified},
	}
	if a.progress == nil {
		a.progress = func(int64) {}
	}
	a.run(ctx)
	if a.file != nil {
		a.file.Close()
	}
	return a.res
}

// exchange is the state of one Do call.
type exchange struct {
	f        *Fetcher
	req      Request
	res      Result
	progress func(int64)

	file *os.File  // open part file, nil until there is one
	have int64     // bytes in the part file
	sum  hash.Hash // SHA-256 of the bytes in the part file, once streaming

	// memory, when set, takes a 2xx body instead of the part (Get).
	memory func(*http.Response)

	parent context.Context
	ctx    context.Context // the request's context
	cancel context.CancelCauseFunc
}

func (a *exchange) fail(c Class, retryable bool, err error) {
	a.res.Class, a.res.Retryable, a.res.Err = c, retryable, err
}

func (a *exchange) run(parent context.Context) {
	req := a.req
	if req.URL == nil || !httpScheme(req.URL) {
		a.fail(Refused, false, fmt.Errorf("only http and https URLs are fetched, not %q", schemeOf(req.URL)))
		return
	}
	if req.Hop > MaxHops {
		a.fail(Redirects, false, fmt.Errorf("more than %d redirects", MaxHops))
		return
	}
	if n := len(req.URL.String()); n > MaxURLBytes {
		a.fail(Refused, false, fmt.Errorf("the URL is %d bytes long, over the limit of %d", n, MaxURLBytes))
		return
	}
	if req.Part != "" {
		file, size, err := a.f.openPart(req.Part)
		switch {
		case err == nil:
			a.file, a.have = file, size
		case errors.Is(err, fs.ErrNotExist):
			// Recorded but not there: created when the body comes, from zero.
			a.res.Part, a.res.Size, a.res.ETag, a.res.LastModified = "", -1, "", ""
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

	resp, err := a.send()
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
	if resp.StatusCode < 100 || resp.StatusCode > 999 {
		// "000" parses as a status; it is no response at all.
		a.res.Status = 0
		a.fail(Transport, true, fmt.Errorf("the server sent a malformed status line %q", resp.Status))
		return
	}

	resuming := a.resuming()
	switch code := resp.StatusCode; {
	case isRedirect(code):
		a.drain(resp.Body)
		a.redirect(resp)
	case code >= 200 && code < 300 && a.memory != nil:
		a.memory(resp)
	case code == http.StatusRequestedRangeNotSatisfiable && resuming:
		a.rangeNotSatisfiable(resp)
	case code == http.StatusPartialContent && resuming:
		a.partial(resp)
	case code >= 200 && code < 300 && code != http.StatusPartialContent:
		a.full(resp)
	default:
		a.drain(resp.Body)
		a.fail(HTTPStatus, retryableStatus(code), fmt.Errorf("server answered %q", resp.Status))
	}
}

// resuming reports whether the request asks for the rest of the part: only
// with a validator, else a changed file could be spliced (C21).
func (a *exchange) resuming() bool {
	return a.have > 0 && ifRange(a.req.ETag, a.req.LastModified) != ""
}

// noRetry is the empty body every request carries: net/http never sends a
// request with a body again by itself (its documented rule for requests
// without GetBody), so that whether a dropped request goes again is Heed's
// decision (G40). An empty body is sent as none.
type noRetry struct{}

func (noRetry) Read([]byte) (int, error) { return 0, io.EOF }
func (noRetry) Close() error             { return nil }

// send sends the request and returns the response head. When a kept-alive
// connection fails before any byte of a response, the request goes once
// more on a fresh connection: at once if it never left, and only if
// Request.Resend allows when the server may have seen it (G40).
func (a *exchange) send() (*http.Response, error) {
	resp, st, err := a.sendOn(a.f.client)
	if err == nil || !st.reused.Load() || st.firstByte.Load() || a.parent.Err() != nil || a.f.fresh == nil {
		return resp, err
	}
	if st.wrote.Load() {
		if a.req.Resend == nil || !a.req.Resend() {
			return nil, fmt.Errorf("the server closed a kept-alive connection without answering: %w", err)
		}
		a.res.Resent++
	}
	resp, _, err = a.sendOn(a.f.fresh)
	return resp, err
}

// sent is what the trace saw of one request.
type sent struct {
	reused, wrote, firstByte atomic.Bool
}

func (a *exchange) sendOn(client *http.Client) (*http.Response, *sent, error) {
	// The request is built from the URL as it stands, not from its text
	// parsed again as http.NewRequest would.
	u := *a.req.URL
	u.Host = strings.TrimSuffix(u.Host, ":") // an empty port, as http.NewRequest does
	st := &sent{}
	trace := &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { st.reused.Store(i.Reused) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { st.wrote.Store(true) },
		GotFirstResponseByte: func() { st.firstByte.Store(true) },
	}
	hreq := (&http.Request{
		Method: http.MethodGet, URL: &u, Host: u.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		// An explicit Accept-Encoding also stops any transport from
		// decompressing transparently (F6).
		Header: http.Header{"User-Agent": a.f.ua, "Accept-Encoding": identity},
		Body:   noRetry{},
	}).WithContext(httptrace.WithClientTrace(a.ctx, trace))
	for name, values := range a.req.Header {
		hreq.Header[name] = values
	}
	if a.f.netrc != nil && u.Scheme == "https" && u.User == nil && hreq.Header.Get("Authorization") == "" {
		if login, password, ok := a.f.netrc.For(u.Hostname()); ok {
			hreq.SetBasicAuth(login, password)
		}
	}
	if a.resuming() {
		hreq.Header.Set("Range", "bytes="+strconv.FormatInt(a.have, 10)+"-")
		hreq.Header.Set("If-Range", ifRange(a.req.ETag, a.req.LastModified))
	}
	resp, err := client.Do(hreq)
	return resp, st, err
}

// identity is the Accept-Encoding of every request.
var identity = []string{"identity"}

// drain reads what is left of a discarded body, at most drainLimit bytes
// and for at most drainFor, so the connection may be kept; a body that
// stalls or runs on has its connection closed instead (G37).
func (a *exchange) drain(body io.Reader) {
	t := time.AfterFunc(drainFor, func() { a.cancel(errDrain) })
	defer t.Stop()
	io.CopyN(io.Discard, body, drainLimit)
}

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

// redirect validates the Location of a 3xx (N2, A8, G38, G39).
func (a *exchange) redirect(resp *http.Response) {
	loc := resp.Header.Get("Location")
	switch {
	case loc == "":
		a.fail(HTTPStatus, false, fmt.Errorf("server answered %q without a Location", resp.Status))
		return
	case len(loc) > MaxURLBytes:
		a.fail(Refused, false, fmt.Errorf("redirect to a Location of %d bytes, over the limit of %d", len(loc), MaxURLBytes))
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
	// parsed again (see sendOn): a target whose text does not parse, as a
	// scheme-relative "//h:80:/x" resolves to, is refused here instead; so
	// is one with no host key, which the same URL typed in would be.
	if _, err := url.Parse(target.String()); err != nil {
		a.fail(Refused, false, fmt.Errorf("redirect to an unparsable Location: %w", err))
		return
	}
	if len(target.String()) > MaxURLBytes {
		a.fail(Refused, false, fmt.Errorf("redirect to a URL over the limit of %d bytes", MaxURLBytes))
		return
	}
	if err := canonical(target); err != nil {
		a.fail(Refused, false, fmt.Errorf("redirect to an invalid URL: %s: %s", Redact(target.String()), strings.TrimPrefix(err.Error(), "host key: ")))
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
	a.res.Redirect = target
}

// failErr classifies a transport error. inBody tells whether the response
// headers had already arrived.
func (a *exchange) failErr(err error, inBody bool) {
	c, retry := classify(a.parent, a.ctx, err, inBody)
	var ue *url.Error
	if errors.As(err, &ue) {
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
