package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"heed/engine"
)

// CreateCrawl stores a new crawl, running, with its seeds as its first jobs
// in the same commit; a seed already known (J2, W3) is not queued again.
func (db *DB) CreateCrawl(ctx context.Context, c engine.Crawl, seeds []engine.NewJob) (int64, []engine.Enqueued, error) {
	seedsJSON, include, exclude, err := crawlJSON(c)
	if err != nil {
		return 0, nil, err
	}
	var id int64
	var out []engine.Enqueued
	err = db.write(ctx, "create crawl", func(w *wtx) error {
		now := db.now()
		if err := w.queryRow(`INSERT INTO crawls (seeds, scope, depth, max_pages, include, exclude, robots, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			seedsJSON, c.Scope, c.Depth, c.MaxPages, include, exclude, c.Robots, nanos(now)).Scan(&id); err != nil {
			return err
		}
		jobs := make([]engine.NewJob, len(seeds))
		for i, j := range seeds {
			j.CrawlID = id
			jobs[i] = j
		}
		var err error
		out, err = db.crawlJobs(w, crawlRow{id: id, state: engine.CrawlRunning, maxPages: int64(c.MaxPages)}, jobs, now)
		return err
	})
	return id, out, err
}

func crawlJSON(c engine.Crawl) (seeds, include, exclude string, err error) {
	list := func(v []string) string {
		if v == nil {
			v = []string{}
		}
		b, jerr := json.Marshal(v)
		err = errors.Join(err, jerr)
		return string(b)
	}
	return list(c.Seeds), list(c.Include), list(c.Exclude), err
}

// crawled queues the links a crawled page led to, with its done (W8): in
// the crawl's state (paused with a paused crawl; none for a cancelled one),
// no more than its max pages allow, counting what it found out of scope and
// the page's bytes. It reports what it did with each link, in order.
func (db *DB) crawled(w *wtx, end engine.End, crawlID int64, now time.Time) ([]engine.Enqueued, error) {
	if crawlID == 0 {
		return nil, nil
	}
	var bytes int64
	if end.State == engine.JobDone {
		bytes = end.Resume.Bytes
	}
	c := crawlRow{id: crawlID}
	if err := w.queryRow(`UPDATE crawls SET out_of_scope = out_of_scope + ?, bytes = bytes + ? WHERE id = ?
		RETURNING state, max_pages, pages`, end.OutOfScope, bytes, crawlID).Scan(&c.state, &c.maxPages, &c.pages); err != nil {
		return nil, err
	}
	if len(end.Found) == 0 || c.state == engine.CrawlCancelled {
		return make([]engine.Enqueued, len(end.Found)), nil
	}
	return db.crawlJobs(w, c, end.Found, now)
}

// crawlRow is what crawlJobs needs of a crawl's row.
type crawlRow struct {
	id              int64
	state           engine.CrawlState
	maxPages, pages int64
}

// crawlJobs adds the jobs a crawl found (or its seeds), each whose key has
// no job yet (J2, W3), as many as its max pages still allow, in its state,
// and counts them in its pages. It reports what it did with each, in
// order: ID 0 for one over the budget, Duplicate for one known.
func (db *DB) crawlJobs(w *wtx, c crawlRow, found []engine.NewJob, now time.Time) ([]engine.Enqueued, error) {
	// The keys known already are looked up first and only the others inserted: most links of a
	// page (its navigation, its footer) have a job already, and looking a key up costs a quarter
	// of an insert that conflicts. Only new URLs spend the max-pages budget.
	known, err := knownKeys(w, found)
	if err != nil {
		return nil, err
	}
	left := int64(len(found))
	if c.maxPages > 0 {
		left = max(c.maxPages-c.pages, 0)
	}
	out := make([]engine.Enqueued, len(found))
	var keep []engine.NewJob // most links of a page are known: few are kept
	for i, j := range found {
		switch {
		case known[j.Key]:
			out[i].Duplicate = true // known already, in this crawl or another (J2, W3), or twice here
		case int64(len(keep)) < left:
			known[j.Key] = true
			keep = append(keep, j)
		}
	}
	ids, err := insertJobs(w, keep, now)
	if err != nil {
		return nil, err
	}
	created := int64(0)
	for i, j := range found {
		id, ok := ids[j.Key]
		if out[i].Duplicate || !ok {
			// Known, found twice here, or over the budget, as marked above; a key kept that the
			// insert refused was known after all.
			out[i].Duplicate = known[j.Key]
			continue
		}
		created++
		out[i] = engine.Enqueued{ID: id, State: engine.JobQueued, NotBefore: now}
		if j.Skip != "" {
			out[i].State = engine.JobSkipped
		} else if c.state == engine.CrawlPaused {
			if _, err := w.exec(`UPDATE jobs SET state = 'paused' WHERE id = ?`, id); err != nil {
				return nil, err
			}
			out[i].State = engine.JobPaused
		}
	}
	if created > 0 {
		if _, err := w.exec(`UPDATE crawls SET pages = pages + ? WHERE id = ?`, created, c.id); err != nil {
			return nil, err
		}
	}
	for depth, keys := range engine.KnownByDepth(found, out) {
		for len(keys) > 0 {
			chunk := keys[:min(len(keys), insertChunk)]
			keys = keys[len(chunk):]
			args := append(make([]any, 0, 3+len(chunk)), depth, c.id, depth)
			for _, k := range chunk {
				args = append(args, k)
			}
			// By the keys, never by the state: the planner, without statistics, would
			// walk every queued job of the jobs_state index.
			if _, err := w.exec(`UPDATE jobs INDEXED BY jobs_key SET depth = ? WHERE crawl_id = ? AND depth > ?
				AND state IN ('queued', 'paused') AND key IN (?`+strings.Repeat(", ?", len(chunk)-1)+`)`, args...); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// knownKeys returns which of the jobs' keys have a job already.
func knownKeys(w *wtx, jobs []engine.NewJob) (map[string]bool, error) {
	known := make(map[string]bool, len(jobs))
	for len(jobs) > 0 {
		chunk := jobs[:min(len(jobs), insertChunk)]
		jobs = jobs[len(chunk):]
		args := make([]any, len(chunk))
		for i, j := range chunk {
			args[i] = j.Key
		}
		s, err := w.stmt(`SELECT key FROM jobs WHERE key IN (?` + strings.Repeat(", ?", len(chunk)-1) + `)`)
		if err != nil {
			return nil, err
		}
		rows, err := s.Query(args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return nil, err
			}
			known[k] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return known, nil
}

// SetCrawlState runs, pauses or cancels a crawl as a whole, its jobs with
// it: pausing moves its queued and active jobs to paused, running moves its
// paused jobs back to queued, cancelling moves every job not ended to
// cancelled. It returns the jobs that changed.
func (db *DB) SetCrawlState(ctx context.Context, id int64, to engine.CrawlState) ([]engine.Changed, error) {
	var from []engine.JobState
	var state engine.JobState
	switch to {
	case engine.CrawlRunning:
		from, state = []engine.JobState{engine.JobPaused}, engine.JobQueued
	case engine.CrawlPaused:
		from, state = []engine.JobState{engine.JobQueued, engine.JobActive}, engine.JobPaused
	case engine.CrawlCancelled:
		from, state = []engine.JobState{engine.JobQueued, engine.JobActive, engine.JobPaused}, engine.JobCancelled
	default:
		return nil, errors.New("storage: SetCrawlState: no such crawl state " + string(to))
	}
	var changed []engine.Changed
	err := db.write(ctx, "set crawl state", func(w *wtx) error {
		changed = changed[:0]
		r, err := w.exec(`UPDATE crawls SET state = ? WHERE id = ?`, string(to), id)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return engine.ErrNotFound
		}
		now := nanos(db.now())
		for _, f := range from {
			rows, err := w.db.wc.QueryContext(context.Background(), `UPDATE jobs SET state = ?, updated_at = ?
				WHERE crawl_id = ? AND state = ? RETURNING id, host, not_before`, string(state), now, id, string(f))
			if err != nil {
				return err
			}
			for rows.Next() {
				c := engine.Changed{From: f, To: state}
				var nb int64
				if err := rows.Scan(&c.ID, &c.Host, &nb); err != nil {
					rows.Close()
					return err
				}
				c.NotBefore = fromNanos(nb)
				changed = append(changed, c)
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
		}
		return nil
	})
	return changed, err
}

// Crawls returns every crawl with what it has done, oldest first; its jobs
// by state come from the jobs_crawl index, not a scan of the jobs.
func (db *DB) Crawls(ctx context.Context) ([]engine.Crawl, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id, seeds, scope, depth, max_pages, include, exclude, robots, state,
		created_at, pages, out_of_scope, bytes FROM crawls ORDER BY id`)
	if err != nil {
		return nil, err
	}
	var out []engine.Crawl
	for rows.Next() {
		var c engine.Crawl
		var seeds, include, exclude, state string
		var created int64
		if err := rows.Scan(&c.ID, &seeds, &c.Scope, &c.Depth, &c.MaxPages, &include, &exclude, &c.Robots, &state,
			&created, &c.Pages, &c.OutOfScope, &c.Bytes); err != nil {
			rows.Close()
			return nil, err
		}
		c.State, c.Created = engine.CrawlState(state), fromNanos(created)
		err := errors.Join(json.Unmarshal([]byte(seeds), &c.Seeds), json.Unmarshal([]byte(include), &c.Include),
			json.Unmarshal([]byte(exclude), &c.Exclude))
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	for i := range out {
		counts, err := db.r.QueryContext(ctx, `SELECT state, count(*) FROM jobs WHERE crawl_id = ? GROUP BY state`, out[i].ID)
		if err != nil {
			return nil, err
		}
		for counts.Next() {
			var state string
			var n int64
			if err := counts.Scan(&state, &n); err != nil {
				counts.Close()
				return nil, err
			}
			out[i].Counts.Add(countsOf(engine.JobState(state), n))
		}
		if err := errors.Join(counts.Err(), counts.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// countsOf is n jobs in state s.
func countsOf(s engine.JobState, n int64) engine.Counts {
	var c engine.Counts
	switch s {
	case engine.JobQueued:
		c.Queued = n
	case engine.JobActive:
		c.Active = n
	case engine.JobPaused:
		c.Paused = n
	case engine.JobDone:
		c.Done = n
	case engine.JobFailed:
		c.Failed = n
	case engine.JobCancelled:
		c.Cancelled = n
	case engine.JobSkipped:
		c.Skipped = n
	}
	return c
}

// Robots returns host's robots.txt as last fetched; ok is false when it
// never was.
func (db *DB) Robots(ctx context.Context, host string) (engine.RobotsFile, bool, error) {
	r := engine.RobotsFile{Host: host}
	var fetched int64
	err := db.r.QueryRowContext(ctx, `SELECT fetched_at, status, body, error FROM robots WHERE host = ?`, host).
		Scan(&fetched, &r.Status, &r.Body, &r.Error)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	r.Fetched = fromNanos(fetched)
	return r, err == nil, err
}

// SaveRobots keeps a host's robots.txt, with the next commit.
func (db *DB) SaveRobots(r engine.RobotsFile) error {
	body := r.Body
	if body == nil {
		body = []byte{}
	}
	return db.queue("save robots "+r.Host, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO robots (host, fetched_at, status, body, error) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (host) DO UPDATE SET fetched_at = excluded.fetched_at, status = excluded.status,
			body = excluded.body, error = excluded.error`, r.Host, nanos(r.Fetched), r.Status, body, r.Error)
		return err
	})
}
