package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"heed/engine"
	"heed/engine/fetch"
)

// jobCols are the columns scanJob reads, in its order.
const jobCols = `id, url, host, state, not_before, created_at, updated_at, attempts, throttled, part, bytes, size,
	etag, last_modified, name, file, sha256, last_error, last_status, crawl_id, depth, found_on, kind`

func scanJob(s pgx.Row) (engine.Job, error) {
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

// fence is the condition, on a row of jobs, that this process still runs the job under the
// lease it was started with (M2): its host leased to this process's token, at the epoch stored
// with the job at Start. It takes the token as parameter $n. A DB not in the fleet has none.
func (db *DB) fence(n int) string {
	if !db.member {
		return ""
	}
	return fmt.Sprintf(` AND jobs.epoch = (SELECT h.lease_epoch FROM hosts h WHERE h.host = jobs.host AND h.lease_owner = $%d)`, n)
}

// Enqueue adds the URLs whose key has no job yet, queued at once, and reports, in input order,
// what it did with each (J2); a duplicate whose job has ended and whose id is below againBelow is
// queued again with a fresh attempt budget (R5). The owners of the hosts it queued for are told.
func (db *DB) Enqueue(ctx context.Context, jobs []engine.NewJob, againBelow int64) ([]engine.Enqueued, error) {
	out := make([]engine.Enqueued, len(jobs))
	err := db.tx(ctx, func(tx pgx.Tx) error {
		now := now()
		ids, err := insertJobs(ctx, tx, jobs, now)
		if err != nil {
			return err
		}
		for i, j := range jobs {
			if id, ok := ids[j.Key]; ok && id > 0 {
				out[i] = engine.Enqueued{ID: id, State: engine.JobQueued, NotBefore: now}
				ids[j.Key] = -id // a second place of the key in jobs is its duplicate
				continue
			}
			var id, nb int64
			var state string
			if err := tx.QueryRow(ctx, `SELECT id, state, not_before FROM jobs WHERE key_hash = $1`, keyHash(j.Key)).
				Scan(&id, &state, &nb); err != nil {
				return err
			}
			out[i] = engine.Enqueued{ID: id, Duplicate: true, State: engine.JobState(state), NotBefore: fromNanos(nb)}
			if id < againBelow && out[i].State.Ended() {
				if _, err := tx.Exec(ctx, qRequeue, nanos(now), id); err != nil {
					return err
				}
				out[i].Again, out[i].NotBefore = true, now
			}
		}
		return notifyHosts(ctx, tx, jobs)
	})
	return out, err
}

// ErrNotText is returned for a string PostgreSQL's text cannot hold: one with a NUL byte or
// bytes that are not UTF-8. Heed's own URLs never are (they are parsed and written out again,
// escaped); SQLite keeps such strings byte for byte.
var ErrNotText = errors.New("postgres: a NUL byte or bytes that are not UTF-8, which a PostgreSQL text column cannot hold")

// textOnly checks that every string is text PostgreSQL can store.
func textOnly(ss ...string) error {
	for _, s := range ss {
		if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
			return ErrNotText
		}
	}
	return nil
}

