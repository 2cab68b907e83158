// Package postgres keeps Heed's jobs, history, host state and settings in a PostgreSQL database
// (SPEC §12), for a fleet of workers on one or many machines sharing one queue. It implements the
// engine's Store with the engine's own record types, as the SQLite store does, and the engine's
// Fleet: per-host leases, so that each host is paced by one governor at a time.
//
// # Writes
//
// Enqueue, SetState, Start, SetPart, Finish, Rename, SetSetting and the crawl and fleet methods
// run their own transaction and return after it committed: a nil error is the acknowledgement
// (J3, S2). RecordAttempt, Note, Named, SaveHost, SaveRobots and AppendEvent return at once and
// ride the next background batch, one transaction every 50 ms or so (S5); Flush waits for them
// and reports their errors.
//
// # Leases (M2–M5)
//
// A DB opened with a worker name is a member of the fleet: Claim leases hosts with work queued
// and no live owner, writing this process's token as their owner, a lease until now() plus the
// lease time, and a new epoch. Every write of a leased host's state, and every transition of its
// jobs, checks that the token still owns the host — and, for a job, that the epoch it was
// started under is still the host's — so a worker that lost a lease (paused past its expiry,
// partitioned) can change nothing of that host. Every lease time is the database's clock.
//
// A person's command on a host (pause, resume, retune, a breaker action) is written into the
// host's row and counted there; its owner, told by NOTIFY, applies it and records that it has
// (commands_seen). The owner's writes of the host's state wait until it has, so a command is
// never overwritten by a state the owner saved without it.
package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"heed/engine"
	"heed/engine/fetch"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// IsURL reports whether a --db value names a PostgreSQL database.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// DefaultLease is how long a host stays leased to a worker that stops renewing it (M3).
const DefaultLease = 30 * time.Second

// Option changes how Open opens a database.
type Option func(*DB)

// WithWorker makes the DB a member of the fleet under name ("" for the machine's name and the
// process id): it leases hosts (see Claim), and its job transitions are fenced by their leases.
// A DB opened without it reads, enqueues and commands, and runs jobs unfenced (one process).
func WithWorker(name string) Option {
	return func(db *DB) { db.worker, db.member = name, true }
}

// WithLease sets how long a lease lasts without renewal (DefaultLease).
func WithLease(d time.Duration) Option { return func(db *DB) { db.lease = d } }

// withTracer traces the statements of the DB's connections (the fleet
// benchmark counts its round trips).
func withTracer(t pgx.QueryTracer) Option { return func(db *DB) { db.tracer = t } }

// WithLogger sends the DB's own messages to l.
func WithLogger(l *slog.Logger) Option { return func(db *DB) { db.log = l } }

// DB is a Heed database on PostgreSQL. It is safe for concurrent use.
type DB struct {
	pool   *pgxpool.Pool
	dsn    string
	log    *slog.Logger
	worker string        // the fleet member's name
	member bool          // a member of the fleet: its job transitions are fenced
	token  string        // this process's lease owner: the name and a random part
	lease  time.Duration // a lease's length

	mu      sync.Mutex
	pending []stmt        // the next background batch
	waiters []chan error  // Flush calls waiting for the batch after it
	errs    []error       // background failures not yet reported by Flush
	batch   chan struct{} // closed when the batch being committed is; nil when none is
	closed  bool          // Close has begun: writes fail
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	heldMu sync.Mutex
	held   map[string]int64 // the hosts this process leases, with their epochs

	listen    *listener
	tracer    pgx.QueryTracer
	recovered int64
}

// errClosed is the error of a write after Close.
var errClosed = errors.New("postgres: database is closed")

// Open connects to the database at dsn (a postgres:// URL), creating or upgrading its tables.
func Open(ctx context.Context, dsn string, opts ...Option) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, &OpenError{URL: redact(dsn), Err: err}
	}
	db := &DB{dsn: dsn, log: slog.Default(), lease: DefaultLease, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), held: map[string]int64{}}
	for _, o := range opts {
		o(db)
	}
	if db.worker == "" {
		db.worker = defaultWorkerName()
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	db.token = db.worker + "/" + hex.EncodeToString(rnd[:])
	cfg.MaxConns = max(cfg.MaxConns, 16)
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = db.appName()
	if db.tracer != nil {
		cfg.ConnConfig.Tracer = db.tracer
	}
	if db.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, &OpenError{URL: redact(dsn), Err: err}
	}
	if err := db.migrate(ctx); err != nil {
		db.pool.Close()
		return nil, &OpenError{URL: redact(dsn), Err: err}
	}
	if err := db.recover(ctx); err != nil {
		db.pool.Close()
		return nil, &OpenError{URL: redact(dsn), Err: err}
	}
	go db.background()
	return db, nil
}

