package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"heed/engine/fetch"
)

// Options configure an Engine. Zero values select the documented defaults.
type Options struct {
	// Dir is the download folder; every byte is written inside it (F1).
	Dir string
	// Version names Heed in the User-Agent (N3); UserAgent replaces it whole.
	Version   string
	UserAgent string
	// Defaults are the tunables of hosts nobody configured. When zero, the
	// defaults last saved with SetDefaults are used, else DefaultTunables().
	Defaults Tunables
	// Workers is the global in-flight cap (L1, 16).
	Workers int
	// GlobalRatePerSec caps requests per second across hosts (L2, 0 = off).
	GlobalRatePerSec float64
	// BandwidthBytesPerSec caps download bytes per second (L2, 0 = off).
	BandwidthBytesPerSec int64
	// SavedLimits starts with the global limits last saved with SetLimits
	// (the window's), instead of the two fields above, and with everything
	// paused if SetPausedAll last paused it.
	SavedLimits bool
	// MaxSize is an optional cap on one file's size (F8, 0 = none).
	MaxSize int64
	// AllowDowngrade lets a redirect go from https to http (N2).
	AllowDowngrade bool
	// Seed seeds the politeness core's randomness; 0 picks one from the clock.
	Seed int64
	// Fetch overrides timeouts and the transport of the fetcher; its Dir,
	// Version, UserAgent, MaxSize, AllowDowngrade and Bandwidth are set from
	// the fields above.
	Fetch fetch.Config
	// OnEvent, when set, sees every host event after it is stored.
	OnEvent func(Event)
	// OnJob, when set, is told how each attempt of a job ended. It runs on
	// the attempt's goroutine and must be quick.
	OnJob func(JobEnd)
	// Log receives what the engine cannot hand to anyone else (storage
	// errors while recording history). slog.Default when nil.
	Log *slog.Logger
}

// Engine downloads queued jobs: it takes due jobs from the politeness core,
// fetches them, records every attempt and transition in the Store, and keeps
// each host's politeness state persisted so a restart resumes exactly
// (G10, B6). Run drives it; the window and the command line read Snapshot
// and Active and call its commands from any goroutine.
type Engine struct {
	opt   Options
	core  *Core
	store Store
	fetch *fetch.Fetcher
	bw    *rate.Limiter
	log   *slog.Logger

	running atomic.Int64  // attempts in progress
	held    atomic.Int64  // of those, attempts whose redirect waits for a paused host
	adding  atomic.Int64  // Adds in progress and other promises of URLs to come (see Adding)
	done    chan struct{} // an attempt ended (buffered 1)
	urgent  atomic.Bool   // a host event happened: write host states now
	// hopWaiting counts the attempts waiting in acquireHop for their
	// redirect's host; they do not count towards saturated.
	hopWaiting atomic.Int64
	// stopping is set once Run has decided to stop: an attempt's goroutine
	// then takes no next dispatch (see work).
	stopping atomic.Bool
	// fdLimit is the process's limit of open files (0 unknown), which
	// bounds the attempts finishing beside those in flight (finishingFor);
	// finishing, when set (tests), is that bound instead.
	fdLimit   uint64
	finishing int

	// broken is the first commit of job transitions that failed (a full
	// disk, a database gone read-only): a transition Heed cannot persist
	// must not be acted on (J3), so Run stops dispatching and returns it.
	broken atomic.Pointer[error]

	mu     sync.Mutex
	active map[int64]*activeJob
}

// hostSaveEvery is how often routine host-state changes are written; host
// events (throttles, breaker transitions, pauses, retunes) are written at
// once (G10, B6).
const hostSaveEvery = 250 * time.Millisecond

// activeJob is a download in progress.
type activeJob struct {
	info   Active // zero until its attempt begins (see claim)
	bytes  atomic.Int64
	size   atomic.Int64
	ctx    context.Context // the attempt's
	cancel context.CancelCauseFunc
}

func (a *activeJob) setSize(n int64) { a.size.Store(n) }

// bodyStarts notes that a body begins at byte offset: below StartBytes, the
// server would not resume (or the file changed) and the download starts
// over, so its speed is measured from offset and now, not from bytes no
// longer on disk (which made it negative).
func (a *Active) bodyStarts(offset int64, now time.Time) {
	if offset < a.StartBytes {
		a.StartBytes, a.Started = offset, now
	}
}

// Active describes a download in progress, for the window and the CLI.
type Active struct {
	JobID   int64
	URL     string
	Host    string
	Attempt int
	Started time.Time
	Bytes   int64 // bytes on disk so far, resumed bytes included
	// StartBytes is what was on disk when the attempt started, so that
	// (Bytes−StartBytes)/elapsed is this attempt's speed.
	StartBytes int64
	Size       int64 // expected total, -1 unknown
}

// JobEnd says how one attempt of a job ended, for progress displays.
type JobEnd struct {
	ID        int64
	URL       string
	Host      string
	Outcome   string // ok, retry, throttled, failed, canceled
	File      string // when ok: the final name in the download folder
	Bytes     int64
	SHA256    string
	Err       string    // why it did not complete
	NotBefore time.Time // retry, throttled: the earliest next try as things stand (R4)
	Held      bool      // retry, throttled: the host is paused; the next try waits for its resume
}

// Outcomes are the outcomes history records for an attempt (S3): how it
// ended ("ok", "retry", "throttled", "failed", "canceled"), or why the same
// attempt went on with another request ("redirect"; "partial": the server
// sent part of the rest; "restart": it refused the resume).
var Outcomes = []string{"ok", "retry", "throttled", "failed", "redirect", "partial", "restart", "canceled"}

// maxPieces is how many short ranges (fetch.MoreRanges) one attempt asks
// the rest after before it counts as a cut body.
const maxPieces = 1000

// errUserStop is the cancellation cause when a person paused or cancelled a job.
var errUserStop = errors.New("stopped by the user")

// errHeld is the cancellation cause of attempts whose redirect waits for a
// paused host when RunUntilIdle finds nothing else runnable.
var errHeld = errors.New("held by a paused host")