// notifyHosts tells the owners of the jobs' hosts that they have work (see listener).
func notifyHosts(ctx context.Context, tx pgx.Tx, jobs []engine.NewJob) error {
	seen := map[string]bool{}
	var hosts []string
	for _, j := range jobs {
		if !seen[j.Host] {
			seen[j.Host] = true
			hosts = append(hosts, j.Host)
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify('heed_hosts', h) FROM unnest($1::text[]) AS h`, hosts)
	return err
}

// insertChunk is how many jobs one INSERT adds.
const insertChunk = 256

// insertJobs adds the jobs whose key has no row yet — queued, or skipped with the reason
// NewJob.Skip gives — and counts them in their hosts' rows. It returns the ids of the rows it
// added, by key.
func insertJobs(ctx context.Context, tx pgx.Tx, jobs []engine.NewJob, now time.Time) (map[string]int64, error) {
	for i, j := range jobs {
		if err := textOnly(j.URL, j.Key, j.Host, j.FoundOn); err != nil {
			return nil, fmt.Errorf("job %d of %d (%q): %w", i+1, len(jobs), fetch.Redact(strings.ToValidUTF8(j.URL, "\ufffd")), err)
		}
	}
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
		var (
			urls, keys, hosts, states, errs, foundOn, kinds []string
			hashes                                          [][]byte
			crawls                                          []int64
			depths                                          []int32
		)
		for _, j := range chunk {
			state := engine.JobQueued
			if j.Skip != "" {
				state = engine.JobSkipped
			}
			urls, keys, hosts = append(urls, j.URL), append(keys, j.Key), append(hosts, j.Host)
			hashes, states, errs = append(hashes, keyHash(j.Key)), append(states, string(state)), append(errs, j.Skip)
			crawls, depths = append(crawls, j.CrawlID), append(depths, int32(j.Depth))
			foundOn, kinds = append(foundOn, j.FoundOn), append(kinds, string(j.Kind))
		}
		// In input order (WITH ORDINALITY), so that ids follow it as in the SQLite store.
		rows, err := tx.Query(ctx, `INSERT INTO jobs (url, key, key_hash, host, state, not_before, created_at,
			updated_at, last_error, crawl_id, depth, found_on, kind)
			SELECT u, k, kh, h, s, $10, $10, $10, e, c, d, f, kd
			FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::text[], $6::text[], $7::bigint[],
				$8::int[], $9::text[], $11::text[]) WITH ORDINALITY AS t(u, k, kh, h, s, e, c, d, f, kd, n)
			ORDER BY n
			ON CONFLICT (key_hash) DO NOTHING RETURNING id, key, host, state`,
			urls, keys, hashes, hosts, states, errs, crawls, depths, foundOn, t, kinds)
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
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	for hs, n := range added {
		col := "queued"
		if hs.state == engine.JobSkipped {
			col = "skipped"
		}
		if _, err := tx.Exec(ctx, `INSERT INTO host_counts (host, `+col+`) VALUES ($1, $2)
			ON CONFLICT (host) DO UPDATE SET `+col+` = host_counts.`+col+` + excluded.`+col, hs.host, n); err != nil {
			return nil, err
		}
		// Its hosts row, for Claim to lease: one already there is left as it is, unlocked.
		if _, err := tx.Exec(ctx, `INSERT INTO hosts (host) VALUES ($1) ON CONFLICT DO NOTHING`, hs.host); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// qRequeue queues an ended job again, due at once ($1), with a fresh attempt budget.
const qRequeue = `UPDATE jobs SET state = 'queued', not_before = $1, updated_at = $1,
	attempts = 0, throttled = 0, last_error = '', last_status = 0, file = '', sha256 = '',
	bytes = CASE WHEN part = '' THEN 0 ELSE bytes END
	WHERE id = $2 AND state IN ('done', 'failed', 'cancelled', 'skipped')`

// SetState moves the jobs among ids that are in one of the states from to state to, in one
// commit, and returns those that changed, in input order (R5 for a requeue).
func (db *DB) SetState(ctx context.Context, ids []int64, from []engine.JobState, to engine.JobState) ([]engine.Changed, error) {
	if !to.Valid() || to == engine.JobActive || to == engine.JobDone {
		return nil, fmt.Errorf("postgres: SetState: jobs are not moved to %q by hand", to)
	}
	var changed []engine.Changed
	err := db.tx(ctx, func(tx pgx.Tx) error {
		changed = changed[:0]
		now := nanos(now())
		var hosts []engine.NewJob
		for _, id := range ids {
			var c engine.Changed
			var state string
			var nb int64
			err := tx.QueryRow(ctx, `SELECT host, state, not_before FROM jobs WHERE id = $1 FOR UPDATE`, id).
				Scan(&c.Host, &state, &nb)
			if errors.Is(err, pgx.ErrNoRows) {
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
				_, err = tx.Exec(ctx, qRequeue, now, id)
				c.NotBefore = fromNanos(now)
			} else {
				_, err = tx.Exec(ctx, `UPDATE jobs SET state = $1, updated_at = $2 WHERE id = $3`, string(to), now, id)
			}
			if err != nil {
				return err
			}
			changed = append(changed, c)
			if to == engine.JobQueued {
				hosts = append(hosts, engine.NewJob{Host: c.Host})
			}
		}
		return notifyHosts(ctx, tx, hosts)
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

// NextJobs returns up to n queued jobs of host after cursor, in queue order (not_before, id),
// through the jobs_queue index (Q1).
func (db *DB) NextJobs(ctx context.Context, host string, after engine.Cursor, n int) ([]engine.Queued, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, not_before FROM jobs WHERE host = $1 AND state = 'queued'
		AND (not_before, id) > ($2, $3) ORDER BY not_before, id LIMIT $4`, host, after.NotBefore, after.ID, n)
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
// when it has none yet (J3, F4); in the fleet, only while its host is leased to this process,
// and under that lease's epoch.
func (db *DB) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	q := `UPDATE jobs SET state = 'active', attempts = attempts + 1, updated_at = $2,
		part = CASE WHEN part = '' THEN $3 ELSE part END, worker = $4, epoch = 0
		WHERE id = $1 AND state = 'queued' AND $5::text IS NOT NULL RETURNING ` + jobCols
	if db.member {
		q = `UPDATE jobs SET state = 'active', attempts = attempts + 1, updated_at = $2,
			part = CASE WHEN part = '' THEN $3 ELSE part END, worker = $4, epoch = h.lease_epoch
			FROM hosts h WHERE jobs.id = $1 AND jobs.state = 'queued' AND h.host = jobs.host AND h.lease_owner = $5
			RETURNING ` + prefixed("jobs.", jobCols)
	}
	var job engine.Job
	err := db.retry(func() error { // one statement, one round trip
		var err error
		job, err = scanJob(db.pool.QueryRow(ctx, q, id, nanos(now()), part, db.worker, db.token))
		return err
	})
	switch {
	case uniqueViolation(err):
		return job, fmt.Errorf("job %d, part %q: %w", id, part, engine.ErrPartTaken)
	case errors.Is(err, pgx.ErrNoRows):
		return job, db.why(ctx, db.pool, id)
	}
	return job, err
}

