// Package fetch performs one HTTP exchange for one Heed job and writes the
// response body into the download folder, safely.
//
// A Fetcher is the only code in Heed that touches downloaded bytes. Each call
// to [Fetcher.Do] sends exactly one request (one redirect hop) and returns a
// [Result] that says what happened and what to persist so that the next
// attempt can resume. The fetcher never follows redirects itself: it
// validates the Location and hands it back in Result.Redirect, so the engine
// can route the next hop through the target host's governor and breaker
// (SPEC N2).
//
// The download folder is a jail (SPEC F1–F4). Every file operation goes
// through an [os.Root] opened on Config.Dir, names are reduced to one safe
// component by [SafeName], data is written to "name.part" created with
// O_EXCL, and only a complete, fsynced part is hard-linked to its final name,
// which is itself taken exclusively: an existing file is never overwritten,
// and no final file is ever partial.
//
// A typical loop, run by the engine, looks like:
//
//	req := fetch.Request{URL: u, UserURL: u, Size: -1}
//	for {
//		res := f.Do(ctx, req, onProgress)
//		persist(res) // Part, Bytes, Size, ETag, LastModified
//		if res.Redirect != nil {
//			req.URL, req.Hop = res.Redirect, req.Hop+1
//			continue // after the target host's governor says go
//		}
//		if res.Done || !res.Retryable {
//			break
//		}
//		req.Part, req.ETag, req.LastModified, req.Size = res.Part, res.ETag, res.LastModified, res.Size
//		// wait for the retry delay, then loop
//	}
package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/time/rate"
)

// MaxHops is the number of redirects a job may follow (SPEC N2). A redirect
// response received when Request.Hop is already MaxHops fails with class
// Redirects.
const MaxHops = 10

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
//     ResponseHeaderTimeout (30 s) and IdleTimeout (60 s without a body byte)
//     are the N1 timeouts; a negative value disables one. There is
//     deliberately no total timeout. The first three only shape the default
//     transport; IdleTimeout applies to any transport.
//   - Transport carries the requests; nil means a tuned *http.Transport with
//     the timeouts above, compression disabled (F6), proxies from the
//     environment and enough idle connections per host for Heed's concurrency.
//   - FreeSpace reports the bytes available in Dir; nil means statfs on Dir
//     (where the platform supports it). A FreeSpace error disables the check.
//   - Bandwidth, when not nil, is a shared limiter in bytes per second (L2).
//     Its owner may change its limit and burst at any time; the burst must
//     stay ≥ 1 while the limit is finite. Time spent waiting for it does not
//     count towards the idle timeout.
//   - Owner, when set, names whoever keeps the records of these downloads
//     (Heed's database): each part file created for a Request with a Job is
//     marked with Owner and that job (see OwnedParts). Where the file system
//     cannot hold the mark, parts are created unmarked.
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

	Transport http.RoundTripper
	FreeSpace func() (int64, error)
	Bandwidth *rate.Limiter
	Owner     string
	Keep      []string
}

// Default N1 timeouts.
const (
	DefaultConnectTimeout        = 30 * time.Second
	DefaultTLSHandshakeTimeout   = 10 * time.Second
	DefaultResponseHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout           = 60 * time.Second
)

// Request describes one attempt (one hop) of a job.
//
// URL is the address to request now; UserURL is the address the person gave,
// the only source of the fallback file name (F2, RELIABILITY A7). When
// UserURL is nil and Hop is 0, URL is taken as the user's URL.
//
// Part, ETag, LastModified and Size are the resume state a previous attempt
// returned in its Result (Part "" and Size -1 when there is none). Hop counts
// the redirects followed so far.
//
// Job is the id of the job the attempt is for, marked on a part file it
// creates (see Config.Owner); 0 marks nothing.
//
// Started, when not nil, is called once per Do, when the part file is open
// and the response's validators are known, just before the body is copied.
// Its Result carries Part, Bytes (already on disk), Size, ETag and
// LastModified: the caller persists them so that a crash in the middle of
// the body still resumes from the part (F5, S2).
//
// Digest, when the previous request of the same attempt ended MoreRanges, is
// its Result's Digest: the SHA-256 state of the part so far, so that asking
// for the rest does not read the whole part again to go on hashing it.
//
// Defer, when set, leaves a complete download for the caller to make final:
// Do then returns as soon as the whole body is in the part — Class OK, Done
// false, SHA256 and Bytes set, and Pending holding the open part — and the
// caller passes the Result to FinishParts, with others if it likes. Every
// such Result must reach FinishParts, which closes its part.
type Request struct {
	URL          *url.URL
	UserURL      *url.URL
	Part         string
	ETag         string
	LastModified string
	Size         int64
	Hop          int
	Job          int64
	Started      func(Result)
	Digest       *Digest
	Defer        bool
}

