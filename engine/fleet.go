package engine

import (
	"container/heap"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"
)

// Several machines (SPEC §12). A Store shared by several workers also
// implements Fleet: each host is leased to one worker at a time, which runs
// its governor and breaker as a single Heed would. An Engine over such a
// Store is a worker: its core holds only the hosts it leases, claimed as
// they have work and given back when they have none, and the person's
// commands on a host go to the host's row, from which its owner applies
// them.

// Fleet is what a Store shared by several workers adds (M2–M5). Every
// lease time is the database's clock.
type Fleet interface {
	// Claim leases to this worker up to n hosts that have jobs queued and
	// no live owner, within its fair share of the fleet's work, and
	// returns their saved states and that share: the most hosts it should
	// hold. The active jobs of a host whose owner died are queued again
	// first (M3).
	Claim(ctx context.Context, n int) (states []HostState, share int, err error)
	// Renew extends the leases this worker holds and returns the hosts it
	// lost (expired and taken, or fenced off).
	Renew(ctx context.Context) (lost []string, err error)
	// Release saves a host's last state and gives its lease back; false
	// when it could not: the host has commands to apply first, or is lost.
	Release(ctx context.Context, s HostState) (bool, error)
	// Commands returns the person's commands on the hosts this worker
	// leases that it has not applied yet; Applied records one applied.
	Commands(ctx context.Context) ([]HostCommand, error)
	Applied(ctx context.Context, c HostCommand) error
	// Command writes a person's command into a host's row and tells its
	// owner, if it has one.
	Command(ctx context.Context, c HostCommand) error
	// Heartbeat records this worker's figures in the workers table.
	Heartbeat(ctx context.Context, s WorkerStats) error
	// Busy reports whether any job of the whole store is queued (on a host
	// not paused) or active.
	Busy(ctx context.Context) (bool, error)
	// Leave gives back every lease and marks this worker stopped.
	Leave(ctx context.Context) error
	// Changes receives the hosts the store heard news of: jobs queued for
	// them, or commands. A full channel drops; Commands and the claim
	// loop catch up.
	Changes() <-chan string
	// Lease is how long a lease lasts without renewal.
	Lease() time.Duration
}

// FleetReader is what the window and the command line list of a fleet.
type FleetReader interface {
	Workers(ctx context.Context) ([]Worker, error)
}

// HostCommand is a host's command state as its row holds it: whether it is
// paused and why, its own tunables (nil: the defaults), and a breaker
// action to take once (EventProbeNow, EventReset or EventTrip; 0 for
// none). Seq counts the commands written to the row.
type HostCommand struct {
	Host        string
	Kind        CommandKind // what Command changes; Commands returns them all set
	Paused      bool
	PauseReason string
	Tunables    *Tunables
	Action      EventKind
	Seq         int64
}

// CommandKind says which part of a host's command state a command sets.
type CommandKind uint8

const (
	CommandPause CommandKind = iota + 1
	CommandResume
	CommandTune     // Tunables, nil for the defaults
	CommandBreaker  // Action
	CommandAllState // every field (as Commands returns them)
)

// WorkerStats are a worker's figures for its heartbeat.
type WorkerStats struct {
	Hosts    int
	Inflight int
	Requests int64   // since it started
	Rate     float64 // requests a second, lately
}

// Worker is a member of the fleet as the workers table holds it.
type Worker struct {
	Name      string
	Machine   string
	Started   time.Time
	Heartbeat time.Time
	Alive     bool // heartbeat within a lease
	Stopped   bool
	WorkerStats
}

// fleetState is a worker engine's view of its fleet.
type fleetState struct {
	f        Fleet
	busy     atomic.Bool  // some job of the store is queued or active (for RunUntilIdle)
	requests atomic.Int64 // requests started, for the heartbeat
}

// claimBatch is how many hosts one claim asks for at most.
const claimBatch = 64

