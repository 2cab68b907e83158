package storage

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A job's start must be on disk before its request is sent (J3). Committed as the job's row
// moving to active, that was a transaction per dispatch round: at 20,000 small downloads, some
// 12,000 commits, each a few pages of the jobs table and its state index written to the -wal
// file, with every start waiting for the database while the others' commits ran. A start is
// now one record appended to the start log, a file beside the database (path + "-starts"): as
// durable as a commit (in the system's file cache at once; synced too under WithSyncFull). The
// job's row moves to active, its attempt counted, in a transaction once the start is
// startsLinger old (a background write brings one), or at once before any write that needs it
// active; or it moves straight to done with its finish (see applyStarts). Until then it reads
// as queued, and the queries that hand out queued jobs leave it out. The database records the
// last record below which all are applied (setting "starts_applied"), so that opening it after
// a crash applies the records after that one, before it queues the active jobs again (S2).
type startLog struct {
	path string
	sync bool // fsync each append (WithSyncFull)

	mu      sync.Mutex
	f       *os.File
	size    int64
	seq     int64                  // the last record's number
	pending map[int64]pendingStart // job → its start, not yet applied to the jobs table

	applyQueued atomic.Bool // a write that applies the pending starts is queued
}

type pendingStart struct {
	seq, at int64
	logged  time.Time // when it was logged, with the monotonic reading: its age for startsLinger
}

// startRecord is one record of the start log: its number, the job and the start time (unix
// nanoseconds), little-endian.
const startRecord = 24

// startsAppliedKey is the setting that holds the number of the last start record applied.
const startsAppliedKey = "starts_applied"

// startLogCompact is the size past which the log is rewritten with its pending records only.
const startLogCompact = 1 << 20

// openStartLog opens the start log of the database at path and returns it with the records
// that the database has not applied (number above applied), in order.
func openStartLog(path string, applied int64, syncEach bool) (*startLog, []startRec, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real // beside the file itself, as SQLite keeps its -wal, whatever name opened it
	}
	l := &startLog{path: path + "-starts", sync: syncEach, pending: map[int64]pendingStart{}}
	data, err := os.ReadFile(l.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("storage: start log: %w", err)
	}
	l.seq = applied
	var todo []startRec
	for off := 0; off+startRecord <= len(data); off += startRecord { // a torn last record is left out
		r := startRec{
			seq: int64(binary.LittleEndian.Uint64(data[off:])),
			job: int64(binary.LittleEndian.Uint64(data[off+8:])),
			at:  int64(binary.LittleEndian.Uint64(data[off+16:])),
		}
		l.seq = max(l.seq, r.seq)
		if r.seq > applied {
			todo = append(todo, r)
		}
	}
	return l, todo, nil
}

type startRec struct{ seq, job, at int64 }

// reset empties the log once its records are applied, and opens it for appending.
func (l *startLog) reset() error {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("storage: start log: %w", err)
	}
	l.f, l.size = f, 0
	return nil
}

// append logs a start at for each job of ids, and returns which were logged: not one already
// pending, nor one given twice. It returns once the records are written (and synced, under
// WithSyncFull).
func (l *startLog) append(ids []int64, at int64) ([]bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	logged := make([]bool, len(ids))
	buf := make([]byte, 0, startRecord*len(ids))
	seq := l.seq
	var given map[int64]bool // the ids seen so far, for a long list
	if len(ids) > 64 {
		given = make(map[int64]bool, len(ids))
	}
	for i, id := range ids {
		twice := false
		if given != nil {
			twice, given[id] = given[id], true
		} else {
			twice = slices.Contains(ids[:i], id)
		}
		if _, dup := l.pending[id]; dup || id == 0 || twice {
			continue
		}
		seq++
		buf = binary.LittleEndian.AppendUint64(buf, uint64(seq))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(id))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(at))
		logged[i] = true
	}
	if len(buf) == 0 {
		return logged, nil
	}
	if l.f == nil {
		return nil, errors.New("storage: start log is closed")
	}
	if _, err := l.f.WriteAt(buf, l.size); err != nil {
		return nil, fmt.Errorf("storage: start log: %w", err)
	}
	if l.sync {
		if err := l.f.Sync(); err != nil {
			return nil, fmt.Errorf("storage: start log: %w", err)
		}
	}
	l.size += int64(len(buf))
	loggedAt := time.Now()
	for i, id := range ids {
		if logged[i] {
			l.seq++
			l.pending[id] = pendingStart{seq: l.seq, at: at, logged: loggedAt}
		}
	}
	return logged, nil
}

// applyStartsOp is the write that only applies the pending starts.
func applyStartsOp() op {
	return op{name: "apply starts", starts: true, run: func(*wtx) error { return nil }}
}

// hasPending reports whether any start is logged and not yet applied.
func (l *startLog) hasPending() bool {
	if l == nil { // a database opened with OpenReader has no start log
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending) > 0
}

// isPending reports whether job's start is logged and not yet applied.
func (l *startLog) isPending(job int64) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.pending[job]
	return ok
}

// snapshot returns the pending starts, for applyStarts, and the last record's number: every
// record up to it that is not pending was committed before.
func (l *startLog) snapshot() (map[int64]pendingStart, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 {
		return nil, l.seq
	}
	out := make(map[int64]pendingStart, len(l.pending))
	for id, p := range l.pending {
		out[id] = p
	}
	return out, l.seq
}

