package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Config configures a Core. The zero value of each field selects the
// documented default.
type Config struct {
	// Defaults are the tunables of every host nobody configured
	// (DefaultTunables() when zero, i.e. RatePerMin == 0).
	Defaults Tunables
	// GlobalInflight is L1: requests in flight across all hosts (16).
	GlobalInflight int
	// GlobalRatePerSec is L2's global request rate; 0 = off.
	GlobalRatePerSec float64
	// BandwidthBytesPerSec is L2's global bandwidth cap; 0 = off. The core
	// only stores and exposes it; the fetcher applies it.
	BandwidthBytesPerSec int64
	// Seed seeds all randomness (jitter, backoff draws): the same seed and
	// the same calls give the same schedule.
	Seed int64
	// ProbeTimeout is how long a half-open probe may go without reporting
	// (Observe) or a Heartbeat before it counts as failed (B3). 2 minutes.
	ProbeTimeout time.Duration
	// OnEvent receives every Event, called without any core lock held, so
	// it may call back into the core. It must not block for long. nil drops
	// events.
	OnEvent func(Event)
	// Now is the clock for the methods that take no time argument (control
	// actions, Snapshot, ExportHost). time.Now when nil; tests pass a fake.
	Now func() time.Time
}

// Core is Heed's politeness core: one governor and breaker per host (SPEC
// §2–§3), retry decisions (§4) and the global limits (§5), behind one
// mutex. It never sleeps and starts no goroutines: the engine loop asks
// Next which job may start now, and when nothing may, how long to sleep.
//
// A typical loop:
//
//	for {
//		d, ok, wake := core.Next(time.Now())
//		if ok {
//			go fetch(d) // … then core.Observe(d, outcome, time.Now())
//			continue
//		}
//		sleep until wake (if not zero) or until <-core.Changed()
//	}
//
// Hosts ready to go sit in a min-heap keyed by the instant they may next
// dispatch, so Next costs O(log hosts) whatever the number of waiting hosts
// (L3), and a host that waits never holds a global slot. Per job the core
// keeps 24 bytes in its host's queue plus a map entry.
//
// Times passed in should come from time.Now (they carry a monotonic
// reading): the core measures every gate on that monotonic clock (G10).
type Core struct {
	mu sync.Mutex

	epoch    time.Time // instant 0 of the monotonic nanoseconds used inside
	epochSet bool
	clock    func() time.Time

	defaults     *tunables
	emptyBuckets bool // hosts start with an empty bucket (see StartBucketsEmpty)
	hosts        []*host
	byKey        map[string]int32
	jobs         map[int64]jobLoc
	jobSeq       uint32
	dispatchSeq  uint64
	heap         []*host
	probeTimeout int64

	inflight    int // L1
	inflightCap int
	pausedAll   bool
	globalRate  float64
	glim        *rate.Limiter // L2; nil when off
	bandwidth   int64

	rng     *rand.Rand
	onEvent func(Event)
	events  []Event
	dirty   []*host
	changed chan struct{}
}

// jobLoc is where a queued job lives: its host and the seq of its entry.
type jobLoc struct {
	host int32
	seq  uint32
}

