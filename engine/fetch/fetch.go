// Package fetch performs one HTTP exchange for one Heed job and writes the
// response body into the download folder, safely.
//
// A Fetcher is the only code in Heed that touches downloaded bytes. Each call
// to [Fetcher.Do] sends one request (one redirect hop) through a configured
// *http.Transport and returns a [Result] that says what happened and what to
// persist so that the next attempt can resume. The fetcher never follows
// redirects itself: it validates the Location and hands it back in
// Result.Redirect, so the engine can route the next hop through the target
// host's governor and breaker (SPEC N2).
//
// The download folder is a jail (SPEC F1–F4). Every file operation goes
// through an [os.Root] opened on Config.Dir, names are reduced to safe
// components by [SafeName], data is written to the job's part file (its name
// chosen and recorded by the engine before the file exists), created with
// O_EXCL, and a complete body is synced before Do reports it done. The engine
// then records the download done and gives the part its final name with
// [Fetcher.Rename], which never replaces an existing file (F3).
package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/time/rate"
)

// MaxHops is the number of redirects a job may follow (SPEC N2).
const MaxHops = 10

// MaxURLBytes is the longest URL Heed fetches, stores or follows a redirect
// to (RELIABILITY G39): longer ones are refused with the reason.
const MaxURLBytes = 8 << 10

// Config configures a Fetcher. The zero value of every field but Dir is
// usable:
//
//   - Dir is the download folder, created if missing. All writes go through
//     an os.Root opened on it (F1).
//   - Version is Heed's version, used in the default User-Agent
//     "Heed/<Version>" ("dev" when empty). UserAgent, when set, replaces that
//     header entirely (N3).
//   - MaxSize caps the size of one file in bytes; 0 means no cap (F8).
//   - AllowDowngrade permits a redirect from https to http (N2).
//   - ConnectTimeout (default 30 s), TLSHandshakeTimeout (10 s),
//     ResponseHeaderTimeout (30 s), IdleTimeout (60 s without a body byte)
//     and WriteTimeout (30 s to write any part of a request) bound every
//     exchange (N1, G39); a negative value disables one. There is
//     deliberately no total timeout.
//   - IdlePerHost is how many idle connections are kept per host: the
//     politeness default of requests in flight per host (1).
//   - Transport carries the requests; nil means the configured
//     *http.Transport described above, with compression disabled (F6) and
//     proxies from the environment, read when the Fetcher is built
//     (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY as their fallback, NO_PROXY;
//     socks5:// included; see N4). The timeouts other than IdleTimeout only
//     shape that default transport.
//   - ProxyFor, when not nil, gives the proxy a person set for the host of
//     a request's URL, overriding the environment (N4): ok false leaves the
//     request to the environment's rule, a nil proxy with ok true sends it
//     direct. It shapes only the default transport.
//   - FreeSpace reports the bytes available in Dir; nil means statfs on Dir
//     (where the platform supports it). An error disables the check.
//   - Bandwidth, when not nil, is a shared limiter in bytes per second (L2).
//     Its owner may change its limit and burst at any time; the burst must
//     stay ≥ 1 while the limit is finite. Time spent waiting for it does not
//     count towards the idle timeout.
//   - Cookies, when not nil, is the cookie jar every request takes its
//     cookies from and every response's Set-Cookie goes into (ReadCookies).
//   - Netrc, when not nil, gives the login sent as Basic authorization to
//     a host it names (or to any, by its default entry): only over https,
//     so a password never crosses the network in the clear, and only when
//     the request has no Authorization of its own (an extra header, or the
//     URL's user:password).
//   - Keep lists files that are never written, whatever name a server gives
//     its file: Heed's database and the files SQLite keeps beside it. Those
//     in Dir are never taken as a part or final name (compared without
//     regard to case); a download that would take one gets "name (1)".
type Config struct {
	Dir            string
	Version        string
	UserAgent      string
	MaxSize        int64
	AllowDowngrade bool

	ConnectTimeout        time.Duration
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration
	IdleTimeout           time.Duration
	WriteTimeout          time.Duration
	IdlePerHost           int

	Transport http.RoundTripper
	ProxyFor  func(u *url.URL) (proxy *url.URL, ok bool)
	FreeSpace func() (int64, error)
	Bandwidth *rate.Limiter
	Cookies   http.CookieJar
	Netrc     *Netrc
	Keep      []string
}

