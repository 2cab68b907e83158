package engine

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"

	"heed/engine/fetch"
)

// The shapes jobs and history leave Heed in (SPEC §9): JSON lines for heed
// jobs and heed history, CSV for the window's export and heed history --csv.
// Every URL is shown with its password masked (G44).

// exportPage is how many rows a listing reads at a time.
const exportPage = 1000

// HistoryLine is the JSON shape of an attempt, and the column order of the
// CSV export.
type HistoryLine struct {
	JobID        int64   `json:"job_id"`
	URL          string  `json:"url"`
	Host         string  `json:"host"`
	Attempt      int     `json:"attempt"`
	Throttled    int     `json:"throttled"`
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

// startedAtLayout is RFC 3339 with all nine digits of the nanoseconds,
// trailing zeros kept, so that every line has the same width and every
// parser sees nanoseconds (SPEC §9).
const startedAtLayout = "2006-01-02T15:04:05.000000000Z07:00"

// LineOf is a as HistoryLine.
func LineOf(a Attempt) HistoryLine {
	return HistoryLine{
		JobID: a.JobID, URL: fetch.Redact(a.URL), Host: a.Host, Attempt: a.Attempt, Throttled: a.Throttled,
		StartedAt:  a.StartedAt.UTC().Format(startedAtLayout),
		DurationMS: float64(a.Duration) / float64(time.Millisecond),
		Status:     a.Status, Outcome: a.Outcome, Bytes: a.Bytes, Error: a.Error,
		RetryAfterMS: a.RetryAfter.Milliseconds(), BackoffLevel: a.Level, BreakerState: a.Breaker.String(),
	}
}

// HistoryCSVHeader is the header row of WriteHistoryCSV: the fields of the
// JSON lines, in the same order.
var HistoryCSVHeader = []string{"job_id", "url", "host", "attempt", "throttled", "started_at", "duration_ms",
	"status", "outcome", "bytes", "error", "retry_after_ms", "backoff_level", "breaker_state"}

// eachAttempt calls fn for every attempt q selects, newest first, reading a
// page at a time; q.Limit caps the total (0: all).
func eachAttempt(ctx context.Context, r Reader, q HistoryQuery, fn func(Attempt) error) error {
	left := q.Limit
	for {
		page := q
		page.Limit = exportPage
		if left > 0 {
			page.Limit = min(left, exportPage)
		}
		as, err := r.History(ctx, page)
		if err != nil {
			return err
		}
		for _, a := range as {
			if err := fn(a); err != nil {
				return err
			}
		}
		if left > 0 {
			if left -= len(as); left <= 0 {
				return nil
			}
		}
		if len(as) < page.Limit {
			return nil
		}
		q.BeforeID = as[len(as)-1].ID
	}
}

// WriteHistoryJSON writes the attempts q selects, newest first, one JSON
// object per line.
func WriteHistoryJSON(ctx context.Context, w io.Writer, r Reader, q HistoryQuery) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return eachAttempt(ctx, r, q, func(a Attempt) error { return enc.Encode(LineOf(a)) })
}

// WriteHistoryCSV writes the attempts q selects, newest first, as CSV with
// a header row (HistoryCSVHeader).
func WriteHistoryCSV(ctx context.Context, w io.Writer, r Reader, q HistoryQuery) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(HistoryCSVHeader); err != nil {
		return err
	}
	err := eachAttempt(ctx, r, q, func(a Attempt) error {
		l := LineOf(a)
		return cw.Write([]string{
			strconv.FormatInt(l.JobID, 10), l.URL, l.Host, strconv.Itoa(l.Attempt), strconv.Itoa(l.Throttled),
			l.StartedAt, strconv.FormatFloat(l.DurationMS, 'f', -1, 64), strconv.Itoa(l.Status), l.Outcome,
			strconv.FormatInt(l.Bytes, 10), l.Error, strconv.FormatInt(l.RetryAfterMS, 10),
			strconv.Itoa(l.BackoffLevel), l.BreakerState,
		})
	})
	cw.Flush()
	return errors.Join(err, cw.Error())
}

