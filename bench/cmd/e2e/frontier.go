package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"heed/bench"
	"heed/engine"
	"heed/storage"
)

// The frontier benchmark (issue #30): databases of many queued jobs over
// frontierHosts hosts, each opened by the engine with politeness off and
// run until it has made frontierN requests, answered in memory.
const (
	frontierHosts = 100000
	frontierN     = 100000
	pagesEach     = 11 // timed calls of each jobs-view page; the median is shown
)

// frontierSize is every figure of one database size.
type frontierSize struct {
	Jobs, Hosts int
	N           int           // requests each run stops at
	Built       bool          // the fixture was built by this run (else it was cached)
	BuildTook   time.Duration // how long building it took, when it was
	DBBytes     int64
	Load        string // load average before its runs
	Runs        []frontierRun
	// Parts is the CPU profile of the median run (by CPU) charged to
	// bench.FrontierComponents; HeapTop its heap at the n-th request.
	Parts    map[string]time.Duration
	PartsOf  int // which run (index)
	HeapTop  string
	AllocTop string // the same profile's allocations over the run (alloc_space)
	CPUTop   string
	Pages    []pageTiming
	Hosts2   hostsCheck
}

type frontierRun struct {
	Child frontierChild
	M     bench.Measure // the child's rusage: peak RSS, CPU, wall
	Copy  time.Duration // copying the fixture before the run (not counted)
}

// pageTiming is one jobs-view query on the fixture.
type pageTiming struct {
	Name   string
	Query  engine.JobQuery
	Rows   int
	First  time.Duration // the first call
	Median time.Duration // of pagesEach calls after it
	Max    time.Duration
}

// hostsCheck is the hosts view on the database a run left: counts right,
// and how fast a change shows.
type hostsCheck struct {
	Rows                       int
	Call, CallMax              time.Duration // Reader.Hosts, median and slowest of 5
	Poll, PollMax              time.Duration // Reader.HostCounts (what the window reads each second), the same
	CLI                        bench.Measure // heed hosts --json --db COPY
	CLILines                   int
	Mismatched                 int           // hosts whose counts differ from a count of their jobs
	Queued, Done               int64         // sums over the hosts rows
	CountedQueued, CountedDone int64         // counted in jobs
	Change                     time.Duration // from before a SetState to a HostCounts call that shows it, returned
	ChangeSeen                 bool
}

func (o options) frontierJobs() ([]int, error) {
	var out []int
	for _, f := range strings.Split(o.frontierSizes, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-frontier: %q is not a count of jobs", f)
		}
		out = append(out, o.n(n))
	}
	return out, nil
}