// Default N1 timeouts.
const (
	DefaultConnectTimeout        = 30 * time.Second
	DefaultTLSHandshakeTimeout   = 10 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout           = 60 * time.Second
	DefaultWriteTimeout          = 30 * time.Second
)

// Request describes one exchange (one hop) of a job's attempt.
//
// URL is the address to request now; UserURL is the address the person gave,
// the only source of the fallback file name (F2, RELIABILITY A7). When
// UserURL is nil, URL is taken as the user's URL.
//
// Part is the job's part file, relative to Dir, as the engine recorded it:
// resumed when it exists (with ETag, LastModified and Size, the state a
// previous exchange returned), created with O_EXCL when it does not. When
// its name is taken meanwhile by a file that is not the job's, NewPart is
// asked for another one (the engine records it first); nil means the next
// free candidate. Hop counts the redirects followed so far.
//
// Name is the final name an earlier exchange of the job was given (F2, by
// Content-Disposition), kept when this response names none (a 206).
//
// Started, when not nil, is called once per Do, when the part file is open
// and the response's validators are known, just before the body is copied:
// the caller records them so that a crash in the middle of the body resumes
// from the part (F5, S2).
//
// Resend, when not nil, is asked before the transport sends the request a
// second time on a fresh connection, after the server dropped a kept-alive
// one without answering: it must charge that request to the host's bucket
// and report whether it may go (G40). Without it, no request is sent twice.
//
// Header holds extra headers for this hop's host (ParseHeaders): they are
// sent beside Heed's, and a User-Agent among them replaces Heed's. Bandwidth,
// when not nil, caps this hop's host in bytes per second, beside the global
// cap (L2); its owner may change its limit as Config.Bandwidth's.
//
// Digest, when the previous exchange of the same attempt ended MoreRanges,
// is its Result's Digest: the SHA-256 state of the part so far, so that
// asking for the rest does not read the whole part again.
type Request struct {
	URL          *url.URL
	UserURL      *url.URL
	Part         string
	NewPart      func() (string, error)
	ETag         string
	LastModified string
	Size         int64
	Name         string
	Hop          int
	Started      func(Result)
	Resend       func() bool
	Header       http.Header
	Bandwidth    *rate.Limiter
	Digest       *Digest
}

// Result reports one exchange. Every field is meaningful whatever the
// outcome:
//
//   - Status, Header and RetryAfter come from the response (zero when none
//     arrived). RetryAfter is the raw header; parsing it is the governor's job.
//   - Redirect is the validated, absolute target of a 301/302/303/307/308;
//     the caller makes the next hop with it (Class is OK).
//   - Done is true when Part holds the whole download, synced to disk;
//     SHA256 is its hex digest (F7) and Name the final name F2 gives it (a
//     safe component), which Rename gives the part once the caller has
//     recorded it.
//   - Part, Bytes, Size, ETag and LastModified are the resume state to
//     persist after any exchange: the part file ("" when none is kept), the
//     bytes in it, the expected total (-1 unknown) and the validators saved
//     with the part (F5). Received is how many of those bytes this exchange
//     wrote (the rest were there before it).
//   - Class says why the exchange did not complete; Err carries the reason
//     in words. Retryable applies SPEC R2.
//   - Resent counts the requests the transport sent again after the server
//     dropped a kept-alive connection unanswered (see Request.Resend).
//   - Digest, with Class MoreRanges, is for the Request asking for the rest.
type Result struct {
	Status     int
	Header     http.Header
	RetryAfter string
	Redirect   *url.URL

	Done   bool
	Name   string
	SHA256 string

	Part         string
	Bytes        int64
	Received     int64
	Size         int64
	ETag         string
	LastModified string

	Class     Class
	Err       error
	Retryable bool
	Resent    int
	Digest    *Digest
}