// NewCore returns a core with no hosts and no jobs. It panics if
// cfg.Defaults is set but invalid (a programming error; validate user
// input with Tunables.Validate first).
func NewCore(cfg Config) *Core {
	def := cfg.Defaults
	if def.RatePerMin == 0 {
		def = DefaultTunables()
	}
	def = def.Normalize()
	if err := def.Validate(); err != nil {
		panic("engine: invalid default tunables: " + err.Error())
	}
	if cfg.GlobalInflight <= 0 {
		cfg.GlobalInflight = 16
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = 2 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	seed := uint64(cfg.Seed)
	c := &Core{
		clock:        cfg.Now,
		defaults:     compile(def),
		byKey:        make(map[string]int32),
		jobs:         make(map[int64]jobLoc),
		probeTimeout: int64(cfg.ProbeTimeout),
		inflightCap:  cfg.GlobalInflight,
		bandwidth:    max(cfg.BandwidthBytesPerSec, 0),
		rng:          rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		onEvent:      cfg.OnEvent,
		changed:      make(chan struct{}, 1),
	}
	c.setGlobalRateLocked(cfg.GlobalRatePerSec)
	return c
}

// Dispatch is permission for one request, returned by Next (or AcquireHop).
// Hand it back to Observe exactly once, whatever happens.
type Dispatch struct {
	JobID int64  // the job to fetch (0 for a redirect hop)
	Host  string // its host key
	// Seq numbers every dispatch of the core, from 1.
	Seq uint64
	// Probe is set when this request is the breaker's single half-open
	// probe (B3): it must report by ProbeDeadline, or send Heartbeat.
	Probe         bool
	ProbeDeadline time.Time
	// Hop marks a redirect hop acquired with AcquireHop (JobID is 0).
	Hop bool

	hostIdx    int32
	levelGen   uint32 // G6: the level epoch it was dispatched under
	breakerGen uint32 // B4: the breaker epoch it was dispatched under
}

// Outcome is what one attempt ended with, reported to Observe.
type Outcome struct {
	// Status is the final HTTP status, 0 when there was no response.
	Status int
	// RetryAfter is the raw Retry-After header ("" if absent).
	RetryAfter string
	// Class says why the attempt failed; ClassNone with a Status means
	// the status speaks for itself. ClassNone with Status 0 is treated as
	// ClassTransport.
	Class ErrClass
	// Err is the error, if any, for the failure reason.
	Err error
	// Attempts is the number of attempts the job has made including this
	// one, not counting throttled ones (R3): the loop does not increment
	// its count when the Decision says Throttled.
	Attempts int
}

// Decision is the core's verdict on an attempt.
//
//   - Retry: queue the job again (Add) with NotBefore. For a throttle,
//     NotBefore is the host's gate; the gate holds the job anyway (R4).
//   - Throttled: the response was a throttle; do not count the attempt (R3).
//   - Fail: the job failed for good with Reason (R2, R5).
//   - neither Retry nor Fail: the job is done (or was cancelled).
//
// Level and Breaker are the host's state after the result, for history (S3).
type Decision struct {
	Retry     bool
	NotBefore time.Time
	// Held: the job's host is paused (by the person, or by a Retry-After
	// over max_retry_after), so the retry waits for its resume, not for
	// NotBefore.
	Held bool
	// NextTry, for a retry, is when it may go as things stand (R4): the
	// latest of NotBefore, the host's gate and its breaker's half-open time.
	// Only NotBefore stays with the job: a gate or breaker the person resets
	// frees it at once.
	NextTry   time.Time
	Throttled bool
	Fail      bool
	Reason    string
	Level     int
	Breaker   BreakerState
}

// EventKind says what an Event records.
type EventKind uint8

const (
	EventThrottle        EventKind = iota + 1 // a throttle response (G5, G6)
	EventDecay                                // a backoff level decayed (G7)
	EventBreakerOpen                          // breaker opened (B1, B3)
	EventBreakerHalfOpen                      // breaker became half-open (B2)
	EventBreakerClosed                        // breaker closed after a good probe (B3)
	EventPause                                // host paused, by the user or by Retry-After (G9)
	EventResume                               // host resumed (G9)
	EventProbeNow                             // user: probe now, open → half-open (B5)
	EventReset                                // user: reset the breaker to closed (B5)
	EventTrip                                 // user: trip the breaker open (B5)
	EventRetune                               // tunables changed (G2)
	EventRetryAfter                           // Retry-After on a response that is not a throttle (G7)
)

var eventNames = [...]string{"", "throttle", "decay", "breaker-open", "breaker-half-open", "breaker-closed",
	"pause", "resume", "probe-now", "reset", "trip", "retune", "retry-after"}

// String returns a short name such as "throttle" or "breaker-open".
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", int(k))
}

