package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
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

	running atomic.Int64 // attempt goroutines
	held    atomic.Int64 // of those, attempts whose redirect waits for a paused host
	// hopWaiting counts the attempts waiting in acquireHop for their
	// redirect's host (see maxHopWaiting).
	hopWaiting atomic.Int64
	adding     atomic.Int64  // Adds in progress and other promises of URLs to come (see Adding)
	done       chan struct{} // an attempt ended (buffered 1)
	urgent     atomic.Bool   // a host event happened: write host states now
	// broken is the first commit of a job transition that failed (a full
	// disk, a database gone read-only): a transition Heed cannot persist
	// must not be acted on (J3), so Run stops dispatching and returns it.
	broken atomic.Pointer[error]
	// persistMu makes a drain of the dirty hosts and the saves it queues one
	// step: a command that finds nothing dirty because the run loop took the
	// host first still flushes that host's save (G9).
	persistMu sync.Mutex

	fleet     *fleetState // nil on a store of one machine's
	fleetStop func()      // ends the fleet loop of a run

	crawlMu sync.Mutex
	crawls  map[int64]*crawlRun // every stored crawl, by id
	robots  robotsCache

	mu     sync.Mutex
	active map[int64]*activeJob
	names  map[string]bool // part and final names attempts in progress have chosen
}

// hostSaveEvery is how often routine host-state changes are written; host
// events (throttles, breaker transitions, pauses, retunes) are written at
// once (G10, B6).
const hostSaveEvery = 250 * time.Millisecond

// activeJob is a download in progress.
type activeJob struct {
	info   Active // zero until its attempt has started
	bytes  atomic.Int64
	size   atomic.Int64
	cancel context.CancelCauseFunc
}

