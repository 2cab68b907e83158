package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"heed/engine"
)

// jobCols are the columns scanJob reads, in its order.
const jobCols = `id, url, host, state, not_before, created_at, updated_at, attempts, throttled, part, bytes, size,
	etag, last_modified, name, file, sha256, last_error, last_status, crawl_id, depth, found_on, kind`

type scanner interface{ Scan(...any) error }

func scanJob(s scanner) (engine.Job, error) {
	var j engine.Job
	var state, kind string
	var nb, created, updated int64
	err := s.Scan(&j.ID, &j.URL, &j.Host, &state, &nb, &created, &updated, &j.Attempts, &j.Throttled, &j.Part,
		&j.Bytes, &j.Size, &j.ETag, &j.LastModified, &j.Name, &j.File, &j.SHA256, &j.LastError, &j.LastStatus,
		&j.CrawlID, &j.Depth, &j.FoundOn, &kind)
	j.State, j.Kind = engine.JobState(state), engine.JobKind(kind)
	j.NotBefore, j.CreatedAt, j.UpdatedAt = fromNanos(nb), fromNanos(created), fromNanos(updated)
	return j, err
}

// Enqueue adds the URLs whose key has no job yet, queued at once, and reports, in input order,
// what it did with each (J2); a duplicate whose job has ended and whose id is below againBelow is
// queued again with a fresh attempt budget (R5). It returns after the commit (S2).
func (db *DB) Enqueue(ctx context.Context, jobs []engine.NewJob, againBelow int64) ([]engine.Enqueued, error) {
	out := make([]engine.Enqueued, len(jobs))
	err := db.write(ctx, "enqueue", func(w *wtx) error {
		now := db.now()
		ids, err := insertJobs(w, jobs, now)
		if err != nil {
			return err
		}
		for i, j := range jobs {
			if id, ok := ids[j.Key]; ok && id > 0 {
				out[i] = engine.Enqueued{ID: id, State: engine.JobQueued, NotBefore: now}
				ids[j.Key] = -id // a second place of the key in jobs is its duplicate
				continue
			}
			var id int64
			var state string
			var nb int64
			if err := w.queryRow(`SELECT id, state, not_before FROM jobs WHERE key = ?`, j.Key).Scan(&id, &state, &nb); err != nil {
				return err
			}
			out[i] = engine.Enqueued{ID: id, Duplicate: true, State: engine.JobState(state), NotBefore: fromNanos(nb)}
			if id < againBelow && out[i].State.Ended() {
				if _, err := w.exec(qRequeue, nanos(now), nanos(now), id); err != nil {
					return err
				}
				out[i].Again, out[i].NotBefore = true, now
			}
		}
		return nil
	})
	return out, err
}

// insertChunk is how many jobs one INSERT adds.
const insertChunk = 128