// ParseEventKind returns the EventKind whose String is s.
func ParseEventKind(s string) (EventKind, error) {
	for i, n := range eventNames {
		if n == s && i != 0 {
			return EventKind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown event kind %q", s)
}

// Event is one entry of a host's timeline (S4).
type Event struct {
	Host   string
	At     time.Time
	Kind   EventKind
	Detail string
}

// ---- time ----

// mono converts t to the core's monotonic nanoseconds. The first instant
// the core sees becomes the epoch; differences use the monotonic reading
// when both instants carry one (G10).
func (c *Core) mono(t time.Time) int64 {
	if !c.epochSet {
		c.epoch, c.epochSet = t, true
	}
	d := t.Sub(c.epoch) // saturates
	return int64(d)
}

// monoOpt is mono with the zero Time meaning "no constraint".
func (c *Core) monoOpt(t time.Time) int64 {
	if t.IsZero() {
		return noTime
	}
	return c.mono(t)
}

// at converts monotonic nanoseconds back to a time.Time; unset is zero.
func (c *Core) at(m int64) time.Time {
	if m == noTime || m == never || !c.epochSet {
		return time.Time{}
	}
	return c.epoch.Add(time.Duration(m))
}

// ---- locking helpers ----

// unlock releases the lock and then delivers buffered events, so OnEvent
// never runs under the core lock (it may call back in).
func (c *Core) unlock() {
	evs := c.events
	c.events = nil
	c.mu.Unlock()
	if c.onEvent != nil {
		for _, e := range evs {
			c.onEvent(e)
		}
	}
}

func (c *Core) event(h *host, k EventKind, nowM int64, detail string) {
	if c.onEvent == nil {
		return
	}
	c.events = append(c.events, Event{Host: h.key, At: c.at(nowM), Kind: k, Detail: detail})
}

func (c *Core) markDirty(h *host) {
	if !h.dirty {
		h.dirty = true
		c.dirty = append(c.dirty, h)
	}
}

// signal wakes a loop waiting on Changed; it never blocks.
func (c *Core) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Changed returns a channel that receives a value after any change that
// may make a job due earlier than the last wake Next reported: Add,
// Observe, resume, retune, breaker actions, limits. The loop selects on it
// beside its timer; one buffered signal stands for any number of changes.
func (c *Core) Changed() <-chan struct{} { return c.changed }

// getHost returns the host for key, creating it (following the defaults).
func (c *Core) getHost(key string, now time.Time) *host {
	if i, ok := c.byKey[key]; ok {
		return c.hosts[i]
	}
	h := &host{key: key, idx: int32(len(c.hosts)), heapIdx: -1, gate: noTime, lastDispatch: noTime, spaceUntil: noTime}
	h.br.openedAt = noTime
	h.applyTunables(c.defaults, now)
	c.hosts = append(c.hosts, h)
	c.byKey[key] = h.idx
	if c.emptyBuckets {
		h.restoreTokens(0, 0, now)
		c.markDirty(h)
	}
	return h
}

// StartBucketsEmpty empties every host's token bucket at now, and has each
// host the core meets later start empty too: after a crash the requests of
// the last moments before it may be missing from the saved buckets, of
// hosts it knew and of hosts whose state it never wrote (G2). Every such
// host is dirty, so that its empty bucket is written.
func (c *Core) StartBucketsEmpty(now time.Time) {
	c.mu.Lock()
	c.emptyBuckets = true
	nowM := c.mono(now)
	for _, h := range c.hosts {
		h.restoreTokens(0, 0, now)
		c.markDirty(h)
		c.place(h, now, nowM)
	}
	c.unlock()
}

func (c *Core) lookup(key string) *host {
	if i, ok := c.byKey[key]; ok {
		return c.hosts[i]
	}
	return nil
}

// ---- host heap ----

func (c *Core) heapLess(i, j int) bool { return c.heap[i].dueAt < c.heap[j].dueAt }

func (c *Core) heapSwap(i, j int) {
	c.heap[i], c.heap[j] = c.heap[j], c.heap[i]
	c.heap[i].heapIdx = int32(i)
	c.heap[j].heapIdx = int32(j)
}

func (c *Core) heapUp(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !c.heapLess(i, p) {
			return
		}
		c.heapSwap(i, p)
		i = p
	}
}

func (c *Core) heapDown(i int) {
	n := len(c.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && c.heapLess(r, l) {
			m = r
		}
		if !c.heapLess(m, i) {
			return
		}
		c.heapSwap(i, m)
		i = m
	}
}

// place recomputes when h may next dispatch and files it in the heap (or
// takes it out when only an event can make it ready).
func (c *Core) place(h *host, now time.Time, nowM int64) {
	due, _ := h.due(now, nowM, int64(h.tun.RecoveryTimeout), c.probeTimeout, false)
	if due == never {
		if h.heapIdx >= 0 {
			i := int(h.heapIdx)
			last := len(c.heap) - 1
			if i != last {
				c.heapSwap(i, last)
			}
			c.heap[last] = nil
			c.heap = c.heap[:last]
			h.heapIdx = -1
			if i != last {
				c.heapDown(i)
				c.heapUp(i)
			}
		}
		return
	}
	h.dueAt = due
	if h.heapIdx < 0 {
		h.heapIdx = int32(len(c.heap))
		c.heap = append(c.heap, h)
		c.heapUp(int(h.heapIdx))
		return
	}
	c.heapDown(int(h.heapIdx))
	c.heapUp(int(h.heapIdx))
}

// advance applies the breaker transitions time alone causes (B2, B3).
func (c *Core) advance(h *host, nowM int64) {
	t, abandoned, changed := h.br.advance(nowM, int64(h.tun.RecoveryTimeout))
	if !changed {
		return
	}
	if abandoned != 0 { // the hung probe no longer holds a slot
		h.abandoned = append(h.abandoned, abandoned)
		h.inflight--
		c.inflight--
	}
	c.event(h, t.kind, nowM, t.detail)
	c.markDirty(h)
}

// cleanTop drops removed jobs from the top of h's queue.
func (c *Core) cleanTop(h *host) {
	for len(h.jobs) > 0 {
		top := h.jobs[0]
		if loc, ok := c.jobs[top.id]; ok && loc.host == h.idx && loc.seq == top.seq {
			return
		}
		h.jobs.pop()
	}
}

// ---- jobs ----

// Add queues job id for host (a host key, see HostKey), eligible from
// notBefore (its retry delay, R4; zero = now). Adding an id that is
// already queued moves it. The job then waits for max(notBefore, the
// host's gate, breaker, tokens, spacing) (R4).
func (c *Core) Add(id int64, host string, notBefore time.Time) {
	c.mu.Lock()
	now := c.clock()
	nowM := c.mono(now)
	if old, ok := c.jobs[id]; ok {
		oh := c.hosts[old.host]
		delete(c.jobs, id)
		oh.queued--
		c.place(oh, now, nowM)
	}
	h := c.getHost(host, now)
	c.jobSeq++
	c.jobs[id] = jobLoc{host: h.idx, seq: c.jobSeq}
	h.jobs.push(jobEntry{notBefore: c.monoOpt(notBefore), id: id, seq: c.jobSeq})
	h.queued++
	c.place(h, now, nowM)
	c.unlock()
	c.signal()
}

// Remove takes a queued job out (cancel, or pause of a single job) and
// reports whether it was queued. An active job is not affected: its
// Observe still comes.
func (c *Core) Remove(id int64) bool {
	c.mu.Lock()
	loc, ok := c.jobs[id]
	if ok {
		h := c.hosts[loc.host]
		delete(c.jobs, id)
		h.queued--
		c.compact(h)
		now := c.clock()
		c.place(h, now, c.mono(now))
	}
	c.unlock()
	return ok
}

// compact rebuilds h's queue when removed entries dominate it.
func (c *Core) compact(h *host) {
	if h.queued == 0 {
		clear(h.jobs)
		h.jobs = h.jobs[:0]
		return
	}
	if len(h.jobs) > 64 && len(h.jobs) > 4*h.queued {
		h.jobs = slices.DeleteFunc(h.jobs, func(e jobEntry) bool {
			loc, ok := c.jobs[e.id]
			return !ok || loc.host != h.idx || loc.seq != e.seq
		})
		h.jobs.heapify()
	}
}

// Trim gives back the spare room in the hosts' queues. A queue filled one
// Add at a time keeps up to as much room again as it holds; after a large
// queue is loaded at start, that room is about a sixth of Heed's heap (16 MiB
// at 1,000,000 jobs over 100,000 hosts), and the collector's headroom grows
// with it.
func (c *Core) Trim() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.hosts {
		switch {
		case len(h.jobs) == 0:
			h.jobs = nil
		case cap(h.jobs) > len(h.jobs):
			h.jobs = append(jobHeap(nil), h.jobs...)
		}
	}
}

