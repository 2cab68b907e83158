package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// State is a job's state (J3).
type State string

// The job states of J3.
const (
	StateQueued    State = "queued"    // waiting for its not-before time and its host
	StateActive    State = "active"    // being downloaded
	StatePaused    State = "paused"    // held by the user
	StateDone      State = "done"      // downloaded, file and SHA-256 recorded
	StateFailed    State = "failed"    // given up; Requeue retries it
	StateCancelled State = "cancelled" // stopped by the user; Requeue retries it
)

// States lists every state, in the order a person reads a job's life.
var States = []State{StateQueued, StateActive, StatePaused, StateDone, StateFailed, StateCancelled}

// Valid reports whether s is one of the six states.
func (s State) Valid() bool {
	for _, x := range States {
		if s == x {
			return true
		}
	}
	return false
}

// Job is one URL to download and where it stands.
type Job struct {
	ID           int64
	URL          string
	Host         string // host key (SPEC §1), computed by the caller
	State        State
	NotBefore    time.Time // a queued job is not started before this; zero = at once
	CreatedAt    time.Time
	UpdatedAt    time.Time
	File         string // final file name, relative to the download folder; set when done
	Part         string // partial file name, relative to the download folder
	ETag         string // validators of the partial file, for If-Range (F5)
	LastModified string
	Size         int64 // expected total size; -1 = unknown
	Bytes        int64 // bytes on disk in Part, or of File when done
	SHA256       string
	Attempts     int // attempts started (MarkActive) that were not throttled (R3); Requeue resets it
	Throttled    int // throttle responses seen
	LastError    string
	LastStatus   int
}

// NewJob is a URL to enqueue.
type NewJob struct {
	URL       string
	Host      string
	NotBefore time.Time
}

// EnqueueItem says what Enqueue did with one input.
type EnqueueItem struct {
	// ID is the job's id: the new row, or the existing one for a duplicate.
	ID int64
	// Duplicate is true when the URL already had a job (J2); nothing was changed.
	Duplicate bool
	// State is the job's state: queued for a new job, the existing state for a duplicate.
	State State
}

// EnqueueResult reports, for each input in order, whether it was queued or a duplicate.
type EnqueueResult struct {
	Items      []EnqueueItem
	Queued     int
	Duplicates int
}

const jobCols = `id, url, host, state, not_before, created_at, updated_at, file, part, etag,
	last_modified, size, bytes, sha256, attempts, throttled, last_error, last_status`

func scanJob(row interface{ Scan(...any) error }) (Job, error) {
	var j Job
	var nb, ca, ua int64
	err := row.Scan(&j.ID, &j.URL, &j.Host, &j.State, &nb, &ca, &ua, &j.File, &j.Part, &j.ETag,
		&j.LastModified, &j.Size, &j.Bytes, &j.SHA256, &j.Attempts, &j.Throttled, &j.LastError, &j.LastStatus)
	j.NotBefore, j.CreatedAt, j.UpdatedAt = fromNanos(nb), fromNanos(ca), fromNanos(ua)
	return j, err
}

// Enqueue adds jobs in one transaction and returns after it committed: every input reported as
// queued survives a crash from then on (S2). A URL that already has a job — in any state, or
// earlier in the same call — is reported as a duplicate with that job's id and state and left
// alone (J2); use Requeue to retry a done, failed or cancelled one. Every URL and Host must be
// non-empty.
func (db *DB) Enqueue(ctx context.Context, jobs []NewJob) (EnqueueResult, error) {
	for i, j := range jobs {
		if j.URL == "" || j.Host == "" {
			return EnqueueResult{}, fmt.Errorf("storage: enqueue: input %d has an empty URL or host", i)
		}
	}
	var res EnqueueResult
	err := db.write(ctx, "enqueue", func(w *wtx) error {
		res = EnqueueResult{Items: make([]EnqueueItem, len(jobs))}
		if rows, ok := enqueueBatch(jobs); ok {
			err := enqueueAtOnce(w, jobs, rows, &res)
			if !errors.Is(err, errOneByOne) {
				return err
			}
		}
		return enqueueEach(w, jobs, &res)
	})
	if err != nil {
		return EnqueueResult{}, err
	}
	return res, nil
}

// enqueueEach is Enqueue's transaction one statement a job, for a batch enqueueBatch cannot write
// or enqueueAtOnce cannot insert.
func enqueueEach(w *wtx, jobs []NewJob, res *EnqueueResult) error {
	ins, err := w.stmt(qEnqueueEach)
	if err != nil {
		return err
	}
	sel, err := w.stmt(qJobByURL)
	if err != nil {
		return err
	}
	now := nanos(w.db.now())
	for i, j := range jobs {
		r, err := ins.Exec(j.URL, j.Host, nanos(j.NotBefore), now, now)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 1 {
			id, _ := r.LastInsertId()
			res.created(w, i, id, j, now)
			continue
		}
		if err := res.duplicate(sel, i, j.URL); err != nil {
			return err
		}
	}
	return nil
}