// JobLine is the JSON shape of a job (SPEC §9).
type JobLine struct {
	ID        int64    `json:"id"`
	URL       string   `json:"url"`
	Host      string   `json:"host"`
	State     JobState `json:"state"`
	File      string   `json:"file"`
	Bytes     int64    `json:"bytes"`
	SHA256    string   `json:"sha256"`
	Attempts  int      `json:"attempts"`
	Throttled int      `json:"throttled"`
	LastError string   `json:"last_error"`
	// Crawl (W10): the crawl that found it (0: none), its depth from a
	// seed, and the page that linked to it ("" for a seed).
	CrawlID int64  `json:"crawl_id"`
	Depth   int    `json:"depth"`
	FoundOn string `json:"found_on"`
	// Unnamed is set on a done job whose file has yet to take its name:
	// Heed stopped between recording it done and naming it, and its next
	// start names it.
	Unnamed bool `json:"unnamed,omitempty"`
}

// JobLineOf is j as JobLine.
func JobLineOf(j Job) JobLine {
	return JobLine{ID: j.ID, URL: fetch.Redact(j.URL), Host: j.Host, State: j.State, File: j.File,
		Bytes: j.Bytes, SHA256: j.SHA256, Attempts: j.Attempts, Throttled: j.Throttled, LastError: j.LastError,
		CrawlID: j.CrawlID, Depth: j.Depth, FoundOn: fetch.Redact(j.FoundOn),
		Unnamed: j.State == JobDone && j.Part != ""}
}

// CrawlLine is one line of heed crawls --json (W10).
type CrawlLine struct {
	ID         int64      `json:"id"`
	Seeds      []string   `json:"seeds"`
	Scope      string     `json:"scope"`
	Depth      int        `json:"depth"`
	MaxPages   int        `json:"max_pages"`
	Robots     bool       `json:"robots"`
	State      CrawlState `json:"state"`
	Created    time.Time  `json:"created"`
	Done       int64      `json:"done"`
	Queued     int64      `json:"queued"`
	Active     int64      `json:"active"`
	Paused     int64      `json:"paused"`
	Skipped    int64      `json:"skipped"`
	Failed     int64      `json:"failed"`
	Cancelled  int64      `json:"cancelled"`
	OutOfScope int64      `json:"out_of_scope"`
	Bytes      int64      `json:"bytes"`
}

// CrawlLineOf is c as CrawlLine, its seeds' passwords masked.
func CrawlLineOf(c Crawl) CrawlLine {
	seeds := make([]string, len(c.Seeds))
	for i, s := range c.Seeds {
		seeds[i] = fetch.Redact(s)
	}
	n := c.Counts
	return CrawlLine{ID: c.ID, Seeds: seeds, Scope: c.Scope, Depth: c.Depth, MaxPages: c.MaxPages, Robots: c.Robots,
		State: c.State, Created: c.Created, Done: n.Done, Queued: n.Queued, Active: n.Active, Paused: n.Paused,
		Skipped: n.Skipped, Failed: n.Failed, Cancelled: n.Cancelled, OutOfScope: c.OutOfScope, Bytes: c.Bytes}
}

// EachJob calls fn for every job q selects, in id order, reading a page at
// a time.
func EachJob(ctx context.Context, r Reader, q JobQuery, fn func(Job) error) error {
	for {
		page := q
		page.Limit = exportPage
		js, err := r.Jobs(ctx, page)
		if err != nil {
			return err
		}
		for _, j := range js {
			if err := fn(j); err != nil {
				return err
			}
		}
		if len(js) < exportPage {
			return nil
		}
		if q.Newest {
			q.BeforeID = js[len(js)-1].ID
		} else {
			q.AfterID = js[len(js)-1].ID
		}
	}
}

// WriteJobsJSON writes the jobs q selects, in id order, one JSON object per
// line.
func WriteJobsJSON(ctx context.Context, w io.Writer, r Reader, q JobQuery) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return EachJob(ctx, r, q, func(j Job) error { return enc.Encode(JobLineOf(j)) })
}