// Queued returns the number of queued jobs.
func (c *Core) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.jobs)
}

// ---- dispatch ----

// Next picks a job that may start at now — its host is not paused (G9),
// its breaker lets it through (B2, B3), it is under its in-flight cap
// (G1), past its gate (G3) and spacing (G4), holds a token (G2), the job's
// own not-before has passed (R4), and the global limits allow (L1, L2) —
// takes the token and counts the request in flight.
//
// When nothing may start, ok is false and wake is the earliest instant
// something could become due by time alone; wake is zero when only an
// event can help (nothing queued, everything paused, the global in-flight
// cap reached): wait on Changed then. Next never blocks or spins: every
// host it looks at is either dispatched or re-filed under a later key.
func (c *Core) Next(now time.Time) (d Dispatch, ok bool, wake time.Time) {
	c.mu.Lock()
	nowM := c.mono(now)
	for !c.pausedAll && c.inflight < c.inflightCap && len(c.heap) > 0 {
		h := c.heap[0]
		if h.dueAt > nowM {
			wake = c.at(h.dueAt)
			break
		}
		c.advance(h, nowM)
		c.cleanTop(h)
		due, _ := h.due(now, nowM, int64(h.tun.RecoveryTimeout), c.probeTimeout, false)
		if due > nowM {
			h.dueAt = due
			c.place(h, now, nowM)
			continue
		}
		if c.glim != nil && c.glim.TokensAt(now) < 1 { // L2
			wake = c.at(c.globalReadyAt(now, nowM))
			break
		}
		e := h.jobs.pop()
		delete(c.jobs, e.id)
		h.queued--
		d = c.acquire(h, now, nowM, false)
		d.JobID = e.id
		ok = true
		break
	}
	c.unlock()
	return d, ok, wake
}