// Result reports one attempt. Every field is meaningful whatever the outcome:
//
//   - Status, Header and RetryAfter come from the response (zero when none
//     arrived). RetryAfter is the raw header; parsing it is the governor's job.
//   - Redirect is the validated, absolute target of a 301/302/303/307/308;
//     the caller makes the next hop with it (Class is OK).
//   - Done is true when File (a name relative to Dir) holds the complete
//     download; SHA256 is then its hex digest (F7).
//   - Part, Bytes, Size, ETag and LastModified are the resume state to
//     persist after any attempt: the part file name ("" when none is kept),
//     the bytes in it (or in File when Done), the expected total (-1 unknown)
//     and the validators saved with the part (F5). Received is how many of
//     those bytes this request wrote (the rest were there before it).
//   - Pending is a complete part not yet made final, when the Request
//     deferred that (see Request.Defer and FinishParts).
//   - Class says why the attempt did not complete; Err carries the reason
//     in words. Retryable applies SPEC R2.
//   - Digest, with Class MoreRanges, is for the Request asking for the rest.
type Result struct {
	Status     int
	Header     http.Header
	RetryAfter string
	Redirect   *url.URL

	Done    bool
	File    string
	SHA256  string
	Pending *Pending

	Part         string
	Bytes        int64
	Received     int64
	Size         int64
	ETag         string
	LastModified string

	Class     Class
	Err       error
	Retryable bool
	Digest    *Digest
}

// Digest is the SHA-256 state of a part's first bytes (see Request.Digest).
type Digest struct {
	part  string
	bytes int64
	state []byte
}

// Pending is a download whose whole body is in its part file, still open,
// waiting for FinishParts. A small body is held in a file with no name
// instead (see hold): part is "" and held the name it is to take.
type Pending struct {
	file *os.File
	part string
	held string
}

// Held reports whether r's complete body waits in a file with no name (see
// hold): it has no part, and its bytes go with the file if Release lets it
// go or the process ends before NameParts names it.
func (r *Result) Held() bool { return r.Pending != nil && r.Pending.held != "" }

// Release lets go of r's complete download when it is not to be named (its
// job was paused or cancelled while it finished, or nothing could record
// it): a held body goes with its file; a part stays under its name.
func (f *Fetcher) Release(r *Result) {
	if p := r.Pending; p != nil && p.file != nil {
		p.file.Close()
		p.file = nil
	}
	r.Pending = nil
}

// Class classifies the outcome of an attempt.
type Class int

// Outcome classes. Retryability follows SPEC R2 and is reported in
// Result.Retryable; it is noted here for reference.
const (
	OK             Class = iota // complete, or a valid redirect
	HTTPStatus                  // a non-2xx status; retryable for 408, 429 and 5xx
	Transport                   // connection or protocol error (malformed framing, reset); retryable
	Timeout                     // connect, TLS handshake, response header or idle timeout; retryable
	TLS                         // certificate not trusted, expired or for another host; not retryable
	Refused                     // a scheme other than http/https, or an https→http downgrade; not retryable
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
	dir       *os.File                    // the folder, opened through root
	client    atomic.Pointer[http.Client] // the current one (see rotate)
	newTr     func() *h1Transport         // builds the transport; nil for Config.Transport
	trMu      sync.Mutex                  // rotate and Close
	ownedTr   *h1Transport                // the current transport newTr built
	dials     atomic.Int64                // connections dialed on it
	ua        string
	uaHeader  []string // ua, as a header's values
	maxSize   int64
	downgrade bool
	idle      time.Duration
	freeSpace func() (int64, error)
	bw        *rate.Limiter
	owner     string
	keep      map[string]bool // lower-case names in the folder never taken (Config.Keep)
	hintMu    sync.Mutex
	hints     map[string]int // name and suffix → copy number its last search stopped at
	noMarked  atomic.Bool    // the system cannot create a part already marked
	noHeld    atomic.Bool    // the system cannot hold a body in a file with no name (see hold)
}

// New opens Config.Dir and builds a Fetcher.
func New(cfg Config) (*Fetcher, error) {
	if cfg.Dir == "" {
		return nil, errors.New("fetch: no download folder")
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
	// The folder as an open directory, for renaming a finished part to its
	// final name in one no-replace step where the system can (F3).
	dir, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("fetch: open download folder: %w", err)
	}
	f := &Fetcher{
		root:      root,
		dir:       dir,
		ua:        cfg.UserAgent,
		maxSize:   cfg.MaxSize,
		downgrade: cfg.AllowDowngrade,
		idle:      orDefault(cfg.IdleTimeout, DefaultIdleTimeout),
		freeSpace: cfg.FreeSpace,
		bw:        cfg.Bandwidth,
		owner:     cfg.Owner,
		keep:      keptNames(dir, cfg.Keep),
		hints:     map[string]int{},
	}
	if !httpguts.ValidHeaderFieldValue(f.ua) {
		root.Close()
		dir.Close()
		return nil, fmt.Errorf("fetch: User-Agent %q holds characters a header cannot", f.ua)
	}
	if f.ua == "" {
		v := cfg.Version
		if v == "" {
			v = "dev"
		}
		f.ua = "Heed/" + v
	}
	f.uaHeader = []string{f.ua}
	if f.freeSpace == nil {
		dir := cfg.Dir
		f.freeSpace = recent(func() (int64, error) { return freeSpace(dir) }, freeSpaceFresh)
	}
	tr := cfg.Transport
	if tr == nil {
		f.newTr = func() *h1Transport { return newTransport(cfg, func() { f.dials.Add(1) }) }
		f.ownedTr = f.newTr()
		tr = f.ownedTr
	}
	f.client.Store(newClient(tr))
	return f, nil
}