// New builds an engine over store: it restores every host's persisted
// politeness state and queues every queued job into the scheduler.
func New(ctx context.Context, store Store, opt Options) (*Engine, error) {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Seed == 0 {
		opt.Seed = time.Now().UnixNano()
	}
	e := &Engine{opt: opt, store: store, log: opt.Log, done: make(chan struct{}, 1), active: map[int64]*activeJob{},
		fdLimit: openFileLimit()}
	if opt.Defaults.RatePerMin == 0 {
		saved, err := loadDefaults(ctx, store)
		if err != nil {
			return nil, err
		}
		opt.Defaults = saved
	}
	if opt.SavedLimits {
		l, err := loadLimits(ctx, store)
		if err != nil {
			return nil, err
		}
		opt.GlobalRatePerSec, opt.BandwidthBytesPerSec = l.RatePerSec, l.BytesPerSec
	}
	if opt.BandwidthBytesPerSec > 0 {
		e.bw = rate.NewLimiter(rate.Limit(opt.BandwidthBytesPerSec), bwBurst(opt.BandwidthBytesPerSec))
	} else {
		e.bw = rate.NewLimiter(rate.Inf, 1)
	}
	e.core = NewCore(Config{
		Defaults:             opt.Defaults,
		GlobalInflight:       opt.Workers,
		GlobalRatePerSec:     opt.GlobalRatePerSec,
		BandwidthBytesPerSec: opt.BandwidthBytesPerSec,
		Seed:                 opt.Seed,
		OnEvent:              e.onEvent,
	})
	if opt.SavedLimits {
		paused, err := store.Setting(ctx, pausedAllKey)
		if err != nil {
			return nil, fmt.Errorf("loading whether everything was paused: %w", err)
		}
		if paused == "true" {
			e.core.PauseAll()
		}
	}
	fc := opt.Fetch
	fc.Dir, fc.Version, fc.UserAgent = opt.Dir, opt.Version, opt.UserAgent
	owner, err := store.Setting(ctx, identityKey)
	if err != nil {
		return nil, fmt.Errorf("loading the database's identity: %w", err)
	}
	fc.Owner = owner
	if db, ok := store.(interface{ Files() []string }); ok {
		// A download never takes the name of the database or of a file
		// SQLite keeps beside it (a "-journal" would be played into it).
		fc.Keep = append(slices.Clip(fc.Keep), db.Files()...)
	}
	fc.MaxSize, fc.AllowDowngrade, fc.Bandwidth = opt.MaxSize, opt.AllowDowngrade, e.bw
	f, err := fetch.New(fc)
	if err != nil {
		return nil, err
	}
	e.fetch = f
	if err := e.nameLeftovers(ctx); err != nil {
		f.Close()
		return nil, err
	}
	e.removeOrphans(ctx)
	hosts, err := store.LoadHosts(ctx)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("loading hosts: %w", err)
	}
	running, err := store.Setting(ctx, runningKey)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("loading whether the last run stopped cleanly: %w", err)
	}
	now := time.Now()
	for _, h := range hosts {
		e.core.RestoreHost(h, now)
	}
	loaded := 0
	err = store.ForEachQueued(ctx, func(id int64, host string, notBefore time.Time) error {
		e.core.Add(id, host, notBefore)
		if loaded++; loaded == bigQueue {
			tuneGC(loaded) // a large queue: pace the collector while it loads
		}
		return nil
	})
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("loading the queue: %w", err)
	}
	e.core.DirtyHosts() // what was just restored is already on disk
	if running == "true" {
		// The last run stopped without writing its hosts (a crash, a kill
		// -9): the requests of its last hostSaveEvery may be missing from
		// the saved buckets, so every host starts empty now and fills at
		// its rate; no window then holds more than burst + rate·t requests
		// across the crash (G2). The empty buckets are written with the
		// next host states, so a run that stops before a host's next
		// request does not hand its old bucket to the one after.
		e.core.StartBucketsEmpty(now)
	}
	if loaded >= bigQueue {
		e.core.Trim()
	}
	tuneGC(e.core.Queued())
	return e, nil
}

// nameLeftovers gives their final names to the parts of downloads that a
// crash left recorded done but not yet renamed (see complete), before any
// new download can take a part name. A download that is not in this
// download folder (Heed ran with another since), or whose part cannot be
// read, stays listed for a later start; the others are cleared.
func (e *Engine) nameLeftovers(ctx context.Context) error {
	us, err := e.store.Unnamed(ctx)
	if err != nil {
		return fmt.Errorf("loading unnamed downloads: %w", err)
	}
	named := make([]Named, 0, len(us))
	for _, u := range us {
		file, err := e.fetch.NameLeftover(u.Part, u.File, u.Bytes, u.SHA256)
		if u.Part == "" && err == nil && file == "" {
			// Held in a file with no name, which the crash took before the
			// download had its name: fetched again, as a download the crash
			// cut off. (Were this another folder than the one the crash cut
			// off, with the file there, it would be fetched a second time:
			// the crash had to fall in the moment between the commit and
			// the link, and Heed be run on another folder after it.)
			e.log.Info("a download finished just before a crash is fetched again", "job", u.JobID, "file", u.File)
			named = append(named, Named{JobID: u.JobID, Again: true})
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			e.log.Info("a download finished before a crash is not in this folder", "job", u.JobID, "err", err)
			continue
		}
		if err != nil {
			e.log.Error("naming a finished download", "job", u.JobID, "part", u.Part, "err", err)
			continue
		}
		n := Named{JobID: u.JobID}
		switch {
		case file == "":
			n.Err, n.Lost = fmt.Sprintf("after a crash, the finished download was found neither as %s "+
				"nor under %s or a name after it", u.Part, u.File), true
			e.log.Error("a download finished before a crash is lost", "job", u.JobID, "err", n.Err)
		case file != u.File:
			n.File = file
			fallthrough
		default:
			e.log.Info("a download finished before a crash has its name", "job", u.JobID, "file", file)
		}
		named = append(named, n)
	}
	if err := e.store.Named(named); err != nil {
		return fmt.Errorf("recording final names: %w", err)
	}
	// Jobs queued again are committed before the queue is loaded.
	if slices.ContainsFunc(named, func(n Named) bool { return n.Again }) {
		if err := e.store.Flush(ctx); err != nil {
			return fmt.Errorf("recording final names: %w", err)
		}
	}
	return nil
}

// identityKey is the setting that holds the database's identity, with which
// Heed marks the part files it creates (see removeOrphans).
const identityKey = "identity"

// removeOrphans removes the parts that the jobs a crash interrupted left
// behind unrecorded, so that their downloads, fetched again, take their own
// names rather than "name (1)" beside a part nothing will ever use (S2). A
// part is recorded a moment after its body starts, and a finished one with
// its done commit: a crash before that leaves a part whose bytes Heed cannot
// resume (it knows neither their number nor the validators they came with).
// Only parts marked as created for one of those jobs, by this database, are
// removed, and only by a run in the folder the crash cut off; a part
// recorded for a resume or a name is kept, and any other file is left
// alone. Then it records this run's folder (runFolderKey), for the next
// crash. This is housekeeping: what goes wrong is logged, and the jobs stay
// listed for the next start to try again.
func (e *Engine) removeOrphans(ctx context.Context) {
	folder, err := filepath.Abs(e.opt.Dir)
	if err != nil {
		e.log.Error("finding the download folder", "err", err)
		return
	}
	its, err := e.store.Interrupted(ctx)
	if err != nil {
		e.log.Error("loading the jobs a crash interrupted", "err", err)
	}
	var here []int64
	for _, it := range its {
		if it.Folder == "" || it.Folder == folder {
			here = append(here, it.JobID)
		}
	}
	if len(here) > 0 {
		if err := e.removeOrphansOf(ctx, here); err != nil {
			e.log.Error("looking for partial files a crash left", "err", err)
		} else if err := e.store.ClearInterrupted(ctx, here); err != nil {
			e.log.Error("clearing the jobs a crash interrupted", "err", err)
		}
	}
	if len(here) < len(its) {
		e.log.Info("partial files a crash left in another download folder are looked for when Heed downloads there again",
			"jobs", len(its)-len(here))
	}
	if err := e.store.SetSetting(ctx, runFolderKey, folder); err != nil {
		e.log.Error("recording the download folder", "err", err)
	}
}

// runFolderKey is the setting that holds the download folder of the
// latest download run, which a crash records with the jobs it cut off.
const runFolderKey = "run_folder"

func (e *Engine) removeOrphansOf(ctx context.Context, ids []int64) error {
	owned, err := e.fetch.OwnedParts()
	if err != nil || len(owned) == 0 {
		return err
	}
	interrupted := make(map[int64]bool, len(ids))
	for _, id := range ids {
		interrupted[id] = true
	}
	kept := map[string]bool{} // parts that wait for a final name (see nameLeftovers)
	us, err := e.store.Unnamed(ctx)
	if err != nil {
		return fmt.Errorf("loading unnamed downloads: %w", err)
	}
	for _, u := range us {
		kept[u.Part] = true
	}
	removed := 0
	for part, id := range owned {
		if !interrupted[id] || kept[part] {
			continue
		}
		job, err := e.store.Job(ctx, id)
		if err != nil {
			return fmt.Errorf("loading job %d: %w", id, err)
		}
		if job.Resume.Part == part {
			continue
		}
		if err := e.fetch.RemovePart(part); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", part, err)
		}
		removed++
	}
	if removed > 0 {
		e.log.Info("removed partial files a crash left unrecorded; their downloads start over", "files", removed)
	}
	return nil
}

// bwBurst is the bucket size of the bandwidth limiter: a tenth of a second
// of bytes, at least one read buffer.
func bwBurst(bps int64) int { return int(max(min(bps/10, math.MaxInt32), 64<<10)) }