func (c *Core) globalReadyAt(now time.Time, nowM int64) int64 {
	tok := c.glim.TokensAt(now)
	need := (1 - tok) / float64(c.glim.Limit()) * 1e9
	return addMono(nowM, time.Duration(math.Ceil(need))+1)
}

// acquire takes a token and an in-flight slot on h for a dispatch at now.
func (c *Core) acquire(h *host, now time.Time, nowM int64, hop bool) Dispatch {
	h.lim.AllowN(now, 1)
	h.inflight++
	if c.glim != nil {
		c.glim.AllowN(now, 1)
	}
	c.inflight++
	h.lastDispatch = nowM
	// The spacing (G4) runs from the next token when the bucket is empty:
	// else, at a sustained rate, the bucket alone would set every interval
	// and requests would form the fixed rhythm the jitter is there to break.
	// The bucket keeps what the jitter delays, so the rate still converges
	// (G2). A bucket of 1 keeps nothing: there the spacing runs from this
	// dispatch, and the rate wins over the rhythm.
	from := nowM
	if t := h.tokenReadyAt(now, nowM); t > from && t != never && h.lim.Burst() >= 2 {
		from = t
	}
	h.spaceUntil = addMono(from, c.drawJitter(h.tun))
	c.dispatchSeq++
	d := Dispatch{Host: h.key, Seq: c.dispatchSeq, Hop: hop, hostIdx: h.idx, levelGen: h.levelGen, breakerGen: h.br.gen}
	if h.br.state == HalfOpen {
		h.br.probeOut = true
		h.br.probeSeq = d.Seq
		h.br.probeDeadline = addMono(nowM, time.Duration(c.probeTimeout))
		d.Probe = true
		d.ProbeDeadline = c.at(h.br.probeDeadline)
	}
	c.place(h, now, nowM)
	return d
}

