package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// loggedQuery is one statement a traced connection was asked to run, with its arguments.
type loggedQuery struct {
	query string
	args  []any
}

// queryLog records the statements of traced connections.
type queryLog struct {
	mu sync.Mutex
	qs []loggedQuery
}

func (l *queryLog) add(query string, args []driver.NamedValue) {
	vs := make([]any, len(args))
	for i, a := range args {
		vs[i] = a.Value
	}
	l.mu.Lock()
	l.qs = append(l.qs, loggedQuery{query, vs})
	l.mu.Unlock()
}

func (l *queryLog) take() []loggedQuery {
	l.mu.Lock()
	defer l.mu.Unlock()
	qs := l.qs
	l.qs = nil
	return qs
}

// traceConnector opens go-sqlite3 connections that record every statement they run, so that
// the plans checked are those of the statements the DB's methods really send.
type traceConnector struct {
	dsn string
	log *queryLog
}

func (c traceConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := (&sqlite3.SQLiteDriver{}).Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &traceConn{SQLiteConn: conn.(*sqlite3.SQLiteConn), log: c.log}, nil
}

func (c traceConnector) Driver() driver.Driver { return &sqlite3.SQLiteDriver{} }

type traceConn struct {
	*sqlite3.SQLiteConn
	log *queryLog
}

func (c *traceConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.log.add(query, args)
	return c.SQLiteConn.QueryContext(ctx, query, args)
}

func (c *traceConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.log.add(query, args)
	return c.SQLiteConn.ExecContext(ctx, query, args)
}

// PrepareContext returns a statement that records each of its runs, so that a statement the DB
// prepares once and runs again and again is recorded at every run, with its arguments.
func (c *traceConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.SQLiteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &traceStmt{Stmt: s, query: query, log: c.log}, nil
}

type traceStmt struct {
	driver.Stmt
	query string
	log   *queryLog
}