// Core is the politeness core, for Snapshot and host commands (pause,
// retune, breaker actions). Changes made through it are persisted by Run.
func (e *Engine) Core() *Core { return e.core }

// Close releases the fetcher. Call it after Run returned.
func (e *Engine) Close() error { return e.fetch.Close() }

// SetBandwidth changes the global bandwidth cap live (L2); 0 removes it.
func (e *Engine) SetBandwidth(bps int64) {
	if bps <= 0 {
		e.bw.SetLimit(rate.Inf)
	} else {
		e.bw.SetBurst(bwBurst(bps))
		e.bw.SetLimit(rate.Limit(bps))
	}
	e.core.SetBandwidth(bps)
}

// onEvent records a host event and has the host states written at once: the
// run loop is woken for it, since a pause or retune by the person comes while
// it may be waiting for work, and a crash must not forget it (G9, S4).
func (e *Engine) onEvent(ev Event) {
	e.urgent.Store(true)
	if e.core != nil { // nil while New builds it
		e.core.signal()
	}
	if err := e.store.AppendEvent(ev); err != nil {
		e.log.Error("recording a host event", "host", ev.Host, "err", err)
	}
	if e.opt.OnEvent != nil {
		e.opt.OnEvent(ev)
	}
}

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
	// the next start (see New), until stop has written every host.
	if err := e.store.SetSetting(context.WithoutCancel(ctx), runningKey, "true"); err != nil {
		return fmt.Errorf("the database cannot record that downloads start: %w", err)
	}
	ctx, interrupt := context.WithCancelCause(ctx)
	defer interrupt(nil)
	e.stopping.Store(false)
	// Pointers: a finishing is some 600 bytes, and maxFinishing of them in the
	// channel's buffer and as many in the completer's batch were 5 MB that
	// every garbage collection scanned and that raised the heap's goal by
	// twice that. At 20,000 small downloads the peak RSS fell by 8 MB and
	// Heed's CPU time by about 6 % (6 rounds each).
	fin := make(chan *finishing, maxFinishing)
	go e.completer(fin)
	defer close(fin) // after stop: no attempt is left to send
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var saved time.Time // when host states were last written
	pending := false    // a write of host states was put off
	idle := false       // the last round found nothing to do
	for {
		// A host event (throttle, breaker, pause, retune …) is written at
		// once; routine changes (a success, the last status) at most every
		// hostSaveEvery, so a busy host costs no write per request.
		if e.urgent.Swap(false) || time.Since(saved) >= hostSaveEvery {
			e.persistHosts()
			saved, pending = time.Now(), false
		} else {
			pending = true
		}
		if err := e.broken.Load(); err != nil {
			interrupt(*err) // what is in flight stops too, its parts kept
			return e.stop(*err)
		}
		var wake time.Time
		var batch []Dispatch
		for ctx.Err() == nil && !e.saturated() {
			d, ok, w := e.core.Next(time.Now())
			if !ok {
				wake = w
				break
			}
			e.running.Add(1)
			batch = append(batch, d)
		}
		if len(batch) > 0 {
			e.start(ctx, batch, fin)
		}
		// Idle when nothing runs, nothing is due or will be, and no URLs are
		// on their way (Adding). An attempt
		// that ended since the core was asked may have queued its job
		// again (before it stopped counting as running), so the core is
		// asked once more before that is believed.
		if untilIdle && len(batch) == 0 && wake.IsZero() && e.running.Load() == e.held.Load() && e.adding.Load() == 0 {
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
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// maxFinishing is how many attempts may be finishing (their bodies all
// received, their requests no longer in flight, their files being synced,
// marked done and named by the completer) beside the requests in flight.
// Finishing together is what makes it cheap (one sync and one commit for
// many files); the bound keeps open files in check when the disk is slower
// than the network. With 256, 20,000 small downloads found the bound
// reached (no new request sent until the completer caught up) in one sample
// out of eight, and took 6–7 % longer than with 1,024. With 1,024 on ext4,
// where each batch's sync takes some 6 ms, they still reached it 400–500
// times a run, and took 5 % longer than with 4,096, which they never reach
// (8 rounds each).
const maxFinishing = 4096

// finishingFor is maxFinishing, or less under a low limit of open files
// (RLIMIT_NOFILE, 0 when unknown) with inflight requests allowed at once:
// each finishing download holds its part open, each request a connection
// and its part, and the database and whatever else the process opens need
// descriptors too (fdReserve). Half of what the limit leaves past those,
// and never below minFinishing.
func finishingFor(limit uint64, inflight int) int {
	const fdReserve = 256
	if limit == 0 {
		return maxFinishing
	}
	used := uint64(fdReserve + 2*max(inflight, 0))
	if limit <= used+2*minFinishing {
		return minFinishing
	}
	return min(maxFinishing, int(limit-used)/2)
}

// minFinishing is the fewest downloads allowed to be finishing.
const minFinishing = 64

// saturated reports whether so many attempts are running that no new one
// may start until one ends.
func (e *Engine) saturated() bool {
	// An attempt waiting for its redirect's host holds no connection and no
	// file: up to maxHopWaiting of them do not count, so that jobs
	// redirected to one waiting host leave the other hosts their slots (L3).
	n := e.running.Load() - min(e.hopWaiting.Load(), maxHopWaiting)
	if n < minFinishing && e.finishing == 0 {
		return false // below any bound: spares the core's lock on every dispatch
	}
	inflight := e.core.GlobalInflight()
	most := e.finishing
	if most == 0 {
		most = finishingFor(e.fdLimit, inflight)
	}
	return n >= int64(inflight+most)
}

// start marks the jobs of batch active in one commit, before any of their
// requests is sent (J3), and starts an attempt for each. A job paused or
// cancelled since it was queued is handed back to the core.
func (e *Engine) start(ctx context.Context, batch []Dispatch, fin chan<- *finishing) {
	ids := make([]int64, len(batch))
	claims := make([]*activeJob, len(batch))
	for i, d := range batch {
		ids[i] = d.JobID
		claims[i] = e.claim(ctx, d.JobID)
	}
	// The start is recorded even when Heed is stopping, so no job is left
	// active in the database without an attempt that will settle it.
	jobs, err := e.store.StartJobs(context.WithoutCancel(ctx), ids)
	if err != nil {
		e.breaks(fmt.Errorf("%w that downloads start: %w", ErrNotRecorded, err))
	}
	now := time.Now()
	for i, d := range batch {
		if err != nil || jobs[i].ID == 0 {
			e.unclaim(d.JobID, claims[i])
			e.handBack(d, err != nil, now)
			continue
		}
		go e.work(ctx, d, jobs[i], claims[i], fin)
	}
}

// claim registers the attempt job is about to get, before its start is
// recorded, so that a pause or cancel that the database applies to the job
// from then on finds it and stops it (hold): the person's click then either
// comes before the start, which is refused, or stops the attempt.
func (e *Engine) claim(ctx context.Context, job int64) *activeJob {
	a := &activeJob{}
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	e.mu.Lock()
	e.active[job] = a
	e.mu.Unlock()
	return a
}

// unclaim ends what claim began.
func (e *Engine) unclaim(job int64, a *activeJob) {
	a.cancel(nil)
	e.mu.Lock()
	if e.active[job] == a {
		delete(e.active, job)
	}
	e.mu.Unlock()
}

// handBack gives the core back a dispatch whose job did not start: paused
// or cancelled since it was queued, or — queued still — when its start could
// not be recorded.
func (e *Engine) handBack(d Dispatch, queued bool, now time.Time) {
	e.core.Observe(d, Outcome{Class: ClassCanceled}, now)
	if queued {
		e.core.Add(d.JobID, d.Host, now) // still queued, as the database says
	}
	e.finished()
}

// work runs the attempt of d and then, on the same goroutine, those of
// the dispatches due as it ends, one at a time, while the engine may start
// more (see next). A small download's slot is thus taken again the moment
// its attempt frees it, without waking the run loop or starting a
// goroutine: at 20,000 small downloads, those two hand-overs took a third
// of each slot's time on two cores.
func (e *Engine) work(ctx context.Context, d Dispatch, job JobRecord, a *activeJob, fin chan<- *finishing) {
	for {
		e.attempt(ctx, d, job, a, fin)
		var ok bool
		if d, job, a, ok = e.next(ctx); !ok {
			return
		}
	}
}

// next takes a dispatch due now from the core and marks its job active, as
// the run loop does (J3), unless Run is stopping, the engine is broken or
// saturated, or nothing is due. The attempt is counted running before the
// core is asked, and stop sets stopping before it reads running, so that
// no attempt starts once stop has seen none running.
func (e *Engine) next(ctx context.Context) (Dispatch, JobRecord, *activeJob, bool) {
	for ctx.Err() == nil && e.broken.Load() == nil && !e.saturated() {
		e.running.Add(1)
		if e.stopping.Load() {
			e.finished()
			return Dispatch{}, JobRecord{}, nil, false
		}
		d, ok, _ := e.core.Next(time.Now())
		if !ok {
			e.finished()
			return Dispatch{}, JobRecord{}, nil, false
		}
		a := e.claim(ctx, d.JobID)
		jobs, err := e.store.StartJobs(context.WithoutCancel(ctx), []int64{d.JobID})
		if err != nil {
			e.breaks(fmt.Errorf("%w that downloads start: %w", ErrNotRecorded, err))
		}
		if err != nil || jobs[0].ID == 0 {
			e.unclaim(d.JobID, a)
			e.handBack(d, err != nil, time.Now())
			continue
		}
		return d, jobs[0], a, true
	}
	return Dispatch{}, JobRecord{}, nil, false
}

// finishing is an attempt whose whole body is in its part: the part is
// yet to be made final and the job marked done.
type finishing struct {
	job        JobRecord
	n          int
	url, host  string
	start, end time.Time
	res        fetch.Result
	dec        Decision
	noted      bool // the part may be recorded for the job (see partNotes)
}

// completer finishes downloads as many at a time as have arrived: it syncs
// their parts together and picks their final names (F3, F4), marks their
// jobs done with those names and their attempts in one commit (J3, S3, S5),
// gives the parts their names, then reports them and ends their attempts. A
// part that cannot be made final fails its job.
func (e *Engine) completer(fin <-chan *finishing) {
	batch := make([]*finishing, 0, maxFinishing)
	for f := range fin {
		batch = gather(append(batch[:0], f), fin, finishLinger, func() bool { return e.core.Stats().Inflight > 0 })
		e.complete(batch)
		clear(batch) // what they hold (results, open parts' files) is not kept past their report
	}
}

// finishLinger is how long the completer waits, after a download finishes,
// for others to finish with it while requests are in flight. One commit for
// more files writes fewer pages: neighbouring jobs of a host share theirs, and
// the history's and the states' newest pages are written once, not once a
// commit. At 20,000 small downloads, 25 ms took Heed's CPU time down by about
// 15 %; a file is reported done at most that much later.
const finishLinger = 25 * time.Millisecond

// gather adds to batch what else arrives on fin, up to cap(batch): for up to
// linger while more may come (inflight reports requests in flight), and then
// whatever is already waiting. It stops early when fin is closed.
func gather(batch []*finishing, fin <-chan *finishing, linger time.Duration, inflight func() bool) []*finishing {
	var deadline <-chan time.Time
	if linger > 0 && inflight() {
		t := time.NewTimer(linger)
		defer t.Stop()
		deadline = t.C
	}
	for len(batch) < cap(batch) {
		var f *finishing
		ok := true
		if deadline == nil {
			select {
			case f, ok = <-fin:
			default:
				return batch
			}
		} else {
			select {
			case f, ok = <-fin:
			case <-deadline:
				deadline = nil
				continue
			}
		}
		if !ok {
			return batch
		}
		batch = append(batch, f)
		if deadline != nil && !inflight() { // nothing more can come
			deadline = nil
		}
	}
	return batch
}

func (e *Engine) complete(batch []*finishing) {
	rs := make([]*fetch.Result, len(batch))
	for i := range batch {
		rs[i] = &batch[i].res
	}
	e.fetch.SyncParts(rs)
	done := make([]Finished, 0, len(batch))
	ok := batch[:0] // filtered in place: each kept one moves to or before its own slot
	for _, f := range batch {
		if f.res.Pending == nil {
			e.failFinish(f)
			continue
		}
		done = append(done, Finished{Attempt: e.attemptRecord(f.job, f.n, f.url, f.host, f.start, f.end, f.res, f.dec, "ok"),
			Done: Completed{File: f.res.File, Bytes: f.res.Bytes, SHA256: f.res.SHA256, Status: f.res.Status,
				Part: f.res.Part, Size: f.res.Size, ETag: f.res.ETag, LastModified: f.res.LastModified,
				Held: f.res.Held()}})
		ok = append(ok, f)
	}
	if len(ok) == 0 {
		return
	}
	// Done and the final name are on disk before the part takes that name
	// (J3): a crash in between leaves the name for the next start to give
	// (see nameLeftovers), instead of a file nothing records, which the
	// next run would fetch again beside it. A batch is up to finishLinger
	// of finished downloads, so after a crash hundreds may wait for their
	// names; until the next start, heed jobs lists them as unnamed.
	errs, err := e.store.FinishJobs(context.Background(), done)
	if err != nil {
		// Nothing was recorded: the jobs stay active, to be queued again
		// by the next start (S2). A part nothing records is removed, so
		// that the next download of its file takes its name again
		// instead of landing beside it as "name (1)"; a recorded one is
		// kept for the resume.
		err = fmt.Errorf("%w finished downloads: %w", ErrNotRecorded, err)
		e.breaks(err)
		for _, f := range ok {
			if f.res.Held() {
				e.fetch.Release(&f.res) // its bytes go with their file, which has no name
				f.res.Bytes = 0
			} else if !f.noted {
				if rerr := e.fetch.RemovePart(f.res.Part); rerr != nil {
					e.log.Error("removing a part nothing records", "part", f.res.Part, "err", rerr)
				}
				f.res.Bytes = 0 // no partial file is kept
			}
			e.report(f, "canceled", err.Error()+"; "+againNextStart)
			e.finished()
		}
		return
	}
	// A job the person paused or cancelled while its file was finishing
	// keeps its state and its complete part, recorded for a resume in the
	// same commit (a held body, which has no part, is let go: the resume
	// fetches it again); only the others take their names.
	rs = rs[:0]
	picked := make([]string, len(ok))
	for i := range ok {
		picked[i] = ok[i].res.File
		if errs[i] == nil {
			rs = append(rs, &ok[i].res)
		} else {
			e.fetch.Release(&ok[i].res)
		}
	}
	e.fetch.NameParts(rs)
	named := make([]Named, 0, len(ok))
	for i, f := range ok {
		if errs[i] != nil {
			continue
		}
		n := Named{JobID: f.job.ID, File: f.res.File}
		if !f.res.Done {
			n.Err = f.res.Err.Error()
		} else if f.res.File == picked[i] {
			n.File = "" // as recorded
		}
		named = append(named, n)
	}
	// Queued before any attempt ends, so that a run that stops once they
	// have ended writes them with its last commit.
	if err := e.store.Named(named); err != nil {
		e.log.Error("recording final names", "jobs", len(named), "err", err)
	}
	for i, f := range ok {
		switch {
		case errs[i] != nil:
			e.report(f, "canceled", errs[i].Error())
		case f.res.Done:
			e.report(f, "ok", "")
		default:
			e.report(f, "failed", f.res.Err.Error())
		}
		e.finished()
	}
}

// failFinish ends an attempt whose complete part could not be made final
// before anything was recorded: the job fails with its part kept.
func (e *Engine) failFinish(f *finishing) {
	e.record(f.job, f.n, f.url, f.host, f.start, f.end, f.res, f.dec, "failed")
	e.finish(f.job, f.dec, f.res, f.end, f.url, "failed")
	e.finished()
}

// report tells OnJob how a finished download ended.
func (e *Engine) report(f *finishing, outcome, why string) {
	if e.opt.OnJob == nil {
		return
	}
	end := JobEnd{ID: f.job.ID, URL: f.job.URL, Host: f.job.Host, Outcome: outcome, Bytes: f.res.Bytes,
		SHA256: f.res.SHA256, Err: why}
	if outcome == "ok" {
		end.File = f.res.File
	}
	e.opt.OnJob(end)
}

// ErrNotRecorded is what Run returns when the database failed to record a
// job's transition (J3): downloads stop, and each job whose transition it
// could not record is queued again when Heed next starts (S2). Such jobs are
// reported "canceled" meanwhile, not failed.
var ErrNotRecorded = errors.New("the database cannot record")

// againNextStart ends the reason of a job whose end the database could not
// record.
const againNextStart = "it is queued again when Heed next starts"

// breaks records the first failed commit of job transitions (see broken)
// and wakes the run loop, which stops.
func (e *Engine) breaks(err error) {
	if e.broken.CompareAndSwap(nil, &err) {
		e.log.Error("downloads stop", "err", err)
	}
	select {
	case e.done <- struct{}{}:
	default:
	}
}

// stop waits for the attempts in flight (cancelled with ctx, if it ended),
// then writes every host's state and all batched records.
func (e *Engine) stop(err error) error {
	e.stopping.Store(true) // before running is read: see next
	for e.running.Load() > 0 {
		<-e.done
	}
	if b := e.broken.Load(); b != nil {
		err = *b // a failed commit says more than the stop it came with
	}
	e.persistHosts()
	if ferr := e.store.Flush(context.Background()); ferr != nil && err == nil {
		err = ferr
	} else if ferr == nil {
		if serr := e.store.SetSetting(context.Background(), runningKey, "false"); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// runningKey is the setting that says a run is dispatching: "true" from the
// start of Run until it has written every host's state as it stopped.
const runningKey = "running"

// persistHosts writes the hosts whose politeness state changed (G10, B6).
func (e *Engine) persistHosts() {
	for _, h := range e.core.DirtyHosts() {
		if s, ok := e.core.ExportHost(h); ok {
			if err := e.store.SaveHost(s); err != nil {
				e.log.Error("saving host state", "host", h, "err", err)
			}
		}
	}
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

// attempt runs one attempt of a job (redirect hops included) on dispatch d
// and moves the job to its next state.
// A complete download goes to fin, where the completer ends the attempt.
func (e *Engine) attempt(ctx context.Context, d Dispatch, job JobRecord, a *activeJob, fin chan<- *finishing) {
	handedOff := false
	defer func() {
		if !handedOff {
			e.finished()
		}
	}()
	defer e.unclaim(job.ID, a)
	n := job.Attempts
	userURL, err := url.Parse(job.URL)
	if err != nil { // cannot happen for a URL that was accepted at input
		e.core.Observe(d, Outcome{Class: ClassRefused, Err: err}, time.Now())
		e.finish(job, Decision{Fail: true, Reason: err.Error()}, fetch.Result{}, time.Now(), job.URL, "failed")
		return
	}
	jctx := a.ctx // cancelled by hold when the person pauses or cancels the job
	a.bytes.Store(job.Resume.Bytes)
	a.size.Store(job.Resume.Size)
	e.mu.Lock()
	a.info = Active{JobID: job.ID, URL: job.URL, Host: job.Host, Attempt: n,
		Started: time.Now(), StartBytes: job.Resume.Bytes, Size: job.Resume.Size}
	e.mu.Unlock()

	req := fetch.Request{URL: userURL, UserURL: userURL, Part: job.Resume.Part, ETag: job.Resume.ETag,
		LastModified: job.Resume.LastModified, Size: job.Resume.Size, Job: job.ID}
	if req.Part == "" {
		req.Size = -1
	}
	notes := &partNotes{note: func(r Resume) {
		if err := e.store.NoteResume(job.ID, r); err != nil {
			e.log.Error("recording a partial file", "job", job.ID, "err", err)
		}
	}}
	req.Started = func(r fetch.Result) {
		a.setSize(r.Size)
		e.mu.Lock()
		a.info.bodyStarts(r.Bytes, time.Now())
		e.mu.Unlock()
		notes.started(Resume{Part: r.Part, Bytes: r.Bytes, Size: r.Size, ETag: r.ETag, LastModified: r.LastModified})
	}
	var lastBeat time.Time
	progress := func(n int64) {
		a.bytes.Store(n)
		if d.Probe { // a half-open probe that moves bytes is alive (B3)
			if now := time.Now(); now.Sub(lastBeat) > time.Second {
				lastBeat = now
				e.core.Heartbeat(d, now)
			}
		}
	}
	// A complete body comes back with its part still to be made final: the
	// completer does that for many at once, while this host and slot take
	// their next request.
	req.Defer = true
	pieces := 0 // short ranges in a row in this attempt (fetch.MoreRanges)
	for {
		start := time.Now()
		res := e.fetch.Do(jctx, req, progress)
		end := time.Now()
		if res.Class == fetch.MoreRanges {
			if pieces++; pieces > maxPieces {
				// A server that dribbles its file: the attempt ends as a
				// cut body would, its part kept, its retry delay and budget
				// applying.
				res.Class, res.Digest = fetch.Truncated, nil
				res.Err = fmt.Errorf("the server sent the file in more than %d pieces: %w", maxPieces, res.Err)
			}
		}
		dec := e.core.Observe(d, Outcome{Status: res.Status, RetryAfter: res.RetryAfter, Class: classOf(res),
			Err: res.Err, Attempts: n}, end)
		var next *url.URL // the same attempt goes on with another request
		switch {
		case res.Redirect != nil && res.Class == fetch.OK:
			next = res.Redirect
		case res.Class == fetch.ResumeRejected, res.Class == fetch.MoreRanges:
			// The server's range did not fit the part, which the fetcher
			// emptied: ask again from zero (F5); or it sent less than the
			// rest: ask for what is still missing. Paced like any request.
			next = req.URL
		}
		if next != nil {
			label := "redirect"
			switch res.Class {
			case fetch.ResumeRejected:
				label = "restart"
			case fetch.MoreRanges:
				label = "partial"
			}
			e.record(job, n, req.URL.String(), d.Host, start, end, res, dec, label)
			hop, err := e.acquireHop(jctx, next)
			if err != nil {
				notes.end()
				var dec Decision
				if errors.Is(err, errHeld) {
					dec.Reason = err.Error()
				}
				e.finish(job, dec, res, end, next.String(), "canceled")
				return
			}
			d = hop
			if next != req.URL {
				req.Hop++
			}
			req.URL = next
			req.Part, req.ETag, req.LastModified, req.Size = res.Part, res.ETag, res.LastModified, res.Size
			req.Digest = res.Digest
			continue
		}
		outcome := "failed"
		switch {
		case res.Pending != nil:
			outcome = "ok"
		case jctx.Err() != nil:
			outcome = "canceled"
		case dec.Throttled:
			outcome = "throttled"
		case dec.Retry:
			outcome = "retry"
		}
		notes.end() // the job's next state records its part from here on
		if outcome == "ok" {
			noted := notes.recorded() || (job.Resume.Part != "" && job.Resume.Part == res.Part)
			fin <- &finishing{job: job, n: n, url: req.URL.String(), host: d.Host, start: start, end: end,
				res: res, dec: dec, noted: noted}
			handedOff = true
			return
		}
		e.record(job, n, req.URL.String(), d.Host, start, end, res, dec, outcome)
		e.finish(job, dec, res, end, req.URL.String(), outcome)
		return
	}
}

// Where a download's bytes go (its part, validators and expected size) is
// recorded as its body starts, so that a crash resumes from the part (F5,
// S2): a part left unrecorded would be orphaned, and the fresh download
// after the crash would land as "name (1).ext" beside it. The record rides
// the next batch commit, so the body need not wait for it.
//
// A body held in a file with no name (fetch's hold: announced, at most
// 64 KiB, on Linux) has no part to record until its attempt ends.
//
// A small body from the start (at most smallBody, announced) usually lands
// in a read or two, and its job's done state then replaces the record: its
// part is recorded only if it is still arriving after partRecordDelay. At
// 20,000 downloads of 1 KiB that is 20,000 row updates fewer (3 to 12 % of
// the wall time in three A/B rounds). The delay is as long as a background
// write may already wait for company (storage's linger), so the window in
// which a crash orphans a part stays of the same order as before, and the
// part is then at most smallBody.
const (
	smallBody       = 64 << 10
	partRecordDelay = 20 * time.Millisecond
)

// partNotes records one attempt's parts (see smallBody). Every record is
// handed to the store before end returns, and none after: the job's next
// state is committed after them, so a late record never lands on a job
// that is already done.
type partNotes struct {
	note func(Resume)

	mu      sync.Mutex
	timer   *time.Timer
	pending *Resume // to be recorded when the timer fires
	fired   bool    // the delay is over: record at once from now on
	noted   bool    // a record was handed to the store
	ended   bool
}

// recorded reports whether a record of the attempt's part was handed to
// the store.
func (p *partNotes) recorded() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.noted
}

// started is called as a request's body starts going into part r.
func (p *partNotes) started(r Resume) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended || r.Part == "" {
		return // a body held in a file with no name: nothing a resume could find
	}
	if r.Bytes == 0 && r.Size >= 0 && r.Size <= smallBody && !p.fired {
		p.pending = &r
		if p.timer == nil {
			p.timer = time.AfterFunc(partRecordDelay, p.fire)
		}
		return
	}
	p.pending = nil // superseded
	p.noted = true
	p.note(r)
}

func (p *partNotes) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fired = true
	if p.pending != nil && !p.ended {
		p.noted = true
		p.note(*p.pending)
		p.pending = nil
	}
}

// end stops recording: the attempt is about to settle its job. Every path
// out of an attempt that has a partNotes calls it before settling.
func (p *partNotes) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended, p.pending = true, nil
	if p.timer != nil {
		p.timer.Stop()
	}
}

// acquireHop waits until the redirect target's host may take a request
// (N2: a hop goes through that host's governor and breaker too).
func (e *Engine) acquireHop(ctx context.Context, target *url.URL) (Dispatch, error) {
	host, err := HostKeyOf(target)
	if err != nil {
		return Dispatch{}, err
	}
	held := false    // counted in e.held: waiting for the host's pause to end
	waiting := false // counted in e.hopWaiting
	defer func() {
		if held {
			e.held.Add(-1)
		}
		if waiting {
			e.hopWaiting.Add(-1)
		}
	}()
	for {
		d, ok, wake := e.core.AcquireHop(host, time.Now())
		if ok {
			return d, nil
		}
		if !waiting {
			waiting = true
			e.hopWaiting.Add(1)
		}
		wait := 250 * time.Millisecond // a paused host: look again now and then
		if !wake.IsZero() {
			wait = max(time.Until(wake), 0)
		}
		if paused := wake.IsZero() && e.core.HostPaused(host); paused != held {
			held = paused
			if held {
				e.held.Add(1)
				e.wakeLoop() // it may be all that is left running
			} else {
				e.held.Add(-1)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if err := context.Cause(ctx); errors.Is(err, errHeld) {
				return Dispatch{}, fmt.Errorf("redirected to %s, whose host %s is paused: %w", target.Redacted(), host, err)
			}
			return Dispatch{}, context.Cause(ctx)
		case <-t.C:
		}
	}
}

// maxHopWaiting is how many attempts waiting for their redirect's host do
// not count towards saturated: past it, they count again, which bounds what
// they hold (a goroutine and a job each).
const maxHopWaiting = 1024

// finish moves the job to the state its attempt earned and, for a retry,
// queues it again behind its delay and its host's gate (R4).
func (e *Engine) finish(job JobRecord, dec Decision, res fetch.Result, end time.Time, lastURL, outcome string) {
	ctx := context.Background() // the transition must land even while stopping
	resume := Resume{Part: res.Part, Bytes: res.Bytes, Size: res.Size, ETag: res.ETag, LastModified: res.LastModified}
	var err error
	switch outcome {
	case "canceled":
		// Heed is stopping: the job waits for the next run, its part kept.
		// Or the person paused or cancelled it (its state is set already):
		// only the part is recorded, for a later resume.
		err = e.store.MarkQueued(ctx, job.ID, Requeued{NotBefore: end, Err: "interrupted", Resume: resume})
		switch {
		case err == nil:
			e.core.Add(job.ID, job.Host, end)
		case errors.Is(err, ErrNotQueued):
			err = e.store.SaveResume(ctx, job.ID, resume)
		}
	case "retry", "throttled":
		err = e.store.MarkQueued(ctx, job.ID, Requeued{NotBefore: dec.NotBefore, Err: dec.Reason,
			Status: res.Status, Throttled: dec.Throttled, Resume: resume})
		if err == nil {
			e.core.Add(job.ID, job.Host, dec.NotBefore)
		}
	default:
		reason := dec.Reason
		if reason == "" {
			reason = fmt.Sprintf("download of %s did not complete (%s)", lastURL, res.Class)
		}
		if resume.Part != "" && resume.Bytes == 0 {
			// A failed job whose part is empty leaves none behind. The
			// part is looked at, not the attempt's count: one that failed
			// to open its part reports no bytes of a part that has some.
			if gone, rerr := e.fetch.RemoveEmptyPart(resume.Part); rerr != nil {
				e.log.Error("removing the empty part of a failed download", "part", resume.Part, "err", rerr)
			} else if gone {
				resume = Resume{}
			}
		}
		if err = e.store.SaveResume(ctx, job.ID, resume); err == nil {
			err = e.store.MarkFailed(ctx, job.ID, reason, res.Status)
		}
	}
	switch {
	case errors.Is(err, ErrNotQueued):
		e.log.Error("recording a job's state", "job", job.ID, "outcome", outcome, "err", err)
	case err != nil:
		err = fmt.Errorf("%w how a download ended: %w", ErrNotRecorded, err)
		e.breaks(err)
		// Still active in the database: the next start queues it again.
		outcome, dec.Reason, dec.NextTry, dec.Held = "canceled", err.Error()+"; "+againNextStart, time.Time{}, false
	}
	if e.opt.OnJob != nil {
		end := JobEnd{ID: job.ID, URL: job.URL, Host: job.Host, Outcome: outcome, File: res.File, Bytes: res.Bytes,
			SHA256: res.SHA256, NotBefore: dec.NextTry, Held: dec.Held}
		if outcome != "ok" {
			end.Err = dec.Reason
			if end.Err == "" && res.Err != nil {
				end.Err = res.Err.Error()
			}
		}
		e.opt.OnJob(end)
	}
}

// record adds one exchange to history (S3).
func (e *Engine) record(job JobRecord, n int, u, host string, start, end time.Time, res fetch.Result, dec Decision, outcome string) {
	err := e.store.RecordAttempt(e.attemptRecord(job, n, u, host, start, end, res, dec, outcome))
	if err != nil {
		e.log.Error("recording an attempt", "job", job.ID, "err", err)
	}
}

// attemptRecord is one exchange as history keeps it (S3).
func (e *Engine) attemptRecord(job JobRecord, n int, u, host string, start, end time.Time, res fetch.Result, dec Decision, outcome string) AttemptRecord {
	ra, _ := ParseRetryAfter(res.RetryAfter, end)
	errText := ""
	if res.Err != nil {
		errText = res.Err.Error()
	} else if outcome != "ok" && outcome != "redirect" {
		errText = dec.Reason
	}
	return AttemptRecord{JobID: job.ID, URL: u, Host: host, Attempt: n, StartedAt: start,
		Duration: end.Sub(start), Status: res.Status, Outcome: outcome, Bytes: res.Received, Err: errText,
		RetryAfter: ra, Level: dec.Level, Breaker: dec.Breaker}
}

// classOf maps the fetcher's outcome classes onto the core's (R2, B1).
func classOf(res fetch.Result) ErrClass {
	switch res.Class {
	case fetch.OK, fetch.ResumeRejected, fetch.MoreRanges: // still good responses
		return ClassNone
	case fetch.HTTPStatus:
		return ClassHTTPStatus
	case fetch.Transport:
		return ClassTransport
	case fetch.Timeout:
		return ClassTimeout
	case fetch.TLS:
		return ClassTLS
	case fetch.Refused, fetch.Redirects:
		return ClassRefused
	case fetch.Confinement:
		return ClassConfinement
	case fetch.SizeLimit, fetch.Disk:
		return ClassSizeLimit
	case fetch.Truncated:
		return ClassTruncated
	case fetch.Canceled:
		return ClassCanceled
	}
	return ClassTransport
}

// Active lists the downloads in progress, oldest first.
func (e *Engine) Active() []Active {
	e.mu.Lock()
	out := make([]Active, 0, len(e.active))
	for _, a := range e.active {
		info := a.info
		if info.JobID == 0 {
			continue // claimed: its attempt is yet to begin
		}
		info.Bytes = a.bytes.Load()
		info.Size = a.size.Load()
		out = append(out, info)
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].JobID < out[j].JobID })
	return out
}