// created reports input i as queued, the new job id, and keeps the job for its start (see
// freshJobs).
func (res *EnqueueResult) created(w *wtx, i int, id int64, j NewJob, now int64) {
	res.Items[i] = EnqueueItem{ID: id, State: StateQueued}
	res.Queued++
	w.created(id, freshJob{url: j.URL, host: j.Host, notBefore: nanos(j.NotBefore), created: now})
}

// duplicate reports input i as a duplicate of the job url has, read with sel (qJobByURL).
func (res *EnqueueResult) duplicate(sel *sql.Stmt, i int, url string) error {
	it := &res.Items[i]
	if err := sel.QueryRow(url).Scan(&it.ID, &it.State); err != nil {
		return err
	}
	it.Duplicate = true
	res.Duplicates++
	return nil
}

// errOneByOne is enqueueAtOnce's answer when the batch must be inserted one job at a time: its
// ids would not follow the largest before it, or SQLite refused it as too long (see batch). It
// comes before anything is inserted or reported in the result.
var errOneByOne = errors.New("storage: enqueue one job at a time")

// enqueueBatch writes jobs as a batch of [url, host, not_before] for enqueueAtOnce, or reports
// false when one of them must be inserted on its own (see batch).
func enqueueBatch(jobs []NewJob) (string, bool) {
	var bt batch
	for _, j := range jobs {
		bt.row()
		bt.str(j.URL)
		bt.str(j.Host)
		bt.int(nanos(j.NotBefore))
		bt.end()
		if bt.bad {
			return "", false // not the rest of a long paste for nothing
		}
	}
	return bt.json()
}

// qEnqueueEach inserts one job, if its URL has none.
const qEnqueueEach = `INSERT INTO jobs (url, host, state, not_before, created_at, updated_at)
	VALUES (?, ?, 'queued', ?, ?, ?) ON CONFLICT (url) DO NOTHING`

// qJobByURL is the id and state of the job of a URL that has one.
const qJobByURL = `SELECT id, state FROM jobs WHERE url = ?`

// qEnqueueAtOnce inserts the jobs of a batch enqueueBatch wrote that have no job yet, in one
// statement, in the order given.
const qEnqueueAtOnce = `INSERT INTO jobs (url, host, state, not_before, created_at, updated_at)
	SELECT value ->> 0, value ->> 1, 'queued', value ->> 2, ?1, ?1 FROM jsonb_each(jsonb(?2)) WHERE true
	ORDER BY key ON CONFLICT (url) DO NOTHING`

// qJobsAfter lists the jobs created after id, for enqueueAtOnce.
const qJobsAfter = `SELECT id, url FROM jobs WHERE id > ? ORDER BY id`

