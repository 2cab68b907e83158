package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// op is one unit of work for the writer goroutine. run must be safe to run again after a
// rollback: it writes its results only into its own closure state, overwriting, never appending
// to results of an earlier run.
type op struct {
	ctx  context.Context // nil for fire-and-forget writes
	name string
	run  func(*wtx) error
	done chan error // nil for fire-and-forget writes
	// unqueues says run may move a queued job out of queued (pause, cancel): StartJobs waits
	// from the transaction's snapshot of the pending starts to its commit, so that a start is
	// either applied before the change or sees its result.
	unqueues bool
	// finishes lists the jobs run moves from active to done (FinishJobs): a logged start of one
	// of them that is still pending is folded into that move (see foldable).
	finishes []int64
	// starts marks the write that only applies the pending starts (see startsLinger).
	starts bool
	// requeues says run may move a job back to queued although nobody waits for it (Named with
	// Again): its batch is not light (see foldable).
	requeues bool
}

// wtx is the writer's transaction, open on db.wc.
type wtx struct {
	db    *DB
	fresh map[int64]freshJob // jobs this transaction created, kept once it commits (see freshJobs)
	// folded holds the pending starts of jobs this transaction finishes, by job: applyStarts left
	// their rows queued, and the finish moves each from queued to done, counting the attempt, in
	// one statement instead of two (see foldable). What no finish took is applied before COMMIT.
	folded map[int64]int64
}

// stmt returns query prepared on the writer's connection: prepared once, the
// first time any transaction uses it, and kept until the database is closed.
// Its Exec and QueryRow run on the writer's connection, inside the open
// transaction.
func (w *wtx) stmt(query string) (*sql.Stmt, error) {
	if s, ok := w.db.prepared[query]; ok {
		return s, nil
	}
	s, err := w.db.wc.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, err
	}
	w.db.prepared[query] = s
	return s, nil
}

func (w *wtx) exec(query string, args ...any) (sql.Result, error) {
	s, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	return s.Exec(args...)
}

// writer is the single goroutine that owns the writer connection. It takes one op, then every op
// that is already waiting (up to batchMax), runs them all in one transaction and commits: the
// longer a commit takes, the bigger the next batch (group commit, S5).
//
// A batch of background writes only (RecordAttempt, QueueProgress, SaveHost …), which nobody
// waits for, lingers up to backgroundLinger for more work first, and commits at once when a
// write somebody waits for joins it: under load, history then costs a few commits a second
// instead of one or two per download, and a waiting write is never held back. The write that
// only applies logged starts lingers longer, startsLinger, while nothing else joins it.
func (db *DB) writer() {
	defer close(db.done)
	batch := make([]op, 0, db.batchMax)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		var first op
		ok := true
		if db.rearmed && !db.closing {
			// A commit left starts pending: the write that applies them, taken here rather than
			// sent on ops, which may be full or closed.
			db.rearmed, first = false, applyStartsOp()
		} else {
			first, ok = <-db.ops
		}
		if !ok {
			if db.starts.hasPending() {
				db.closing = true
				db.runBatch([]op{applyStartsOp()}) // Close: every start applied before the last commit
			}
			return
		}
		began := time.Now()
		batch = append(batch[:0], first)
		waited := first.done != nil
		onlyStarts := first.starts
		lingering, armed := false, time.Duration(0)
	drain:
		for len(batch) < db.batchMax {
			var o op
			select {
			case o, ok = <-db.ops:
			default:
				if waited {
					break drain
				}
				want := backgroundLinger
				if onlyStarts {
					want = startsLinger
				}
				if !lingering || want != armed {
					left := want - time.Since(began)
					if left <= 0 {
						break drain
					}
					if lingering {
						linger.Stop()
					}
					lingering, armed = true, want
					linger.Reset(left)
				}
				select {
				case o, ok = <-db.ops:
				case <-linger.C:
					lingering = false
					break drain
				}
			}
			if !ok {
				db.closing = true // closing: commit what came, every start applied, then stop
				break drain
			}
			batch = append(batch, o)
			waited = waited || o.done != nil
			onlyStarts = onlyStarts && o.starts
		}
		if lingering {
			linger.Stop()
		}
		db.runBatch(batch)
	}
}

// backgroundLinger is how long a batch of background writes waits for company (see writer).
const backgroundLinger = 20 * time.Millisecond