// AddReport says what Add did with a paste (U4, J1, J2).
type AddReport struct {
	Queued     []int64
	Duplicates []string
	// DuplicateStates is the state of the job of each of Duplicates.
	DuplicateStates []JobState
	Rejected        []fetch.Reject
}

// Add parses text (URLs separated by whitespace or lines), queues the new
// ones (each after its commit, S2) and reports duplicates and rejected
// lines. A long paste is stored in parts, the first of addFirstPart URLs
// and each next one four times as long (up to addMaxPart): each part's jobs
// go to the scheduler once it is committed, so a running engine starts
// downloading while the rest is stored. A URL given twice is one job, the
// second reported as a duplicate in the state the first was reported in,
// whichever part each falls in. If storing a part fails, the report holds
// what the parts before it queued, with the error.
func (e *Engine) Add(ctx context.Context, text string) (AddReport, error) {
	return e.AddThen(ctx, text, nil)
}

// AddThen is Add that calls stored, if set, once the first part is stored
// and its jobs are in the scheduler: heed get starts its run there. The
// first addFirstPart lines of text are parsed and stored before the rest is
// parsed: of 200,000 URLs, the first file was downloaded 0.8–1.1 s after
// heed get started when the whole list was parsed first, 0.17–0.21 s so.
func (e *Engine) AddThen(ctx context.Context, text string, stored func()) (AddReport, error) {
	defer e.Adding()()
	var (
		rep   AddReport
		jobs  []NewJob
		first = map[string]int{} // each URL's job: the index of its first appearance
		of    []int              // the job of each URL given
	)
	// parse takes in the lines of text that follow the first before: the
	// first lines are parsed and stored before the rest is parsed.
	parse := func(text string, before int) {
		urls, rejects := fetch.ParseURLLines(text, before)
		rep.Rejected = append(rep.Rejected, rejects...)
		// Sized at once, as when the whole list was parsed: growing them
		// a URL at a time allocated 29 % more for 200,000 URLs, in more time.
		jobs, of = slices.Grow(jobs, len(urls)), slices.Grow(of, len(urls))
		if len(urls) > len(first) {
			grown := make(map[string]int, len(first)+len(urls))
			maps.Copy(grown, first)
			first = grown
		}
		for _, p := range urls {
			u := p.URL.String()
			k, seen := first[u]
			if !seen {
				k = len(jobs)
				first[u] = k
				// ParseURLLines gave the URL its host key as its host.
				jobs = append(jobs, NewJob{URL: u, Host: p.URL.Host})
			}
			of = append(of, k)
		}
		tuneGC(e.core.Queued() + len(jobs)) // before the queue grows
	}
	head, tail := fetch.CutLines(strings.TrimPrefix(text, "\ufeff"), addFirstPart)
	parse(head, 0)
	items := make([]Enqueued, 0, len(jobs))
	var err error
	for n := addFirstPart; ; n = min(4*n, addMaxPart) {
		if len(items) == len(jobs) {
			if tail == "" {
				break
			}
			parse(tail, addFirstPart)
			tail, first = "", nil // as before, not kept while the rest is stored
			items = slices.Grow(items, len(jobs)-len(items))
			if len(items) == len(jobs) {
				break
			}
		}
		part := jobs[len(items):min(len(items)+n, len(jobs))]
		var got []Enqueued
		if got, err = e.store.Enqueue(ctx, part); err != nil {
			break
		}
		now := time.Now()
		for i, it := range got {
			if !it.Duplicate {
				e.core.Add(it.ID, part[i].Host, now)
			}
		}
		items = append(items, got...)
		if stored != nil {
			stored()
			stored = nil
		}
	}
	if tail != "" {
		// A part failed before the rest was parsed: the report is still
		// the whole list's, its rejects and its repeats of stored URLs.
		parse(tail, addFirstPart)
	}
	told := make([]bool, len(items))
	for _, k := range of {
		if k >= len(items) {
			continue // its part was not stored
		}
		switch it := items[k]; {
		case it.Duplicate:
			rep.Duplicates = append(rep.Duplicates, jobs[k].URL)
			rep.DuplicateStates = append(rep.DuplicateStates, it.State)
		case told[k]: // given again: the job its first appearance queued
			rep.Duplicates = append(rep.Duplicates, jobs[k].URL)
			rep.DuplicateStates = append(rep.DuplicateStates, JobQueued)
		default:
			rep.Queued = append(rep.Queued, it.ID)
		}
		told[k] = true
	}
	tuneGC(e.core.Queued())
	return rep, err
}

