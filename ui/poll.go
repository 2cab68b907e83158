package ui

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"heed/engine"
)

// tickEvery is how often the window reads a snapshot (U2: at least 4 Hz).
const tickEvery = 250 * time.Millisecond

// countsEvery is how often the hosts' job counts are read from the
// database (the hosts rows keep them: no job is counted).
const countsEvery = time.Second

// chartSeconds is how far back a host's chart goes, one bucket a second.
const chartSeconds = 180

// Bucket flags: what a host was doing during one second of its chart.
const (
	flagGate     uint8 = 1 << iota // behind a backoff or Retry-After gate
	flagOpen                       // breaker open
	flagHalfOpen                   // breaker half-open
	flagPaused                     // paused
)

// bucket is one second of a host's chart.
type bucket struct {
	started, throttles, failures uint16
	inflight                     uint8 // the most seen in flight
	flags                        uint8
}

// ring is a host's last chartSeconds seconds; sec is the second of the
// newest bucket, at b[sec%chartSeconds].
type ring struct {
	sec int64
	b   [chartSeconds]bucket
}

// at returns the bucket of second sec, clearing those skipped since the
// newest one. Seconds older than the ring are folded into its oldest.
func (r *ring) at(sec int64) *bucket {
	if sec > r.sec {
		for s := max(r.sec+1, sec-chartSeconds+1); s <= sec; s++ {
			r.b[s%chartSeconds] = bucket{}
		}
		r.sec = sec
	}
	sec = max(sec, r.sec-chartSeconds+1)
	return &r.b[sec%chartSeconds]
}

// series is one host's chart, oldest bucket first, ending at second end.
type series struct {
	host string
	end  int64
	b    [chartSeconds]bucket
}

// sortSpec is how the hosts table is ordered.
type sortSpec struct {
	col  int
	desc bool
}

// hostUpdate is what one tick hands to the Fyne thread: copied values it
// owns until the next tick, nothing shared with the engine.
type hostUpdate struct {
	now     time.Time
	snap    []engine.HostSnapshot
	order   []int32 // rows → snap index, sorted by the table's sort
	changed []bool  // by snap index: differs from the previous tick
	counts  map[string]engine.Counts
	robots  map[string]engine.RobotsView // hosts a crawl has needed the robots.txt of (W10)
	stats   engine.Stats
	queued  int64          // jobs queued over all hosts
	series  *series        // the selected host's chart, nil when none
	opened  []string       // hosts whose breaker opened since the last tick
	drained bool           // every queued job has finished since the last tick
	events  []engine.Event // the selected host's new timeline events, oldest first
	// facts are what the window learnt of hosts from their events (the
	// last Retry-After each sent); never changed once handed over.
	facts map[string]hostFacts
	// sameHosts: the hosts are those of the previous tick at the same
	// places, perhaps with more after them, so its row order still holds.
	sameHosts bool
}

// poller turns engine snapshots into hostUpdates. It runs on its own
// goroutine (the loop in run), never on Fyne's; the Fyne thread tells it
// the sort and selection through view.
type poller struct {
	eng  *engine.Engine
	feed *Feed

	mu   sync.Mutex // guards view
	view struct {
		sort     sortSpec
		selected string
	}

	bufs      [2][]engine.HostSnapshot
	cur       int
	prev      []engine.HostSnapshot
	prevCount map[string]engine.Counts
	countsMu  sync.Mutex
	counts    map[string]engine.Counts     // never changed once read
	robots    map[string]engine.RobotsView // read with counts; never changed once read
	countsSeq int                          // bumped on every read
	seqSeen   int
	curRobots map[string]engine.RobotsView // the robots the tick being built shows
	prevRobot map[string]engine.RobotsView
	hist      map[string]*ring
	seen      map[int64]string // jobs seen in flight → host
	busy      bool
	facts     map[string]hostFacts
	factsOut  map[string]hostFacts // the copy handed to the Fyne thread
	seedMu    sync.Mutex
	seeds     []engine.Event // events read from the database, to learn facts from
}

func newPoller(eng *engine.Engine, feed *Feed) *poller {
	return &poller{eng: eng, feed: feed, hist: map[string]*ring{}, seen: map[int64]string{},
		facts: map[string]hostFacts{}}
}

// seed hands the poller events read from the database (a host's
// timeline), so that it learns what it missed before the window opened:
// the last Retry-After a host sent. Safe from any goroutine.
func (p *poller) seed(evs []engine.Event) {
	p.seedMu.Lock()
	p.seeds = append(p.seeds, evs...)
	p.seedMu.Unlock()
}

