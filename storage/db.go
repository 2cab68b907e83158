// Package storage keeps Heed's jobs, attempt history, host state and settings in one SQLite
// file (SPEC §7). It is the only package that speaks SQL, and it implements the engine's Store
// with the engine's own record types.
//
// # Connections
//
// A DB holds two pools on the same file: a writer of exactly one connection (WAL, busy timeout,
// foreign keys, BEGIN IMMEDIATE) and a read-only pool for queries, so reads never wait behind
// writes (S1). Every write goes through one writer goroutine that commits whatever arrived while
// the previous commit ran as one transaction (group commit, S5):
//
//   - Enqueue, SetState, Start, SetPart, Finish, Rename and SetSetting return only after their
//     transaction committed: a nil error is the acknowledgement (J3 "persisted before acted on",
//     S2).
//   - RecordAttempt, Note, Named, SaveHost and AppendEvent return at once; they ride the next
//     commit. Flush waits until everything queued before it is committed, and Close flushes.
//
// # Durability
//
// The database runs in WAL mode with synchronous=NORMAL: a commit is written to the -wal file
// before the call returns, but not fsynced. That survives kill -9 of the process (the bytes are in
// the operating system's page cache) — the crash test in this package holds that — but the last
// commits before a power loss or kernel crash may be lost; the database itself stays consistent.
// WithSyncFull trades throughput for surviving power loss as well. SQLite checkpoints the WAL
// itself (wal_autocheckpoint).
//
// # Duplicates (J2)
//
// The jobs table has one row per de-duplication key. Enqueue reports a URL whose key already has
// a row as a duplicate, with the row's id and state, whatever that state is; with again it moves
// an ended job back to queued, reusing its row, with a fresh attempt budget.
//
// # Counts
//
// Each host's jobs by state are kept in its hosts row by triggers, in the same transaction as
// every transition, so that listing hosts never counts jobs.
//
// # One process (S6)
//
// Open takes an OS advisory lock for the life of the DB: on unix a flock on the database file
// itself, whatever name, symlink or hard link it is opened by; elsewhere a lock on "<db>.lock"
// beside the file's real path (LockFileEx on Windows), left in place on Close since deleting it
// would race with another Open. A second Open of the same file — from this process or another —
// fails with ErrLocked. Open never creates a database over a file that is not one — nor adds its
// tables to another application's SQLite file (PRAGMA application_id is "HEED") — and never
// deletes -wal or -shm files.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"heed/engine"
)

// Errors returned by Open, wrapped in an *OpenError naming the file. A CLI maps any *OpenError to
// exit status 3 ("the database is unusable").
var (
	// ErrLocked means another Heed (or another DB in this process) has the database open.
	ErrLocked = errors.New("database is in use by another Heed")
	// ErrBusy means a program other than Heed (the sqlite3 shell, a backup tool) holds a lock on
	// the database that SQLite waited for in vain: Heed's own lock was free, so no Heed has it.
	ErrBusy = errors.New("database is locked by another program (not Heed): close it and try again")
	// ErrNotDatabase means the file exists but is not an SQLite database; it is left untouched.
	ErrNotDatabase = errors.New("file is not a Heed database")
	// ErrDamaged means the file is an SQLite database whose pages SQLite found damaged; it is
	// left untouched.
	ErrDamaged = errors.New("database file is damaged (left as it is: restore a copy, or move it aside to start afresh)")
	// ErrUnreadable means the file (or its directory) cannot be read, written or created: Heed
	// needs all three, even to list, since it locks the file and may recover it (S2, S6).
	ErrUnreadable = errors.New("database file cannot be opened for reading and writing")
	// ErrSchemaTooNew means the database was written by a newer Heed than this one.
	ErrSchemaTooNew = errors.New("database schema is newer than this Heed understands")
	// ErrNotReady is what OpenReader returns for a database whose schema is older than this
	// Heed's: the Heed holding it is still creating or upgrading it, or is an older version.
	ErrNotReady = errors.New("database is not ready to be read")
	// ErrReadOnly is what a write to a database opened with OpenReader returns.
	ErrReadOnly = errors.New("database is open read-only: another Heed is running on it")
)

// Errors returned by reads and writes.
var (
	// ErrNotFound means no job has the given id.
	ErrNotFound = engine.ErrNotFound
	// ErrStateConflict means a job transition was asked of a job in a state that does not allow
	// it, for example Finish of a job the person cancelled meanwhile.
	ErrStateConflict = engine.ErrNotQueued
	// ErrClosed means the DB has been closed.
	ErrClosed = errors.New("storage: database is closed")
)

