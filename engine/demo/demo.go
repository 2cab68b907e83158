// Package demo runs a set of small, misbehaving HTTP servers on loopback so
// that Heed can be shown, tested and benchmarked against real hosts without
// touching the network.
//
// Each host listens on its own loopback address (127.0.0.2, 127.0.0.3, …;
// Linux routes all of 127.0.0.0/8 to the loopback interface), so each is a
// distinct host to Heed's governor. Where such an address cannot be bound the
// host falls back to 127.0.0.1 on its own port, which still gives it its own
// host key, since the key includes a non-default port.
//
// Every host serves Files files at /files/NAME-00000.bin, /files/NAME-00001.bin, … and
// a small HTML index at /. A file's bytes are a pure function of the seed,
// the host's name and the file's index, generated on the fly: nothing is held
// in memory, and Expected gives a file's SHA-256 without downloading it.
// Every file response carries Content-Length, a strong ETag and
// Last-Modified, and honours Range with If-Range (http.ServeContent does the
// work), so Heed can resume a body that a Dropping host cut.
//
// A host's Behavior decides how it misbehaves on /files/ requests:
//
//	Healthy     always serves the file
//	Throttling  answers every Nth request (or a fraction) with 429 and Retry-After
//	Flaky       answers a fraction with 503, some with Retry-After, some without
//	Slow        trickles each body at a set number of bytes per second
//	Dropping    closes the connection mid-body on a fraction of responses
//
// A typical use:
//
//	srv, err := demo.Start(demo.DefaultConfig())
//	if err != nil { … }
//	defer srv.Close()
//	for _, u := range srv.URLs() { … fetch u … }
//	sum, size := srv.Expected(u) // what the bytes must hash to
//	log := srv.Log()             // what each host was asked and answered
//
// Random choices (which request fails, where a body is cut) come from a
// generator per host seeded from Config.Seed, so a run with the same seed and
// the same request order makes the same choices.
//
// Site, apart from the hosts, is a small web site to crawl (StartSite serves
// it on a loopback address of its own): pages linking each other, a
// robots.txt with a disallowed folder, a Crawl-delay and a sitemap, and two
// crawler traps.
package demo

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Behavior is how a demo host treats requests for its files.
type Behavior int

const (
	// Healthy serves every file, at full speed.
	Healthy Behavior = iota
	// Throttling answers some requests with 429 Too Many Requests and a
	// Retry-After header, in delta-seconds or (on some responses) HTTP-date form.
	Throttling
	// Flaky answers a fraction of requests with 503 Service Unavailable,
	// some with Retry-After and some without.
	Flaky
	// Slow serves every file but trickles the body at HostSpec.Rate bytes/s.
	Slow
	// Dropping starts the body and then closes the connection part-way through
	// it on a fraction of responses; the client sees an unexpected EOF.
	Dropping
	// Quota enforces a quota of HostSpec.QuotaLimit file requests per
	// HostSpec.QuotaWindow (fixed windows, the first starting at the first
	// request), says it on every response — RateLimit-Policy and RateLimit
	// (SPEC G12), or with QuotaForm "x" the X-RateLimit-Limit, -Remaining
	// and -Reset fields with an epoch Reset — and answers 429 with
	// Retry-After past it.
	Quota
)

var behaviorNames = [...]string{"healthy", "throttling", "flaky", "slow", "dropping", "quota"}

// String returns the lower-case name of b ("healthy", "throttling", …).
func (b Behavior) String() string {
	if b >= 0 && int(b) < len(behaviorNames) {
		return behaviorNames[b]
	}
	return "behavior(" + strconv.Itoa(int(b)) + ")"
}

// ParseBehavior returns the Behavior whose String is s (case-insensitive).
func ParseBehavior(s string) (Behavior, error) {
	for i, n := range behaviorNames {
		if strings.EqualFold(s, n) {
			return Behavior(i), nil
		}
	}
	return 0, fmt.Errorf("demo: unknown behavior %q (want one of %s)", s, strings.Join(behaviorNames[:], ", "))
}