// applied forgets the starts of done, committed to the jobs table, and empties the log when
// nothing is pending (or rewrites it with what is, once it grew past startLogCompact).
func (l *startLog) applied(done map[int64]pendingStart) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, p := range done {
		if q, ok := l.pending[id]; ok && q.seq == p.seq {
			delete(l.pending, id)
		}
	}
	if l.f == nil {
		return
	}
	switch {
	case len(l.pending) == 0:
		if l.f.Truncate(0) == nil {
			l.size = 0
		}
	case l.size > startLogCompact:
		l.compact()
	}
}

// compact rewrites the log with the pending records only: a new file renamed over it. On
// failure the log stays as it is, which is as correct, only longer.
func (l *startLog) compact() {
	tmp := l.path + ".tmp"
	buf := make([]byte, 0, startRecord*len(l.pending))
	for id, p := range l.pending {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(p.seq))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(id))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(p.at))
	}
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		os.Remove(tmp)
		return
	}
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		os.Remove(tmp)
		return
	}
	if l.sync {
		f.Sync()
	}
	if err := os.Rename(tmp, l.path); err != nil {
		f.Close()
		os.Remove(tmp)
		return
	}
	l.f.Close()
	l.f, l.size = f, int64(len(buf))
}

func (l *startLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if len(l.pending) == 0 {
		os.Remove(l.path) // nothing in it: no file left beside the database
	}
	return err
}

const qApplyStart = `UPDATE jobs SET state = 'active', attempts = attempts + 1, updated_at = ?
	WHERE id = ? AND state = 'queued'`

// foldable tells how the pending starts may be applied in the transaction of ops. In a light
// batch — finishes (FinishJobs) and background writes only (history, host state, progress,
// naming), none of which moves a job between states or needs a started job's row active — the
// start of a job the batch finishes is folded into its finish, and a start younger than
// startsLinger may be left pending for a later commit (see applyStarts). Any other write
// somebody waits for (a pause, a retry, a new job …) makes the batch not light: every pending
// start is applied first, as always, so that such a write finds every started job active.
func foldable(ops []op) (fold map[int64]bool, light bool) {
	for _, o := range ops {
		switch {
		case len(o.finishes) > 0:
			if fold == nil {
				fold = make(map[int64]bool, len(o.finishes))
			}
			for _, id := range o.finishes {
				fold[id] = true
			}
		case o.done != nil || o.requeues:
			return nil, false
		}
	}
	return fold, true
}

// applyFolded applies the folded starts that no finish took (see wtx.folded), in job order.
func applyFolded(w *wtx) error {
	if len(w.folded) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(w.folded))
	for id := range w.folded {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if _, err := w.exec(qApplyStart, w.folded[id], id); err != nil {
			return err
		}
	}
	w.folded = nil
	return nil
}

// applyStarts moves the jobs whose starts are logged and not yet applied to active, counting
// the attempt each started, and records the last record applied, in the open transaction. A
// job that is not queued any more (the person paused or cancelled it meanwhile) keeps its
// state. The start of a job in fold is left to its finish (wtx.folded). In a light batch (see
// foldable) a start younger than startsLinger is left pending, and left reports so: most
// downloads of small files finish before their start is that old, and their start is then
// folded into the finish, one statement instead of two. It returns what it applied or folded,
// for startLog.applied once the transaction committed.
//
// The database's record of the last start applied (startsAppliedKey) is the last record logged
// before the snapshot — every one up to it that is not pending was committed before — or, when a
// start is left, the one before it. Opening the database after a crash then applies the left one
// again, with any after it that were applied or folded: those find their job no longer queued
// and change nothing. A job goes back to queued only in a batch that is not light (a retry, a
// requeue, a resume, Named with Again), and that batch leaves nothing, so its record covers every
// start logged before it.
func applyStarts(w *wtx, fold map[int64]bool, light bool) (applied map[int64]pendingStart, left bool, err error) {
	w.db.starts.applyQueued.Store(false) // before the snapshot: a start after it queues a write
	starts, upTo := w.db.starts.snapshot()
	if len(starts) == 0 {
		return nil, false, nil
	}
	ids := make([]int64, 0, len(starts))
	for id := range starts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	last, firstLeft := int64(0), int64(math.MaxInt64)
	for _, id := range ids {
		p := starts[id]
		switch {
		case fold[id]:
			if w.folded == nil {
				w.folded = make(map[int64]int64, len(fold))
			}
			w.folded[id] = p.at
		case light && time.Since(p.logged) < startsLinger:
			delete(starts, id)
			firstLeft = min(firstLeft, p.seq)
			continue
		default:
			if _, err := w.exec(qApplyStart, p.at, id); err != nil {
				return nil, false, err
			}
		}
		last = max(last, p.seq)
	}
	left = firstLeft != math.MaxInt64
	last = upTo // not just the pending ones applied: a record applied or folded earlier is covered too
	if left {
		last = min(last, firstLeft-1)
	}
	if last > 0 {
		if _, err := w.exec(`INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value
			WHERE CAST(value AS INTEGER) < CAST(excluded.value AS INTEGER)`,
			startsAppliedKey, strconv.FormatInt(last, 10)); err != nil {
			return nil, false, err
		}
	}
	return starts, left, nil
}

// replayStarts applies, in the recovery transaction at Open, the starts a crash left logged
// and not applied: their jobs become active, to be queued again with the others (S2).
func replayStarts(ctx context.Context, tx *sql.Tx, todo []startRec) error {
	last := int64(0)
	for _, r := range todo {
		if _, err := tx.ExecContext(ctx, qApplyStart, r.at, r.job); err != nil {
			return err
		}
		last = max(last, r.seq)
	}
	if last == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, startsAppliedKey, strconv.FormatInt(last, 10))
	return err
}

// readStartsApplied returns the number of the last start record the database applied.
func readStartsApplied(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, startsAppliedKey).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}