// enqueueAtOnce is Enqueue's transaction for a batch enqueueBatch wrote: SQLite inserts every
// job in one statement instead of one statement a job (see batch). A new job's id is one more
// than the largest before it: when every job was new, the ids run on from the largest before
// the batch in the order given, and are not read back one by one.
func enqueueAtOnce(w *wtx, jobs []NewJob, batch string, res *EnqueueResult) error {
	now := nanos(w.db.now())
	last, err := w.stmt(`SELECT ifnull(max(id), 0) FROM jobs`)
	if err != nil {
		return err
	}
	var before int64
	if err := last.QueryRow().Scan(&before); err != nil {
		return err
	}
	if before > math.MaxInt64-int64(len(jobs)) {
		// SQLite would give some new rows random ids, below before: neither the ids
		// before+1… nor the rows after before would be the new jobs.
		return errOneByOne
	}
	r, err := w.exec(qEnqueueAtOnce, now, batch)
	if tooBig(err) {
		return errOneByOne // the statement failed as a whole: nothing was inserted
	}
	if err != nil {
		return err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return err
	}
	end, err := r.LastInsertId()
	if err != nil {
		return err
	}
	if n == int64(len(jobs)) && end == before+n {
		for i, j := range jobs {
			res.created(w, i, before+1+int64(i), j, now)
		}
		return nil
	}
	created := make(map[string]int64, n)
	if n > 0 {
		s, err := w.stmt(qJobsAfter)
		if err != nil {
			return err
		}
		rows, err := s.Query(before)
		if err != nil {
			return err
		}
		for rows.Next() {
			var (
				id  int64
				url sql.RawBytes
			)
			if err := rows.Scan(&id, &url); err != nil {
				rows.Close()
				return err
			}
			created[string(url)] = id
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	sel, err := w.stmt(qJobByURL)
	if err != nil {
		return err
	}
	for i, j := range jobs {
		if id, ok := created[j.URL]; ok {
			delete(created, j.URL) // the same URL given again is its duplicate
			res.created(w, i, id, j, now)
			continue
		}
		if err := res.duplicate(sel, i, j.URL); err != nil {
			return err
		}
	}
	return nil
}

// Requeue queues done, failed and cancelled jobs again on the user's explicit request (J2), due
// at once, with a fresh attempt budget (attempts, throttled and the last error cleared). The
// previous final file and SHA-256 are forgotten; a partial file and its validators are kept
// for resume. It returns the ids that moved; others are left alone.
func (db *DB) Requeue(ctx context.Context, ids []int64) ([]int64, error) {
	var moved []int64
	err := db.write(ctx, "requeue", func(w *wtx) error {
		moved = moved[:0]
		now := nanos(db.now())
		for _, id := range ids {
			r, err := w.exec(`UPDATE jobs SET state = 'queued', not_before = ?, updated_at = ?,
				attempts = 0, throttled = 0, last_error = '', last_status = 0, file = '', sha256 = '',
				bytes = CASE WHEN part = '' THEN 0 ELSE bytes END
				WHERE id = ? AND state IN ('done', 'failed', 'cancelled')`, now, now, id)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 1 {
				moved = append(moved, id)
				// A download fetched again no longer waits for its old name.
				if _, err := w.exec(`DELETE FROM naming WHERE job_id = ?`, id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return moved, err
}

// transition runs one guarded UPDATE of job id, committed before it returns. If no row matched,
// it tells apart a missing job (ErrNotFound) from one in the wrong state (ErrStateConflict).
func (db *DB) transition(ctx context.Context, name string, id int64, query string, args ...any) error {
	return db.write(ctx, name, func(w *wtx) error {
		r, err := w.exec(query, args...)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 1 {
			return nil
		}
		return whyNot(w, id)
	})
}

// whyNot explains a guarded UPDATE of job id that matched no row: the job
// does not exist (ErrNotFound) or is in another state (ErrStateConflict).
func whyNot(w *wtx, id int64) error {
	q, err := w.stmt(`SELECT state FROM jobs WHERE id = ?`)
	if err != nil {
		return err
	}
	var st State
	err = q.QueryRow(id).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("job %d is %s: %w", id, st, ErrStateConflict)
}

// MarkActive moves a queued job to active and counts the attempt it starts; it returns the
// attempt number (1 for the first). It commits before returning, so the caller starts the
// download only once that is on disk (J3). A job that is not queued — paused or cancelled by the
// user meanwhile — gives ErrStateConflict.
func (db *DB) MarkActive(ctx context.Context, id int64) (attempt int, err error) {
	j, err := db.StartJob(ctx, id)
	return j.Attempts, err
}

const qStartJob = `UPDATE jobs SET state = 'active', attempts = attempts + 1, updated_at = ?
	WHERE id = ? AND state = 'queued' RETURNING ` + jobCols

// StartJob is MarkActive returning the whole job as it stands once active, so the caller needs no
// second read before it starts the download.
func (db *DB) StartJob(ctx context.Context, id int64) (Job, error) {
	var j Job
	err := db.write(ctx, "mark active", func(w *wtx) error {
		st, err := w.stmt(qStartJob)
		if err != nil {
			return err
		}
		if db.starts.isPending(id) {
			return fmt.Errorf("job %d is active: %w", id, ErrStateConflict)
		}
		w.forget(id)
		j, err = scanJob(st.QueryRow(nanos(db.now()), id))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return whyNot(w, id)
	})
	if err != nil {
		return Job{}, err
	}
	return j, nil
}

// StartJobs is StartJob for several jobs, without a commit: each start is appended to the start
// log, and on disk when StartJobs returns (see startLog). The result is aligned with ids; a job
// that is not queued (paused or cancelled meanwhile, started already, or unknown) has a zero ID
// in its slot. The jobs are returned as they stand once active. Their rows read as queued until
// a commit about startsLinger later, or until their finish (see applyStarts).
func (db *DB) StartJobs(ctx context.Context, ids []int64) ([]Job, error) {
	if db.reader {
		return nil, ErrReadOnly
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return nil, ErrClosed
	}
	db.startMu.RLock() // the state read and the log append, against a pause's transaction
	jobs := make([]Job, len(ids))
	startable := make([]int64, len(ids))
	for i, id := range ids {
		if db.starts.isPending(id) {
			continue
		}
		if j, ok := db.fresh.take(id); ok {
			jobs[i], startable[i] = j, id
			continue
		}
		j, err := scanJob(db.rJob.QueryRowContext(ctx, id))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			db.startMu.RUnlock()
			return nil, fmt.Errorf("storage: start jobs: %w", err)
		case j.State != StateQueued:
			continue
		}
		jobs[i], startable[i] = j, id
	}
	now := db.now()
	logged, err := db.starts.append(startable, nanos(now))
	db.startMu.RUnlock()
	if err != nil {
		return nil, err
	}
	for i := range jobs {
		if !logged[i] {
			jobs[i] = Job{}
			continue
		}
		jobs[i].State, jobs[i].Attempts, jobs[i].UpdatedAt = StateActive, jobs[i].Attempts+1, fromNanos(nanos(now))
	}
	if db.starts.applyQueued.CompareAndSwap(false, true) {
		db.ops <- applyStartsOp()
	}
	return jobs, nil
}

// Finish is one completed download: its attempt for history and its file.
type Finish struct {
	Attempt Attempt
	Done    Done
}

// FinishJobs records each attempt (S3) and marks each job done, in one commit, before it returns
// (J3). The result is aligned with fs: a job that is not active any more (the person paused or
// cancelled it while its file was being finished) keeps its state and gets ErrStateConflict,
// its attempt recorded all the same and its complete part (Done.Part) recorded for a resume. The
// error is the write's, for all of them.
func (db *DB) FinishJobs(ctx context.Context, fs []Finish) ([]error, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	errs := make([]error, len(fs))
	ids := make([]int64, len(fs))
	for i, f := range fs {
		ids[i] = f.Attempt.JobID
	}
	err := db.submit(ctx, op{ctx: ctx, name: "mark done", done: make(chan error, 1), finishes: ids, run: func(w *wtx) error {
		now := nanos(db.now())
		for i, f := range fs {
			errs[i] = nil
			if err := insertAttempt(w, f.Attempt); err != nil {
				return err
			}
			n, err := markDone(w, f, now)
			if err != nil {
				return err
			}
			if n != 1 {
				errs[i] = whyNot(w, f.Attempt.JobID)
				if d := f.Done; d.Part != "" && errors.Is(errs[i], ErrStateConflict) {
					// Paused or cancelled meanwhile: its complete part is kept for a resume.
					p := Progress{Part: d.Part, Bytes: d.Bytes, Size: d.Size, ETag: d.ETag, LastModified: d.LastModified}
					if err := saveProgress(db, f.Attempt.JobID, p)(w); err != nil {
						return err
					}
				}
				continue
			}
			if f.Done.Part != "" || f.Done.Held {
				if _, err := w.exec(`INSERT OR REPLACE INTO naming (job_id, part) VALUES (?, ?)`,
					f.Attempt.JobID, f.Done.Part); err != nil {
					return err
				}
			}
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// markDone moves f's job from active to done and returns the rows it changed. A job whose start
// this transaction folded (wtx.folded) still reads as queued: it moves from queued to done, its
// attempt counted, in one statement; if it is not queued, its start is applied as usual first.
func markDone(w *wtx, f Finish, now int64) (int64, error) {
	id := f.Attempt.JobID
	if at, ok := w.folded[id]; ok {
		delete(w.folded, id)
		r, err := w.exec(qMarkDoneFolded, f.Done.File, f.Done.Bytes, f.Done.SHA256, f.Done.Status, now, id)
		if err != nil {
			return 0, err
		}
		if n, _ := r.RowsAffected(); n == 1 {
			w.db.folds.Add(1)
			return 1, nil
		}
		if _, err := w.exec(qApplyStart, at, id); err != nil {
			return 0, err
		}
	}
	r, err := w.exec(qMarkDone, f.Done.File, f.Done.Bytes, f.Done.SHA256, f.Done.Status, now, id)
	if err != nil {
		return 0, err
	}
	n, _ := r.RowsAffected()
	return n, nil
}

// Unnamed is a download recorded done whose part may not have its final name yet.
type Unnamed struct {
	JobID  int64
	Part   string // the complete part; "" for a download held in a file with no name
	File   string // the final name recorded for it
	Bytes  int64
	SHA256 string
}

// Unnamed returns the downloads FinishJobs listed as unnamed and Named has not cleared, by job
// id: a crash came between the commit and the renaming of their parts.
func (db *DB) Unnamed(ctx context.Context) ([]Unnamed, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT n.job_id, n.part, j.file, j.bytes, j.sha256
		FROM naming n JOIN jobs j ON j.id = n.job_id ORDER BY n.job_id`)
	if err != nil {
		return nil, fmt.Errorf("storage: unnamed downloads: %w", err)
	}
	defer rows.Close()
	var us []Unnamed
	for rows.Next() {
		var u Unnamed
		if err := rows.Scan(&u.JobID, &u.Part, &u.File, &u.Bytes, &u.SHA256); err != nil {
			return nil, fmt.Errorf("storage: unnamed downloads: %w", err)
		}
		us = append(us, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: unnamed downloads: %w", err)
	}
	return us, nil
}

// Interrupted is a job that Open found active after a crash and queued again.
type Interrupted struct {
	JobID int64
	// Folder is the download folder of the run the crash cut off: the setting "run_folder" at
	// the time, "" if it was not set.
	Folder string
}

// Interrupted returns the jobs that Open found active after a crash and queued again, by id, until
// ClearInterrupted clears them: a download run in their folder looks for the parts they left.
func (db *DB) Interrupted(ctx context.Context) ([]Interrupted, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT job_id, folder FROM interrupted ORDER BY job_id`)
	if err != nil {
		return nil, fmt.Errorf("storage: interrupted jobs: %w", err)
	}
	defer rows.Close()
	var out []Interrupted
	for rows.Next() {
		var it Interrupted
		if err := rows.Scan(&it.JobID, &it.Folder); err != nil {
			return nil, fmt.Errorf("storage: interrupted jobs: %w", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: interrupted jobs: %w", err)
	}
	return out, nil
}

// ClearInterrupted takes ids off the list Interrupted returns, and returns after the commit.
func (db *DB) ClearInterrupted(ctx context.Context, ids []int64) error {
	return db.write(ctx, "clear interrupted", func(w *wtx) error {
		for _, id := range ids {
			if _, err := w.exec(`DELETE FROM interrupted WHERE job_id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// Named says how a download listed as unnamed got its final name.
type Named struct {
	JobID int64
	// File, if set, is the name the part took instead of the one recorded, which was taken
	// meanwhile; the job's file becomes File.
	File string
	// Err, if set, is why the part got no name: the job (if still done) fails with this reason,
	// its part kept for a later resume.
	Err string
	// Lost, with Err, says the download was found nowhere: the job (if still done) fails with
	// Err and keeps no part, since its part name may hold another download's bytes.
	Lost bool
	// Again says the download, held in a file with no name (Done.Held), went with a crash
	// before it had its name: the job (if still done) is queued again, due at once, as a job
	// the crash found active would be.
	Again bool
}

// Named clears downloads listed as unnamed, committed with the next batch (S5): it returns at
// once, and Flush reports its error.
func (db *DB) Named(ns []Named) error {
	if len(ns) == 0 {
		return nil
	}
	again := slices.ContainsFunc(ns, func(n Named) bool { return n.Again })
	return db.submit(nil, op{name: "named", requeues: again, run: func(w *wtx) error {
		now := nanos(db.now())
		ids := make([]any, 0, len(ns))
		for _, n := range ns {
			ids = append(ids, n.JobID)
			var err error
			switch {
			case n.Again:
				_, err = w.exec(`UPDATE jobs SET state = 'queued', not_before = ?, updated_at = ?, file = '',
					sha256 = '', bytes = 0, part = '' WHERE id = ? AND state = 'done'`, now, now, n.JobID)
			case n.Err != "" && n.Lost:
				_, err = w.exec(`UPDATE jobs SET state = 'failed', file = '', part = '', last_error = ?,
					updated_at = ? WHERE id = ? AND state = 'done'`, n.Err, now, n.JobID)
			case n.Err != "":
				_, err = w.exec(`UPDATE jobs SET state = 'failed', file = '', last_error = ?, updated_at = ?,
					part = (SELECT part FROM naming WHERE job_id = ?) WHERE id = ? AND state = 'done'
					AND EXISTS (SELECT 1 FROM naming WHERE job_id = ?)`, n.Err, now, n.JobID, n.JobID, n.JobID)
			case n.File != "":
				_, err = w.exec(`UPDATE jobs SET file = ?, updated_at = ? WHERE id = ? AND state = 'done'`,
					n.File, now, n.JobID)
			}
			if err != nil {
				return err
			}
		}
		// Cleared a chunk at a time: one statement for many rows costs SQLite the same and Go
		// a call, not one each.
		for len(ids) > 0 {
			k := min(len(ids), namedChunk)
			q := `DELETE FROM naming WHERE job_id IN (?` + strings.Repeat(",?", k-1) + `)`
			if k < namedChunk {
				if _, err := w.db.wc.ExecContext(context.Background(), q, ids[:k]...); err != nil {
					return err
				}
			} else if _, err := w.exec(q, ids[:k]...); err != nil {
				return err
			}
			ids = ids[k:]
		}
		return nil
	}})
}

// namedChunk is how many downloads Named clears with one statement.
const namedChunk = 256

// Retry describes why an active job goes back to the queue and when it may run again.
type Retry struct {
	NotBefore time.Time // earliest next start (retry delay, Retry-After)
	Err       string    // what went wrong, shown to the user
	Status    int       // last HTTP status, 0 if none
	// Throttled: the response was a throttle response. It counts in Job.Throttled and gives back
	// the attempt MarkActive counted: throttles use no attempt (R3).
	Throttled bool
	// Progress, if set, is saved in the same commit: what is on disk for the resume.
	Progress *Progress
}

// MarkQueued moves an active job back to queued, to be retried not before r.NotBefore.
// A job that is not active gives ErrStateConflict.
func (db *DB) MarkQueued(ctx context.Context, id int64, r Retry) error {
	thr := 0
	if r.Throttled {
		thr = 1
	}
	if p := r.Progress; p != nil {
		return db.transition(ctx, "mark queued", id, `UPDATE jobs SET state = 'queued', not_before = ?,
			last_error = ?, last_status = ?, throttled = throttled + ?, attempts = attempts - ?, updated_at = ?,
			part = ?, bytes = ?, size = ?, etag = ?, last_modified = ?
			WHERE id = ? AND state = 'active'`, nanos(r.NotBefore), r.Err, r.Status, thr, thr, nanos(db.now()),
			p.Part, p.Bytes, p.Size, p.ETag, p.LastModified, id)
	}
	return db.transition(ctx, "mark queued", id, `UPDATE jobs SET state = 'queued', not_before = ?,
		last_error = ?, last_status = ?, throttled = throttled + ?, attempts = attempts - ?, updated_at = ?
		WHERE id = ? AND state = 'active'`, nanos(r.NotBefore), r.Err, r.Status, thr, thr, nanos(db.now()), id)
}

// Done describes a completed download.
type Done struct {
	File   string // final name, relative to the download folder
	Bytes  int64
	SHA256 string // hex (F7)
	Status int
	// Part, if set, is the complete part that is yet to take the name File: FinishJobs lists it
	// as unnamed (see Unnamed) until Named clears it. Size, ETag and LastModified are its resume
	// state, recorded instead if the job is no longer active.
	Part         string
	Size         int64
	ETag         string
	LastModified string
	// Held says the download is in a file with no name, not in a part: FinishJobs lists it as
	// unnamed, with no part, until Named clears it. A crash in between takes its bytes with it
	// unless it had its name (Named with Again then queues its job again).
	Held bool
}

// MarkDone records an active job's completed file. The partial name is cleared, since the
// partial file became File. A job that is not active gives ErrStateConflict.
func (db *DB) MarkDone(ctx context.Context, id int64, d Done) error {
	return db.transition(ctx, "mark done", id, qMarkDone, d.File, d.Bytes, d.SHA256, d.Status, nanos(db.now()), id)
}

const qMarkDone = `UPDATE jobs SET state = 'done', file = ?, part = '', bytes = ?, sha256 = ?,
	last_status = ?, last_error = '', updated_at = ? WHERE id = ? AND state = 'active'`

// qMarkDoneFolded is qApplyStart and qMarkDone in one (see markDone).
const qMarkDoneFolded = `UPDATE jobs SET state = 'done', attempts = attempts + 1, file = ?, part = '', bytes = ?,
	sha256 = ?, last_status = ?, last_error = '', updated_at = ? WHERE id = ? AND state = 'queued'`

// MarkFailed gives up on an active job with reason. Its partial file is kept, so a Requeue can
// resume it. A job that is not active gives ErrStateConflict.
func (db *DB) MarkFailed(ctx context.Context, id int64, reason string, status int) error {
	return db.transition(ctx, "mark failed", id, `UPDATE jobs SET state = 'failed', last_error = ?,
		last_status = ?, updated_at = ? WHERE id = ? AND state = 'active'`, reason, status, nanos(db.now()), id)
}

// Progress is what is on disk of a download in progress.
type Progress struct {
	Part         string // partial file name, relative to the download folder
	Bytes        int64  // bytes in Part
	Size         int64  // expected total; -1 = unknown
	ETag         string
	LastModified string
}

// SaveProgress records a job's partial file, byte count and validators, for resume after a crash
// (F5, S2). It works in any state and commits before returning.
func (db *DB) SaveProgress(ctx context.Context, id int64, p Progress) error {
	return db.write(ctx, "save progress", saveProgress(db, id, p))
}

// QueueProgress is SaveProgress committed with the next batch (S5): it returns at once, and a job
// transition made after it is committed after it. Flush reports its error.
func (db *DB) QueueProgress(id int64, p Progress) error {
	return db.queue("save progress", saveProgress(db, id, p))
}

func saveProgress(db *DB, id int64, p Progress) func(*wtx) error {
	return func(w *wtx) error {
		w.forget(id)
		r, err := w.exec(`UPDATE jobs SET part = ?, bytes = ?, size = ?, etag = ?, last_modified = ?,
			updated_at = ? WHERE id = ?`, p.Part, p.Bytes, p.Size, p.ETag, p.LastModified, nanos(db.now()), id)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return fmt.Errorf("job %d: %w", id, ErrNotFound)
		}
		return nil
	}
}

// SetJobState applies a user action to jobs, committed before it returns:
//
//	StatePaused     pause:  queued or active → paused
//	StateQueued     resume: paused → queued
//	StateCancelled  cancel: queued, active or paused → cancelled
//
// Jobs in other states are left alone. It returns the ids that changed, in input order; the
// caller stops the downloads of those that were active.
func (db *DB) SetJobState(ctx context.Context, ids []int64, to State) ([]int64, error) {
	var from string
	switch to {
	case StatePaused:
		from = `'queued', 'active'`
	case StateQueued:
		from = `'paused'`
	case StateCancelled:
		from = `'queued', 'active', 'paused'`
	default:
		return nil, fmt.Errorf("storage: SetJobState: cannot move jobs to %q by hand", to)
	}
	q := `UPDATE jobs SET state = ?, updated_at = ? WHERE id = ? AND state IN (` + from + `)`
	var changed []int64
	err := db.submit(ctx, op{ctx: ctx, name: "set job state", done: make(chan error, 1), unqueues: to != StateQueued, run: func(w *wtx) error {
		changed = changed[:0]
		now := nanos(db.now())
		for _, id := range ids {
			w.forget(id) // under startMu when it pauses or cancels: no start takes the job meanwhile
			r, err := w.exec(q, string(to), now, id)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 1 {
				changed = append(changed, id)
			}
		}
		return nil
	}})
	return changed, err
}

// Job returns the job with id, or ErrNotFound.
func (db *DB) Job(ctx context.Context, id int64) (Job, error) {
	j, err := scanJob(db.r.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return j, err
}

// JobByURL returns the job for url, or ErrNotFound.
func (db *DB) JobByURL(ctx context.Context, url string) (Job, error) {
	j, err := scanJob(db.r.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE url = ?`, url))
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, fmt.Errorf("job for %s: %w", url, ErrNotFound)
	}
	return j, err
}

// JobIDsByURL returns the ids of the jobs of urls, in input order; URLs without a job are
// skipped.
func (db *DB) JobIDsByURL(ctx context.Context, urls []string) ([]int64, error) {
	conn, err := db.r.Conn(ctx) // one connection, one prepared statement for all URLs
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	st, err := conn.PrepareContext(ctx, `SELECT id FROM jobs WHERE url = ?`)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var ids []int64
	for _, u := range urls {
		var id int64
		err := st.QueryRowContext(ctx, u).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// JobFilter selects jobs. Zero fields do not filter.
type JobFilter struct {
	State   State
	Host    string
	AfterID int64 // keyset paging: only jobs with a larger id
	Limit   int   // 0 = no limit
}

func (f JobFilter) query(cols string) (string, []any) {
	var where []string
	var args []any
	if f.State != "" {
		// Walk the primary key from AfterID, or a host's jobs in jobs_host, and filter ("+" keeps
		// SQLite off the state index, which would sort every job in that state for each page).
		where, args = append(where, "+state = ?"), append(args, string(f.State))
	}
	if f.Host != "" {
		where, args = append(where, "host = ?"), append(args, f.Host)
	}
	if f.AfterID > 0 {
		where, args = append(where, "id > ?"), append(args, f.AfterID)
	}
	q := `SELECT ` + cols + ` FROM jobs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	return q, args
}

// JobsPage returns the jobs matching f in id order. Pass the last id as AfterID for the next page.
func (db *DB) JobsPage(ctx context.Context, f JobFilter) ([]Job, error) {
	var jobs []Job
	err := db.forEachJob(ctx, f, func(j Job) error { jobs = append(jobs, j); return nil })
	return jobs, err
}

func (db *DB) forEachJob(ctx context.Context, f JobFilter, fn func(Job) error) error {
	q, args := f.query(jobCols)
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return err
		}
		if err := fn(j); err != nil {
			return err
		}
	}
	return rows.Err()
}

// The scheduler's and the window's queries; TestQueryPlans_IndexesForScale holds their plans.
// jobs_state_host_due leaves out done jobs (schema v3): a query that uses it says so
// (state <> 'done'), which is how SQLite knows the partial index covers it.
const (
	qHostDueJobs = `SELECT id, host, not_before FROM jobs INDEXED BY jobs_state_host_due
		WHERE state = 'queued' AND state <> 'done' AND host = ? ORDER BY not_before, id LIMIT ?`
	qForEachQueued = `SELECT id, host, not_before FROM jobs
		WHERE state = 'queued' AND state <> 'done' ORDER BY host, not_before, id`
	// The counts of every state but done, and the total (state ''), in one snapshot: done is the
	// total less the others.
	qCountsByState = `SELECT state, count(*) FROM jobs WHERE state <> 'done' GROUP BY state
		UNION ALL SELECT '', count(*) FROM jobs`
	qCountsByHost = `SELECT host, state, count(*) FROM jobs WHERE state <> 'done' GROUP BY state, host
		UNION ALL SELECT host, '', count(*) FROM jobs GROUP BY host`
	qRecover   = `UPDATE jobs SET state = 'queued', updated_at = ? WHERE state = 'active' AND state <> 'done'`
	qInterrupt = `INSERT OR IGNORE INTO interrupted (job_id, folder)
		SELECT id, coalesce((SELECT value FROM settings WHERE key = 'run_folder'), '')
		FROM jobs WHERE state = 'active' AND state <> 'done'`
)

// DueJob is a queued job as the scheduler needs it.
type DueJob struct {
	ID        int64
	Host      string
	NotBefore time.Time
}

// HostDueJobs returns up to limit queued jobs of host, soonest not-before first.
func (db *DB) HostDueJobs(ctx context.Context, host string, limit int) ([]DueJob, error) {
	return db.dueJobs(ctx, qHostDueJobs, host, limit)
}

func (db *DB) dueJobs(ctx context.Context, q string, args ...any) ([]DueJob, error) {
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []DueJob
	started := db.starts.hasPending()
	for rows.Next() {
		var d DueJob
		var nb int64
		if err := rows.Scan(&d.ID, &d.Host, &nb); err != nil {
			return nil, err
		}
		if started && db.starts.isPending(d.ID) {
			continue // started: its row is yet to say so
		}
		d.NotBefore = fromNanos(nb)
		out = append(out, d)
	}
	return out, rows.Err()
}

// ForEachQueued streams every queued job to fn, ordered by host and then not-before, for the
// engine to load its queues at start. It reads from one snapshot; an error from fn stops the
// walk and is returned.
func (db *DB) ForEachQueued(ctx context.Context, fn func(id int64, host string, notBefore time.Time) error) error {
	rows, err := db.r.QueryContext(ctx, qForEachQueued)
	if err != nil {
		return err
	}
	defer rows.Close()
	var id, nb int64
	var host string
	started := db.starts.hasPending()
	for rows.Next() {
		if err := rows.Scan(&id, &host, &nb); err != nil {
			return err
		}
		if started && db.starts.isPending(id) {
			continue // started: its row is yet to say so
		}
		if err := fn(id, host, fromNanos(nb)); err != nil {
			return err
		}
	}
	return rows.Err()
}

// CountsByState returns how many jobs are in each state; states with no jobs are absent.
func (db *DB) CountsByState(ctx context.Context) (map[State]int64, error) {
	rows, err := db.r.QueryContext(ctx, qCountsByState)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[State]int64)
	var total, others int64
	for rows.Next() {
		var s State
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		if s == "" {
			total = n
			continue
		}
		out[s] = n
		others += n
	}
	if done := total - others; done > 0 {
		out[StateDone] = done
	}
	return out, rows.Err()
}

// CountsByHost returns, per host, how many of its jobs are in each state; states with no jobs
// are absent.
func (db *DB) CountsByHost(ctx context.Context) (map[string]map[State]int64, error) {
	rows, err := db.r.QueryContext(ctx, qCountsByHost)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]map[State]int64)
	totals := make(map[string]int64)
	for rows.Next() {
		var h string
		var s State
		var n int64
		if err := rows.Scan(&h, &s, &n); err != nil {
			return nil, err
		}
		if s == "" {
			totals[h] = n
			continue
		}
		m := out[h]
		if m == nil {
			m = make(map[State]int64)
			out[h] = m
		}
		m[s] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for h, total := range totals {
		done := total
		for _, n := range out[h] {
			done -= n
		}
		if done > 0 {
			if out[h] == nil {
				out[h] = make(map[State]int64)
			}
			out[h][StateDone] = done
		}
	}
	return out, nil
}