// runFrontier runs the frontier benchmark at every size of -frontier.
func runFrontier(ctx context.Context, o options, rn bench.Runner, heedBin string) ([]frontierSize, error) {
	sizes, err := o.frontierJobs()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	hosts := o.n(frontierHosts)
	n := o.n(frontierN)
	var out []frontierSize
	for _, jobs := range sizes {
		fs := frontierSize{Jobs: jobs, Hosts: hosts, N: n}
		logf("frontier: %d queued jobs over %d hosts: the fixture", jobs, hosts)
		began := time.Now()
		fixture, built, err := bench.Fixture(ctx, o.fixtures, jobs, hosts)
		if err != nil {
			return nil, err
		}
		fs.Built = built
		if built {
			fs.BuildTook = time.Since(began)
			logf("  built in %v", fs.BuildTook.Round(time.Millisecond))
		}
		if st, err := os.Stat(fixture); err == nil {
			fs.DBBytes = st.Size()
		}
		if fs.Pages, err = timePages(ctx, fixture, jobs, hosts); err != nil {
			return nil, fmt.Errorf("jobs view: %w", err)
		}
		fs.Load = loadavg()
		root := filepath.Join(o.tmp, fmt.Sprintf("frontier-%d", jobs))
		var profiles []string
		for r := range o.frontierRuns {
			base := filepath.Join(root, fmt.Sprintf("run-%d", r))
			if err := os.MkdirAll(base, 0o755); err != nil {
				return nil, err
			}
			db := filepath.Join(base, "heed.db")
			t0 := time.Now()
			if err := copyFile(fixture, db); err != nil {
				return nil, err
			}
			if _, err := bench.SyncDir(base); err != nil {
				return nil, err
			}
			run := frontierRun{Copy: time.Since(t0)}
			result := filepath.Join(base, "result.json")
			cpu, heap := filepath.Join(root, fmt.Sprintf("cpu-%d.pprof", r)), filepath.Join(root, fmt.Sprintf("heap-%d.pprof", r))
			cmd := exec.Command(self, "frontier-child", "-db", db, "-dir", filepath.Join(base, "out"), "-n", strconv.Itoa(n),
				"-out", result, "-cpuprofile", cpu, "-memprofile", heap)
			if run.M, err = rn.Run(cmd); err != nil {
				return nil, err
			}
			b, err := os.ReadFile(result)
			if err == nil {
				err = json.Unmarshal(b, &run.Child)
			}
			if err != nil {
				return nil, fmt.Errorf("the child's result: %w", err)
			}
			logf("  run %d: first request after %v, %d requests in %v, %v CPU (%.1f µs each), %.0f MiB peak RSS, %d jobs windowed at most",
				r+1, run.Child.FirstReq.Round(time.Millisecond), run.Child.Requests, run.M.Wall.Round(time.Millisecond),
				(run.M.User + run.M.Sys).Round(time.Millisecond), perDispatch(run)*1e6, float64(run.M.MaxRSS)/(1<<20), run.Child.Windowed)
			fs.Runs = append(fs.Runs, run)
			profiles = append(profiles, cpu+"\x00"+heap)
			if r == o.frontierRuns-1 {
				if fs.Hosts2, err = checkHosts(ctx, db, heedBin, rn); err != nil {
					return nil, fmt.Errorf("hosts view: %w", err)
				}
			}
			if err := os.RemoveAll(base); err != nil {
				return nil, err
			}
		}
		// The profile of the median run by CPU time.
		idx := make([]int, len(fs.Runs))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return int(perDispatch(fs.Runs[a])*1e9 - perDispatch(fs.Runs[b])*1e9) })
		fs.PartsOf = idx[len(idx)/2]
		cpu, heap, _ := strings.Cut(profiles[fs.PartsOf], "\x00")
		traces, err := pprofOut("-traces", cpu)
		if err != nil {
			return nil, err
		}
		if fs.Parts, err = bench.ComponentCPU(traces, bench.FrontierComponents); err != nil {
			return nil, err
		}
		if fs.CPUTop, err = pprofOut("-top", "-cum", "-nodecount", "30", cpu); err != nil {
			return nil, err
		}
		if fs.HeapTop, err = pprofOut("-top", "-sample_index", "inuse_space", "-nodecount", "15", heap); err != nil {
			return nil, err
		}
		if fs.AllocTop, err = pprofOut("-top", "-sample_index", "alloc_space", "-nodecount", "10", heap); err != nil {
			return nil, err
		}
		if err := os.RemoveAll(root); err != nil {
			return nil, err
		}
		out = append(out, fs)
	}
	return out, nil
}

// perDispatch is the child's CPU time (user+sys, whole run) per request, in seconds.
func perDispatch(r frontierRun) float64 {
	if r.Child.Requests == 0 {
		return 0
	}
	return (r.M.User + r.M.Sys).Seconds() / float64(r.Child.Requests)
}

// steadyPerDispatch is the CPU per request from the first request to the n-th.
func steadyPerDispatch(r frontierRun) float64 {
	if r.Child.Requests < 2 || r.Child.CPULast <= r.Child.CPUFirst {
		return 0
	}
	return (r.Child.CPULast - r.Child.CPUFirst).Seconds() / float64(r.Child.Requests-1)
}