// fleetLoop runs a worker's side of the fleet until ctx ends: it claims
// hosts with work, renews its leases and heartbeats, applies the person's
// commands, gives back hosts with nothing left and drops the ones it lost.
func (e *Engine) fleetLoop(ctx context.Context) {
	fl := e.fleet
	lease := fl.f.Lease()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var renewed, commanded time.Time
	var lastReq int64
	lastAt := time.Now()
	for {
		news := false
		select {
		case <-ctx.Done():
			e.leaveFleet()
			return
		case host := <-fl.f.Changes():
			e.core.Poke(host)
			news = true
		case <-tick.C:
		}
		now := time.Now()
		if news || now.Sub(commanded) >= time.Second {
			e.applyCommands(ctx)
			commanded = now
		}
		if now.Sub(renewed) >= lease/3 {
			lost, err := fl.f.Renew(ctx)
			if err != nil && ctx.Err() == nil {
				e.log.Error("renewing host leases", "err", err)
			}
			for _, h := range lost {
				e.dropHost(h)
			}
			req := fl.requests.Load()
			rate := float64(req-lastReq) / now.Sub(lastAt).Seconds()
			lastReq, lastAt = req, now
			st := e.core.Stats()
			if err := fl.f.Heartbeat(ctx, WorkerStats{Hosts: st.Hosts, Inflight: st.Inflight, Requests: req, Rate: rate}); err != nil && ctx.Err() == nil {
				e.log.Error("heartbeat", "err", err)
			}
			renewed = now
		}
		e.giveBack(ctx, e.core.IdleHosts(), forgetIdle)
		states, share, err := fl.f.Claim(ctx, claimBatch)
		if err != nil && ctx.Err() == nil {
			e.log.Error("claiming hosts", "err", err)
		}
		for _, s := range states {
			e.core.RestoreHost(s, time.Now())
		}
		if len(states) > 0 {
			e.applyCommands(ctx) // those written while nobody held them
		}
		if held := e.core.hostKeys(); err == nil && share > 0 && len(held) > share {
			// More than a fair share (another worker joined): the quiet
			// ones go back, with their state, for the others to take.
			e.giveBack(ctx, held[share:], forgetQuiet)
		}
		busy, err := fl.f.Busy(ctx)
		if err == nil {
			fl.busy.Store(busy)
		}
		e.core.signal()
	}
}

// applyCommands applies the person's commands on leased hosts (M4).
func (e *Engine) applyCommands(ctx context.Context) {
	cmds, err := e.fleet.f.Commands(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("reading host commands", "err", err)
		}
		return
	}
	for _, c := range cmds {
		switch {
		case c.Paused && !e.core.HostPaused(c.Host):
			e.core.PauseHost(c.Host, c.PauseReason)
		case !c.Paused && e.core.HostPaused(c.Host):
			e.core.ResumeHost(c.Host)
		}
		if c.Tunables != nil {
			if err := e.core.SetHostTunables(c.Host, *c.Tunables); err != nil {
				e.log.Error("a host's tunables from a command", "host", c.Host, "err", err)
			}
		} else if _, own := e.core.HostTunables(c.Host); own {
			e.core.ClearHostTunables(c.Host)
		}
		if c.Action != 0 {
			e.core.breakerAction(c.Host, c.Action)
		}
		if err := e.fleet.f.Applied(ctx, c); err != nil && ctx.Err() == nil {
			e.log.Error("recording a command applied", "host", c.Host, "err", err)
		}
	}
	if len(cmds) > 0 {
		e.urgent.Store(true)
		e.wakeLoop()
	}
}

// giveBack gives back those of hosts that mode allows, with their state.
func (e *Engine) giveBack(ctx context.Context, hosts []string, mode forgetMode) {
	for _, h := range hosts {
		s, ok := e.core.ForgetHost(h, mode)
		if !ok {
			continue
		}
		if e.ending(h) {
			// An attempt past its response (Observe) has not recorded its
			// end yet, and that end is fenced by this lease: given back
			// now, the end would be refused and the job run twice.
			e.core.RestoreHost(s, time.Now())
			continue
		}
		released, err := e.fleet.f.Release(ctx, s)
		if err != nil || !released {
			if err != nil && ctx.Err() == nil {
				e.log.Error("giving a host back", "host", h, "err", err)
			}
			e.core.RestoreHost(s, time.Now()) // kept: its commands come first
		}
	}
}

