package engine

import (
	"context"
	"fmt"
)

// The commands a person gives, from the window or the command line. Each is
// on disk when it returns without error (J3, G9, S4), whether or not Run is
// running: the window calls them while it downloads, heed host on an engine
// that never runs. In a fleet, a host command is written to the host's row,
// and the worker that holds the host applies it within a second (M4).

// The states a job command moves jobs from.
var (
	pausable  = []JobState{JobQueued, JobActive}
	resumable = []JobState{JobPaused}
	retryable = []JobState{JobDone, JobFailed, JobCancelled, JobSkipped}
	stoppable = []JobState{JobQueued, JobActive, JobPaused}
)

// PauseJobs holds jobs (J3): queued ones leave their window, active ones
// stop with their partial file kept. It returns the ids that changed.
func (e *Engine) PauseJobs(ctx context.Context, ids []int64) ([]int64, error) {
	return e.hold(ctx, ids, pausable, JobPaused)
}

// CancelJobs cancels jobs: they leave their window and stop if active,
// their partial file kept for a retry.
func (e *Engine) CancelJobs(ctx context.Context, ids []int64) ([]int64, error) {
	return e.hold(ctx, ids, stoppable, JobCancelled)
}

func (e *Engine) hold(ctx context.Context, ids []int64, from []JobState, to JobState) ([]int64, error) {
	changed, err := e.store.SetState(ctx, ids, from, to)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(changed))
	for i, c := range changed {
		out[i] = c.ID
		e.core.Remove(c.ID, c.Host)
		e.mu.Lock()
		if a := e.active[c.ID]; a != nil {
			a.cancel(errUserStop)
		}
		e.mu.Unlock()
	}
	return out, nil
}

// ResumeJobs lets paused jobs run again.
func (e *Engine) ResumeJobs(ctx context.Context, ids []int64) ([]int64, error) {
	return e.queue(ctx, ids, resumable)
}

// RetryJobs queues done, failed, cancelled or skipped jobs again with a
// fresh attempt budget (R5, J2).
func (e *Engine) RetryJobs(ctx context.Context, ids []int64) ([]int64, error) {
	return e.queue(ctx, ids, retryable)
}

func (e *Engine) queue(ctx context.Context, ids []int64, from []JobState) ([]int64, error) {
	changed, err := e.store.SetState(ctx, ids, from, JobQueued)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(changed))
	for i, c := range changed {
		out[i] = c.ID
		e.core.Add(c.ID, c.Host, c.NotBefore)
	}
	return out, nil
}

// PauseHost stops dispatching to host at once (G9); its in-flight requests
// finish and its queued jobs stay queued.
func (e *Engine) PauseHost(ctx context.Context, host, reason string) error {
	if e.fleet != nil {
		return e.command(ctx, HostCommand{Host: host, Kind: CommandPause, Paused: true, PauseReason: reason})
	}
	e.core.PauseHost(host, reason)
	return e.saveHost(ctx)
}

// ResumeHost lets host dispatch again (G9).
func (e *Engine) ResumeHost(ctx context.Context, host string) error {
	if e.fleet != nil {
		return e.command(ctx, HostCommand{Host: host, Kind: CommandResume})
	}
	e.core.ResumeHost(host)
	return e.saveHost(ctx)
}

// SetHostTunables gives host its own tunables, live (G2, U3). The error
// names the field out of bounds; nothing changes then.
func (e *Engine) SetHostTunables(ctx context.Context, host string, t Tunables) error {
	if e.fleet != nil {
		t = t.Normalize()
		if err := t.Validate(); err != nil {
			return err
		}
		return e.command(ctx, HostCommand{Host: host, Kind: CommandTune, Tunables: &t})
	}
	if err := e.core.SetHostTunables(host, t); err != nil {
		return err
	}
	return e.saveHost(ctx)
}

// UseDefaults makes host follow the default tunables again.
func (e *Engine) UseDefaults(ctx context.Context, host string) error {
	if e.fleet != nil {
		return e.command(ctx, HostCommand{Host: host, Kind: CommandTune})
	}
	e.core.ClearHostTunables(host)
	return e.saveHost(ctx)
}

// ProbeNow moves host's open breaker to half-open at once (B5).
func (e *Engine) ProbeNow(ctx context.Context, host string) error {
	if e.fleet != nil {
		return e.command(ctx, HostCommand{Host: host, Kind: CommandBreaker, Action: EventProbeNow})
	}
	e.core.ProbeNow(host)
	return e.saveHost(ctx)
}

// ResetBreaker closes host's breaker (B5).
func (e *Engine) ResetBreaker(ctx context.Context, host string) error {
	if e.fleet != nil {
		return e.command(ctx, HostCommand{Host: host, Kind: CommandBreaker, Action: EventReset})
	}
	e.core.ResetBreaker(host)
	return e.saveHost(ctx)
}

// TripBreaker opens host's breaker now (B5).
func (e *Engine) TripBreaker(ctx context.Context, host string) error {
	if e.fleet != nil {
		return e.command(ctx, HostCommand{Host: host, Kind: CommandBreaker, Action: EventTrip})
	}
	e.core.TripBreaker(host)
	return e.saveHost(ctx)
}

// saveHost writes the hosts a command changed, and the events it caused,
// and waits for the commit.
func (e *Engine) saveHost(ctx context.Context) error {
	e.persistHosts()
	if err := e.store.Flush(ctx); err != nil {
		return fmt.Errorf("recording the change: %w", err)
	}
	return nil
}

// HostState returns host's state as the core holds it now (what heed host
// shows), with the tunables it runs with.
func (e *Engine) HostState(host string) (HostState, Tunables) {
	s, ok := e.core.ExportHost(host)
	if !ok {
		s = HostState{Host: host}
	}
	t, _ := e.core.HostTunables(host)
	return s, t
}
