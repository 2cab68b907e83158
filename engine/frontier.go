package engine

import (
	"slices"
	"time"
)

// The frontier (Q1, Q2): the queue lives in the Store; the core holds, per
// host, a short window of its next queued jobs in queue order (not_before,
// id), and asks for a refill from storage when the window runs low. Memory
// thus grows with hosts, not with queued URLs.
//
// The invariant: every queued job of the host whose place is at or before
// the window's cursor is in the window (or already dispatched); more says
// whether storage may hold queued jobs after the cursor. A job queued after
// the cursor while more is set stays in storage only, and bumps gen, so
// that a refill read before its commit is not applied (it would move the
// cursor past a job it never saw).

// window is a host's part of the frontier.
type window struct {
	win    []entry // next queued jobs, in queue order
	cursor Cursor  // see the invariant above
	more   bool    // storage may hold queued jobs after cursor
	gen    uint32  // bumped when storage gains jobs the window does not hold
	refill uint8   // refillNone, refillWanted or refillRunning
}

// entry is one queued job in a window.
type entry struct {
	key Cursor // its place in the host's queue
	due int64  // its not-before on the core's monotonic clock, noTime when none
}

const (
	refillNone uint8 = iota
	refillWanted
	refillRunning
)

// windowSize is how many jobs a host's window is refilled to: enough for
// its in-flight cap (up to maxWindowInflight) plus a few, as long as the
// windows of all hosts fit the core's budget (windowBudget); with more hosts than that allows,
// each holds its next few (at least minWindow). lowMark is the size below
// which it asks for a refill, and maxWindow the size past which jobs queued
// into it are left to storage.
func (c *Core) windowSize(h *host) int {
	full := min(h.tun.MaxInflight, maxWindowInflight) + 8
	return max(min(full, c.windowBudget/max(len(c.byKey), 1)), minWindow)
}
func (c *Core) lowMark(h *host) int   { n := c.windowSize(h); return max(n-6, (n+1)/2) }
func (c *Core) maxWindow(h *host) int { return 2 * c.windowSize(h) }

// maxWindowInflight bounds the in-flight cap a window is sized for: a host
// allowed 256 requests at once holds 40 jobs in memory, not 264, and is
// refilled a little more often.
const maxWindowInflight = 32

// windowBudget is how many jobs all windows hold together before each is
// cut toward minWindow: some 6 MiB of entries. A thousand hosts get whole
// windows; a hundred thousand hold their next three each, since all of
// them together cannot have more in flight than the engine has workers.
// Memory thus stays flat however long each host's queue is (Q1).
const (
	windowBudget = 1 << 18
	minWindow    = 3
)

// nanos is t as the Store orders it: unix nanoseconds of the wall clock,
// 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Add queues job id for host (a host key, see HostKey), eligible from
// notBefore (its retry delay, R4; zero = now), as the Store has it queued.
// Adding an id that is already in a window moves it. The job then waits
// for max(notBefore, the host's gate, breaker, tokens, spacing) (R4).
// A fleet worker's core adds only to the hosts it holds: it runs no host
// it does not lease, and the claim loop leases one with jobs queued.
func (c *Core) Add(id int64, host string, notBefore time.Time) {
	c.mu.Lock()
	if c.leasedOnly && c.byKey[host] == nil {
		c.mu.Unlock()
		return
	}
	now := c.clock()
	nowM := c.mono(now)
	h := c.getHost(host, now)
	c.drop(h, id) // a job's host is its own: if it is in a window, it is in this one
	e := entry{key: Cursor{NotBefore: nanos(notBefore), ID: id}, due: c.monoOpt(notBefore)}
	switch {
	case !h.cursor.Less(e.key):
		c.insert(h, e)
	case !h.more && len(h.win) < c.windowSize(h):
		c.insert(h, e)
		h.cursor = e.key
	default: // storage holds it; a refill brings it
		h.more = true
		h.gen++
	}
	if len(h.win) > c.maxWindow(h) {
		c.trim(h)
	}
	c.place(h, now, nowM)
	c.unlock()
	c.signal()
}

// insert files e in h's window, in queue order.
func (c *Core) insert(h *host, e entry) {
	i, _ := slices.BinarySearchFunc(h.win, e.key, func(x entry, k Cursor) int {
		switch {
		case x.key.Less(k):
			return -1
		case k.Less(x.key):
			return 1
		}
		return 0
	})
	h.win = slices.Insert(h.win, i, e)
	c.windowed++
}