// OpenError is the error returned by Open: the database at Path is unusable because of Err,
// which wraps one of ErrLocked, ErrBusy, ErrNotDatabase, ErrDamaged, ErrUnreadable, ErrSchemaTooNew or
// another cause.
type OpenError struct {
	Path string
	Err  error
}

// Error names the file, so that a message shown to the user says which file is at fault.
func (e *OpenError) Error() string { return fmt.Sprintf("database %s: %v", e.Path, e.Err) }

// Unwrap returns the cause, so errors.Is(err, ErrLocked) works.
func (e *OpenError) Unwrap() error { return e.Err }

// Option changes how Open opens a database.
type Option func(*options)

type options struct {
	logger   *slog.Logger
	syncFull bool
	batchMax int
	now      func() time.Time
	busy     time.Duration // how long SQLite waits for a lock another program holds
}

// WithLogger sends the DB's own messages (recovered jobs, failed background writes) to l.
// The default discards them.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithSyncFull sets synchronous=FULL: every commit is fsynced, so acknowledged writes survive
// power loss as well as a process crash, at the cost of write throughput.
func WithSyncFull() Option { return func(o *options) { o.syncFull = true } }

// withBusyTimeout sets how long SQLite waits for a lock another program holds (tests).
func withBusyTimeout(d time.Duration) Option { return func(o *options) { o.busy = d } }

// DB is an open Heed database. Its methods are safe for concurrent use.
type DB struct {
	path      string
	w         *sql.DB // writer: one connection, used only by the writer goroutine
	r         *sql.DB // read-only pool
	lock      io.Closer
	log       *slog.Logger
	now       func() time.Time
	recovered int64

	ops      chan op
	wc       *sql.Conn            // the writer's connection, held for good; only the writer goroutine uses it
	prepared map[string]*sql.Stmt // the writer's statements, prepared once on wc
	readMu   sync.Mutex
	reads    map[string]*sql.Stmt // the frequent reads' statements, on the read pool
	mu       sync.RWMutex         // guards closed against sends on ops
	closed   bool
	reader   bool // opened with OpenReader: queries only
	done     chan struct{}
	batchMax int
	commits  atomic.Int64 // transactions committed by the writer, for tests

	errMu    sync.Mutex
	asyncErr []error // errors of fire-and-forget writes, reported by the next Flush
}

// DefaultPath returns where Heed keeps its database when no path is given: heed.db in
// $XDG_DATA_HOME/heed or ~/.local/share/heed on Linux and other unix systems,
// ~/Library/Application Support/Heed on macOS, %LocalAppData%\Heed on Windows.
func DefaultPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil && runtime.GOOS != "windows" {
		return "", fmt.Errorf("storage: no home directory for the default database: %w", err)
	}
	return defaultPath(runtime.GOOS, os.Getenv, home)
}

func defaultPath(goos string, getenv func(string) string, home string) (string, error) {
	switch goos {
	case "windows":
		dir := getenv("LocalAppData")
		if dir == "" {
			return "", errors.New("storage: %LocalAppData% is not set")
		}
		return filepath.Join(dir, "Heed", "heed.db"), nil
	case "darwin", "ios":
		return filepath.Join(home, "Library", "Application Support", "Heed", "heed.db"), nil
	default:
		if dir := getenv("XDG_DATA_HOME"); dir != "" && filepath.IsAbs(dir) {
			return filepath.Join(dir, "heed", "heed.db"), nil
		}
		return filepath.Join(home, ".local", "share", "heed", "heed.db"), nil
	}
}

// sqliteHeader is how every SQLite 3 database file begins.
const sqliteHeader = "SQLite format 3\x00"

// Open opens the Heed database at path, creating it (and its parent directories) if it does not
// exist; an empty path means DefaultPath. It takes the single-process lock (S6), checks that an
// existing file is an SQLite database, migrates the schema forward (S1), and re-queues jobs a
// crash left active (S2; see Recovered). Every error is an *OpenError naming the file.
func Open(path string, opts ...Option) (*DB, error) {
	o := options{logger: slog.New(slog.DiscardHandler), batchMax: 1024, now: time.Now, busy: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &OpenError{Path: path, Err: err}
	}
	db, err := open(abs, o)
	if err != nil {
		return nil, &OpenError{Path: abs, Err: err}
	}
	return db, nil
}