// AcquireHop asks for a redirect hop to host (N2): a redirect to another
// host goes through that host's governor and breaker too, and through the
// global limits (L1, L2) like any request. The loop reports the redirect
// response itself with Observe first — that frees the first host and the
// global slot — then asks for the hop; while it waits, the job holds no
// slot anywhere (L3). When host and the global limits allow a request at
// now, AcquireHop takes a token and an in-flight slot of that host and a
// global slot, and returns ok. Otherwise wake says when to ask again
// (zero: when something changes). The hop's result is reported with
// Observe like any dispatch.
func (c *Core) AcquireHop(host string, now time.Time) (d Dispatch, ok bool, wake time.Time) {
	c.mu.Lock()
	nowM := c.mono(now)
	h := c.getHost(host, now)
	c.advance(h, nowM)
	due, _ := h.due(now, nowM, int64(h.tun.RecoveryTimeout), c.probeTimeout, true)
	switch {
	case c.pausedAll || c.inflight >= c.inflightCap: // L1: wait for a slot to free
	case due <= nowM && c.glim != nil && c.glim.TokensAt(now) < 1: // L2
		wake = c.at(c.globalReadyAt(now, nowM))
	case due <= nowM:
		d, ok = c.acquire(h, now, nowM, true), true
	case due != never:
		wake = c.at(due)
	}
	c.unlock()
	return d, ok, wake
}

// Heartbeat tells the core that the request d is alive (headers arrived,
// bytes flowing). For a half-open probe it pushes the probe deadline to
// now + ProbeTimeout, so a slow but healthy probe is not declared failed;
// for other requests it does nothing.
func (c *Core) Heartbeat(d Dispatch, now time.Time) {
	if !d.Probe {
		return
	}
	c.mu.Lock()
	nowM := c.mono(now)
	if h := c.hostOf(d); h != nil && h.br.probeOut && h.br.probeSeq == d.Seq {
		h.br.probeDeadline = addMono(nowM, time.Duration(c.probeTimeout))
		c.place(h, now, nowM)
	}
	c.unlock()
}

func (c *Core) hostOf(d Dispatch) *host {
	if d.hostIdx >= 0 && int(d.hostIdx) < len(c.hosts) && c.hosts[d.hostIdx].key == d.Host {
		return c.hosts[d.hostIdx]
	}
	return c.lookup(d.Host)
}

// Observe reports how the attempt d ended at now, releases its in-flight
// slot, feeds the governor (G5–G7, G9) and breaker (B1–B4), and returns
// the retry decision (R1–R5) under the host's retry policy.
func (c *Core) Observe(d Dispatch, o Outcome, now time.Time) Decision {
	c.mu.Lock()
	nowM := c.mono(now)
	h := c.hostOf(d)
	if h == nil {
		c.unlock()
		return Decision{Fail: true, Reason: fmt.Sprintf("unknown host %q", d.Host)}
	}
	if i := slices.Index(h.abandoned, d.Seq); i >= 0 {
		h.abandoned = slices.Delete(h.abandoned, i, i+1) // slot already released (B3)
	} else {
		h.inflight = max(h.inflight-1, 0) // a repeated Observe must not go negative
		c.inflight = max(c.inflight-1, 0)
	}
	if o.Class == ClassNone && o.Status == 0 {
		o.Class = ClassTransport
	}
	t := h.tun
	if o.Status > 0 {
		h.lastStatus = o.Status
	}
	throttled := o.Status > 0 && t.throttle.has(o.Status)
	ra, raOK := time.Duration(0), false
	if o.RetryAfter != "" {
		ra, raOK = ParseRetryAfter(o.RetryAfter, now)
	}
	c.advance(h, nowM)
	switch {
	case throttled:
		c.onThrottle(h, &d, o.Status, ra, raOK, nowM)
	case o.Status > 0:
		c.onResponse(h, o.Status, ra, raOK, nowM)
	}
	failure := BreakerFailure(o.Class, o.Status)
	// A success is an HTTP response that is not a failure (404 is the URL's
	// fault, not the host's). TLS, refusal, size and cancellation say
	// nothing — except for a probe, which must prove the host healthy: a
	// probe that got no good response (cancelled included) failed (B3).
	success := !failure && o.Status > 0 && (o.Class == ClassNone || o.Class == ClassHTTPStatus)
	if d.Probe && !success {
		failure = true
	}
	if tr, changed := h.br.observe(d.breakerGen, d.Seq, failure, success, t.FailureThreshold, nowM); changed {
		if tr.kind != 0 {
			c.event(h, tr.kind, nowM, tr.detail)
		}
	}
	c.markDirty(h)

	dec := Decision{}
	switch {
	case throttled: // R3: does not use an attempt
		dec.Retry, dec.Throttled = true, true
		dec.NotBefore = c.at(max(h.gate, nowM))
		dec.Reason = errReason(o)
	case o.Class == ClassCanceled:
		dec.Reason = "canceled"
	case o.Class == ClassNone && o.Status < 400:
		// success
	case Retryable(o.Class, o.Status):
		if o.Attempts >= t.Retry.MaxAttempts { // R5
			dec.Fail = true
			dec.Reason = fmt.Sprintf("%v after %s: %s", ErrGaveUp, plural(o.Attempts, "attempt"), errReason(o))
		} else { // R1
			dec.Retry = true
			dec.NotBefore = c.at(addMono(nowM, t.Retry.Delay(o.Attempts-1, c.rng.Int64N)))
			dec.Reason = errReason(o)
		}
	default: // R2: not retried
		dec.Fail = true
		dec.Reason = errReason(o)
	}
	dec.Level = h.level
	dec.Breaker = h.br.state
	dec.Held = dec.Retry && h.paused
	if dec.Retry {
		next := max(c.mono(dec.NotBefore), h.gate)
		if h.br.state == Open {
			next = max(next, h.br.halfOpenAt(int64(t.RecoveryTimeout)))
		}
		dec.NextTry = c.at(max(next, nowM))
	}
	c.place(h, now, nowM)
	c.unlock()
	c.signal()
	return dec
}