func (s *traceStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.log.add(s.query, args)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (s *traceStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.log.add(s.query, args)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

// planOf returns SQLite's query plan of q, one line a step.
func planOf(t *testing.T, db *sql.DB, q loggedQuery) string {
	t.Helper()
	args := q.args
	if args == nil {
		args = make([]any, strings.Count(q.query, "?")) // NULLs: the plan does not depend on them
	}
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q.query, args...)
	require.NoError(t, err, q.query)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}

// TestQueryPlans_Q1_IndexesForScale holds the plans that keep Heed fast at 1,000,000 jobs over
// 100,000 hosts: each read the window, the command line and the frontier make seeks the index
// named — NextJobs the queue index, listing hosts and their counts never reads jobs — and none
// sorts its result in a temporary b-tree (which would mean reading every matching row before the
// first one is returned). The statements are those the methods send, recorded on the way.
func TestQueryPlans_Q1_IndexesForScale(t *testing.T) {
	db, path := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	log := &queryLog{}
	traced := sql.OpenDB(traceConnector{dsn: dsn(path, "mode=ro&_busy_timeout=5000"), log: log})
	orig := db.r
	db.r = traced
	t.Cleanup(func() { db.r = orig; traced.Close() })

	some := func(_ any, err error) error { return err }
	cases := []struct {
		name string
		call func() error
		want []string // in the plan
		not  []string // not in the plan
		seek string   // a regexp the plan matches
	}{
		// The cursor is sought whole, its id too: a paste queues thousands of jobs of a host with
		// one not_before, and a refill in the middle of them must not walk those before it.
		{"next queued jobs of a host", func() error {
			return some(db.NextJobs(bg, "a.example", engine.Cursor{NotBefore: 5, ID: ids[0]}, 64))
		}, []string{"INDEX jobs_queue (host=?"}, []string{"SCAN"},
			`jobs_queue \(host=\? AND (\(not_before,id\)>\(\?,\?\)|not_before=\? AND id>\?)\)`},
		{"next queued jobs of a host, from the start", func() error {
			return some(db.NextJobs(bg, "a.example", engine.Cursor{}, 64))
		}, []string{"INDEX jobs_queue (host=?"}, nil, ""},
		{"hosts and their counts", func() error { return some(db.Hosts(bg)) }, []string{"hosts"}, []string{"jobs"}, ""},
		{"counts over all hosts", func() error { return some(db.Counts(bg)) }, []string{"hosts"}, []string{"jobs"}, ""},
		{"job counts of every host", func() error { return some(db.HostCounts(bg)) }, []string{"hosts"}, []string{"jobs"}, ""},
		{"one job", func() error { return some(db.Job(bg, ids[0])) }, []string{"INTEGER PRIMARY KEY (rowid=?)"}, nil, ""},
		{"jobs page", func() error { return some(db.Jobs(bg, engine.JobQuery{AfterID: 1, Limit: 100})) },
			[]string{"INTEGER PRIMARY KEY (rowid>?)"}, nil, ""},
		{"jobs page, newest first", func() error {
			return some(db.Jobs(bg, engine.JobQuery{Newest: true, BeforeID: 9, Limit: 100}))
		}, []string{"INTEGER PRIMARY KEY (rowid<?)"}, nil, ""},
		{"jobs in a state", func() error {
			return some(db.Jobs(bg, engine.JobQuery{State: engine.JobQueued, AfterID: 1, Limit: 100}))
		}, []string{"INDEX jobs_state (state=? AND id>?)"}, nil, ""},
		{"jobs in a state, newest first", func() error {
			return some(db.Jobs(bg, engine.JobQuery{State: engine.JobFailed, Newest: true, Limit: 100}))
		}, []string{"INDEX jobs_state (state=?)"}, nil, ""},
		{"jobs of a host", func() error { return some(db.Jobs(bg, engine.JobQuery{Host: "a.example", Limit: 100})) },
			[]string{"INDEX jobs_host (host=?)"}, nil, ""},
		{"jobs of a host in a state", func() error {
			return some(db.Jobs(bg, engine.JobQuery{Host: "a.example", State: engine.JobDone, AfterID: 9, Limit: 100}))
		}, []string{"SEARCH jobs USING INDEX jobs_"}, []string{"SCAN"}, ""},
		{"done jobs to name", func() error { return some(db.Unnamed(bg)) }, []string{"INDEX jobs_state (state=?)"}, nil, ""},
		{"history of a host", func() error { return some(db.History(bg, engine.HistoryQuery{Host: "a.example", Limit: 100})) },
			[]string{"attempts_host (host=?)"}, nil, ""},
		{"history of a host by outcome", func() error {
			return some(db.History(bg, engine.HistoryQuery{Host: "a.example", Outcome: "ok", BeforeID: 9, Limit: 100}))
		}, []string{"attempts_host (host=? AND id<?)"}, nil, ""},
		{"history of successes", func() error { return some(db.History(bg, engine.HistoryQuery{Outcome: "ok", Limit: 100})) },
			[]string{"SCAN attempts"}, nil, ""},
		{"history by another outcome", func() error {
			return some(db.History(bg, engine.HistoryQuery{Outcome: "throttled", BeforeID: 9, Limit: 100}))
		}, []string{"attempts_outcome (outcome=? AND id<?)"}, nil, ""},
		{"history page", func() error { return some(db.History(bg, engine.HistoryQuery{BeforeID: 9, Limit: 100})) },
			[]string{"INTEGER PRIMARY KEY (rowid<?)"}, nil, ""},
		{"history of a job", func() error { return some(db.History(bg, engine.HistoryQuery{JobID: 1})) },
			[]string{"attempts_job (job_id=?)"}, nil, ""},
		{"host timeline", func() error { return some(db.HostEvents(bg, "a.example", 50)) },
			[]string{"host_events_host (host=?)"}, nil, ""},
		{"a setting", func() error { return some(db.Setting(bg, "folder")) }, []string{"settings USING INDEX"}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log.take()
			require.NoError(t, c.call())
			var reads []loggedQuery
			for _, q := range log.take() {
				if !strings.HasPrefix(strings.TrimSpace(q.query), "PRAGMA") {
					reads = append(reads, q)
				}
			}
			require.Len(t, reads, 1, "one statement")
			plan := planOf(t, orig, reads[0])
			t.Logf("%s\n%s", reads[0].query, plan)
			for _, w := range c.want {
				assert.Contains(t, plan, w)
			}
			for _, n := range c.not {
				assert.NotContains(t, plan, n)
			}
			if c.seek != "" {
				assert.Regexp(t, c.seek, plan)
			}
			assert.NotContains(t, plan, "TEMP B-TREE")
		})
	}
}