func pprofOut(args ...string) (string, error) {
	out, err := exec.Command("go", append([]string{"tool", "pprof"}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("go tool pprof %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// timePages times the jobs view's pages on the fixture, read-only: the
// first, a middle one (by cursor) and the last, unfiltered, by state and by
// host.
func timePages(ctx context.Context, fixture string, jobs, hosts int) ([]pageTiming, error) {
	db, err := storage.OpenReader(fixture)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	mid := int64(jobs / 2)
	host := bench.FixtureHost(hosts / 2)
	var out []pageTiming
	for _, f := range []struct {
		name string
		q    engine.JobQuery
	}{
		{"all jobs", engine.JobQuery{}},
		{"state queued", engine.JobQuery{State: engine.JobQueued}},
		{"host " + host, engine.JobQuery{Host: host}},
	} {
		for _, pg := range []struct {
			name string
			set  func(*engine.JobQuery)
		}{
			{"first page", func(*engine.JobQuery) {}},
			{fmt.Sprintf("middle page (AfterID %d)", mid), func(q *engine.JobQuery) { q.AfterID = mid }},
			{"last page (Newest)", func(q *engine.JobQuery) { q.Newest = true }},
		} {
			q := f.q
			q.Limit = 100
			pg.set(&q)
			t := pageTiming{Name: f.name + ", " + pg.name, Query: q}
			var times []float64
			for i := range pagesEach + 1 {
				start := time.Now()
				rows, err := db.Jobs(ctx, q)
				d := time.Since(start)
				if err != nil {
					return nil, err
				}
				if i == 0 {
					t.First, t.Rows = d, len(rows)
					continue
				}
				times = append(times, float64(d))
				t.Max = max(t.Max, d)
			}
			t.Median = time.Duration(bench.Median(times))
			out = append(out, t)
		}
	}
	return out, nil
}

// checkHosts looks at the hosts view of the database a run left: every
// host's counts against a count of its jobs, Reader.Hosts timed, `heed
// hosts` timed, and how long until a change of one job shows in it.
func checkHosts(ctx context.Context, path, heedBin string, rn bench.Runner) (hostsCheck, error) {
	var hc hostsCheck
	raw, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		return hc, err
	}
	defer raw.Close()
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM hosts h LEFT JOIN (
			SELECT host, sum(state = 'queued') AS q, sum(state = 'active') AS a, sum(state = 'paused') AS p,
				sum(state = 'done') AS d, sum(state = 'failed') AS f, sum(state = 'cancelled') AS c, sum(state = 'skipped') AS s
			FROM jobs GROUP BY host) j ON j.host = h.host
		WHERE h.queued <> coalesce(j.q, 0) OR h.active <> coalesce(j.a, 0) OR h.paused_jobs <> coalesce(j.p, 0)
			OR h.done <> coalesce(j.d, 0) OR h.failed <> coalesce(j.f, 0) OR h.cancelled <> coalesce(j.c, 0)
			OR h.skipped <> coalesce(j.s, 0)`).Scan(&hc.Mismatched); err != nil {
		return hc, err
	}
	if err := raw.QueryRowContext(ctx, `SELECT sum(state = 'queued'), sum(state = 'done') FROM jobs`).Scan(&hc.CountedQueued, &hc.CountedDone); err != nil {
		return hc, err
	}
	raw.Close()

	rd, err := storage.OpenReader(path)
	if err != nil {
		return hc, err
	}
	var times []float64
	for range 5 {
		start := time.Now()
		hs, err := rd.Hosts(ctx)
		d := time.Since(start)
		if err != nil {
			rd.Close()
			return hc, err
		}
		times = append(times, float64(d))
		hc.CallMax = max(hc.CallMax, d)
		hc.Rows = len(hs)
		hc.Queued, hc.Done = 0, 0
		for _, h := range hs {
			hc.Queued += h.Counts.Queued
			hc.Done += h.Counts.Done
		}
	}
	hc.Call = time.Duration(bench.Median(times))
	times = times[:0]
	for range 5 {
		start := time.Now()
		if _, err := rd.HostCounts(ctx); err != nil {
			rd.Close()
			return hc, err
		}
		d := time.Since(start)
		times = append(times, float64(d))
		hc.PollMax = max(hc.PollMax, d)
	}
	hc.Poll = time.Duration(bench.Median(times))
	rd.Close()

	var stdout bytes.Buffer
	cmd := exec.Command(heedBin, "hosts", "--json", "--db", path)
	cmd.Stdout = &stdout
	if hc.CLI, err = rn.Run(cmd); err != nil {
		return hc, err
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			hc.CLILines++
		}
	}

	// A change: one done job queued again, as the window's Retry does, then the counts read as the window reads them.
	db, err := storage.Open(path)
	if err != nil {
		return hc, err
	}
	defer db.Close()
	d, err := db.Jobs(ctx, engine.JobQuery{State: engine.JobDone, Limit: 1})
	if err != nil || len(d) == 0 {
		return hc, fmt.Errorf("no done job to queue again: %v", err)
	}
	before, err := countsOf(ctx, db, d[0].Host)
	if err != nil {
		return hc, err
	}
	start := time.Now()
	if _, err := db.SetState(ctx, []int64{d[0].ID}, []engine.JobState{engine.JobDone}, engine.JobQueued); err != nil {
		return hc, err
	}
	after, err := countsOf(ctx, db, d[0].Host)
	hc.Change = time.Since(start)
	hc.ChangeSeen = after.Done == before.Done-1 && after.Queued == before.Queued+1
	return hc, err
}

func countsOf(ctx context.Context, db *storage.DB, host string) (engine.Counts, error) {
	cs, err := db.HostCounts(ctx)
	if err != nil {
		return engine.Counts{}, err
	}
	c, ok := cs[host]
	if !ok {
		return engine.Counts{}, fmt.Errorf("host %s is not listed", host)
	}
	return c, nil
}