// OpenReader opens the existing Heed database at path for queries only, while another Heed may be
// running on it (heed jobs beside a heed get): it takes no lock, migrates nothing and recovers
// nothing, and its writes fail with ErrReadOnly. What it reads is the database as last committed.
// A database on read-only media (a folder Heed cannot write, where SQLite cannot keep its
// shared-memory file) is opened as immutable: nobody can be writing it there. A database of
// another schema version than this Heed's is refused. Every error is an *OpenError naming the file.
func OpenReader(path string) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &OpenError{Path: path, Err: err}
	}
	db, err := openReader(abs)
	if err != nil {
		return nil, &OpenError{Path: abs, Err: err}
	}
	return db, nil
}

func openReader(path string) (_ *DB, err error) {
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	db := &DB{path: path, reader: true, log: slog.New(slog.DiscardHandler), now: time.Now}
	defer func() {
		if err != nil {
			db.closeHandles()
		}
	}()
	params := "mode=ro&_busy_timeout=5000"
	if !writable(filepath.Dir(path)) {
		params += "&immutable=1"
	}
	if db.r, err = sql.Open("sqlite3", dsn(path, params)); err != nil {
		return nil, err
	}
	db.r.SetMaxOpenConns(2)
	ctx := context.Background()
	if err := checkIdentity(ctx, db.r); err != nil {
		return nil, classify(err)
	}
	v, err := schemaVersion(ctx, db.r)
	if err != nil {
		return nil, classify(err)
	}
	switch {
	case v > len(migrations):
		return nil, fmt.Errorf("%w (version %d, this Heed knows up to %d)", ErrSchemaTooNew, v, len(migrations))
	case v < len(migrations):
		// The Heed holding it is creating or upgrading it, or is an older one.
		return nil, fmt.Errorf("%w: its schema is version %d, this Heed's %d: the Heed running on it is creating or "+
			"upgrading it (try again in a moment) or is an older version", ErrNotReady, v, len(migrations))
	}
	return db, nil
}

func open(path string, o options) (_ *DB, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	lock, err := lockDatabase(path)
	if err != nil {
		return nil, err
	}
	db := &DB{path: path, lock: lock, log: o.logger, now: o.now, batchMax: o.batchMax, prepared: map[string]*sql.Stmt{}}
	defer func() {
		if err != nil {
			db.closeHandles()
		}
	}()
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	syncMode := "NORMAL"
	if o.syncFull {
		syncMode = "FULL"
	}
	// The journal mode is set below, once the file is known to be Heed's: it changes the file.
	busy := fmt.Sprintf("_busy_timeout=%d", o.busy.Milliseconds())
	// The writer caches up to 16 MiB of pages: the busy part of the database (index tops, the
	// newest history); the rest is read back from the system's file cache.
	db.w, err = sql.Open("sqlite3", dsn(path, busy+"&_fk=on&_txlock=immediate&_cache_size=-16384&_sync="+syncMode))
	if err != nil {
		return nil, err
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	db.w.SetConnMaxIdleTime(0)
	ctx := context.Background()
	if err := checkIdentity(ctx, db.w); err != nil {
		return nil, classify(err)
	}
	var mode string
	if err := db.w.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return nil, classify(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return nil, fmt.Errorf("journal mode is %q, want wal", mode)
	}
	// After a checkpoint, a -wal file that grew during a big paste is cut back to 64 MiB.
	if _, err := db.w.ExecContext(ctx, "PRAGMA journal_size_limit = 67108864"); err != nil {
		return nil, classify(err)
	}
	if err := migrate(ctx, db.w, migrations); err != nil {
		return nil, classify(err)
	}
	if db.recovered, err = recoverActive(ctx, db.w, o.now()); err != nil {
		return nil, classify(err)
	}
	if db.recovered > 0 {
		db.log.Info("storage: re-queued jobs left active by a crash", "db", path, "jobs", db.recovered)
	}
	db.r, err = sql.Open("sqlite3", dsn(path, "mode=ro&"+busy))
	if err != nil {
		return nil, err
	}
	db.r.SetMaxOpenConns(max(4, runtime.GOMAXPROCS(0)))
	db.r.SetMaxIdleConns(max(4, runtime.GOMAXPROCS(0)))
	if err := db.r.PingContext(ctx); err != nil {
		return nil, classify(err)
	}
	// The writer holds its connection for good and begins and commits with plain statements.
	if db.wc, err = db.w.Conn(ctx); err != nil {
		return nil, classify(err)
	}
	db.ops = make(chan op, 4096)
	db.done = make(chan struct{})
	go db.writer()
	return db, nil
}

// recoverActive queues again every job a crash left active, keeping its partial file, bytes and
// validators for resume (S2) and giving back the attempt the crash cut off (G42). It returns how
// many it queued.
func recoverActive(ctx context.Context, db *sql.DB, now time.Time) (int64, error) {
	res, err := db.ExecContext(ctx, `UPDATE jobs SET state = 'queued', attempts = max(attempts - 1, 0),
		last_error = 'interrupted', updated_at = ? WHERE state = 'active'`, nanos(now))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// writable reports whether files can be created in dir.
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".heed-check-*")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

// dsn builds a go-sqlite3 URI for path. '%', '?' and '#' would end or escape the path part of
// the URI, so they are percent-encoded.
func dsn(path, params string) string {
	p := filepath.ToSlash(path)
	p = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
	if len(p) >= 2 && p[1] == ':' { // Windows drive letter: file:///C:/...
		p = "/" + p
	}
	return "file:" + p + "?" + params
}

// checkHeader refuses a non-empty file that does not begin with the SQLite header, so that Open
// never turns someone's file into a database.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: not a regular file", ErrUnreadable)
	}
	if fi.Size() == 0 {
		return nil
	}
	buf := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return ErrNotDatabase
		}
		return fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	if string(buf) != sqliteHeader {
		return ErrNotDatabase
	}
	return nil
}