// addFirstPart and addMaxPart bound the parts Add stores a paste in: the
// first is small, so that downloads start a moment after a long paste
// (20,000 URLs took 100 ms to store in one part, while one CPU of two had
// nothing to do), and the last are big, for few commits.
const (
	addFirstPart = 256
	addMaxPart   = 65536
)

// Adding tells RunUntilIdle that URLs are on their way: until the function
// it returns is called, it does not return for want of work. Add holds it
// while it stores a paste; heed get holds it from before its run starts
// until its URLs are added, so that the run starts on the first of them.
func (e *Engine) Adding() (done func()) {
	e.adding.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			e.adding.Add(-1)
			e.core.signal() // the run loop looks again: it may be idle now
		})
	}
}

// Retry queues done, failed or cancelled jobs again with a fresh attempt
// budget (R5, J2).
func (e *Engine) Retry(ctx context.Context, ids []int64) ([]int64, error) {
	changed, err := e.store.Requeue(ctx, ids)
	if err != nil {
		return nil, err
	}
	return changed, e.requeue(ctx, changed)
}

// RetryURLs is Retry for jobs named by URL (get --again).
func (e *Engine) RetryURLs(ctx context.Context, urls []string) ([]int64, error) {
	ids, err := e.store.JobIDsByURL(ctx, urls)
	if err != nil {
		return nil, err
	}
	return e.Retry(ctx, ids)
}