// Every statement the writer sends — the transitions, the background writes — finds its rows
// through a key or an index: none reads through jobs, attempts or hosts to find them. Recovery at
// Open finds the active jobs through jobs_state.
func TestQueryPlans_Q1_WritesSeek(t *testing.T) {
	db, path := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2", "https://a.example/3")
	_, err := db.Enqueue(bg, newJobs("a.example", "https://a.example/1"), allAgain) // a duplicate
	require.NoError(t, err)
	_, err = db.Start(bg, ids[0], "1.part")
	require.NoError(t, err)
	require.NoError(t, db.SetPart(bg, ids[0], "1 (1).part"))
	require.NoError(t, db.Note(ids[0], engine.Resume{Part: "1 (1).part", Bytes: 1, Size: 2}))
	require.NoError(t, db.RecordAttempt(*row(ids[0], "redirect", 301)))
	require.NoError(t, finish(db, bg, engine.End{JobID: ids[0], State: engine.JobDone, Attempt: row(ids[0], "ok", 200), File: "1"}))
	require.NoError(t, db.Rename(bg, ids[0], "1 (1)"))
	require.NoError(t, db.Named(ids[0]))
	_, err = db.Start(bg, ids[1], "")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: ids[1], State: engine.JobQueued}))
	_, err = db.Start(bg, ids[1], "")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: ids[1], State: engine.JobFailed}))
	_, err = db.Start(bg, ids[2], "")
	require.NoError(t, err)
	_, err = db.SetState(bg, ids[2:], pausable, engine.JobPaused)
	require.NoError(t, err)
	require.ErrorIs(t, finish(db, bg, engine.End{JobID: ids[2], State: engine.JobQueued}), engine.ErrNotQueued)
	_, err = db.SetState(bg, ids[:2], retryable, engine.JobQueued)
	require.NoError(t, err)
	_, err = db.Enqueue(bg, newJobs("a.example", "https://a.example/1"), allAgain)
	require.NoError(t, err)
	require.NoError(t, db.SaveHost(engine.HostState{Host: "a.example"}))
	require.NoError(t, db.AppendEvent(engine.Event{Host: "a.example", Kind: engine.EventThrottle}))
	require.NoError(t, db.SetSetting(bg, "k", "v"))
	// A crawl's page done with its links, one of them found again closer (W1).
	const seed = "https://c.example/"
	crawl, seeds, err := db.CreateCrawl(bg, engine.Crawl{Seeds: []string{seed}, Scope: "host", Depth: 3},
		[]engine.NewJob{{URL: seed, Key: seed, Host: "c.example"}})
	require.NoError(t, err)
	link := func(u string, depth int) engine.NewJob {
		return engine.NewJob{URL: u, Key: u, Host: "c.example", CrawlID: crawl, Depth: depth, FoundOn: seed}
	}
	_, err = db.Start(bg, seeds[0].ID, "c.part")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: seeds[0].ID, State: engine.JobDone, File: "c",
		Found: []engine.NewJob{link(seed+"a", 2), link(seed+"b", 1), link(seed, 1)}}))
	_, err = db.Start(bg, ids[1], "")
	require.NoError(t, err)
	require.NoError(t, finish(db, bg, engine.End{JobID: ids[1], State: engine.JobQueued}))
	require.NoError(t, db.Flush(bg)) // the writer is idle: its statements may be read

	var queries []string
	depthUpdates := 0
	for q := range db.prepared {
		queries = append(queries, q)
	}
	sort.Strings(queries)
	require.GreaterOrEqual(t, len(queries), 10, "the writer's statements")
	for _, q := range queries {
		plan := planOf(t, db.r, loggedQuery{query: q})
		t.Logf("%s\n%s", q, plan)
		for _, table := range []string{"jobs", "attempts", "hosts", "settings", "host_events"} {
			assert.NotRegexp(t, `SCAN `+table+`\b`, plan, q)
		}
		if strings.HasPrefix(q, "UPDATE jobs INDEXED BY jobs_key SET depth") {
			depthUpdates++
			assert.Contains(t, plan, "INDEX jobs_key (key=?)", "a link found closer is found by its key")
		}
	}
	assert.Equal(t, 1, depthUpdates, "a page's done commit lowers its known links' depth")

	// Recovery, as Open runs it, on a database no DB holds.
	require.NoError(t, db.Close())
	log := &queryLog{}
	traced := sql.OpenDB(traceConnector{dsn: dsn(path, "_busy_timeout=5000"), log: log})
	defer traced.Close()
	n, err := recoverActive(bg, traced, time.Now())
	require.NoError(t, err)
	assert.Zero(t, n)
	qs := log.take()
	require.Len(t, qs, 1)
	plan := planOf(t, traced, qs[0])
	t.Logf("%s\n%s", qs[0].query, plan)
	assert.Contains(t, plan, "INDEX jobs_state (state=?)")
}
