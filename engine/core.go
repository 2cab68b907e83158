package engine

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"heed/engine/quota"
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
	// Now is the clock of the methods that take no time argument (control
	// actions, Snapshot, ExportHost). time.Now when nil; tests pass a fake.
	Now func() time.Time
}

// Core is Heed's politeness core: one governor and breaker per host (SPEC
// §2–§3), retry decisions (§4), the global limits (§5) and, per host, a
// short window of its next queued jobs (§11), behind one mutex. It never
// sleeps and starts no goroutines: the engine asks Next which job may start
// now, and when nothing may, how long to sleep.
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
// (L3), and a host that waits never holds a global slot.
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
	leasedOnly   bool // a fleet worker's: Add feeds only the hosts it holds (see Core.Add)
	hosts        []*host
	byKey        map[string]*host
	windowed     int // jobs in windows, over all hosts
	windowBudget int // see windowBudget
	dispatchSeq  uint64
	heap         hostHeap
	probeTimeout int64

	inflight    int // L1
	inflightCap int
	pausedAll   bool
	globalRate  float64
	glim        *rate.Limiter // L2; nil when off

	refills    []*host // hosts whose window wants refilling, in the order asked
	refillsOut int     // refills taken and not yet back

	rng       *rand.Rand
	onEvent   func(Event)
	events    []Event
	dirty     []*host
	changed   chan struct{}
	refillSig chan struct{}
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
		byKey:        map[string]*host{},
		windowBudget: windowBudget,
		probeTimeout: int64(cfg.ProbeTimeout),
		inflightCap:  cfg.GlobalInflight,
		rng:          rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		onEvent:      cfg.OnEvent,
		changed:      make(chan struct{}, 1),
		refillSig:    make(chan struct{}, 1),
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
	// one, not counting throttled ones (R3).
	Attempts int
	// Quota is what the response said of the server's quota, when it did
	// (G12): quota.Parse of its header.
	Quota *quota.Statement
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
	NextTry   time.Time
	Throttled bool
	Fail      bool
	Reason    string
	Level     int
	Breaker   BreakerState
}

// ---- time ----

// mono converts t to the core's monotonic nanoseconds. The first instant
// the core sees becomes the epoch; differences use the monotonic reading
// when both instants carry one (G10).
func (c *Core) mono(t time.Time) int64 {
	if !c.epochSet {
		c.epoch, c.epochSet = t, true
	}
	return int64(t.Sub(c.epoch)) // saturates
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

// ---- locking, events, dirty hosts ----

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
// may make a job due earlier than the last wake Next reported, or that
// asks for a refill (Refills). The loop selects on it beside its timer;
// one buffered signal stands for any number of changes.
func (c *Core) Changed() <-chan struct{} { return c.changed }

// getHost returns the host for key, creating it (following the defaults).
func (c *Core) getHost(key string, now time.Time) *host {
	if h := c.byKey[key]; h != nil {
		return h
	}
	h := &host{key: key, heapIdx: -1, gate: noTime, lastDispatch: noTime, spaceUntil: noTime, delayUntil: noTime}
	h.br.openedAt = noTime
	h.quota = serverQuota{seenAt: noTime, resetAt: noTime, until: noTime}
	h.applyTunables(c.defaults, now)
	c.hosts = append(c.hosts, h)
	c.byKey[key] = h
	if c.emptyBuckets {
		h.restoreTokens(0, 0, now)
		c.markDirty(h)
	}
	return h
}

// StartBucketsEmpty empties every host's token bucket at now, and has each
// host the core meets later start empty too: after a crash the requests of
// the last moments before it may be missing from the saved buckets (G2).
// Every such host is dirty, so that its empty bucket is written.
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

// ---- the host heap ----

// hostHeap orders the hosts that may dispatch by when they may (dueAt).
type hostHeap []*host

func (q hostHeap) Len() int           { return len(q) }
func (q hostHeap) Less(i, j int) bool { return q[i].dueAt < q[j].dueAt }
func (q hostHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].heapIdx, q[j].heapIdx = i, j
}
func (q *hostHeap) Push(x any) {
	h := x.(*host)
	h.heapIdx = len(*q)
	*q = append(*q, h)
}
func (q *hostHeap) Pop() any {
	old := *q
	h := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	h.heapIdx = -1
	return h
}