// HostSpec describes one demo host. Only Name and Behavior are required;
// every knob left at zero takes the default given here, and knobs that do
// not belong to the host's Behavior are ignored. Behaviors apply to file
// requests (GET or HEAD of /files/…) only; the index page at / is always
// served.
//
//   - Name identifies the host in Log, Hosts and the content of its files
//     (two hosts with the same seed and name serve the same bytes). Names must
//     be unique within a Config.
//   - RetryAfter (Throttling, Flaky) is the wait announced in Retry-After,
//     rounded up to whole seconds. Default 2s for Throttling, 1s for Flaky.
//   - ThrottleEvery (Throttling): the Nth, 2Nth, … file request is answered
//     429. Default 5 when ThrottleFraction is also zero.
//   - ThrottleFraction (Throttling): used instead of ThrottleEvery when that
//     is zero: each file request is answered 429 with this probability.
//   - DateEvery (Throttling): every Nth 429 gives Retry-After as an HTTP-date
//     (IMF-fixdate, rounded up to the next whole second) instead of
//     delta-seconds. Zero means never.
//   - FailFraction (Flaky): probability that a file request is answered 503.
//     Default 0.2.
//   - RetryAfterFraction (Flaky): probability that a 503 carries Retry-After.
//     Default 0.5; a negative value means never.
//   - Rate (Slow): body bytes per second for each response. Default 64 KiB/s.
//   - QuotaLimit, QuotaWindow (Quota): requests per window, default 10 per
//     6 s. QuotaForm "x" says it in the X-RateLimit fields; ClockAhead sets
//     the server's clock (its Date header and epoch Reset) that far ahead of
//     the real one.
//   - DropFraction (Dropping): probability that a response body is cut.
//     Default 0.25. A cut falls at a random point between a quarter and three
//     quarters of the body being sent (Range responses included), so a client
//     that resumes always makes progress; bodies shorter than 2 bytes are never
//     cut.
type HostSpec struct {
	Name               string
	Behavior           Behavior
	RetryAfter         time.Duration
	ThrottleEvery      int
	ThrottleFraction   float64
	DateEvery          int
	FailFraction       float64
	RetryAfterFraction float64
	Rate               int
	DropFraction       float64
	QuotaLimit         int
	QuotaWindow        time.Duration
	QuotaForm          string
	ClockAhead         time.Duration
}

// withDefaults returns h with its zero knobs replaced by their defaults.
func (h HostSpec) withDefaults() HostSpec {
	switch h.Behavior {
	case Throttling:
		if h.RetryAfter <= 0 {
			h.RetryAfter = 2 * time.Second
		}
		if h.ThrottleEvery <= 0 && h.ThrottleFraction <= 0 {
			h.ThrottleEvery = 5
		}
	case Flaky:
		if h.RetryAfter <= 0 {
			h.RetryAfter = time.Second
		}
		if h.FailFraction <= 0 {
			h.FailFraction = 0.2
		}
		if h.RetryAfterFraction == 0 {
			h.RetryAfterFraction = 0.5
		}
	case Slow:
		if h.Rate <= 0 {
			h.Rate = 64 << 10
		}
	case Dropping:
		if h.DropFraction <= 0 {
			h.DropFraction = 0.25
		}
	case Quota:
		if h.QuotaLimit <= 0 {
			h.QuotaLimit = 10
		}
		if h.QuotaWindow <= 0 {
			h.QuotaWindow = 6 * time.Second
		}
	}
	return h
}