// ---- control ----

// SetDefaults replaces the tunables of every host that has none of its
// own, effective for the very next dispatch (G2). t is normalized first;
// the error is Validate's.
func (c *Core) SetDefaults(t Tunables) error {
	t = t.Normalize()
	if err := t.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	c.defaults = compile(t)
	now := c.clock()
	nowM := c.mono(now)
	for _, h := range c.hosts {
		if h.own == nil {
			h.applyTunables(c.defaults, now)
			c.place(h, now, nowM)
		}
	}
	c.unlock()
	c.signal()
	return nil
}

// Defaults returns the current default tunables.
func (c *Core) Defaults() Tunables {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.defaults.Tunables
	t.ThrottleStatuses = slices.Clone(t.ThrottleStatuses)
	return t
}

// SetHostTunables gives host its own tunables, live: the very next
// dispatch uses the new rate and burst, even for jobs already waiting for
// a token (G2). t is normalized first; the error is Validate's.
func (c *Core) SetHostTunables(host string, t Tunables) error {
	t = t.Normalize()
	if err := t.Validate(); err != nil {
		return err
	}
	c.mu.Lock()
	now := c.clock()
	nowM := c.mono(now)
	h := c.getHost(host, now)
	was := h.tun.Tunables
	h.own = compile(t)
	h.applyTunables(h.own, now)
	c.event(h, EventRetune, nowM, retuned(was, t))
	c.markDirty(h)
	c.place(h, now, nowM)
	c.unlock()
	c.signal()
	return nil
}

// ClearHostTunables makes host follow the defaults again.
func (c *Core) ClearHostTunables(host string) {
	c.mu.Lock()
	if h := c.lookup(host); h != nil && h.own != nil {
		now := c.clock()
		nowM := c.mono(now)
		h.own = nil
		h.applyTunables(c.defaults, now)
		c.event(h, EventRetune, nowM, "back to defaults")
		c.markDirty(h)
		c.place(h, now, nowM)
	}
	c.unlock()
	c.signal()
}

// HostTunables returns the tunables host runs with and whether they are
// its own (false: the defaults).
func (c *Core) HostTunables(host string) (Tunables, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, own := c.defaults, false
	if h := c.lookup(host); h != nil {
		t, own = h.tun, h.own != nil
	}
	r := t.Tunables
	r.ThrottleStatuses = slices.Clone(r.ThrottleStatuses)
	return r, own
}

func (c *Core) pauseLocked(h *host, reason string, nowM int64) {
	h.paused = true
	h.pauseReason = reason
	c.event(h, EventPause, nowM, reason)
	c.markDirty(h)
}

// PauseHost stops dispatching to host at once (G9). Its in-flight
// requests finish normally and its queued jobs stay queued.
func (c *Core) PauseHost(host, reason string) {
	c.mu.Lock()
	now := c.clock()
	nowM := c.mono(now)
	h := c.getHost(host, now)
	c.pauseLocked(h, reason, nowM)
	c.place(h, now, nowM)
	c.unlock()
}

