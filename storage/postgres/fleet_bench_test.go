package postgres

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"heed/engine"
	"heed/storage"
	"heed/storage/postgres/pgtest"
)

// The fleet benchmark of issue 34: 600 loopback hosts at 60 requests a
// minute each (burst 1: what politeness allows is 600 requests a second),
// worked by 1, 2 and 3 workers sharing one PostgreSQL queue, and by one
// Heed on SQLite for comparison. It reports the request rate achieved as a
// share of the allowed rate, the database round trips per request (every
// statement a worker sends, BEGIN and COMMIT included, lease work and
// heartbeats too), and the time a request spends in the store's Start and
// Finish, which is what a shared store adds to each request's latency.
//
//	go test -run '^$' -bench Fleet -benchtime 1x ./storage/postgres/

const (
	benchHosts   = 600
	benchWarm    = 5 * time.Second
	benchMeasure = 20 * time.Second
)

// counter counts the statements sent over pgx connections, in all and by
// their first words while on is set.
type counter struct {
	n  atomic.Int64
	on atomic.Bool
	mu sync.Mutex
	by map[string]int
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	if c.on.Load() {
		q := strings.Join(strings.Fields(d.SQL), " ")
		c.mu.Lock()
		if c.by == nil {
			c.by = map[string]int{}
		}
		c.by[q[:min(len(q), 60)]]++
		c.mu.Unlock()
	}
	return ctx
}
func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// timed is a Store whose Start and Finish are timed, each on its own.
type timed struct {
	engine.Store
	*times
}

type times struct{ start, finish, calls atomic.Int64 }

func (s timed) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	t := time.Now()
	j, err := s.Store.Start(ctx, id, part)
	s.start.Add(int64(time.Since(t)))
	s.calls.Add(1)
	return j, err
}

func (s timed) Finish(ctx context.Context, end engine.End) ([]engine.Enqueued, error) {
	t := time.Now()
	f, err := s.Store.Finish(ctx, end)
	s.finish.Add(int64(time.Since(t)))
	return f, err
}

// fleetOf implements engine.Fleet for a timed store over a fleet member.
type fleetOf struct {
	timed
	engine.Fleet
}