// Config describes a demo server: its hosts and the files each one serves.
//
//   - Hosts: one listener per entry, in order.
//   - Files: number of files per host, named /files/NAME-00000.bin onwards.
//   - FileSize: size of every file in bytes, or the smallest size when
//     MaxFileSize is larger.
//   - MaxFileSize: when larger than FileSize, each file's size is drawn
//     (deterministically) log-uniformly from [FileSize, MaxFileSize].
//   - Seed: selects the content of every file and every random choice.
//   - Addr: optional; Addr(i) is the listen address of host i, such as
//     "127.0.0.1:8080". A failure to bind it is an error. When Addr is nil,
//     host i listens on 127.0.0.(i+2) at a free port, falling back to
//     127.0.0.1 at a free port if that address cannot be bound.
//   - Fast: keep no per-request Log, only the counters of Stats; for
//     benchmarks.
type Config struct {
	Hosts       []HostSpec
	Files       int
	FileSize    int
	MaxFileSize int
	Seed        int64
	Addr        func(i int) string
	Fast        bool
}

// DefaultConfig is the demo a person sees with `heed demo`: six hosts, one
// of each Behavior — healthy; throttling (429 with Retry-After: 2 on every
// 5th request, every 3rd of those as an HTTP-date); flaky (503 on ~20 %,
// half of them with Retry-After: 1); slow (64 KiB/s); dropping (~25 % of
// bodies cut mid-way); quota (20 requests per 30 s, said in RateLimit
// fields) — with 60 files each, from 4 KiB to 384 KiB.
func DefaultConfig() Config {
	return Config{
		Hosts: []HostSpec{
			{Name: "healthy", Behavior: Healthy},
			{Name: "throttling", Behavior: Throttling, RetryAfter: 2 * time.Second, ThrottleEvery: 5, DateEvery: 3},
			{Name: "flaky", Behavior: Flaky, FailFraction: 0.2, RetryAfter: time.Second, RetryAfterFraction: 0.5},
			{Name: "slow", Behavior: Slow, Rate: 64 << 10},
			{Name: "dropping", Behavior: Dropping, DropFraction: 0.25},
			{Name: "quota", Behavior: Quota, QuotaLimit: 20, QuotaWindow: 30 * time.Second},
		},
		Files:       60,
		FileSize:    4 << 10,
		MaxFileSize: 384 << 10,
		Seed:        1,
	}
}

// FastConfig is the benchmark setup: the given number of Healthy hosts
// ("fast0", "fast1", …), each serving files of exactly fileSize bytes, with
// no per-request log.
func FastConfig(hosts, files, fileSize int) Config {
	cfg := Config{Files: files, FileSize: fileSize, Seed: 1, Fast: true}
	for i := range hosts {
		cfg.Hosts = append(cfg.Hosts, HostSpec{Name: "fast" + strconv.Itoa(i), Behavior: Healthy})
	}
	return cfg
}

// HostInfo describes one running host.
type HostInfo struct {
	Name     string
	BaseURL  string // "http://127.0.0.2:41234", no trailing slash
	Addr     string // the listening address, "127.0.0.2:41234"
	Behavior Behavior
	Spec     HostSpec // the spec with defaults filled in
}

// Request is one entry of Server.Log: what a host received and answered.
type Request struct {
	Time       time.Time // when the request arrived
	Host       string    // HostSpec.Name of the host that received it
	Method     string
	Path       string
	Range      string // the Range header, "" if absent
	IfRange    string // the If-Range header, "" if absent
	Status     int    // status sent
	RetryAfter string // the Retry-After header sent, "" if none
	Bytes      int64  // body bytes written
	Cut        bool   // the body was deliberately cut and the connection closed
}

// HostStats are a host's running counters, kept even in Fast mode.
type HostStats struct {
	Name      string
	Requests  int64 // requests of any path
	Bytes     int64 // body bytes written
	Throttled int64 // 429 responses
	Failed    int64 // 503 responses
	Cut       int64 // bodies cut
}