// defaultWorkerName is the machine's name and the process id.
func defaultWorkerName() string {
	h, _ := os.Hostname()
	if h == "" {
		h = "worker"
	}
	return h + ":" + strconv.Itoa(os.Getpid())
}

// OpenError is the error Open returns: the database at URL (its password masked) is unusable.
type OpenError struct {
	URL string
	Err error
}

func (e *OpenError) Error() string { return fmt.Sprintf("database %s: %v", e.URL, e.Err) }
func (e *OpenError) Unwrap() error { return e.Err }

// redact masks the password of a postgres:// URL.
func redact(dsn string) string { return fetch.Redact(dsn) }

// Path is the database's URL with its password masked, for messages.
func (db *DB) Path() string { return redact(db.dsn) }

// Worker is the name this DB works under in the fleet.
func (db *DB) Worker() string { return db.worker }

// migrate applies the embedded migrations not applied yet, one transaction each, under an
// advisory lock so that workers starting together do not race.
func (db *DB) migrate(ctx context.Context) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	const lockID = 0x48454544 // "HEED"
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockID); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, lockID)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	var have int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return err
	}
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(files)
	if have > len(files) {
		return fmt.Errorf("database schema %d is newer than this Heed understands (%d)", have, len(files))
	}
	for i, f := range files[have:] {
		v := have + i + 1
		sql, err := migrationFS.ReadFile(f)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("migration %s: %w", f, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// recover queues again every job left active on a host no live worker leases: a crash left it so
// (S2). Its cut-off attempt is given back (G42). The jobs of a host a live worker leases are that
// worker's; those of a lease that ran out are queued again here or by the Claim that takes the
// host, whichever comes first.
func (db *DB) recover(ctx context.Context) error {
	if !db.member {
		db.settle(ctx) // a member's jobs are fenced by its leases: a late start of a dead one's is its lease's
	}
	t := nanos(now())
	return db.retry(func() error {
		tag, err := db.pool.Exec(ctx, `UPDATE jobs SET state = 'queued', attempts = greatest(attempts - 1, 0),
			last_error = 'interrupted', not_before = $1, updated_at = $1
			WHERE state = 'active' AND host NOT IN (
				SELECT host FROM hosts WHERE lease_owner IS NOT NULL AND lease_until > now())`, t)
		db.recovered = tag.RowsAffected()
		return err
	})
}

// settleFor bounds how long Open waits for the connections of a Heed that just died to go.
const settleFor = 3 * time.Second

// settle waits, at most settleFor, until no other Heed's connection to this database has a
// statement running or a transaction open, twice in a row. A Heed killed a moment ago may have
// statements on their way in its connections, which the server runs, COMMIT included, before it
// sees them closed: a start committed after the queue-again of recover would leave a job active
// that nothing runs (S2). A connection idle has nothing left to run.
func (db *DB) settle(ctx context.Context) {
	clean := 0
	for deadline := time.Now().Add(settleFor); clean < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var busy int
		err := db.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND application_name LIKE 'heed/%' AND application_name <> $1 AND state <> 'idle'`, db.appName()).Scan(&busy)
		if err != nil {
			return
		}
		if clean++; busy > 0 {
			clean = 0
		}
	}
}

// appName is the application_name of this process's connections: "heed/" and the random part of
// its token, so that one Heed tells its own connections from another's.
func (db *DB) appName() string { return "heed/" + db.token[strings.LastIndex(db.token, "/")+1:] }

// Recovered returns how many jobs Open found left active by a crash and queued again.
func (db *DB) Recovered() int64 { return db.recovered }

// Close flushes what is queued, gives back every lease and closes the connections. Writes after
// it fail.
func (db *DB) Close() error {
	select {
	case <-db.stop:
		return nil
	default:
	}
	err := db.Flush(context.Background())
	db.mu.Lock()
	db.closed = true
	db.mu.Unlock()
	if l := db.listen; l != nil {
		l.close()
	}
	close(db.stop)
	<-db.done
	db.pool.Close()
	return err
}

// stmt is a queued write: one statement and its arguments.
type stmt struct {
	sql  string
	args []any
}

// queue adds a write to the next background batch.
func (db *DB) queue(sql string, args []any) error {
	f := stmt{sql, args}
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return errClosed
	}
	db.pending = append(db.pending, f)
	n := len(db.pending)
	db.mu.Unlock()
	if n == 1 || n >= batchMax {
		db.wake()
	}
	return nil
}

func (db *DB) wake() {
	select {
	case db.kick <- struct{}{}:
	default:
	}
}

// batchEvery and batchMax bound how long and how many background writes wait for their batch.
const (
	batchEvery = 50 * time.Millisecond
	batchMax   = 512
)

// background commits the queued writes in batches until Close.
func (db *DB) background() {
	defer close(db.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-db.stop:
			db.commitBatch()
			return
		case <-db.kick:
		}
		t.Reset(batchEvery)
		select {
		case <-t.C:
		case <-db.stop:
		}
		db.commitBatch()
	}
}

// commitBatch commits what is queued in one transaction; a failed batch is tried again op by op,
// so one bad write does not lose the others, and its error waits for Flush.
func (db *DB) commitBatch() {
	db.mu.Lock()
	ops, waiters := db.pending, db.waiters
	db.pending, db.waiters = nil, nil
	done := make(chan struct{})
	db.batch = done
	db.mu.Unlock()
	err := db.all(ops)
	db.mu.Lock()
	if err != nil {
		db.mu.Unlock()
		db.oneByOne(ops)
		db.mu.Lock()
	}
	db.batch = nil
	close(done)
	var report error
	if len(waiters) > 0 {
		report = errors.Join(db.errs...)
		db.errs = nil
	}
	db.mu.Unlock()
	for _, w := range waiters {
		w <- report
	}
}

// Flush waits until every background write queued before it is committed, and reports the
// errors of background writes since the last Flush.
func (db *DB) Flush(ctx context.Context) error {
	select {
	case <-db.stop:
		return errClosed
	default:
	}
	ch := make(chan error, 1)
	db.mu.Lock()
	db.waiters = append(db.waiters, ch)
	db.mu.Unlock()
	db.wake()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// execStmt runs the statement sql with args in tx.
func execStmt(ctx context.Context, tx pgx.Tx, sql string, args []any) error {
	_, err := tx.Exec(ctx, sql, args...)
	return err
}

// all commits the queued writes ops, in order, sent together in one round trip: PostgreSQL runs
// the statements of one batch in one implicit transaction, so they commit or fail together, and a
// batch holds the rows it writes (hosts' among them) for as short a time as it can.
func (db *DB) all(ops []stmt) error {
	if len(ops) == 0 {
		return nil
	}
	return db.retry(func() error {
		b := &pgx.Batch{}
		for _, op := range ops {
			b.Queue(op.sql, op.args...)
		}
		return db.pool.SendBatch(context.Background(), b).Close()
	})
}

// oneByOne commits each of ops in a transaction of its own, after they failed together, so that
// one bad write does not lose the others; the errors wait for Flush.
func (db *DB) oneByOne(ops []stmt) {
	var errs []error
	for _, op := range ops {
		if err := db.retry(func() error {
			_, err := db.pool.Exec(context.Background(), op.sql, op.args...)
			return err
		}); err != nil {
			errs = append(errs, err)
		}
	}
	db.mu.Lock()
	db.errs = append(db.errs, errs...)
	db.mu.Unlock()
}

// tx runs f, a waited write, in a transaction and commits it (see waited).
func (db *DB) tx(ctx context.Context, f func(pgx.Tx) error) error {
	return db.waited(func() error { return db.run(ctx, f) })
}

// waited runs f, a waited write, after committing the queued writes before it in a transaction of
// their own (S5: a queued write is committed by the next waited one). They are not put in f's
// transaction: a batch of host states would hold many hosts' rows until f's own statements were
// done, and every other start and finish on those hosts would queue behind it. If they fail
// together, they are committed one by one, their errors kept for Flush. When waited returns, a
// batch the background was committing when it began has committed too.
func (db *DB) waited(f func() error) error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return errClosed
	}
	ops, batch := db.pending, db.batch
	db.pending = nil
	db.mu.Unlock()
	if err := db.all(ops); err != nil {
		db.oneByOne(ops)
	}
	err := f()
	if batch != nil {
		<-batch
	}
	return err
}

// run runs f in a transaction and commits it. A transaction PostgreSQL
// aborted to break a deadlock (two transactions taking a job's row and its
// host's in opposite orders: a transition and its count, a batch's host
// state and a job's note) runs again, a few times.
func (db *DB) run(ctx context.Context, f func(pgx.Tx) error) error {
	for try := 0; ; try++ {
		err := pgx.BeginFunc(ctx, db.pool, f)
		if !retryable(err) || try == 4 {
			return err
		}
		time.Sleep(time.Duration(try+1) * 5 * time.Millisecond)
	}
}

// retry runs f, a statement on its own, again as tx does a transaction.
func (db *DB) retry(f func() error) error {
	for try := 0; ; try++ {
		err := f()
		if !retryable(err) || try == 4 {
			return err
		}
		time.Sleep(time.Duration(try+1) * 5 * time.Millisecond)
	}
}

// retryable reports whether err is a deadlock or a serialization failure.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// keyHash is the SHA-256 of a de-duplication key: the unique index is on it.
func keyHash(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// uniqueViolation reports whether err is a unique-constraint violation.
func uniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// now is the worker's clock, for the instants the engine itself computes (not-befores,
// history); leases use the database's.
func now() time.Time { return time.Now() }

// Store is db as the engine's Store.
var _ engine.Store = (*DB)(nil)