// Digest is the SHA-256 state of a part's first bytes (see Request.Digest).
type Digest struct {
	part  string
	bytes int64
	state []byte
}

// Class classifies the outcome of an exchange.
type Class int

// Outcome classes. Retryability follows SPEC R2 and is reported in
// Result.Retryable; it is noted here for reference.
const (
	OK             Class = iota // complete, or a valid redirect
	HTTPStatus                  // a non-2xx status; retryable for 408, 429 and 5xx
	Transport                   // connection or protocol error (malformed framing, reset); retryable
	Timeout                     // connect, TLS handshake, response header, write or idle timeout; retryable
	TLS                         // certificate not trusted, expired or for another host; not retryable
	Refused                     // a scheme other than http/https, a downgrade, a bad or too long Location; not retryable
	Confinement                 // a write would leave or be redirected out of the folder; not retryable
	SizeLimit                   // larger than Config.MaxSize; not retryable
	Truncated                   // body ended before its announced length; retryable, part kept
	Redirects                   // more than MaxHops redirects; not retryable
	Canceled                    // the caller's context ended; not retryable
	Disk                        // not enough free space, or a file system error; not retryable
	ResumeRejected              // the server's range did not fit the part; part emptied, retry at once
	MoreRanges                  // a valid 206 that stopped short of the end; part kept, ask for the rest at once
)

var classNames = [...]string{
	OK: "ok", HTTPStatus: "http-status", Transport: "transport", Timeout: "timeout", TLS: "tls",
	Refused: "refused", Confinement: "confinement", SizeLimit: "size-limit", Truncated: "truncated",
	Redirects: "redirects", Canceled: "canceled", Disk: "disk", ResumeRejected: "resume-rejected",
	MoreRanges: "more-ranges",
}

// String returns a short lower-case name for the class, suitable for history.
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// Fetcher performs downloads into one folder. It is safe for concurrent use
// by many goroutines; create one per download folder and Close it when done.
type Fetcher struct {
	root      *os.Root
	dir       *os.File // the folder, opened through root, for renameat2
	client    *http.Client
	fresh     *http.Client    // a request sent again goes on a fresh connection (G40); nil: never sent again
	owned     *http.Transport // the transport New built, nil for Config.Transport
	ua        []string        // the User-Agent header's value
	maxSize   int64
	downgrade bool
	idle      time.Duration
	freeSpace func() (int64, error)
	bw        *rate.Limiter
	netrc     *Netrc
	keep      map[string]bool // lower-case names in the folder never taken (Config.Keep)

	hintMu sync.Mutex
	hints  map[string]int // name and suffix → copy number its last search stopped at
}