// ending reports whether an attempt of a job of host is still under way.
// Once the core has forgotten the host, none can begin: one under way has
// its response already and records its end.
func (e *Engine) ending(host string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range e.active {
		if a.info.Host == host {
			return true
		}
	}
	return false
}

// dropHost forgets a host whose lease was lost and stops its attempts:
// whatever they would record, the store refuses (ErrNotLeased).
func (e *Engine) dropHost(host string) {
	e.core.ForgetHost(host, forgetForce)
	e.mu.Lock()
	for _, a := range e.active {
		if a.info.Host == host {
			a.cancel(errLeaseLost)
		}
	}
	e.mu.Unlock()
}

// errLeaseLost is the cancellation cause of attempts whose host another
// worker runs now.
var errLeaseLost = errors.New("its host's lease was lost: another worker runs it now")

// leaveFleet gives every lease back as the run stops.
func (e *Engine) leaveFleet() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, h := range e.core.hostKeys() {
		if s, ok := e.core.ExportHost(h); ok {
			e.fleet.f.Release(ctx, s)
		}
	}
	if err := e.fleet.f.Leave(ctx); err != nil {
		e.log.Error("leaving the fleet", "err", err)
	}
}

// command is a person's host command in a fleet: written to the host's
// row, from which the host's owner — this worker or another — applies it.
func (e *Engine) command(ctx context.Context, c HostCommand) error {
	return e.fleet.f.Command(ctx, c)
}

// stolen reports whether a store refused a job transition because the job
// is no longer this attempt's to move: the person paused or cancelled it,
// or (in a fleet) another worker runs its host now.
func stolen(err error) bool { return errors.Is(err, ErrNotQueued) || errors.Is(err, ErrNotLeased) }

// ---- the core's side ----

// IdleHosts returns the hosts with no job in their window or in storage
// and nothing in flight or being read.
func (c *Core) IdleHosts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, h := range c.hosts {
		if h.idle() {
			out = append(out, h.key)
		}
	}
	return out
}

func (h *host) idle() bool {
	return len(h.win) == 0 && !h.more && h.inflight == 0 && h.refill == refillNone
}

// hostKeys returns every host the core holds.
func (c *Core) hostKeys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.hosts))
	for i, h := range c.hosts {
		out[i] = h.key
	}
	return out
}

// forgetMode says which hosts ForgetHost takes out.
type forgetMode uint8

const (
	forgetIdle  forgetMode = iota // nothing queued, in flight or being read
	forgetQuiet                   // nothing in flight or being read
	forgetForce                   // whatever it holds
)

// ForgetHost exports host's state and takes it out of the core when mode
// allows, and reports whether it did. Its window's jobs stay queued in
// storage.
func (c *Core) ForgetHost(key string, mode forgetMode) (HostState, bool) {
	s, ok := c.ExportHost(key)
	if !ok {
		return s, false
	}
	c.mu.Lock()
	defer c.unlock()
	h := c.byKey[key]
	switch {
	case h == nil:
		return s, false
	case mode == forgetIdle && !h.idle(), mode == forgetQuiet && (h.inflight > 0 || h.refill != refillNone):
		return s, false
	}
	if h.heapIdx >= 0 {
		heap.Remove(&c.heap, h.heapIdx)
	}
	c.windowed -= len(h.win)
	c.inflight -= h.inflight
	delete(c.byKey, key)
	c.hosts = slices.DeleteFunc(c.hosts, func(x *host) bool { return x == h })
	c.refills = slices.DeleteFunc(c.refills, func(x *host) bool { return x == h })
	c.dirty = slices.DeleteFunc(c.dirty, func(x *host) bool { return x == h })
	return s, true
}

// Poke tells the core that storage may hold jobs of host it has not read:
// another process queued them.
func (c *Core) Poke(host string) {
	c.mu.Lock()
	if h := c.byKey[host]; h != nil && !h.more {
		h.more = true
		h.gen++
		now := c.clock()
		c.place(h, now, c.mono(now))
	}
	c.unlock()
	c.signal()
}

// stoppedWhy says why a transition was refused (see stolen).
func stoppedWhy(err error) string {
	if errors.Is(err, ErrNotLeased) {
		return ErrNotLeased.Error()
	}
	return "stopped by the user"
}
