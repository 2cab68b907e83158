package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"heed/engine"
)

// CreateCrawl stores a new crawl, running, with its seeds as its first jobs in the same commit; a
// seed already known (J2, W3) is not queued again.
func (db *DB) CreateCrawl(ctx context.Context, c engine.Crawl, seeds []engine.NewJob) (int64, []engine.Enqueued, error) {
	var id int64
	var out []engine.Enqueued
	err := db.tx(ctx, func(tx pgx.Tx) error {
		now := now()
		if err := tx.QueryRow(ctx, `INSERT INTO crawls (seeds, scope, depth, max_pages, include, exclude, robots,
			created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			list(c.Seeds), c.Scope, c.Depth, c.MaxPages, list(c.Include), list(c.Exclude), c.Robots, nanos(now)).
			Scan(&id); err != nil {
			return err
		}
		jobs := make([]engine.NewJob, len(seeds))
		for i, j := range seeds {
			j.CrawlID = id
			jobs[i] = j
		}
		var err error
		if out, err = crawlJobs(ctx, tx, id, jobs, now); err != nil {
			return err
		}
		return notifyHosts(ctx, tx, jobs)
	})
	return id, out, err
}

// list is v as a JSON array, never null.
func list(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// crawled queues the links a crawled page led to, with its end (W8): in the crawl's state,
// within its max pages, counting what it found out of scope and the page's bytes.
func (db *DB) crawled(ctx context.Context, tx pgx.Tx, end engine.End, now time.Time) ([]engine.Enqueued, error) {
	var crawlID int64
	if err := tx.QueryRow(ctx, `SELECT crawl_id FROM jobs WHERE id = $1`, end.JobID).Scan(&crawlID); err != nil || crawlID == 0 {
		return nil, err
	}
	var bytes int64
	if end.State == engine.JobDone {
		bytes = end.Resume.Bytes
	}
	var state string
	if err := tx.QueryRow(ctx, `UPDATE crawls SET out_of_scope = out_of_scope + $2, bytes = bytes + $3
		WHERE id = $1 RETURNING state`, crawlID, end.OutOfScope, bytes).Scan(&state); err != nil {
		return nil, err
	}
	if len(end.Found) == 0 || engine.CrawlState(state) == engine.CrawlCancelled {
		return make([]engine.Enqueued, len(end.Found)), nil
	}
	// A link PostgreSQL's text cannot hold is left out, reported with ID 0 as one over the
	// budget is: the page's done must not fail for it.
	var found []engine.NewJob
	var at []int
	for i, j := range end.Found {
		if textOnly(j.URL, j.Key, j.Host, j.FoundOn) == nil {
			found = append(found, j)
			at = append(at, i)
		}
	}
	got, err := crawlJobs(ctx, tx, crawlID, found, now)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Enqueued, len(end.Found))
	for k, i := range at {
		out[i] = got[k]
	}
	return out, notifyHosts(ctx, tx, found)
}

// crawlJobs adds the jobs a crawl found (or its seeds), each whose key has no job yet, as many
// as its max pages still allow, in its state, and counts them in its pages (see the SQLite
// store's crawlJobs, which this mirrors).
func crawlJobs(ctx context.Context, tx pgx.Tx, crawlID int64, found []engine.NewJob, now time.Time) ([]engine.Enqueued, error) {
	var state string
	var maxPages, pages int64
	if err := tx.QueryRow(ctx, `SELECT state, max_pages, pages FROM crawls WHERE id = $1 FOR UPDATE`, crawlID).
		Scan(&state, &maxPages, &pages); err != nil {
		return nil, err
	}
	out := make([]engine.Enqueued, len(found))
	keep := found
	if maxPages > 0 {
		keys := make([][]byte, len(found))
		for i, j := range found {
			keys[i] = keyHash(j.Key)
		}
		known := map[string]bool{}
		rows, err := tx.Query(ctx, `SELECT key FROM jobs WHERE key_hash = ANY($1)`, keys)
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
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		left := max(maxPages-pages, 0)
		keep = make([]engine.NewJob, 0, min(int64(len(found)), left))
		for i, j := range found {
			switch {
			case known[j.Key]:
				out[i].Duplicate = true
			case int64(len(keep)) < left:
				known[j.Key] = true
				keep = append(keep, j)
			}
		}
	}
	ids, err := insertJobs(ctx, tx, keep, now)
	if err != nil {
		return nil, err
	}
	created := int64(0)
	for i, j := range found {
		id, ok := ids[j.Key]
		if !ok || id <= 0 {
			if ok || maxPages == 0 {
				out[i].Duplicate = true
			}
			continue
		}
		ids[j.Key] = -id
		created++
		out[i] = engine.Enqueued{ID: id, State: engine.JobQueued, NotBefore: now}
		if j.Skip != "" {
			out[i].State = engine.JobSkipped
		} else if engine.CrawlState(state) == engine.CrawlPaused {
			if _, err := tx.Exec(ctx, `UPDATE jobs SET state = 'paused' WHERE id = $1`, id); err != nil {
				return nil, err
			}
			out[i].State = engine.JobPaused
		}
	}
	if created > 0 {
		if _, err := tx.Exec(ctx, `UPDATE crawls SET pages = pages + $2 WHERE id = $1`, crawlID, created); err != nil {
			return nil, err
		}
	}
	for depth, keys := range engine.KnownByDepth(found, out) {
		hashes := make([][]byte, len(keys))
		for i, k := range keys {
			hashes[i] = keyHash(k)
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET depth = $1 WHERE crawl_id = $2 AND depth > $1
			AND state IN ('queued', 'paused') AND key_hash = ANY($3)`, depth, crawlID, hashes); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SetCrawlState runs, pauses or cancels a crawl as a whole, its jobs with it, and returns the
// jobs that changed.
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
		return nil, errors.New("postgres: SetCrawlState: no such crawl state " + string(to))
	}
	var changed []engine.Changed
	err := db.tx(ctx, func(tx pgx.Tx) error {
		changed = changed[:0]
		tag, err := tx.Exec(ctx, `UPDATE crawls SET state = $2 WHERE id = $1`, id, string(to))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return engine.ErrNotFound
		}
		now := nanos(now())
		var hosts []engine.NewJob
		for _, f := range from {
			rows, err := tx.Query(ctx, `UPDATE jobs SET state = $1, updated_at = $2
				WHERE crawl_id = $3 AND state = $4 RETURNING id, host, not_before`, string(state), now, id, string(f))
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
				hosts = append(hosts, engine.NewJob{Host: c.Host})
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		if state == engine.JobQueued {
			return notifyHosts(ctx, tx, hosts)
		}
		return nil
	})
	return changed, err
}

// Crawls returns every crawl with what it has done, oldest first.
func (db *DB) Crawls(ctx context.Context) ([]engine.Crawl, error) {
	rows, err := db.pool.Query(ctx, `SELECT c.id, c.seeds, c.scope, c.depth, c.max_pages, c.include, c.exclude,
		c.robots, c.state, c.created_at, c.pages, c.out_of_scope, c.bytes,
		coalesce((SELECT jsonb_object_agg(s.state, s.n) FROM
			(SELECT state, count(*) AS n FROM jobs WHERE crawl_id = c.id GROUP BY state) s), '{}')
		FROM crawls c ORDER BY c.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.Crawl
	for rows.Next() {
		var c engine.Crawl
		var seeds, include, exclude, counts []byte
		var state string
		var created int64
		if err := rows.Scan(&c.ID, &seeds, &c.Scope, &c.Depth, &c.MaxPages, &include, &exclude, &c.Robots, &state,
			&created, &c.Pages, &c.OutOfScope, &c.Bytes, &counts); err != nil {
			return nil, err
		}
		c.State, c.Created = engine.CrawlState(state), fromNanos(created)
		var byState map[string]int64
		if err := errors.Join(json.Unmarshal(seeds, &c.Seeds), json.Unmarshal(include, &c.Include),
			json.Unmarshal(exclude, &c.Exclude), json.Unmarshal(counts, &byState)); err != nil {
			return nil, err
		}
		for s, n := range byState {
			c.Counts.Add(countsOf(engine.JobState(s), n))
		}
		out = append(out, c)
	}
	return out, rows.Err()
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