// indexOf is the place of job id in h's window, -1 when it is not there.
func (h *host) indexOf(id int64) int {
	return slices.IndexFunc(h.win, func(e entry) bool { return e.key.ID == id })
}

// trim leaves to storage the jobs past windowSize, moving the cursor back.
func (c *Core) trim(h *host) {
	keep := c.windowSize(h)
	c.windowed -= len(h.win) - keep
	h.win = slices.Clip(h.win[:keep])
	h.cursor = h.win[keep-1].key
	h.more = true
	h.gen++
}

// drop takes job id out of h's window and reports whether it was there.
func (c *Core) drop(h *host, id int64) bool {
	i := h.indexOf(id)
	if i < 0 {
		return false
	}
	h.win = slices.Delete(h.win, i, i+1)
	c.windowed--
	return true
}

// take pops the first job of h's window (the one due dispatches).
func (c *Core) take(h *host) int64 {
	id := h.win[0].key.ID
	h.win = slices.Delete(h.win, 0, 1)
	c.windowed--
	return id
}

// Remove takes a queued job of host out of its window (a person paused
// or cancelled it) and reports whether it was in it. A job that is only in
// storage needs nothing: the Store no longer has it queued.
func (c *Core) Remove(id int64, host string) bool {
	c.mu.Lock()
	h := c.byKey[host]
	in := h != nil && c.drop(h, id)
	if in {
		now := c.clock()
		c.place(h, now, c.mono(now))
	}
	c.unlock()
	return in
}

// Queued returns the number of jobs in windows.
func (c *Core) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.windowed
}

// wantRefill asks for a refill of h's window when it runs low and storage
// may hold more (called by place, under the lock). A paused host waits:
// its window is refilled when it resumes.
func (c *Core) wantRefill(h *host) {
	if !h.more || h.refill != refillNone || h.paused || len(h.win) >= c.lowMark(h) {
		return
	}
	h.refill = refillWanted
	c.refills = append(c.refills, h)
	select {
	case c.refillSig <- struct{}{}:
	default:
	}
}

// refillWanted receives a value after a window asks for a refill.
func (c *Core) refillWanted() <-chan struct{} { return c.refillSig }

// Refill asks the Store for the next queued jobs of Host after After, at
// most N (Store.NextJobs); hand it back to Refilled with what came.
type Refill struct {
	Host  string
	After Cursor
	N     int
	gen   uint32
	h     *host // the host asked for: one forgotten since (ForgetHost) takes nothing
}

// Refills takes up to most of the refills the windows want, oldest first.
func (c *Core) Refills(most int) []Refill {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(most, len(c.refills))
	out := make([]Refill, 0, n)
	for _, h := range c.refills[:n] {
		h.refill = refillRunning
		out = append(out, Refill{Host: h.key, After: h.cursor, N: max(c.windowSize(h)-len(h.win), 1), gen: h.gen, h: h})
	}
	c.refills = slices.Delete(c.refills, 0, n)
	c.refillsOut += n
	return out
}

// Refilled applies what the Store returned for r (Q1). A refill that
// failed, or that storage outran (a job was queued after the cursor while
// it read), changes nothing and is asked again.
func (c *Core) Refilled(r Refill, jobs []Queued, err error) {
	c.mu.Lock()
	c.refillsOut--
	h := c.byKey[r.Host]
	if h == nil || r.h != nil && r.h != h {
		c.unlock()
		return
	}
	h.refill = refillNone
	if err == nil && r.gen == h.gen {
		for _, q := range jobs {
			if h.indexOf(q.ID) >= 0 {
				continue
			}
			e := entry{key: Cursor{NotBefore: nanos(q.NotBefore), ID: q.ID}, due: c.monoOpt(q.NotBefore)}
			c.insert(h, e)
			if h.cursor.Less(e.key) {
				h.cursor = e.key
			}
		}
		if len(jobs) < r.N {
			h.more = false
		}
	}
	now := c.clock()
	if err == nil {
		c.place(h, now, c.mono(now))
	}
	c.unlock()
	c.signal()
}

// RetryRefill asks again for a refill that failed (Refilled with an
// error), once the caller has waited.
func (c *Core) RetryRefill(host string) {
	c.mu.Lock()
	if h := c.byKey[host]; h != nil {
		now := c.clock()
		c.place(h, now, c.mono(now))
	}
	c.unlock()
}

// Refilling reports whether a window waits for a refill: the queue is not
// known to be empty until none does.
func (c *Core) Refilling() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.refills) > 0 || c.refillsOut > 0
}