// Server is a running set of demo hosts. Its methods are safe for
// concurrent use.
type Server struct {
	cfg   Config
	block []byte
	hosts []*host
	byKey map[string]*host // "127.0.0.2:41234" → host

	mu       sync.Mutex
	closed   bool
	handlers sync.WaitGroup // running handlers; Add only under mu while !closed
	log      []Request
	sums     map[string]string // "host\x00index" → hex SHA-256

	done      chan struct{} // closed by Close; wakes Slow handlers
	closeOnce sync.Once
	closeErr  error
	serving   sync.WaitGroup
}

// Start checks cfg, binds one listener per host and serves them all. It
// returns once every listener is bound, so connections are accepted from
// then on. Close releases everything.
func Start(cfg Config) (*Server, error) {
	if len(cfg.Hosts) == 0 {
		return nil, errors.New("demo: no hosts")
	}
	if cfg.Files < 0 || cfg.FileSize < 0 || cfg.MaxFileSize < 0 {
		return nil, errors.New("demo: Files, FileSize and MaxFileSize must not be negative")
	}
	s := &Server{
		cfg:   cfg,
		block: newBlock(cfg.Seed),
		byKey: make(map[string]*host, len(cfg.Hosts)),
		sums:  make(map[string]string),
		done:  make(chan struct{}),
	}
	seen := make(map[string]bool, len(cfg.Hosts))
	for i, spec := range cfg.Hosts {
		if spec.Name == "" {
			return nil, fmt.Errorf("demo: host %d has no name", i)
		}
		if seen[spec.Name] {
			return nil, fmt.Errorf("demo: host name %q used twice", spec.Name)
		}
		seen[spec.Name] = true
		if spec.Behavior < Healthy || spec.Behavior > Quota {
			return nil, fmt.Errorf("demo: host %q: unknown %v", spec.Name, spec.Behavior)
		}
	}
	for i, spec := range cfg.Hosts {
		var ln net.Listener
		var err error
		if cfg.Addr != nil {
			ln, err = listen(cfg.Addr(i), "")
		} else {
			ln, err = listen(defaultAddr(i), "127.0.0.1:0")
		}
		if err != nil {
			s.shutdown()
			return nil, fmt.Errorf("demo: host %q: %w", spec.Name, err)
		}
		h := newHost(s, spec.withDefaults(), i, ln)
		s.hosts = append(s.hosts, h)
		s.byKey[ln.Addr().String()] = h
	}
	for _, h := range s.hosts {
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			_ = h.srv.Serve(h.ln) // returns http.ErrServerClosed on Close
		}()
	}
	return s, nil
}

// defaultAddr is host i's preferred address: 127.0.0.(i+2) at a free port,
// or "" when i is past the last usable address of 127.0.0.0/24.
func defaultAddr(i int) string {
	if i+2 > 254 {
		return ""
	}
	return "127.0.0." + strconv.Itoa(i+2) + ":0"
}

// listen binds addr, or fallback when addr is empty or cannot be bound and
// fallback is not empty.
func listen(addr, fallback string) (net.Listener, error) {
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err == nil || fallback == "" {
			return ln, err
		}
	}
	return net.Listen("tcp", fallback)
}

// Close stops every host: listeners are closed (their ports are free when
// Close returns), open connections are closed, and Close waits for running
// handlers, including Slow ones mid-body, to return. Calling it again
// returns the first result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.shutdown() })
	return s.closeErr
}

func (s *Server) shutdown() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	var errs []error
	for _, h := range s.hosts {
		if err := h.srv.Close(); err != nil {
			errs = append(errs, err)
		}
		// Serve may not have run yet; closing the listener twice is harmless.
		_ = h.ln.Close()
	}
	s.serving.Wait()
	s.handlers.Wait()
	return errors.Join(errs...)
}

// enter registers a running handler; it reports false once Close has begun.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// URLs returns the URL of every file on every host, host by host in Config
// order, files in index order.
func (s *Server) URLs() []string {
	out := make([]string, 0, len(s.hosts)*s.cfg.Files)
	for _, h := range s.hosts {
		for i := range s.cfg.Files {
			out = append(out, h.base+filePath(h.spec.Name, i))
		}
	}
	return out
}

