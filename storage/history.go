package storage

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
)

// Attempt is one HTTP exchange of a job, as kept in history (S3).
type Attempt struct {
	ID           int64 // set by the database
	JobID        int64
	URL          string // the URL requested (a redirect hop's target for hops)
	Host         string
	Attempt      int // the job's attempt number (MarkActive's result)
	StartedAt    time.Time
	Duration     time.Duration
	Status       int    // HTTP status, 0 if none
	Outcome      string // ok, retry, throttled, failed, redirect, canceled …
	Bytes        int64
	Error        string
	RetryAfter   time.Duration // from Retry-After; 0 if none
	BackoffLevel int           // the host's backoff level after this attempt
	BreakerState string        // the host's breaker state after this attempt
}

// RecordAttempt queues an attempt for history; it returns at once and is committed with the next
// batch (group commit, S5). Flush waits for it and reports a failure (for example a JobID that
// does not exist).
func (db *DB) RecordAttempt(a Attempt) error {
	return db.queue("record attempt", func(w *wtx) error { return insertAttempt(w, a) })
}

func insertAttempt(w *wtx, a Attempt) error {
	_, err := w.exec(`INSERT INTO attempts (job_id, url, host, attempt, started_at, duration_ns, status,
		outcome, bytes, error, retry_after_ms, backoff_level, breaker_state)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.JobID, a.URL, a.Host, a.Attempt, nanos(a.StartedAt), int64(a.Duration), a.Status, a.Outcome,
		a.Bytes, a.Error, a.RetryAfter.Milliseconds(), a.BackoffLevel, a.BreakerState)
	return err
}

// HistoryFilter selects attempts. Zero fields do not filter.
type HistoryFilter struct {
	Host     string
	Outcome  string
	JobID    int64
	BeforeID int64 // keyset paging, newest first: only attempts with a smaller id
	Limit    int   // 0 = no limit
}

const attemptCols = `id, job_id, url, host, attempt, started_at, duration_ns, status, outcome, bytes,
	error, retry_after_ms, backoff_level, breaker_state`

func (f HistoryFilter) query() (string, []any) {
	var where []string
	var args []any
	if f.Host != "" {
		where, args = append(where, "host = ?"), append(args, f.Host)
	}
	switch {
	case f.Outcome == "":
	case f.Host != "":
		// A host's history is usually the smaller set: keep SQLite on attempts_host.
		where, args = append(where, "+outcome = ?"), append(args, f.Outcome)
	case f.Outcome == "ok":
		// Successes are not in attempts_outcome (schema version 7): most attempts are one, so
		// reading the newest first finds a page of them at once.
		where, args = append(where, "+outcome = ?"), append(args, f.Outcome)
	default:
		// The term attempts_outcome's WHERE is written with, so that SQLite may use it.
		where, args = append(where, "outcome = ? AND outcome <> 'ok'"), append(args, f.Outcome)
	}
	if f.JobID != 0 {
		where, args = append(where, "job_id = ?"), append(args, f.JobID)
	}
	if f.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, f.BeforeID)
	}
	q := `SELECT ` + attemptCols + ` FROM attempts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	return q, args
}

func (db *DB) forEachAttempt(ctx context.Context, f HistoryFilter, fn func(Attempt) error) error {
	q, args := f.query()
	rows, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a Attempt
		var started, dur, retry int64
		if err := rows.Scan(&a.ID, &a.JobID, &a.URL, &a.Host, &a.Attempt, &started, &dur, &a.Status,
			&a.Outcome, &a.Bytes, &a.Error, &retry, &a.BackoffLevel, &a.BreakerState); err != nil {
			return err
		}
		a.StartedAt, a.Duration, a.RetryAfter = fromNanos(started), time.Duration(dur), time.Duration(retry)*time.Millisecond
		if err := fn(a); err != nil {
			return err
		}
	}
	return rows.Err()
}

// HistoryPage returns the attempts matching f, newest first (U6). Pass the last id as BeforeID
// for the next page.
func (db *DB) HistoryPage(ctx context.Context, f HistoryFilter) ([]Attempt, error) {
	var out []Attempt
	err := db.forEachAttempt(ctx, f, func(a Attempt) error { out = append(out, a); return nil })
	return out, err
}

// historyLine is the JSON shape of an attempt (SPEC §9) and the column order of the CSV export.
type historyLine struct {
	JobID        int64   `json:"job_id"`
	URL          string  `json:"url"`
	Host         string  `json:"host"`
	Attempt      int     `json:"attempt"`
	StartedAt    string  `json:"started_at"`
	DurationMS   float64 `json:"duration_ms"`
	Status       int     `json:"status"`
	Outcome      string  `json:"outcome"`
	Bytes        int64   `json:"bytes"`
	Error        string  `json:"error"`
	RetryAfterMS int64   `json:"retry_after_ms"`
	BackoffLevel int     `json:"backoff_level"`
	BreakerState string  `json:"breaker_state"`
}