// requeue puts jobs that storage now has as queued into the scheduler.
func (e *Engine) requeue(ctx context.Context, ids []int64) error {
	now := time.Now()
	for _, id := range ids {
		j, err := e.store.Job(ctx, id)
		if err != nil {
			return err
		}
		e.core.Add(id, j.Host, now)
	}
	return nil
}

// Pause holds jobs (J3): queued ones leave the scheduler, active ones are
// stopped with their partial file kept.
func (e *Engine) Pause(ctx context.Context, ids []int64) ([]int64, error) {
	return e.hold(ctx, ids, JobPaused)
}

// Cancel cancels jobs: they leave the scheduler and stop if active.
func (e *Engine) Cancel(ctx context.Context, ids []int64) ([]int64, error) {
	return e.hold(ctx, ids, JobCancelled)
}

func (e *Engine) hold(ctx context.Context, ids []int64, to JobState) ([]int64, error) {
	changed, err := e.store.SetJobState(ctx, ids, to)
	if err != nil {
		return nil, err
	}
	for _, id := range changed {
		e.core.Remove(id)
		e.mu.Lock()
		if a := e.active[id]; a != nil {
			a.cancel(errUserStop)
		}
		e.mu.Unlock()
	}
	return changed, nil
}

// Resume lets paused jobs run again.
func (e *Engine) Resume(ctx context.Context, ids []int64) ([]int64, error) {
	changed, err := e.store.SetJobState(ctx, ids, JobQueued)
	if err != nil {
		return nil, err
	}
	return changed, e.requeue(ctx, changed)
}

