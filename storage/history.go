package storage

import (
	"context"
	"strings"
	"time"

	"heed/engine"
)

// RecordAttempt queues an attempt for history; it returns at once and is committed with the next
// batch (group commit, S5). Flush waits for it and reports a failure.
func (db *DB) RecordAttempt(a engine.Attempt) error {
	return db.queue("record attempt", func(w *wtx) error { return insertAttempt(w, a) })
}

func insertAttempt(w *wtx, a engine.Attempt) error {
	_, err := w.exec(`INSERT INTO attempts (job_id, url, host, attempt, throttled, started_at, duration_ns, status,
		outcome, bytes, error, retry_after_ms, backoff_level, breaker_state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.JobID, a.URL, a.Host, a.Attempt, a.Throttled, nanos(a.StartedAt), int64(a.Duration), a.Status, a.Outcome,
		a.Bytes, a.Error, a.RetryAfter.Milliseconds(), a.Level, a.Breaker.String())
	return err
}

const attemptCols = `id, job_id, url, host, attempt, throttled, started_at, duration_ns, status, outcome, bytes,
	error, retry_after_ms, backoff_level, breaker_state`

// History returns the attempts q selects, newest first (U6, S3). Pass the last id as BeforeID
// for the next page.
func (db *DB) History(ctx context.Context, q engine.HistoryQuery) ([]engine.Attempt, error) {
	var where []string
	var args []any
	if q.Host != "" {
		where, args = append(where, "host = ?"), append(args, q.Host)
	}
	switch {
	case q.Outcome == "":
	case q.Host != "", q.Outcome == "ok":
		// A host's history is usually the smaller set: keep SQLite on attempts_host. Successes are
		// not in attempts_outcome: most attempts are one, so the newest first find a page at once.
		where, args = append(where, "+outcome = ?"), append(args, q.Outcome)
	default:
		// The term attempts_outcome's WHERE is written with, so that SQLite may use it.
		where, args = append(where, "outcome = ? AND outcome <> 'ok'"), append(args, q.Outcome)
	}
	if q.JobID != 0 {
		where, args = append(where, "job_id = ?"), append(args, q.JobID)
	}
	if q.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, q.BeforeID)
	}
	query := `SELECT ` + attemptCols + ` FROM attempts`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id DESC`
	if q.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, q.Limit)
	}
	rows, err := db.r.QueryContext(ctx, query, args...)
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