// place recomputes when h may next dispatch and files it in the heap, or
// takes it out when only an event can make it ready. It also asks for a
// refill of h's window when that runs low (see frontier.go).
func (c *Core) place(h *host, now time.Time, nowM int64) {
	c.wantRefill(h)
	due, _ := h.due(now, nowM, c.probeTimeout, false)
	switch {
	case due == never && h.heapIdx >= 0:
		heap.Remove(&c.heap, h.heapIdx)
	case due == never:
	case h.heapIdx < 0:
		h.dueAt = due
		heap.Push(&c.heap, h)
	default:
		h.dueAt = due
		heap.Fix(&c.heap, h.heapIdx)
	}
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
// cap reached, a refill awaited): wait on Changed then. Next never blocks
// or spins: every host it looks at is either dispatched or re-filed under a
// later key.
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
		if due, _ := h.due(now, nowM, c.probeTimeout, false); due > nowM {
			c.place(h, now, nowM)
			continue
		}
		if c.glim != nil && c.glim.TokensAt(now) < 1 { // L2
			wake = c.at(c.globalReadyAt(now, nowM))
			break
		}
		id := c.take(h)
		d = c.acquire(h, now, nowM, false)
		d.JobID, ok = id, true
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
	h.spaceUntil = addMono(from, c.drawJitter(h))
	if h.crawlDelay > 0 {
		h.delayUntil = addMono(nowM, h.crawlDelay) // W5: whatever the rate
	}
	c.quotaDispatched(h, nowM)
	c.dispatchSeq++
	d := Dispatch{Host: h.key, Seq: c.dispatchSeq, Hop: hop, levelGen: h.levelGen, breakerGen: h.br.gen}
	if h.br.state == HalfOpen {
		h.br.probeOut = true
		h.br.probeSeq = d.Seq
		h.br.probeDeadline = addMono(nowM, time.Duration(c.probeTimeout))
		d.Probe = true
		d.ProbeDeadline = c.at(h.br.probeDeadline)
	}
	c.markDirty(h)
	c.place(h, now, nowM)
	return d
}

// Sent tells the core that the request of dispatch d goes out at at, its
// start committed (J3). A host with a bucket of one then waits a whole
// interval from this send, not from the dispatch: a start that was slow to
// commit does not bring its request closer to the next one than the rate
// allows, as the server sees them (G2). With a larger bucket, the burst the
// rate allows already covers such a delay.
func (c *Core) Sent(d Dispatch, at time.Time) {
	c.mu.Lock()
	defer c.unlock()
	h := c.byKey[d.Host]
	if h == nil || h.lim.Burst() >= 2 || h.lim.Limit() <= 0 || h.lim.Limit() == rate.Inf {
		return
	}
	nowM := c.mono(at)
	floor := addMono(nowM, time.Duration(float64(time.Second)/float64(h.lim.Limit())))
	if floor > h.spaceUntil {
		h.spaceUntil = floor
		c.markDirty(h)
		c.place(h, at, nowM)
	}
}

// TakeToken charges one more request to host d's bucket if a token is
// there at now, and reports whether it was: a request the transport would
// send again on a fresh connection, after the server dropped a kept-alive
// one unanswered, goes only then, so that every request a server sees is
// paced (G2, G40).
func (c *Core) TakeToken(d Dispatch, now time.Time) bool {
	c.mu.Lock()
	defer c.unlock()
	h := c.byKey[d.Host]
	if h == nil || h.paused || c.pausedAll || !h.lim.AllowN(now, 1) {
		return false
	}
	if c.glim != nil && !c.glim.AllowN(now, 1) {
		return false
	}
	c.markDirty(h)
	c.place(h, now, c.mono(now))
	return true
}

// AcquireHop asks for a redirect hop to host (N2): a redirect to another
// host goes through that host's governor and breaker too, and through the
// global limits (L1, L2) like any request. The engine reports the redirect
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
	due, _ := h.due(now, nowM, c.probeTimeout, true)
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
	if h := c.byKey[d.Host]; h != nil && h.br.probeOut && h.br.probeSeq == d.Seq {
		h.br.probeDeadline = addMono(nowM, time.Duration(c.probeTimeout))
		c.place(h, now, nowM)
	}
	c.unlock()
}

// Observe reports how the attempt d ended at now, releases its in-flight
// slot, feeds the governor (G5–G7, G9) and breaker (B1–B4), and returns
// the retry decision (R1–R5) under the host's retry policy.
func (c *Core) Observe(d Dispatch, o Outcome, now time.Time) Decision {
	c.mu.Lock()
	nowM := c.mono(now)
	h := c.byKey[d.Host]
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
	if o.Quota != nil {
		c.onQuota(h, *o.Quota, raOK, nowM)
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
	if tr, changed := h.br.observe(d.breakerGen, d.Seq, failure, success, t.FailureThreshold, nowM); changed && tr.kind != 0 {
		c.event(h, tr.kind, nowM, tr.detail)
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