// startedAtLayout is RFC 3339 with all nine digits of the nanoseconds, trailing zeros kept
// (time.RFC3339Nano drops them, and a whole second then has no fraction at all), so that every
// line has the same width and every parser sees nanoseconds (SPEC §9).
const startedAtLayout = "2006-01-02T15:04:05.000000000Z07:00"

func toLine(a Attempt) historyLine {
	return historyLine{
		JobID: a.JobID, URL: a.URL, Host: a.Host, Attempt: a.Attempt,
		StartedAt:  a.StartedAt.UTC().Format(startedAtLayout),
		DurationMS: float64(a.Duration) / float64(time.Millisecond),
		Status:     a.Status, Outcome: a.Outcome, Bytes: a.Bytes, Error: a.Error,
		RetryAfterMS: a.RetryAfter.Milliseconds(), BackoffLevel: a.BackoffLevel, BreakerState: a.BreakerState,
	}
}

// HistoryCSVHeader is the header row of ExportHistoryCSV; the columns are the fields of the
// JSON export, in the same order.
var HistoryCSVHeader = []string{"job_id", "url", "host", "attempt", "started_at", "duration_ms", "status",
	"outcome", "bytes", "error", "retry_after_ms", "backoff_level", "breaker_state"}

// ExportHistoryCSV writes the attempts matching f, newest first, as CSV with a header row
// (HistoryCSVHeader). started_at is RFC 3339 with nanoseconds in UTC.
func (db *DB) ExportHistoryCSV(ctx context.Context, w io.Writer, f HistoryFilter) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(HistoryCSVHeader); err != nil {
		return err
	}
	err := db.forEachAttempt(ctx, f, func(a Attempt) error {
		l := toLine(a)
		return cw.Write([]string{
			strconv.FormatInt(l.JobID, 10), l.URL, l.Host, strconv.Itoa(l.Attempt), l.StartedAt,
			strconv.FormatFloat(l.DurationMS, 'f', -1, 64), strconv.Itoa(l.Status), l.Outcome,
			strconv.FormatInt(l.Bytes, 10), l.Error, strconv.FormatInt(l.RetryAfterMS, 10),
			strconv.Itoa(l.BackoffLevel), l.BreakerState,
		})
	})
	cw.Flush()
	return errors.Join(err, cw.Error())
}

// ExportHistoryJSON writes the attempts matching f, newest first, one JSON object per line with
// the fields of SPEC §9: job_id, url, host, attempt, started_at (RFC 3339 with nanoseconds, UTC),
// duration_ms, status, outcome, bytes, error, retry_after_ms, backoff_level, breaker_state.
func (db *DB) ExportHistoryJSON(ctx context.Context, w io.Writer, f HistoryFilter) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return db.forEachAttempt(ctx, f, func(a Attempt) error { return enc.Encode(toLine(a)) })
}

// jobLine is the JSON shape of a job (SPEC §9).
type jobLine struct {
	ID        int64  `json:"id"`
	URL       string `json:"url"`
	Host      string `json:"host"`
	State     State  `json:"state"`
	File      string `json:"file"`
	Bytes     int64  `json:"bytes"`
	SHA256    string `json:"sha256"`
	Attempts  int    `json:"attempts"`
	Throttled int    `json:"throttled"`
	LastError string `json:"last_error"`
	// Unnamed is set on a done job whose file has yet to take its name (see Unnamed): Heed
	// stopped (a crash) between recording it done and naming it, and its next start names it,
	// or fetches it again if its bytes went with the crash.
	Unnamed bool `json:"unnamed,omitempty"`
}

// ExportJobsJSON writes the jobs matching f in id order, one JSON object per line with the fields
// of SPEC §9: id, url, host, state, file, bytes, sha256, attempts, throttled, last_error (and
// unnamed, true, on a done job whose file has yet to take its name).
func (db *DB) ExportJobsJSON(ctx context.Context, w io.Writer, f JobFilter) error {
	unnamed, err := db.UnnamedIDs(ctx)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return db.forEachJob(ctx, f, func(j Job) error {
		return enc.Encode(jobLine{ID: j.ID, URL: j.URL, Host: j.Host, State: j.State, File: j.File,
			Bytes: j.Bytes, SHA256: j.SHA256, Attempts: j.Attempts, Throttled: j.Throttled, LastError: j.LastError,
			Unnamed: unnamed[j.ID]})
	})
}

// UnnamedIDs returns the jobs of Unnamed, as a set: done, their files yet to take their names.
// It is empty but right after a crash, until the next start (engine) names them.
func (db *DB) UnnamedIDs(ctx context.Context) (map[int64]bool, error) {
	us, err := db.Unnamed(ctx)
	if err != nil {
		return nil, err
	}
	ids := make(map[int64]bool, len(us))
	for _, u := range us {
		ids[u.JobID] = true
	}
	return ids, nil
}