func newClient(tr http.RoundTripper) *http.Client {
	return &http.Client{
		Transport: tr,
		// One hop per Do: the engine routes each hop through its host's governor.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// An *http.Transport keeps, for every host it dialed, what the request that
// dialed waited with (its wantConn and context), until that host is asked
// again or one of its connections goes idle, which for a host that refused
// the connection never comes (golang/go#50798). A crawl over 100,000 hosts
// grew by some 40 MB in 16 s that way, when every request went through it;
// now only HTTPS and proxied requests do (see h1Transport). So after
// transportDials connections the fetcher moves to a fresh transport: the old
// one finishes what it carries, its connections are closed as its requests
// end (see retire), and it is collected with all it kept.
var transportDials int64 = 4096

// rotate moves to a fresh transport once the current one dialed
// transportDials connections.
func (f *Fetcher) rotate() {
	if f.newTr == nil || f.dials.Load() < transportDials {
		return
	}
	f.trMu.Lock()
	if f.dials.Load() < transportDials { // another request moved first
		f.trMu.Unlock()
		return
	}
	old := f.ownedTr
	f.ownedTr = f.newTr()
	f.dials.Store(0)
	f.client.Store(newClient(f.ownedTr))
	f.trMu.Unlock()
	old.CloseIdleConnections()
}

// retire closes the idle connections of client's transport once the fetcher
// moved on from it (see rotate). Each request that ends on an old transport
// calls it: that transport's CloseIdleConnections closes a connection that
// goes idle later only until its next request, and an HTTP/2 connection
// only if idle at the call.
func (f *Fetcher) retire(client *http.Client) {
	if client != f.client.Load() {
		client.CloseIdleConnections()
	}
}

// keptNames returns the lower-case names of the files in paths that are in
// the folder dir.
func keptNames(dir *os.File, paths []string) map[string]bool {
	here, err := dir.Stat()
	if err != nil {
		return nil
	}
	keep := map[string]bool{}
	for _, p := range paths {
		if st, err := os.Stat(filepath.Dir(p)); err == nil && os.SameFile(st, here) {
			keep[strings.ToLower(filepath.Base(p))] = true
		}
	}
	return keep
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

// newTransport builds the default transport (N1, F6): h1Transport, over an
// *http.Transport for what it does not send itself. dialed is called as each
// connection is dialed, by either.
func newTransport(cfg Config, dialed func()) *h1Transport {
	dialer := &net.Dialer{
		Timeout:   orDefault(cfg.ConnectTimeout, DefaultConnectTimeout),
		KeepAlive: 30 * time.Second,
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dialed()
		return dialer.DialContext(ctx, network, addr)
	}
	std := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial,
		TLSHandshakeTimeout:   orDefault(cfg.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout),
		ResponseHeaderTimeout: orDefault(cfg.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          128,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &h1Transport{
		std: std, dial: dial, header: std.ResponseHeaderTimeout,
		idleFor: std.IdleConnTimeout, maxIdle: std.MaxIdleConns, maxIdlePerHost: std.MaxIdleConnsPerHost,
		idle: map[string][]*h1Conn{},
	}
}

// Close releases the download folder and idle connections. Do must not be
// called after Close.
func (f *Fetcher) Close() error {
	f.trMu.Lock()
	if f.ownedTr != nil {
		f.ownedTr.CloseIdleConnections()
	}
	f.trMu.Unlock()
	f.dir.Close()
	return f.root.Close()
}

// freeSpaceFresh is how long one reading of the folder's free space serves
// the checks of the downloads that start (F8): many small downloads a
// second then cost the file system one statfs(2) each tenth of a second,
// not one each, and the space a download takes after its check is not
// counted by the next one's either way.
const freeSpaceFresh = 100 * time.Millisecond

// recent is read, called again only once its last answer is fresh old.
func recent(read func() (int64, error), fresh time.Duration) func() (int64, error) {
	var (
		mu   sync.Mutex
		at   time.Time
		free int64
		err  error
	)
	return func() (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); at.IsZero() || now.Sub(at) >= fresh {
			free, err = read()
			at = now
		}
		return free, err
	}
}

// errNoRename says the system cannot rename without replacing; the
// fetcher then links the part to its final name and removes the part.
var errNoRename = errors.New("rename without replace is not supported here")

// errNoMark means the system cannot create a part already marked (see
// createMarkedPart).
var errNoMark = errors.New("marked parts are not supported here")

// errNoUnnamed says the system cannot create a file without a name, or
// cannot give one its name (see openUnnamed).
var errNoUnnamed = errors.New("files without a name are not supported here")

// httpScheme reports whether u is an absolute http or https URL with a host.
func httpScheme(u *url.URL) bool {
	s := strings.ToLower(u.Scheme)
	return (s == "http" || s == "https") && u.Host != ""
}
