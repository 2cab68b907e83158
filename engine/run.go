package engine

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// runningKey is the setting that says a run is dispatching: "true" from the
// start of Run until it has written every host's state as it stopped.
const runningKey = "running"

// errHeld is the cancellation cause of attempts whose redirect waits for a
// paused host when RunUntilIdle finds nothing else runnable.
var errHeld = errors.New("held by a paused host")

// Run dispatches jobs until ctx ends, then cancels what is in flight
// (keeping the partial files), waits for it, persists everything and
// returns ctx's error.
func (e *Engine) Run(ctx context.Context) error { return e.run(ctx, false) }

// RunUntilIdle is Run for the command line: it returns nil once nothing is
// runnable — no job in flight and none queued, or every queued job held by
// a paused host.
func (e *Engine) RunUntilIdle(ctx context.Context) error { return e.run(ctx, true) }

func (e *Engine) run(ctx context.Context, untilIdle bool) error {
	// On disk before the first request: a crash from here on is known to
	// the next start (see restore), until stop has written every host.
	if e.fleet == nil {
		if err := e.store.SetSetting(context.WithoutCancel(ctx), runningKey, "true"); err != nil {
			return fmt.Errorf("%w that downloads start: %w", ErrNotRecorded, err)
		}
	} else {
		// A worker: its hosts come by lease, for as long as it runs.
		busy, err := e.fleet.f.Busy(ctx)
		if err != nil {
			return fmt.Errorf("reading the fleet's queue: %w", err)
		}
		e.fleet.busy.Store(busy)
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			e.fleetLoop(fctx)
		}()
		e.fleetStop = func() { cancel(); <-done }
	}
	ctx, interrupt := context.WithCancelCause(ctx)
	defer interrupt(nil)
	refilling := make(chan struct{})
	go func() {
		defer close(refilling)
		e.refill(ctx)
	}()
	defer func() {
		interrupt(nil)
		<-refilling
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var saved time.Time // when host states were last written
	idle := false       // the last round found nothing to do
	for {
		// A host event (throttle, breaker, pause, retune …) is written at
		// once; routine changes (a success, the last status) at most every
		// hostSaveEvery, so a busy host costs no write per request.
		pending := true
		if e.urgent.Swap(false) || time.Since(saved) >= hostSaveEvery {
			e.persistHosts()
			saved, pending = time.Now(), false
		}
		if err := e.broken.Load(); err != nil {
			interrupt(*err) // what is in flight stops too, its parts kept
			return e.stop(*err)
		}
		var wake time.Time
		dispatched := false
		for ctx.Err() == nil && e.running.Load()-min(e.hopWaiting.Load(), maxHopWaiting) < e.maxRunning() {
			d, ok, w := e.core.Next(time.Now())
			if !ok {
				wake = w
				break
			}
			dispatched = true
			e.running.Add(1)
			go e.attempt(ctx, d)
		}
		// Idle when nothing runs, nothing is due or will be, no window
		// waits for a refill, and no URLs are on their way (Adding). An
		// attempt that ended since the core was asked may have queued its
		// job again (before it stopped counting as running), so the core
		// is asked once more before that is believed.
		if untilIdle && !dispatched && wake.IsZero() && e.running.Load() == e.held.Load() &&
			e.adding.Load() == 0 && !e.core.Refilling() && (e.fleet == nil || !e.fleet.busy.Load()) {
			if idle {
				if e.held.Load() > 0 {
					interrupt(errHeld) // they wait for the person, who resumes a host in a later run
				}
				return e.stop(nil)
			}
			idle = true
			continue
		}
		idle = false
		if pending && (wake.IsZero() || time.Until(wake) > hostSaveEvery) {
			wake = saved.Add(hostSaveEvery) // come back to write them
		}
		var tick <-chan time.Time
		if !wake.IsZero() {
			timer.Reset(time.Until(wake))
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return e.stop(ctx.Err())
		case <-e.core.Changed():
		case <-e.done:
		case <-tick:
		}
		timer.Stop()
	}
}

// maxRunning bounds the attempt goroutines: those in flight (L1) and as
// many again finishing (syncing, recording, naming their files), so a disk
// slower than the network cannot pile up open files.
func (e *Engine) maxRunning() int64 { return 2*int64(e.core.GlobalInflight()) + 64 }

// maxHopWaiting is how many attempts waiting for their redirect's host do
// not count towards maxRunning: they hold no connection and no file, so
// jobs redirected to one waiting host leave the other hosts their turn
// (L3); past it they count again, which bounds what they hold (a goroutine
// and a job each).
const maxHopWaiting = 1024

// stop waits for the attempts in flight (cancelled with ctx, if it ended),
// then writes every host's state and all batched records.
func (e *Engine) stop(err error) error {
	for e.running.Load() > 0 {
		<-e.done
	}
	if b := e.broken.Load(); b != nil {
		err = *b // a failed commit says more than the stop it came with
	}
	e.persistHosts()
	if e.fleetStop != nil {
		e.fleetStop() // the hosts' last states, and their leases, given back
		e.fleetStop = nil
	}
	if ferr := e.store.Flush(context.Background()); ferr != nil && err == nil {
		err = ferr
	} else if ferr == nil && e.fleet == nil {
		if serr := e.store.SetSetting(context.Background(), runningKey, "false"); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// breaks records the first failed commit of a job transition (see broken)
// and wakes the run loop, which stops.
func (e *Engine) breaks(err error) {
	if e.broken.CompareAndSwap(nil, &err) {
		e.log.Error("downloads stop", "err", err)
	}
	e.wakeLoop()
}

// finished marks an attempt goroutine as ended and wakes the loop.
func (e *Engine) finished() {
	e.running.Add(-1)
	e.wakeLoop()
}

// wakeLoop has the run loop look again at what runs (e.done holds one
// wake-up for any number).
func (e *Engine) wakeLoop() {
	select {
	case e.done <- struct{}{}:
	default:
	}
}

// refillBatch is how many windows the refiller serves between two looks
// at what the core asks.
const refillBatch = 64

// refill serves the windows' refills (Q1) until ctx ends: off the dispatch
// path, so a host whose next jobs are being read holds up no other.
func (e *Engine) refill(ctx context.Context) {
	wait := time.NewTimer(time.Hour)
	defer wait.Stop()
	for ctx.Err() == nil {
		rs := e.core.Refills(refillBatch)
		if len(rs) == 0 {
			select {
			case <-ctx.Done():
			case <-e.core.refillWanted():
			}
			continue
		}
		for _, r := range rs {
			jobs, err := e.store.NextJobs(ctx, r.Host, r.After, r.N)
			e.core.Refilled(r, jobs, err)
			if err != nil && ctx.Err() == nil {
				e.log.Error("reading a host's next jobs", "host", r.Host, "err", err)
				wait.Reset(time.Second)
				select {
				case <-ctx.Done():
				case <-wait.C:
				}
				e.core.RetryRefill(r.Host)
			}
		}
	}
}