// learn takes facts from events, oldest first; it returns the hosts whose
// facts changed.
func (p *poller) learn(evs []engine.Event, changed map[string]bool) map[string]bool {
	for _, e := range evs {
		// A throttle without Retry-After makes the last one stale.
		if ra, ok := retryAfterOf(e); ok || e.Kind == engine.EventThrottle {
			if f, known := p.facts[e.Host]; f.retryAfter != ra || !known {
				p.facts[e.Host] = hostFacts{retryAfter: ra}
				if changed == nil {
					changed = map[string]bool{}
				}
				changed[e.Host] = true
			}
		}
	}
	return changed
}

func (p *poller) setView(s sortSpec, selected string) {
	p.mu.Lock()
	p.view.sort, p.view.selected = s, selected
	p.mu.Unlock()
}

func (p *poller) getView() (sortSpec, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.view.sort, p.view.selected
}

// loadCounts reads the per-host job counts (a read of every host row: call
// it off the Fyne thread, every countsEvery), and what Heed knows of each
// host's robots.txt, which changes about as often.
func (p *poller) loadCounts() {
	c, err := p.eng.Reader().HostCounts(bgCtx)
	if err != nil {
		return
	}
	var robots map[string]engine.RobotsView
	for host := range c {
		if v, ok := p.eng.Robots(host); ok {
			if robots == nil {
				robots = map[string]engine.RobotsView{}
			}
			robots[host] = v
		}
	}
	p.countsMu.Lock()
	p.counts = c
	p.robots = robots
	p.countsSeq++
	p.countsMu.Unlock()
}

// tick takes a snapshot at now and builds the update for it. The snapshot
// goes into the buffer the Fyne thread is not showing: the caller must
// not call tick again before the previous update was applied.
func (p *poller) tick(now time.Time) hostUpdate {
	buf := p.bufs[p.cur]
	buf = p.eng.Core().SnapshotInto(buf, now)
	p.bufs[p.cur] = buf
	p.cur ^= 1
	var active []engine.Active
	active = p.eng.Active()
	ends, events := p.feed.drain()
	p.countsMu.Lock()
	counts, seq := p.counts, p.countsSeq
	p.curRobots = p.robots
	p.countsMu.Unlock()
	u := p.build(buf, now, counts, seq != p.seqSeen, active, ends, events)
	p.seqSeen = seq
	u.stats = p.eng.Core().Stats()
	for _, c := range counts {
		u.queued += c.Queued
	}
	busy := u.queued > 0 || u.stats.Windowed > 0 || u.stats.Inflight > 0 || len(active) > 0
	u.drained = p.busy && !busy
	p.busy = busy
	return u
}