// insertJobs adds the jobs whose key has no row yet — queued, or skipped
// with the reason NewJob.Skip gives — a chunk of rows a statement, and counts
// them in their hosts' rows, once per host and state (the trigger counts
// only changes of state). It returns the ids of the rows it added, by key.
func insertJobs(w *wtx, jobs []engine.NewJob, now time.Time) (map[string]int64, error) {
	ids := make(map[string]int64, len(jobs))
	type hostState struct {
		host  string
		state engine.JobState
	}
	added := map[hostState]int64{}
	t := nanos(now)
	for len(jobs) > 0 {
		chunk := jobs[:min(len(jobs), insertChunk)]
		jobs = jobs[len(chunk):]
		args := make([]any, 0, 11*len(chunk))
		for _, j := range chunk {
			state := engine.JobQueued
			if j.Skip != "" {
				state = engine.JobSkipped
			}
			args = append(args, j.URL, j.Key, j.Host, string(state), t, t, t, j.Skip, j.CrawlID, j.Depth, j.FoundOn, string(j.Kind))
		}
		row := "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		s, err := w.stmt(`INSERT INTO jobs (url, key, host, state, not_before, created_at, updated_at, last_error,
			crawl_id, depth, found_on, kind) VALUES ` + strings.Repeat(row+", ", len(chunk)-1) + row + `
			ON CONFLICT (key) DO NOTHING RETURNING id, key, host, state`)
		if err != nil {
			return nil, err
		}
		rows, err := s.Query(args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var key, host, state string
			if err := rows.Scan(&id, &key, &host, &state); err != nil {
				rows.Close()
				return nil, err
			}
			ids[key] = id
			added[hostState{host, engine.JobState(state)}]++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	for hs, n := range added {
		col := "queued"
		if hs.state == engine.JobSkipped {
			col = "skipped"
		}
		if _, err := w.exec(`INSERT INTO hosts (host, `+col+`) VALUES (?, ?)
			ON CONFLICT (host) DO UPDATE SET `+col+` = `+col+` + excluded.`+col, hs.host, n); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// qRequeue queues an ended job again, due at once, with a fresh attempt budget (attempts,
// throttled and the last error cleared). The previous final file and SHA-256 are forgotten; a
// partial file and its validators are kept for resume.
const qRequeue = `UPDATE jobs SET state = 'queued', not_before = ?, updated_at = ?,
	attempts = 0, throttled = 0, last_error = '', last_status = 0, file = '', sha256 = '',
	bytes = CASE WHEN part = '' THEN 0 ELSE bytes END
	WHERE id = ? AND state IN ('done', 'failed', 'cancelled', 'skipped')`

// SetState moves the jobs among ids that are in one of the states from to state to, in one
// commit, and returns those that changed, in input order. A job queued again from an ended
// state gets a fresh attempt budget (R5).
func (db *DB) SetState(ctx context.Context, ids []int64, from []engine.JobState, to engine.JobState) ([]engine.Changed, error) {
	if !to.Valid() || to == engine.JobActive || to == engine.JobDone {
		return nil, fmt.Errorf("storage: SetState: jobs are not moved to %q by hand", to)
	}
	var changed []engine.Changed
	err := db.write(ctx, "set job state", func(w *wtx) error {
		changed = changed[:0]
		now := nanos(db.now())
		for _, id := range ids {
			var c engine.Changed
			var state string
			var nb int64
			err := w.queryRow(`SELECT host, state, not_before FROM jobs WHERE id = ?`, id).Scan(&c.Host, &state, &nb)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			c.ID, c.From, c.To, c.NotBefore = id, engine.JobState(state), to, fromNanos(nb)
			if !contains(from, c.From) || c.From == to {
				continue
			}
			if to == engine.JobQueued && c.From.Ended() {
				_, err = w.exec(qRequeue, now, now, id)
				c.NotBefore = fromNanos(now)
			} else {
				_, err = w.exec(`UPDATE jobs SET state = ?, updated_at = ? WHERE id = ?`, string(to), now, id)
			}
			if err != nil {
				return err
			}
			changed = append(changed, c)
		}
		return nil
	})
	return changed, err
}

func contains(states []engine.JobState, s engine.JobState) bool {
	for _, v := range states {
		if v == s {
			return true
		}
	}
	return false
}

// qNextJobs reads two ranges of jobs_queue, so that SQLite seeks both the not-before and the id of
// the cursor: a paste gives all its jobs one not-before. Its parameters are written +?N: SQLite
// recompiles a statement whenever a new value is bound to a parameter its planner looked at (a
// LIMIT, a term it weighed for a plan it did not choose), and that tripled the cost of a refill.
// The unary plus keeps the values out of the planner's sight; the plan is the same for every host.
const qNextJobs = `SELECT id, not_before FROM (
	SELECT id, not_before FROM jobs WHERE host = +?1 AND state = 'queued' AND not_before = +?2 AND id > +?3
	UNION ALL
	SELECT id, not_before FROM jobs WHERE host = +?1 AND state = 'queued' AND not_before > +?2)
	ORDER BY not_before, id LIMIT +?4`

// NextJobs returns up to n queued jobs of host after cursor, in queue order (not_before, id),
// through the jobs_queue index (Q1).
func (db *DB) NextJobs(ctx context.Context, host string, after engine.Cursor, n int) ([]engine.Queued, error) {
	s, err := db.read(ctx, qNextJobs)
	if err != nil {
		return nil, err
	}
	rows, err := s.QueryContext(ctx, host, after.NotBefore, after.ID, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]engine.Queued, 0, n)
	for rows.Next() {
		var q engine.Queued
		var nb int64
		if err := rows.Scan(&q.ID, &nb); err != nil {
			return nil, err
		}
		q.NotBefore = fromNanos(nb)
		out = append(out, q)
	}
	return out, rows.Err()
}

// Start moves a queued job to active and counts its attempt, recording part as its partial file
// when it has none yet; it returns the job as it now stands (J3, F4).
func (db *DB) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	var job engine.Job
	var refused error // a refusal changes nothing: the batch it rides commits all the same
	err := db.write(ctx, "start", func(w *wtx) error {
		refused = nil
		if part != "" {
			// Checked first: a failed statement would undo the whole batch.
			var other int64
			err := w.queryRow(`SELECT id FROM jobs WHERE part = ? AND part <> '' AND id <> ?`, part, id).Scan(&other)
			if err == nil {
				refused = fmt.Errorf("job %d, part %q: %w", id, part, engine.ErrPartTaken)
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		var err error
		job, err = scanJob(w.queryRow(`UPDATE jobs SET state = 'active', attempts = attempts + 1, updated_at = ?,
			part = CASE WHEN part = '' THEN ? ELSE part END WHERE id = ? AND state = 'queued' RETURNING `+jobCols,
			nanos(db.now()), part, id))
		if errors.Is(err, sql.ErrNoRows) {
			refused = db.why(w, id)
			return nil
		}
		return err
	})
	if err == nil {
		err = refused
	}
	return job, err
}

// why tells apart a missing job (ErrNotFound) from one in another state (ErrNotQueued).
func (db *DB) why(w *wtx, id int64) error {
	var state string
	err := w.queryRow(`SELECT state FROM jobs WHERE id = ?`, id).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("job %d: %w", id, engine.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("job %d is %s: %w", id, state, engine.ErrNotQueued)
}

// SetPart records another part for an active job.
func (db *DB) SetPart(ctx context.Context, id int64, part string) error {
	var refused error
	err := db.write(ctx, "set part", func(w *wtx) error {
		refused = nil
		var other int64
		err := w.queryRow(`SELECT id FROM jobs WHERE part = ? AND part <> '' AND id <> ?`, part, id).Scan(&other)
		if err == nil {
			refused = fmt.Errorf("job %d, part %q: %w", id, part, engine.ErrPartTaken)
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		r, err := w.exec(`UPDATE jobs SET part = ?, bytes = 0, updated_at = ? WHERE id = ? AND state = 'active'`,
			part, nanos(db.now()), id)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			refused = db.why(w, id)
		}
		return nil
	})
	if err == nil {
		err = refused
	}
	return err
}

// Finish records how an attempt leaves its job, with its last history row, in one commit (J3,
// S3). A job no longer active keeps its state (the person paused or cancelled it meanwhile):
// only its resume state and the history row are recorded, and Finish returns ErrNotQueued.
func (db *DB) Finish(ctx context.Context, end engine.End) ([]engine.Enqueued, error) {
	var kept error // the job's state was kept: committed all the same
	var found []engine.Enqueued
	err := db.write(ctx, "finish", func(w *wtx) error {
		kept, found = nil, nil
		now := nanos(db.now())
		if end.Attempt != nil {
			if err := insertAttempt(w, *end.Attempt); err != nil {
				return err
			}
		}
		r := end.Resume
		give, thr := 0, 0
		if end.GiveBack {
			give = 1
		}
		if end.Throttled {
			thr = 1
		}
		var row *sql.Row
		switch end.State {
		case engine.JobDone:
			// The part name stays until the part has the final name (Named).
			row = w.queryRow(`UPDATE jobs SET state = 'done', file = ?, name = ?, bytes = ?, size = ?, sha256 = ?,
				etag = ?, last_modified = ?, last_error = ?, last_status = ?, updated_at = ?
				WHERE id = ? AND state = 'active' RETURNING crawl_id`,
				end.File, r.Name, r.Bytes, r.Size, end.SHA256, r.ETag, r.LastModified, end.Error, end.Status, now, end.JobID)
		case engine.JobQueued, engine.JobFailed, engine.JobSkipped:
			row = w.queryRow(`UPDATE jobs SET state = ?, not_before = ?, attempts = max(attempts - ?, 0),
				throttled = throttled + ?, part = ?, bytes = ?, size = ?, etag = ?, last_modified = ?, name = ?,
				last_error = ?, last_status = ?, updated_at = ? WHERE id = ? AND state = 'active' RETURNING crawl_id`,
				string(end.State), nanos(end.NotBefore), give, thr, r.Part, r.Bytes, r.Size, r.ETag, r.LastModified,
				r.Name, end.Error, end.Status, now, end.JobID)
		default:
			return fmt.Errorf("storage: Finish: a job does not end %q", end.State)
		}
		var crawlID int64
		switch err := row.Scan(&crawlID); {
		case err == nil:
			found, err = db.crawled(w, end, crawlID, db.now())
			return err
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		// Paused or cancelled meanwhile: what is on disk is kept for its resume.
		if _, err := w.exec(`UPDATE jobs SET part = ?, bytes = ?, size = ?, etag = ?, last_modified = ?, name = ?,
			updated_at = ? WHERE id = ? AND state IN ('paused', 'cancelled')`,
			r.Part, r.Bytes, r.Size, r.ETag, r.LastModified, r.Name, now, end.JobID); err != nil {
			return err
		}
		kept = db.why(w, end.JobID)
		if !errors.Is(kept, engine.ErrNotQueued) {
			return kept
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return found, kept
}

// Rename records a done job's final name anew, before its part takes it (F3).
func (db *DB) Rename(ctx context.Context, id int64, file string) error {
	return db.write(ctx, "rename", func(w *wtx) error {
		_, err := w.exec(`UPDATE jobs SET file = ?, updated_at = ? WHERE id = ? AND state = 'done'`,
			file, nanos(db.now()), id)
		return err
	})
}

// Unnamed returns the done jobs whose part has not taken its final name yet.
func (db *DB) Unnamed(ctx context.Context) ([]engine.Job, error) {
	return db.jobs(ctx, `SELECT `+jobCols+` FROM jobs WHERE state = 'done' AND part <> '' ORDER BY id`)
}

// Named records, with the next commit, that a done job's part has its final name.
func (db *DB) Named(id int64) error {
	return db.queue("named", func(w *wtx) error {
		_, err := w.exec(`UPDATE jobs SET part = '' WHERE id = ? AND state = 'done'`, id)
		return err
	})
}

// Note records, with the next commit, where an active job's bytes go as its body starts (F5).
func (db *DB) Note(id int64, r engine.Resume) error {
	return db.queue("note", func(w *wtx) error {
		_, err := w.exec(`UPDATE jobs SET part = ?, bytes = ?, size = ?, etag = ?, last_modified = ?, name = ?
			WHERE id = ? AND state = 'active'`, r.Part, r.Bytes, r.Size, r.ETag, r.LastModified, r.Name, id)
		return err
	})
}

const qJob = `SELECT ` + jobCols + ` FROM jobs WHERE id = ?`

// Job returns the job with id, or ErrNotFound.
func (db *DB) Job(ctx context.Context, id int64) (engine.Job, error) {
	s, err := db.read(ctx, qJob)
	if err != nil {
		return engine.Job{}, err
	}
	j, err := scanJob(s.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, engine.ErrNotFound)
	}
	return j, err
}

// Jobs lists the jobs q selects, by id, paging by key (AfterID, BeforeID), never by offset: each
// page costs the same at the start of ten million jobs as at their end.
func (db *DB) Jobs(ctx context.Context, q engine.JobQuery) ([]engine.Job, error) {
	var where []string
	var args []any
	if q.State != "" {
		where, args = append(where, "state = ?"), append(args, string(q.State))
	}
	if q.Host != "" {
		where, args = append(where, "host = ?"), append(args, q.Host)
	}
	if q.AfterID > 0 {
		where, args = append(where, "id > ?"), append(args, q.AfterID)
	}
	if q.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, q.BeforeID)
	}
	query := `SELECT ` + jobCols + ` FROM jobs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	if q.Newest {
		query += ` ORDER BY id DESC`
	} else {
		query += ` ORDER BY id`
	}
	if q.Limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	return db.jobs(ctx, query, args...)
}

func (db *DB) jobs(ctx context.Context, query string, args ...any) ([]engine.Job, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// Recovered returns how many jobs Open found active — left so by a crash — and queued again,
// with their partial file and byte count kept for resume (S2).
func (db *DB) Recovered() int64 { return db.recovered }

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