// prefixed qualifies each of the comma-separated columns with p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// why tells apart a missing job (ErrNotFound), one in another state (ErrNotQueued) and, in the
// fleet, one whose host this process no longer leases (ErrNotLeased).
func (db *DB) why(ctx context.Context, q querier, id int64) error {
	var state, owner string
	err := q.QueryRow(ctx, `SELECT j.state, coalesce(h.lease_owner, '') FROM jobs j
		LEFT JOIN hosts h ON h.host = j.host WHERE j.id = $1`, id).Scan(&state, &owner)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("job %d: %w", id, engine.ErrNotFound)
	case err != nil:
		return err
	case db.member && owner != db.token && (state == "queued" || state == "active"):
		return fmt.Errorf("job %d: %w", id, engine.ErrNotLeased)
	}
	return fmt.Errorf("job %d is %s: %w", id, state, engine.ErrNotQueued)
}

// SetPart records another part for an active job.
func (db *DB) SetPart(ctx context.Context, id int64, part string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE jobs SET part = $2, bytes = 0, updated_at = $3
		WHERE id = $1 AND state = 'active'`+db.fence(4)+orNothing(db.member, 4), id, part, nanos(now()), db.token)
	switch {
	case uniqueViolation(err):
		return fmt.Errorf("job %d, part %q: %w", id, part, engine.ErrPartTaken)
	case err != nil:
		return err
	case tag.RowsAffected() == 0:
		return db.why(ctx, db.pool, id)
	}
	return nil
}

// orNothing keeps parameter $n used in a statement that does not fence, so that one argument
// list fits both forms.
func orNothing(member bool, n int) string {
	if member {
		return ""
	}
	return fmt.Sprintf(" AND $%d::text IS NOT NULL", n)
}

// Finish records how an attempt leaves its job, with its last history row and the links it
// found (W8), in one commit (J3, S3). A job no longer active keeps its state: only its resume
// state and the history row are recorded, and Finish returns ErrNotQueued; a job whose host this
// process no longer leases is left as it is, and Finish returns ErrNotLeased.
func (db *DB) Finish(ctx context.Context, end engine.End) ([]engine.Enqueued, error) {
	now := nanos(now())
	q, args, err := db.ending(end, now)
	if err != nil {
		return nil, err
	}
	if len(end.Found) == 0 {
		// The common end, a file without links: one statement, its own transaction, one round trip.
		var ended bool
		err := db.waited(func() error {
			return db.retry(func() error {
				var err error
				ended, err = db.endAlone(ctx, q, args, end)
				return err
			})
		})
		if err != nil || ended {
			return nil, err
		}
	}
	var kept error
	var found []engine.Enqueued
	err = db.tx(ctx, func(tx pgx.Tx) error {
		kept, found = nil, nil
		tag, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			if end.Attempt != nil {
				sql, args := insertAttempt(*end.Attempt)
				if err := execStmt(ctx, tx, sql, args); err != nil {
					return err
				}
			}
			found, err = db.crawled(ctx, tx, end, time.Unix(0, now))
			return err
		}
		kept = db.why(ctx, tx, end.JobID)
		if errors.Is(kept, engine.ErrNotLeased) {
			return nil // another worker runs its host: nothing of this attempt is kept
		}
		if end.Attempt != nil {
			sql, args := insertAttempt(*end.Attempt)
			if err := execStmt(ctx, tx, sql, args); err != nil {
				return err
			}
		}
		// Paused or cancelled meanwhile: what is on disk is kept for its resume.
		r := end.Resume
		if _, err := tx.Exec(ctx, `UPDATE jobs SET part = $2, bytes = $3, size = $4, etag = $5, last_modified = $6,
			name = $7, updated_at = $8 WHERE id = $1 AND state IN ('paused', 'cancelled')`,
			end.JobID, r.Part, r.Bytes, r.Size, r.ETag, r.LastModified, r.Name, now); err != nil {
			return err
		}
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

// ending is the statement that moves an active job to end's state, at now; in the fleet, only
// under the lease it was started with.
func (db *DB) ending(end engine.End, now int64) (string, []any, error) {
	r := end.Resume
	give, thr := 0, 0
	if end.GiveBack {
		give = 1
	}
	if end.Throttled {
		thr = 1
	}
	switch end.State {
	case engine.JobDone:
		return `UPDATE jobs SET state = 'done', file = $2, name = $3, bytes = $4, size = $5, sha256 = $6,
			etag = $7, last_modified = $8, last_error = $9, last_status = $10, updated_at = $11
			WHERE id = $1 AND state = 'active'` + db.fence(12) + orNothing(db.member, 12),
			[]any{end.JobID, end.File, r.Name, r.Bytes, r.Size, end.SHA256, r.ETag, r.LastModified, end.Error,
				end.Status, now, db.token}, nil
	case engine.JobQueued, engine.JobFailed, engine.JobSkipped:
		return `UPDATE jobs SET state = $2, not_before = $3, attempts = greatest(attempts - $4, 0),
			throttled = throttled + $5, part = $6, bytes = $7, size = $8, etag = $9, last_modified = $10,
			name = $11, last_error = $12, last_status = $13, updated_at = $14
			WHERE id = $1 AND state = 'active'` + db.fence(15) + orNothing(db.member, 15),
			[]any{end.JobID, string(end.State), nanos(end.NotBefore), give, thr, r.Part, r.Bytes, r.Size,
				r.ETag, r.LastModified, r.Name, end.Error, end.Status, now, db.token}, nil
	}
	return "", nil, fmt.Errorf("postgres: Finish: a job does not end %q", end.State)
}

// endAlone runs ending's statement q with its history row and, for a crawled page, its crawl's
// counts, as one statement, and reports whether the job was active (else nothing changed). It
// serves an end without links: one with links queues them in the same transaction (W8).
func (db *DB) endAlone(ctx context.Context, q string, args []any, end engine.End) (bool, error) {
	var bytes int64
	if end.State == engine.JobDone {
		bytes = end.Resume.Bytes
	}
	n := len(args)
	args = append(args, end.OutOfScope, bytes)
	attempt := ""
	if end.Attempt != nil {
		attempt = `, history AS (` + attemptInsert + `SELECT ` + params(n+3, attemptColumns) + ` FROM ended)`
		args = append(args, attemptArgs(*end.Attempt)...)
	}
	stmt := `WITH ended AS (` + q + ` RETURNING jobs.crawl_id)` + attempt + `,
		crawl AS (UPDATE crawls SET out_of_scope = out_of_scope + $` + strconv.Itoa(n+1) + `,
			bytes = bytes + $` + strconv.Itoa(n+2) + ` FROM ended WHERE crawls.id = ended.crawl_id)
		SELECT count(*) FROM ended`
	var ended int
	if err := db.pool.QueryRow(ctx, stmt, args...).Scan(&ended); err != nil {
		return false, err
	}
	return ended == 1, nil
}

// Rename records a done job's final name anew, before its part takes it (F3).
func (db *DB) Rename(ctx context.Context, id int64, file string) error {
	_, err := db.pool.Exec(ctx, `UPDATE jobs SET file = $2, updated_at = $3 WHERE id = $1 AND state = 'done'`,
		id, file, nanos(now()))
	return err
}

// Unnamed returns the done jobs whose part has not taken its final name yet; in the fleet,
// those this worker finished (their parts are in its folder).
func (db *DB) Unnamed(ctx context.Context) ([]engine.Job, error) {
	if db.member {
		return db.jobs(ctx, `SELECT `+jobCols+` FROM jobs WHERE state = 'done' AND part <> '' AND worker = $1
			ORDER BY id`, db.worker)
	}
	return db.jobs(ctx, `SELECT `+jobCols+` FROM jobs WHERE state = 'done' AND part <> '' ORDER BY id`)
}

// Named records, with the next batch, that a done job's part has its final name.
func (db *DB) Named(id int64) error {
	return db.queue(`UPDATE jobs SET part = '' WHERE id = $1 AND state = 'done'`, []any{id})
}

// Note records, with the next batch, where an active job's bytes go as its body starts (F5).
func (db *DB) Note(id int64, r engine.Resume) error {
	return db.queue(`UPDATE jobs SET part = $2, bytes = $3, size = $4, etag = $5,
		last_modified = $6, name = $7 WHERE id = $1 AND state = 'active'`+db.fence(8)+orNothing(db.member, 8),
		[]any{id, r.Part, r.Bytes, r.Size, r.ETag, r.LastModified, r.Name, db.token})
}

// Job returns the job with id, or ErrNotFound.
func (db *DB) Job(ctx context.Context, id int64) (engine.Job, error) {
	j, err := scanJob(db.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, engine.ErrNotFound)
	}
	return j, err
}

// Jobs lists the jobs q selects, by id, paging by key, never by offset.
func (db *DB) Jobs(ctx context.Context, q engine.JobQuery) ([]engine.Job, error) {
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if q.State != "" {
		arg("state = ?", string(q.State))
	}
	if q.Host != "" {
		arg("host = ?", q.Host)
	}
	if q.AfterID > 0 {
		arg("id > ?", q.AfterID)
	}
	if q.BeforeID > 0 {
		arg("id < ?", q.BeforeID)
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
	rows, err := db.pool.Query(ctx, query, args...)
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

// RecordAttempt adds an attempt to history with the next batch (S3, S5).
func (db *DB) RecordAttempt(a engine.Attempt) error {
	return db.queue(insertAttempt(a))
}

// insertAttempt is the statement that adds a's history row, and its arguments.
func insertAttempt(a engine.Attempt) (string, []any) {
	return attemptInsert + `VALUES (` + params(1, attemptColumns) + `)`, attemptArgs(a)
}

// attemptInsert, attemptColumns and attemptArgs make a history row's INSERT.
const attemptInsert = `INSERT INTO attempts (job_id, url, host, attempt, throttled, started_at, duration_ns,
	status, outcome, bytes, error, retry_after_ms, backoff_level, breaker_state) `

var attemptColumns = strings.Count(attemptInsert, ",") + 1

func attemptArgs(a engine.Attempt) []any {
	return []any{a.JobID, a.URL, a.Host, a.Attempt, a.Throttled, nanos(a.StartedAt), int64(a.Duration), a.Status,
		a.Outcome, a.Bytes, a.Error, a.RetryAfter.Milliseconds(), a.Level, a.Breaker.String()}
}

// params is n statement parameters from $from: "$from, $from+1, …".
func params(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

const attemptCols = `id, job_id, url, host, attempt, throttled, started_at, duration_ns, status, outcome, bytes,
	error, retry_after_ms, backoff_level, breaker_state`

// History returns the attempts q selects, newest first (U6, S3).
func (db *DB) History(ctx context.Context, q engine.HistoryQuery) ([]engine.Attempt, error) {
	var where []string
	var args []any
	arg := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if q.Host != "" {
		arg("host = ?", q.Host)
	}
	if q.Outcome != "" {
		arg("outcome = ?", q.Outcome)
	}
	if q.JobID != 0 {
		arg("job_id = ?", q.JobID)
	}
	if q.BeforeID > 0 {
		arg("id < ?", q.BeforeID)
	}
	query := `SELECT ` + attemptCols + ` FROM attempts`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id DESC`
	if q.Limit > 0 {
		query += fmt.Sprintf(" LIMIT %d", q.Limit)
	}
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.Attempt
	for rows.Next() {
		var a engine.Attempt
		var started, dur, retry int64
		var breaker string
		if err := rows.Scan(&a.ID, &a.JobID, &a.URL, &a.Host, &a.Attempt, &a.Throttled, &started, &dur, &a.Status,
			&a.Outcome, &a.Bytes, &a.Error, &retry, &a.Level, &breaker); err != nil {
			return nil, err
		}
		a.StartedAt, a.Duration, a.RetryAfter = fromNanos(started), time.Duration(dur), time.Duration(retry)*time.Millisecond
		a.Breaker, _ = engine.ParseBreakerState(breaker)
		out = append(out, a)
	}
	return out, rows.Err()
}