// Hosts describes every host, in Config order.
func (s *Server) Hosts() []HostInfo {
	out := make([]HostInfo, len(s.hosts))
	for i, h := range s.hosts {
		out[i] = HostInfo{Name: h.spec.Name, BaseURL: h.base, Addr: h.ln.Addr().String(), Behavior: h.spec.Behavior, Spec: h.spec}
	}
	return out
}

// Expected returns the hex SHA-256 and the size in bytes of the file at
// rawURL, as the server sends it in a 200 response. For a URL that names no
// file of this server it returns "" and -1. The first call for a file reads
// it through once (about a second per GiB); later calls are free.
func (s *Server) Expected(rawURL string) (sha256hex string, size int64) {
	h, i, ok := s.lookup(rawURL)
	if !ok {
		return "", -1
	}
	f := &h.files[i]
	key := h.spec.Name + "\x00" + strconv.Itoa(i)
	s.mu.Lock()
	sum, ok := s.sums[key]
	s.mu.Unlock()
	if !ok {
		sum = f.sum(s.block)
		s.mu.Lock()
		s.sums[key] = sum
		s.mu.Unlock()
	}
	return sum, f.size
}

// lookup finds the host and file index that rawURL names.
func (s *Server) lookup(rawURL string) (*host, int, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" {
		return nil, 0, false
	}
	h := s.byKey[u.Host]
	if h == nil {
		return nil, 0, false
	}
	i, ok := parseFilePath(u.Path, h.spec.Name, s.cfg.Files)
	if !ok {
		return nil, 0, false
	}
	return h, i, true
}

// Log returns a copy of every request the hosts have answered so far, in the
// order the answers completed. It is empty in Fast mode. The log is kept in
// memory for the life of the Server.
func (s *Server) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.log))
	copy(out, s.log)
	return out
}

// Stats returns each host's counters, in Config order.
func (s *Server) Stats() []HostStats {
	out := make([]HostStats, len(s.hosts))
	for i, h := range s.hosts {
		out[i] = HostStats{
			Name:      h.spec.Name,
			Requests:  h.requests.Load(),
			Bytes:     h.bytes.Load(),
			Throttled: h.throttled.Load(),
			Failed:    h.failed.Load(),
			Cut:       h.cut.Load(),
		}
	}
	return out
}

// Conns returns the number of connections all hosts accepted so far.
func (s *Server) Conns() int64 {
	var n int64
	for _, h := range s.hosts {
		n += h.conns.Load()
	}
	return n
}

// Requests returns the number of requests received by all hosts together.
func (s *Server) Requests() int64 {
	var n int64
	for _, h := range s.hosts {
		n += h.requests.Load()
	}
	return n
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.log = append(s.log, r)
	s.mu.Unlock()
}

// filePath is the URL path of file i of host name. The host's name is
// part of the file name, so files of different hosts never share a name in
// one download folder.
func filePath(name string, i int) string {
	return fmt.Sprintf("/files/%s-%05d.bin", url.PathEscape(name), i)
}

// parseFilePath returns the index of host name's file at p, accepting only
// the exact spelling filePath produces, so each file has exactly one URL.
func parseFilePath(p, name string, files int) (int, bool) {
	num, ok := strings.CutPrefix(p, "/files/"+url.PathEscape(name)+"-")
	if !ok {
		return 0, false
	}
	num, ok = strings.CutSuffix(num, ".bin")
	if !ok || len(num) < 5 {
		return 0, false
	}
	i, err := strconv.Atoi(num)
	if err != nil || i < 0 || i >= files || filePath(name, i) != p {
		return 0, false
	}
	return i, true
}

// counters shared by host and its handlers.
type counters struct {
	requests, bytes, throttled, failed, cut atomic.Int64
	conns                                   atomic.Int64 // connections accepted
}