// Active describes a download in progress, for the window and the CLI.
type Active struct {
	JobID   int64
	URL     string
	Host    string
	Attempt int
	Started time.Time
	Bytes   int64 // bytes on disk so far, resumed bytes included
	// StartBytes is what was on disk when the body started, so that
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

// ErrNotRecorded is what Run returns when the database failed to record a
// job's transition (J3): downloads stop, and each job whose transition it
// could not record is queued again when Heed next starts (S2). Such jobs are
// reported "canceled" meanwhile, not failed.
var ErrNotRecorded = errors.New("the database cannot record")

// New builds an engine over store: it restores every host's persisted
// politeness state, and names the downloads a crash left done but not yet
// renamed. The queue stays in the store; Run reads each host's next jobs
// as it needs them (Q1).
func New(ctx context.Context, store Store, opt Options) (*Engine, error) {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.Seed == 0 {
		opt.Seed = time.Now().UnixNano()
	}
	e := &Engine{opt: opt, store: store, log: opt.Log, done: make(chan struct{}, 1),
		active: map[int64]*activeJob{}, names: map[string]bool{}, crawls: map[int64]*crawlRun{},
		robots: robotsCache{hosts: map[string]*hostRobots{}}}
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
	if f, ok := store.(Fleet); ok {
		e.fleet = &fleetState{f: f}
	}
	e.bw = rate.NewLimiter(rate.Inf, 1)
	e.SetBandwidth(opt.BandwidthBytesPerSec)
	e.opt = opt
	e.core = NewCore(Config{
		Defaults:         opt.Defaults,
		GlobalInflight:   opt.Workers,
		GlobalRatePerSec: opt.GlobalRatePerSec,
		Seed:             opt.Seed,
		OnEvent:          e.onEvent,
	})
	e.core.leasedOnly = e.fleet != nil
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
	fc.MaxSize, fc.AllowDowngrade, fc.Bandwidth = opt.MaxSize, opt.AllowDowngrade, e.bw
	if fc.IdlePerHost == 0 {
		fc.IdlePerHost = opt.Defaults.MaxInflight
	}
	if fc.ProxyFor == nil {
		fc.ProxyFor = e.core.HostProxy
	}
	if db, ok := store.(interface{ Files() []string }); ok {
		// A download never takes the name of the database or of a file
		// SQLite keeps beside it (a "-journal" would be played into it).
		fc.Keep = append(slices.Clip(fc.Keep), db.Files()...)
	}
	f, err := fetch.New(fc)
	if err != nil {
		return nil, err
	}
	e.fetch = f
	if err := e.restore(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return e, nil
}

// restore loads every host's politeness state and names what a crash left.
func (e *Engine) restore(ctx context.Context) error {
	hosts, err := e.store.Hosts(ctx)
	if err != nil {
		return fmt.Errorf("loading hosts: %w", err)
	}
	running, err := e.store.Setting(ctx, runningKey)
	if err != nil {
		return fmt.Errorf("loading whether the last run stopped cleanly: %w", err)
	}
	now := time.Now()
	for _, h := range hosts {
		if e.fleet == nil { // a worker runs the hosts it claims, as it claims them
			e.core.RestoreHost(h, now)
		}
	}
	if err := e.loadCrawls(ctx); err != nil {
		return err
	}
	e.core.DirtyHosts() // what was just restored is already on disk
	if running == "true" && e.fleet == nil {
		// The last run stopped without writing its hosts (a crash, a kill
		// -9): the requests of its last hostSaveEvery may be missing from
		// the saved buckets, so every host starts empty now and fills at
		// its rate; no window then holds more than burst + rate·t requests
		// across the crash (G2).
		e.core.StartBucketsEmpty(now)
	}
	return e.nameLeftovers(ctx)
}

// Core is the politeness core, for Snapshot and Stats. Change hosts with
// the Engine's commands, which persist what they change.
func (e *Engine) Core() *Core { return e.core }

// Close releases the fetcher. Call it after Run returned.
func (e *Engine) Close() error { return e.fetch.Close() }

// Dir is the download folder.
func (e *Engine) Dir() string { return e.opt.Dir }

// Reader lists what the store holds (jobs, history, hosts, timelines).
func (e *Engine) Reader() Reader { return e.store }

// SetBandwidth changes the global bandwidth cap live (L2); 0 removes it.
func (e *Engine) SetBandwidth(bps int64) {
	if bps <= 0 {
		e.bw.SetLimit(rate.Inf)
		return
	}
	e.bw.SetBurst(bandwidthBurst(bps))
	e.bw.SetLimit(rate.Limit(bps))
}

// Bandwidth returns the global bandwidth cap in bytes per second (0: none).
func (e *Engine) Bandwidth() int64 {
	if l := e.bw.Limit(); l != rate.Inf {
		return int64(l)
	}
	return 0
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

// persistHosts writes the hosts whose politeness state changed (G10, B6).
func (e *Engine) persistHosts() {
	e.persistMu.Lock()
	defer e.persistMu.Unlock()
	for _, h := range e.core.DirtyHosts() {
		if s, ok := e.core.ExportHost(h); ok {
			if err := e.store.SaveHost(s); err != nil {
				e.log.Error("saving host state", "host", h, "err", err)
			}
		}
	}
}

// Active lists the downloads in progress, oldest first.
func (e *Engine) Active() []Active {
	e.mu.Lock()
	out := make([]Active, 0, len(e.active))
	for _, a := range e.active {
		info := a.info
		if info.JobID == 0 {
			continue // its attempt is yet to start
		}
		info.Bytes = a.bytes.Load()
		info.Size = a.size.Load()
		out = append(out, info)
	}
	e.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].JobID < out[j].JobID })
	return out
}

// reserve claims name for an attempt in progress, so that no other attempt
// chooses it as a part or final name meanwhile; it reports false when one
// has. release gives it back.
func (e *Engine) reserve(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.names[name] {
		return false
	}
	e.names[name] = true
	return true
}

func (e *Engine) reserved(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.names[name]
}

func (e *Engine) release(names ...string) {
	e.mu.Lock()
	for _, n := range names {
		delete(e.names, n)
	}
	e.mu.Unlock()
}