// New opens Config.Dir and builds a Fetcher.
func New(cfg Config) (*Fetcher, error) {
	if cfg.Dir == "" {
		return nil, errors.New("fetch: no download folder")
	}
	ua := cfg.UserAgent
	if !httpguts.ValidHeaderFieldValue(ua) {
		return nil, fmt.Errorf("fetch: User-Agent %q holds characters a header cannot", ua)
	}
	if ua == "" {
		v := cfg.Version
		if v == "" {
			v = "dev"
		}
		ua = "Heed/" + v
	}
	// The folder itself is the user's choice; create it like aria2 does.
	// Nothing is ever created outside it afterwards.
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("fetch: create download folder: %w", err)
	}
	root, err := os.OpenRoot(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("fetch: open download folder: %w", err)
	}
	dir, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("fetch: open download folder: %w", err)
	}
	f := &Fetcher{
		root:      root,
		dir:       dir,
		ua:        []string{ua},
		maxSize:   cfg.MaxSize,
		downgrade: cfg.AllowDowngrade,
		idle:      orDefault(cfg.IdleTimeout, DefaultIdleTimeout),
		freeSpace: cfg.FreeSpace,
		bw:        cfg.Bandwidth,
		netrc:     cfg.Netrc,
		keep:      keptNames(dir, cfg.Keep),
		hints:     map[string]int{},
	}
	if f.freeSpace == nil {
		f.freeSpace = func() (int64, error) { return freeSpace(cfg.Dir) }
	}
	tr := cfg.Transport
	if tr == nil {
		f.owned = NewTransport(cfg)
		tr = f.owned
		fresh := f.owned.Clone()
		fresh.DisableKeepAlives = true
		f.fresh = newClient(fresh, cfg.Cookies)
	}
	f.client = newClient(tr, cfg.Cookies)
	return f, nil
}

// newClient sends one hop per request: the engine routes each hop through
// its host's governor.
func newClient(tr http.RoundTripper, jar http.CookieJar) *http.Client {
	return &http.Client{
		Transport:     tr,
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// NewTransport builds the transport every download goes through: the
// standard *http.Transport with the N1 timeouts, a write deadline on every
// write of a request (G39), compression disabled (F6), proxies from the
// environment as it is now (N4), HTTP/2 on TLS, and cfg.IdlePerHost idle
// connections per host.
func NewTransport(cfg Config) *http.Transport {
	dialer := &net.Dialer{Timeout: orDefault(cfg.ConnectTimeout, DefaultConnectTimeout), KeepAlive: 30 * time.Second}
	write := orDefault(cfg.WriteTimeout, DefaultWriteTimeout)
	proxy := envProxy()
	if set := cfg.ProxyFor; set != nil {
		env := proxy
		proxy = func(r *http.Request) (*url.URL, error) {
			if p, ok := set(r.URL); ok {
				return p, nil
			}
			return env(r)
		}
	}
	return &http.Transport{
		Proxy: proxy,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, addr)
			if err != nil || write == 0 {
				return conn, err
			}
			return &writeDeadline{Conn: conn, d: write}, nil
		},
		TLSHandshakeTimeout:    orDefault(cfg.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout),
		ResponseHeaderTimeout:  orDefault(cfg.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
		DisableCompression:     true,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           maxIdle(openFileLimit()),
		MaxIdleConnsPerHost:    max(cfg.IdlePerHost, 1),
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
}

// maxIdle is how many idle connections the transport keeps across all hosts, given the limit on
// open files (0 when there is none). A crawl of a few thousand hosts at a request a second each
// keeps every host's connection between two of its requests, instead of dialling it again (and,
// on a real site, shaking hands for TLS again) for every other one; but idle connections take no
// more than a quarter of the open files, which part files, the database and the requests in
// flight share.
func maxIdle(openFiles int) int {
	const most = 4096
	if openFiles <= 0 {
		return most
	}
	return max(min(most, openFiles/4), 16)
}

// writeDeadline is a connection whose every write must finish within d: a
// server that stops reading cannot hold a request for ever (G39).
type writeDeadline struct {
	net.Conn
	d time.Duration
}

func (c *writeDeadline) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.d)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// orDefault maps 0 to def and negative durations to 0 (disabled).
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Close releases the download folder and idle connections. Do must not be
// called after Close.
func (f *Fetcher) Close() error {
	if f.owned != nil {
		f.owned.CloseIdleConnections()
		f.fresh.CloseIdleConnections()
	}
	f.dir.Close()
	return f.root.Close()
}

// httpScheme reports whether u is an absolute http or https URL with a host.
func httpScheme(u *url.URL) bool {
	s := strings.ToLower(u.Scheme)
	return (s == "http" || s == "https") && u.Host != ""
}