// heedAppID is PRAGMA application_id of a Heed database ("HEED"), set by the first migration.
const heedAppID = 0x48454544

// checkIdentity refuses an SQLite database that belongs to another application: one with a
// different application_id, or without Heed's but with tables. Heed never adds its tables to it.
func checkIdentity(ctx context.Context, db *sql.DB) error {
	var appID, objects int
	if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return err
	}
	if appID == heedAppID {
		return nil
	}
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		return err
	}
	if appID != 0 || objects > 0 {
		return fmt.Errorf("%w: an SQLite database of another application (application_id %#x, %d objects)",
			ErrNotDatabase, appID, objects)
	}
	return nil
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Files returns the paths of the files this database lives in: the database, and the rollback
// journal, WAL, shared-memory and lock files SQLite and Heed may keep beside it, at the path it
// was opened by and, when that goes through a symlink, at the file's real path too. Nothing else
// may ever write them: a file named like the journal would be played into the database at its
// next open.
func (db *DB) Files() []string {
	paths := []string{db.path}
	if real, err := filepath.EvalSymlinks(db.path); err == nil && real != db.path {
		paths = append(paths, real)
	}
	var out []string
	for _, p := range paths {
		for _, suffix := range []string{"", "-journal", "-wal", "-shm", ".lock"} {
			out = append(out, p+suffix)
		}
	}
	return out
}

// Close flushes every queued write, stops the writer and releases the database and its lock.
// It returns the errors of background writes not yet reported by Flush. Calling Close again
// returns ErrClosed.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	db.closed = true
	if db.reader {
		db.mu.Unlock()
		return db.closeHandles()
	}
	close(db.ops)
	db.mu.Unlock()
	<-db.done
	return errors.Join(db.takeAsyncErr(), db.closeHandles())
}

// read returns query prepared on the read pool, once: the reads made at every dispatch
// (NextJobs, Job) are not compiled again each time.
func (db *DB) read(ctx context.Context, query string) (*sql.Stmt, error) {
	db.readMu.Lock()
	defer db.readMu.Unlock()
	if s, ok := db.reads[query]; ok {
		return s, nil
	}
	s, err := db.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if db.reads == nil {
		db.reads = map[string]*sql.Stmt{}
	}
	db.reads[query] = s
	return s, nil
}

func (db *DB) closeHandles() error {
	var errs []error
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	for _, st := range db.prepared {
		errs = append(errs, st.Close())
	}
	for _, st := range db.reads {
		errs = append(errs, st.Close())
	}
	if db.wc != nil {
		errs = append(errs, db.wc.Close())
	}
	if db.w != nil {
		// Closing the last connection checkpoints the WAL; SQLite removes -wal and -shm itself.
		errs = append(errs, db.w.Close())
	}
	if db.lock != nil {
		errs = append(errs, db.lock.Close())
	}
	return errors.Join(errs...)
}