// build diffs snap against the previous tick's, feeds the charts, and
// sorts. It is the part of a tick that grows with the number of hosts.
func (p *poller) build(snap []engine.HostSnapshot, now time.Time, counts map[string]engine.Counts,
	countsNew bool, active []engine.Active, ends []engine.JobEnd, events []engine.Event) hostUpdate {
	spec, selected := p.getView()
	robots := p.curRobots
	u := hostUpdate{now: now, snap: snap, counts: counts, robots: robots, changed: make([]bool, len(snap))}
	sec := now.Unix()

	// Requests started: those newly seen in flight, and those that ended
	// before a tick saw them (the Feed). Active is read before the Feed is
	// drained, so a job missing from it has its end in ends.
	inActive := make(map[int64]struct{}, len(active))
	for _, a := range active {
		inActive[a.JobID] = struct{}{}
		if _, ok := p.seen[a.JobID]; !ok {
			p.seen[a.JobID] = a.Host
			p.ring(a.Host, sec).started++
		}
	}
	for _, e := range ends {
		if _, ok := p.seen[e.ID]; ok {
			delete(p.seen, e.ID)
		} else {
			p.ring(e.Host, sec).started++
		}
	}
	for id := range p.seen {
		if _, ok := inActive[id]; !ok {
			delete(p.seen, id)
		}
	}
	for _, e := range events {
		if e.Host == selected {
			u.events = append(u.events, e)
		}
	}
	// Facts: the database's (oldest first, as read newest first) before the feed's.
	p.seedMu.Lock()
	seeds := p.seeds
	p.seeds = nil
	p.seedMu.Unlock()
	var learnt map[string]bool
	for i, j := 0, len(seeds)-1; i < j; i, j = i+1, j-1 {
		seeds[i], seeds[j] = seeds[j], seeds[i]
	}
	if len(seeds) > 0 {
		known := map[string]bool{}
		for _, e := range seeds {
			if _, ok := p.facts[e.Host]; ok {
				known[e.Host] = true // what the feed told since is newer
			}
		}
		for _, e := range seeds {
			if !known[e.Host] {
				learnt = p.learn([]engine.Event{e}, learnt)
			}
		}
	}
	learnt = p.learn(events, learnt)
	if learnt != nil || p.factsOut == nil {
		p.factsOut = maps.Clone(p.facts)
	}
	u.facts = p.factsOut
	u.sameHosts = len(p.prev) <= len(snap)

	for i := range snap {
		s := &snap[i]
		var old *engine.HostSnapshot
		if i < len(p.prev) {
			if p.prev[i].Host == s.Host {
				old = &p.prev[i]
			} else {
				u.sameHosts = false
			}
		}
		u.changed[i] = old == nil || !sameRow(old, s) || learnt[s.Host] ||
			(countsNew && (!sameCounts(counts[s.Host], p.prevCount[s.Host]) || robots[s.Host] != p.prevRobot[s.Host]))
		// Chart: only hosts that do something get a ring.
		var fl uint8
		if s.GateIn > 0 {
			fl |= flagGate
		}
		switch s.Breaker {
		case engine.Open:
			fl |= flagOpen
		case engine.HalfOpen:
			fl |= flagHalfOpen
		}
		if s.Paused {
			fl |= flagPaused
		}
		var thr, fails int64
		if old != nil {
			thr = max(s.Throttles-old.Throttles, 0)
			if s.Failures > old.Failures {
				fails = int64(s.Failures - old.Failures)
			} else if s.Failures < old.Failures && s.Failures > 0 {
				fails = int64(s.Failures)
			}
			// Opened by failures, not by the person's own Trip.
			if old.Breaker != engine.Open && s.Breaker == engine.Open && s.Failures > 0 {
				u.opened = append(u.opened, s.Host)
			}
		}
		if fl != 0 || thr > 0 || fails > 0 || s.Inflight > 0 || p.hist[s.Host] != nil {
			b := p.ring(s.Host, sec)
			b.flags |= fl
			b.throttles = sat16(int64(b.throttles) + thr)
			b.failures = sat16(int64(b.failures) + fails)
			b.inflight = uint8(min(max(int(b.inflight), s.Inflight), math.MaxUint8))
		}
	}
	p.prev = snap
	p.prevCount = counts
	p.prevRobot = robots
	if r := p.hist[selected]; r != nil {
		r.at(sec) // age the ring to now
		se := &series{host: selected, end: sec}
		for k := range chartSeconds {
			se.b[k] = r.b[(sec+1+int64(k))%chartSeconds]
		}
		u.series = se
	} else if selected != "" {
		u.series = &series{host: selected, end: sec}
	}
	u.order = sortRows(snap, figures{counts, robots}, spec)
	return u
}

func (p *poller) ring(host string, sec int64) *bucket {
	r := p.hist[host]
	if r == nil {
		r = &ring{sec: sec}
		p.hist[host] = r
	}
	return r.at(sec)
}

func sat16(v int64) uint16 { return uint16(min(v, math.MaxUint16)) }

func sameCounts(a, b engine.Counts) bool {
	return a == b
}

// sameRow reports whether a host's row would look the same, with
// countdowns and tokens compared at the precision they are shown.
func sameRow(a, b *engine.HostSnapshot) bool {
	return math.Round(a.Tokens*10) == math.Round(b.Tokens*10) && a.RatePerMin == b.RatePerMin &&
		a.Burst == b.Burst && a.Level == b.Level && a.GateIn/(100*time.Millisecond) == b.GateIn/(100*time.Millisecond) &&
		a.Inflight == b.Inflight && a.MaxInflight == b.MaxInflight && a.Breaker == b.Breaker &&
		a.Failures == b.Failures && a.HalfOpenIn/(100*time.Millisecond) == b.HalfOpenIn/(100*time.Millisecond) &&
		a.ProbeOut == b.ProbeOut && a.Paused == b.Paused && a.PauseReason == b.PauseReason &&
		a.LastStatus == b.LastStatus && a.Waiting == b.Waiting &&
		a.OwnTunables == b.OwnTunables && a.Throttles == b.Throttles &&
		dueIn(a)/(100*time.Millisecond) == dueIn(b)/(100*time.Millisecond)
}

// sortRows returns the row order for spec: by the column's value, then
// by host so that equal values keep a steady order.
func sortRows(snap []engine.HostSnapshot, f figures, spec sortSpec) []int32 {
	order := make([]int32, len(snap))
	for i := range order {
		order[i] = int32(i)
	}
	key := hostKeys[spec.col]
	slices.SortStableFunc(order, func(x, y int32) int {
		a, b := &snap[x], &snap[y]
		c := 0
		if key != nil {
			ka, kb := key(a, f), key(b, f)
			switch {
			case ka < kb:
				c = -1
			case ka > kb:
				c = 1
			}
		}
		if c == 0 {
			c = strings.Compare(a.Host, b.Host)
		}
		if spec.desc {
			c = -c
		}
		return c
	})
	return order
}