// ResumeHost lets host dispatch again (G9). Its gate, level and breaker
// are as they were.
func (c *Core) ResumeHost(host string) {
	c.mu.Lock()
	if h := c.lookup(host); h != nil && h.paused {
		now := c.clock()
		nowM := c.mono(now)
		h.paused, h.pauseReason = false, ""
		c.event(h, EventResume, nowM, "")
		c.markDirty(h)
		c.place(h, now, nowM)
	}
	c.unlock()
	c.signal()
}

// HostPaused reports whether host is paused (G9).
func (c *Core) HostPaused(host string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.lookup(host)
	return h != nil && h.paused
}

// PauseAll stops all dispatching (U7) without touching any host's own
// pause; ResumeAll undoes it.
func (c *Core) PauseAll() {
	c.mu.Lock()
	c.pausedAll = true
	c.unlock()
}

// ResumeAll undoes PauseAll.
func (c *Core) ResumeAll() {
	c.mu.Lock()
	c.pausedAll = false
	c.unlock()
	c.signal()
}

// breakerAction applies a manual breaker control (B5).
func (c *Core) breakerAction(host string, kind EventKind) {
	c.mu.Lock()
	now := c.clock()
	nowM := c.mono(now)
	h := c.getHost(host, now)
	from := h.br.state
	changed := true
	switch kind {
	case EventProbeNow:
		if changed = from == Open; changed {
			h.br.halfOpen()
		}
	case EventReset:
		h.br.close()
	case EventTrip:
		h.br.open(nowM)
	}
	if changed {
		c.event(h, kind, nowM, fmt.Sprintf("%v → %v", from, h.br.state))
		c.markDirty(h)
	}
	c.place(h, now, nowM)
	c.unlock()
	c.signal()
}

// ProbeNow moves an open breaker to half-open at once, so the next
// dispatch is its probe (B5). It does nothing to a breaker not open.
func (c *Core) ProbeNow(host string) { c.breakerAction(host, EventProbeNow) }

// ResetBreaker closes host's breaker and clears its failure count (B5).
func (c *Core) ResetBreaker(host string) { c.breakerAction(host, EventReset) }

// TripBreaker opens host's breaker now, with a fresh recovery timeout (B5).
func (c *Core) TripBreaker(host string) { c.breakerAction(host, EventTrip) }

// SetGlobalInflight sets L1, the requests in flight across all hosts
// (at least 1). Lowering it never cancels a request; it only holds back
// new ones.
func (c *Core) SetGlobalInflight(n int) {
	c.mu.Lock()
	c.inflightCap = max(n, 1)
	c.unlock()
	c.signal()
}

// GlobalInflight returns L1, the cap on requests in flight across all hosts.
func (c *Core) GlobalInflight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflightCap
}

// SetGlobalRate sets L2's global request rate in requests per second,
// 0 for none. Its bucket holds one second's worth (at least 1).
func (c *Core) SetGlobalRate(perSec float64) {
	c.mu.Lock()
	c.setGlobalRateLocked(perSec)
	c.unlock()
	c.signal()
}

func (c *Core) setGlobalRateLocked(perSec float64) {
	if !(perSec > 0) {
		c.globalRate, c.glim = 0, nil
		return
	}
	burst := int(max(1, min(perSec, 1e6)))
	c.globalRate = perSec
	if c.glim == nil {
		c.glim = rate.NewLimiter(rate.Limit(perSec), burst)
		return
	}
	now := c.clock()
	c.glim.SetLimitAt(now, rate.Limit(perSec))
	c.glim.SetBurstAt(now, burst)
}

// SetBandwidth stores L2's global bandwidth cap in bytes per second, 0 for
// none. The fetcher reads it with Bandwidth and applies it.
func (c *Core) SetBandwidth(bps int64) {
	c.mu.Lock()
	c.bandwidth = max(bps, 0)
	c.unlock()
}

// Bandwidth returns the global bandwidth cap in bytes per second (0: none).
func (c *Core) Bandwidth() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bandwidth
}

// plural is "1 attempt", "2 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