// HostEdit is a host's stored state after EditHost, with the tunables it
// runs with (its own, or the defaults).
type HostEdit struct {
	HostState
	Effective Tunables
}

// EditHost changes one host's stored politeness state without running
// the engine (the command line's heed host): it restores every host from
// store, lets edit act on a core, then stores what changed and the events
// the actions produced.
func EditHost(ctx context.Context, store Store, host string, edit func(*Core)) (HostEdit, error) {
	var events []Event
	core := NewCore(Config{OnEvent: func(ev Event) { events = append(events, ev) }})
	hosts, err := store.LoadHosts(ctx)
	if err != nil {
		return HostEdit{}, err
	}
	now := time.Now()
	for _, h := range hosts {
		core.RestoreHost(h, now)
	}
	core.Add(0, host, now) // make sure the host exists
	core.Remove(0)
	core.DirtyHosts()
	edit(core)
	for _, h := range core.DirtyHosts() {
		if s, ok := core.ExportHost(h); ok {
			if err := store.SaveHost(s); err != nil {
				return HostEdit{}, err
			}
		}
	}
	for _, ev := range events {
		if err := store.AppendEvent(ev); err != nil {
			return HostEdit{}, err
		}
	}
	if err := store.Flush(ctx); err != nil {
		return HostEdit{}, err
	}
	s, _ := core.ExportHost(host)
	t, _ := core.HostTunables(host)
	return HostEdit{HostState: s, Effective: t}, nil
}