// startsLinger is how long the write that only applies logged starts waits for company. It is
// longer than the engine's wait for finished downloads to commit together (25 ms), so that under
// load the starts ride the commits of finished downloads, and a start whose download finished
// meanwhile is folded into its finish (see foldable) instead of being applied on its own. Until
// then a started job's row reads as queued; the start log holds it, as durable as a commit.
const startsLinger = 50 * time.Millisecond

// runBatch commits batch as one transaction. If any op (or the commit) fails, the transaction is
// rolled back and each op runs again in a transaction of its own, so one bad op fails alone.
func (db *DB) runBatch(batch []op) {
	live := batch[:0:0]
	for _, o := range batch {
		if o.ctx != nil && o.ctx.Err() != nil {
			o.done <- o.ctx.Err() // the caller gave up before we started: do nothing
			continue
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	if err := db.runTx(live); err == nil || len(live) == 1 {
		for _, o := range live {
			db.finish(o, err)
		}
		return
	}
	for _, o := range live {
		db.finish(o, db.runTx([]op{o}))
	}
}

func (db *DB) runTx(ops []op) (err error) {
	locked := false
	for _, o := range ops {
		if o.unqueues {
			locked = true
			db.startMu.Lock()
			defer db.startMu.Unlock()
			break
		}
	}
	ctx := context.Background()
	if _, err := db.wc.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// A failed COMMIT may leave the transaction open (SQLITE_BUSY); any
			// other failure leaves it open for sure. Either way it is undone.
			db.wc.ExecContext(ctx, "ROLLBACK")
		}
	}()
	w := &wtx{db: db}
	// Starts logged since the last commit move their jobs to active first, so that every write
	// finds a started job active, as it was when it started (see startLog); those of jobs this
	// batch finishes are folded into their finish.
	fold, light := foldable(ops)
	light = light && !db.closing
	applied, left, err := applyStarts(w, fold, light)
	if err != nil {
		return fmt.Errorf("apply starts: %w", err)
	}
	for _, o := range ops {
		if err := o.run(w); err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
	}
	if err := applyFolded(w); err != nil {
		return fmt.Errorf("apply starts: %w", err)
	}
	if len(w.fresh) > 0 && !locked {
		// A start reads a created row after the commit, so it would find the job queued and
		// start it before keep kept it: it waits for keep, and takes the kept job.
		db.startMu.Lock()
		defer db.startMu.Unlock()
	}
	if _, err := db.wc.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	if db.afterCommit != nil {
		db.afterCommit()
	}
	db.starts.applied(applied)
	if left {
		db.rearmed = true // the writer takes an apply-starts write next (see writer)
	}
	db.fresh.keep(w.fresh)
	db.commits.Add(1)
	select {
	case db.kick <- struct{}{}:
	default:
	}
	return nil
}

func (db *DB) finish(o op, err error) {
	if o.done != nil {
		o.done <- err
		return
	}
	if err != nil {
		db.log.Error("storage: background write failed", "db", db.path, "err", err)
		db.errMu.Lock()
		db.asyncErr = append(db.asyncErr, err)
		db.errMu.Unlock()
	}
}

func (db *DB) takeAsyncErr() error {
	db.errMu.Lock()
	defer db.errMu.Unlock()
	err := errors.Join(db.asyncErr...)
	db.asyncErr = nil
	return err
}

// submit hands o to the writer. With o.done set it waits for the commit and returns its error;
// if ctx ends first, it returns ctx.Err() and the write may or may not have been committed.
func (db *DB) submit(ctx context.Context, o op) error {
	if db.reader {
		return ErrReadOnly
	}
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	if ctx == nil {
		db.ops <- o
		db.mu.RUnlock()
		return nil
	}
	select {
	case db.ops <- o:
	case <-ctx.Done():
		db.mu.RUnlock()
		return ctx.Err()
	}
	db.mu.RUnlock()
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write runs fn in the writer's transaction and returns after it committed.
func (db *DB) write(ctx context.Context, name string, fn func(*wtx) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	return db.submit(ctx, op{ctx: ctx, name: name, run: fn, done: make(chan error, 1)})
}

// queue hands fn to the writer and returns at once; Flush reports its error.
func (db *DB) queue(name string, fn func(*wtx) error) error {
	return db.submit(nil, op{name: name, run: fn})
}

// Flush waits until every write queued before it — RecordAttempt, AppendHostEvent, SaveHost —
// is committed, and returns the errors of background writes that failed since the last Flush.
func (db *DB) Flush(ctx context.Context) error {
	if err := db.write(ctx, "flush", func(*wtx) error { return nil }); err != nil {
		return err
	}
	return db.takeAsyncErr()
}
