package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// op is one unit of work for the writer goroutine. run must be safe to run again after a
// rollback: it writes its results only into its own closure state, overwriting, never appending
// to results of an earlier run.
type op struct {
	ctx  context.Context // nil for fire-and-forget writes
	name string
	run  func(*wtx) error
	done chan error // nil for fire-and-forget writes
}

// wtx is the writer's transaction, open on db.wc.
type wtx struct {
	db *DB
}

// stmt returns query prepared on the writer's connection: prepared once, the first time any
// transaction uses it, and kept until the database is closed.
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

func (w *wtx) queryRow(query string, args ...any) *sql.Row {
	s, err := w.stmt(query)
	if err != nil {
		// A Row carrying the error: Scan reports it.
		return w.db.wc.QueryRowContext(context.Background(), query, args...)
	}
	return s.QueryRow(args...)
}

// writer is the single goroutine that owns the writer connection. It takes one op, then every op
// that is already waiting (up to batchMax), runs them all in one transaction and commits: the
// longer a commit takes, the bigger the next batch (group commit, S5).
func (db *DB) writer() {
	defer close(db.done)
	batch := make([]op, 0, db.batchMax)
	for first := range db.ops {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < db.batchMax {
			select {
			case o, ok := <-db.ops:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		db.runBatch(batch)
	}
}

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
	ctx := context.Background()
	if _, err := db.wc.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// A failed COMMIT may leave the transaction open (SQLITE_BUSY); any other failure
			// leaves it open for sure. Either way it is undone.
			db.wc.ExecContext(ctx, "ROLLBACK")
		}
	}()
	w := &wtx{db: db}
	for _, o := range ops {
		if err := o.run(w); err != nil {
			return fmt.Errorf("%s: %w", o.name, err)
		}
	}
	if _, err := db.wc.ExecContext(ctx, "COMMIT"); err != nil {
		return err
	}
	db.commits.Add(1)
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

// Flush waits until every write queued before it is committed, and returns the errors of
// background writes that failed since the last Flush.
func (db *DB) Flush(ctx context.Context) error {
	if err := db.write(ctx, "flush", func(*wtx) error { return nil }); err != nil {
		return err
	}
	return db.takeAsyncErr()
}