// Jobs lists stored jobs (U5), whatever their state.
func (e *Engine) Jobs(ctx context.Context, q JobQuery) ([]JobRecord, error) {
	return e.store.Jobs(ctx, q)
}

// History lists attempts, newest first (U6, S3).
func (e *Engine) History(ctx context.Context, q HistoryQuery) ([]AttemptRecord, error) {
	return e.store.History(ctx, q)
}

// ExportHistoryCSV writes the attempts q selects as CSV (U6).
func (e *Engine) ExportHistoryCSV(ctx context.Context, w io.Writer, q HistoryQuery) error {
	return e.store.ExportHistoryCSV(ctx, w, q)
}

// HostEvents returns a host's timeline, newest first (U3, S4).
func (e *Engine) HostEvents(ctx context.Context, host string, limit int) ([]Event, error) {
	return e.store.HostEvents(ctx, host, limit)
}

// CountsByHost returns, per host, how many jobs are in each state (U1).
func (e *Engine) CountsByHost(ctx context.Context) (map[string]map[JobState]int64, error) {
	return e.store.CountsByHost(ctx)
}

// Dir is the download folder.
func (e *Engine) Dir() string { return e.opt.Dir }

// defaultsKey is the setting that holds the saved default tunables.
const defaultsKey = "defaults"

// loadDefaults returns the default tunables saved with SetDefaults, or
// DefaultTunables when none were.
func loadDefaults(ctx context.Context, store Store) (Tunables, error) {
	t := DefaultTunables()
	err := loadSetting(ctx, store, defaultsKey, "saved default tunables", &t, func() error { return t.Normalize().Validate() })
	if err != nil {
		return DefaultTunables(), err
	}
	return t.Normalize(), nil
}

// loadSetting decodes the JSON saved under key into v, which stays as it is
// when nothing was saved, and checks it with validate. Errors name the
// setting as what.
func loadSetting(ctx context.Context, store Store, key, what string, v any, validate func() error) error {
	s, err := store.Setting(ctx, key)
	if err != nil || s == "" {
		return err
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := validate(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Limits are L2's global caps across all hosts: requests per second and
// bytes per second, 0 for no cap.
type Limits struct {
	RatePerSec  float64 `json:"rate_per_sec"`
	BytesPerSec int64   `json:"bytes_per_sec"`
}

// MaxGlobalRate is the largest global request rate (L2) Limits take.
const MaxGlobalRate = 1e6

// Validate names the limit that is out of bounds.
func (l Limits) Validate() error {
	if !(l.RatePerSec >= 0 && l.RatePerSec <= MaxGlobalRate) {
		return fmt.Errorf("global request rate: %s is not between 0 (no cap) and %s per second",
			strconv.FormatFloat(l.RatePerSec, 'f', -1, 64), strconv.FormatFloat(MaxGlobalRate, 'f', -1, 64))
	}
	if l.BytesPerSec < 0 {
		return fmt.Errorf("global bandwidth: %d bytes per second is below 0 (0 is no cap)", l.BytesPerSec)
	}
	return nil
}

// limitsKey is the setting that holds the limits saved with SetLimits.
const limitsKey = "global_limits"

func loadLimits(ctx context.Context, store Store) (Limits, error) {
	var l Limits
	if err := loadSetting(ctx, store, limitsKey, "saved global limits", &l, func() error { return l.Validate() }); err != nil {
		return Limits{}, err
	}
	return l, nil
}

// Limits returns the global caps in force (L2).
func (e *Engine) Limits() Limits {
	s := e.core.Stats()
	return Limits{RatePerSec: s.GlobalRatePerSec, BytesPerSec: s.BandwidthBytesPerSec}
}

// SetLimits changes the global caps live (L2) and saves them for the next
// start with Options.SavedLimits. A limit out of bounds changes nothing.
func (e *Engine) SetLimits(ctx context.Context, l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	e.core.SetGlobalRate(l.RatePerSec)
	e.SetBandwidth(l.BytesPerSec)
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return e.store.SetSetting(ctx, limitsKey, string(b))
}

// pausedAllKey is the setting that says everything was paused (U7).
const pausedAllKey = "paused_all"

// SetPausedAll pauses or resumes everything at once (U7), and saves it for
// the next start with Options.SavedLimits: a window closed while everything
// was paused opens with everything paused, as it was left.
func (e *Engine) SetPausedAll(ctx context.Context, paused bool) error {
	v := ""
	if paused {
		e.core.PauseAll()
		v = "true"
	} else {
		e.core.ResumeAll()
	}
	return e.store.SetSetting(ctx, pausedAllKey, v)
}

// SetDefaults changes the tunables of every host that has none of its own,
// live (G2), and saves them for the next start. The error names the field
// that is out of bounds; nothing changes then.
func (e *Engine) SetDefaults(ctx context.Context, t Tunables) error {
	if err := e.core.SetDefaults(t); err != nil {
		return err
	}
	b, err := json.Marshal(e.core.Defaults())
	if err != nil {
		return err
	}
	return e.store.SetSetting(ctx, defaultsKey, string(b))
}