func BenchmarkFleet600Hosts(b *testing.B) {
	var served atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		fmt.Fprint(w, "a small file\n")
	})
	hosts := make([]string, benchHosts)
	for i := range hosts {
		s := httptest.NewServer(handler)
		b.Cleanup(s.Close)
		hosts[i] = s.URL
	}
	// Enough files that no host runs dry within the run.
	perHost := int((benchWarm+benchMeasure)/time.Second) + 10
	var urls []string
	for j := range perHost {
		for _, h := range hosts {
			urls = append(urls, fmt.Sprintf("%s/f%03d", h, j))
		}
	}
	tun := engine.DefaultTunables()
	tun.RatePerMin, tun.Burst, tun.MaxInflight = 60, 1, 1
	for _, workers := range []int{0, 1, 2, 3} { // 0: one Heed on SQLite
		name := fmt.Sprintf("%d-workers", workers)
		if workers == 0 {
			name = "sqlite"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			tm := &times{}
			var queries counter
			var stores []engine.Store
			var pools []*DB
			if workers == 0 {
				db, err := storage.Open(filepath.Join(b.TempDir(), "heed.db"))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				stores = append(stores, timed{db, tm})
			} else {
				dsn := pgtest.Shared(b).DB(b)
				for i := range workers {
					db, err := Open(ctx, dsn, WithWorker(fmt.Sprintf("w%d", i)), withTracer(&queries))
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { db.Close() })
					stores = append(stores, fleetOf{timed{db, tm}, db})
					pools = append(pools, db)
				}
			}
			var engines []*engine.Engine
			for _, s := range stores {
				e, err := engine.New(ctx, s, engine.Options{Dir: filepath.Join(b.TempDir(), "dl"), Defaults: tun, Workers: 64})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { e.Close() })
				engines = append(engines, e)
			}
			if _, err := engines[0].Add(ctx, strings.Join(urls, "\n")); err != nil {
				b.Fatal(err)
			}
			run, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			for _, e := range engines {
				wg.Add(1)
				go func() { defer wg.Done(); e.Run(run) }()
			}
			time.Sleep(benchWarm)
			poolWait := func() (d time.Duration) {
				for _, db := range pools {
					d += db.pool.Stat().AcquireDuration()
				}
				return d
			}
			// What the server's busy backends wait for, sampled: a lock another
			// transaction holds, the client, or nothing (running).
			waits := map[string]int{}
			blocked := map[string]int{} // "waiting statement  ⟵  the statement of the backend it waits for"
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				if len(pools) == 0 {
					return
				}
				for t := time.NewTicker(50 * time.Millisecond); run.Err() == nil; <-t.C {
					rows, err := pools[0].pool.Query(ctx, `SELECT coalesce(wait_event_type, 'running'), count(*)
						FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
						AND pid <> pg_backend_pid() GROUP BY 1`)
					if err != nil {
						continue
					}
					for rows.Next() {
						var kind string
						var n int
						if rows.Scan(&kind, &n) == nil {
							waits[kind] += n
						}
					}
					rows.Close()
					rows, err = pools[0].pool.Query(ctx, `SELECT left(regexp_replace(w.query, '\s+', ' ', 'g'), 70),
						coalesce(left(regexp_replace(h.query, '\s+', ' ', 'g'), 70), '?')
						FROM pg_stat_activity w LEFT JOIN pg_stat_activity h ON h.pid = (pg_blocking_pids(w.pid))[1]
						WHERE w.datname = current_database() AND w.wait_event_type = 'Lock'`)
					if err != nil {
						continue
					}
					for rows.Next() {
						var waiter, holder string
						if rows.Scan(&waiter, &holder) == nil {
							blocked[waiter+"  ⟵  "+holder]++
						}
					}
					rows.Close()
				}
			}()
			s0, q0, st0, fi0, c0, w0 := served.Load(), queries.n.Load(), tm.start.Load(), tm.finish.Load(), tm.calls.Load(), poolWait()
			b.ResetTimer()
			queries.on.Store(true)
			time.Sleep(benchMeasure)
			queries.on.Store(false)
			s1, q1, st1, fi1, c1, w1 := served.Load(), queries.n.Load(), tm.start.Load(), tm.finish.Load(), tm.calls.Load(), poolWait()
			b.StopTimer()
			stop()
			wg.Wait()
			<-sampled
			if len(waits) > 0 {
				total := 0
				for _, n := range waits {
					total += n
				}
				b.Logf("busy backends by what they wait for: %v (%d samples of them)", waits, total)
				b.ReportMetric(100*float64(waits["Lock"])/float64(max(total, 1)), "%busy-on-locks")
				type pair struct {
					what string
					n    int
				}
				var top []pair
				for w, n := range blocked {
					top = append(top, pair{w, n})
				}
				sort.Slice(top, func(i, j int) bool { return top[i].n > top[j].n })
				for _, p := range top[:min(len(top), 6)] {
					b.Logf("%5d  %s", p.n, p.what)
				}
			}
			reqs := float64(s1 - s0)
			type stmt struct {
				q string
				n int
			}
			var stmts []stmt
			for q, n := range queries.by {
				stmts = append(stmts, stmt{q, n})
			}
			sort.Slice(stmts, func(i, j int) bool { return stmts[i].n > stmts[j].n })
			for _, st := range stmts[:min(len(stmts), 8)] {
				b.Logf("%6.2f a request  %s", float64(st.n)/reqs, st.q)
			}
			allowed := float64(benchHosts) * benchMeasure.Seconds() // one a second each
			b.ReportMetric(reqs/benchMeasure.Seconds(), "req/s")
			b.ReportMetric(100*reqs/allowed, "%allowed")
			calls := float64(max(c1-c0, 1))
			if workers > 0 {
				b.ReportMetric(float64(q1-q0)/reqs, "roundtrips/req")
				b.ReportMetric(float64(w1-w0)/reqs/1e6, "poolwait-ms/req")
			}
			b.ReportMetric(float64(st1-st0+fi1-fi0)/calls/1e6, "store-ms/req")
			b.ReportMetric(float64(st1-st0)/calls/1e6, "start-ms/req")
			b.ReportMetric(float64(fi1-fi0)/calls/1e6, "finish-ms/req")
		})
	}
}
