package main

import (
	"fmt"
	"strings"
	"time"

	"heed/bench"
)

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func us(sec float64) string { return fmt.Sprintf("%.1f µs", sec*1e6) }

func medianRun(runs []frontierRun, f func(frontierRun) float64) float64 {
	xs := make([]float64, len(runs))
	for i, r := range runs {
		xs[i] = f(r)
	}
	return bench.Median(xs)
}

// frontierSection is issue #30's table and what explains it.
func (r *report) frontierSection(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	fs := r.Frontier
	p("## Frontier: %d requests from databases of many queued jobs (issue #30)\n\n", fs[0].N)
	p("Each database holds its queued jobs over %d hosts (distinct host keys, interleaved in id order), built\n", fs[0].Hosts)
	p("fast by bench.BuildFixture: storage.Open creates it, then one transaction of plain SQL fills `jobs` and\n")
	p("`hosts` (each host's queued count set to match) and rebuilds the indexes. Fixtures are cached by size and\n")
	p("schema outside the scratch file system; each run copies one into it. Each run is a child process\n")
	p("(`e2e frontier-child`, under the rusage wrapper): storage.Open, engine.New with politeness off (rate\n")
	p("600000/min, burst 10000, max_inflight 256, no jitter, 1024 workers) and Run, its requests answered in\n")
	p("memory by an http.RoundTripper (a 200 with a 3-byte body: no socket, no server), stopped by cancelling\n")
	p("the run's context at the %d-th request (those already in flight then still end, so a run makes a few more).\n", fs[0].N)
	p("Each request is a whole download: its start committed, its\n")
	p("part created, written, hashed and synced, its end committed, the part renamed.\n\n")
	p("- *First request*: from just before storage.Open to the first RoundTrip call.\n")
	p("- *Peak RSS*: the child's ru_maxrss.\n")
	p("- *CPU per dispatch*: the child's user+system CPU time over the whole run (open, refills, shutdown\n")
	p("  included) divided by the requests; *steady* is the same from the first request to the last.\n")
	p("- *Core + refills*: the CPU profile's samples in the politeness core (`engine.(*Core)`) and in\n")
	p("  `Store.NextJobs`, per request: what the frontier itself costs (bench.FrontierComponents).\n")
	p("- *Windowed*: the most queued jobs the core held in its windows at once (sampled every 100 ms).\n\n")
	p("| Queued jobs | Database | Runs | First request | Peak RSS | CPU per dispatch | steady | core + refills | SQLite share | Windowed (peak) | Requests/s | Load average before |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range fs {
		first := medianRun(f.Runs, func(x frontierRun) float64 { return x.Child.FirstReq.Seconds() })
		rss := medianRun(f.Runs, func(x frontierRun) float64 { return float64(x.M.MaxRSS) })
		cpu := medianRun(f.Runs, perDispatch)
		steady := medianRun(f.Runs, steadyPerDispatch)
		win := medianRun(f.Runs, func(x frontierRun) float64 { return float64(x.Child.Windowed) })
		rps := medianRun(f.Runs, func(x frontierRun) float64 {
			return float64(x.Child.Requests) / (x.Child.LastReq - x.Child.FirstReq).Seconds()
		})
		core, sqlite, total := f.shares()
		run := f.Runs[f.PartsOf]
		p("| %d | %s | %d | %s | %s | %s | %s | %s | %.0f %% | %.0f | %.0f | %s |\n", f.Jobs, mib(f.DBBytes), len(f.Runs),
			secs(time.Duration(first*1e9)), mib(int64(rss)), us(cpu), us(steady),
			us(core.Seconds()/float64(run.Child.Requests)), 100*sqlite.Seconds()/total.Seconds(), win, rps, f.Load)
	}
	p("\nPer run:\n\n")
	p("| Queued jobs | Run | First request | storage.Open | engine.New | %d-th request | Requests | Wall | CPU | Peak RSS | Go heap in use at the %d-th request | Windowed (peak) |\n",
		fs[0].N, fs[0].N)
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range fs {
		for i, x := range f.Runs {
			p("| %d | %d | %s | %s | %s | %s | %d | %s | %s | %s | %s | %d |\n", f.Jobs, i+1, secs(x.Child.FirstReq), ms(x.Child.Open),
				ms(x.Child.New), secs(x.Child.LastReq), x.Child.Requests, secs(x.M.Wall), secs(x.M.User+x.M.Sys), mib(x.M.MaxRSS),
				mib(int64(x.Child.HeapInuse)), x.Child.Windowed)
		}
	}
	p("\nFixtures: ")
	var fx []string
	for _, f := range fs {
		if f.Built {
			fx = append(fx, fmt.Sprintf("%d jobs built in %s", f.Jobs, secs(f.BuildTook)))
		} else {
			fx = append(fx, fmt.Sprintf("%d jobs cached", f.Jobs))
		}
	}
	p("%s.\n\n", strings.Join(fx, "; "))

	p("### Where the CPU goes\n\n")
	p("The CPU profile of the median run (by CPU per dispatch) at each size, each sample charged to the first\n")
	p("part in this order with a function on its stack (bench.FrontierComponents):\n\n")
	p("| Part |")
	for _, f := range fs {
		p(" %d jobs |", f.Jobs)
	}
	p("\n|---|")
	for range fs {
		p("---|")
	}
	p("\n")
	names := make([]string, 0, len(bench.FrontierComponents)+1)
	for _, c := range bench.FrontierComponents {
		names = append(names, c.Name)
	}
	for _, n := range append(names, bench.Other) {
		p("| %s |", n)
		for _, f := range fs {
			_, _, total := f.shares()
			v := f.Parts[n]
			p(" %s (%.0f %%, %s a request) |", secs(v), 100*v.Seconds()/total.Seconds(),
				us(v.Seconds()/float64(f.Runs[f.PartsOf].Child.Requests)))
		}
		p("\n")
	}
	p("| **all** |")
	for _, f := range fs {
		_, _, total := f.shares()
		p(" **%s** |", secs(total))
	}
	p("\n\n")
	last := fs[len(fs)-1]
	p("`go tool pprof -top -cum` of the %d-job run:\n\n```\n%s\n```\n\n", last.Jobs, strings.TrimSpace(last.CPUTop))
	p("Its heap at the %d-th request (`go tool pprof -top -sample_index inuse_space`):\n\n```\n%s\n```\n\n", last.N,
		strings.TrimSpace(last.HeapTop))
	p("and what the run allocated until then (`-sample_index alloc_space`), which is what the garbage collector's\n")
	p("share above pays for:\n\n```\n%s\n```\n\n", strings.TrimSpace(last.AllocTop))

	p("### Jobs view at %d queued jobs\n\n", last.Jobs)
	p("`Reader.Jobs` on each fixture (storage.OpenReader, read-only), 100 jobs a page: the first call, then the\n")
	p("median and the slowest of %d more.\n\n", pagesEach)
	p("| Page | Rows |")
	for _, f := range fs {
		p(" %d jobs: first / median / max |", f.Jobs)
	}
	p("\n|---|---|")
	for range fs {
		p("---|")
	}
	p("\n")
	for i, pg := range last.Pages {
		p("| %s | %d |", pg.Name, pg.Rows)
		for _, f := range fs {
			if i < len(f.Pages) {
				x := f.Pages[i]
				p(" %s / %s / %s |", ms(x.First), ms(x.Median), ms(x.Max))
			} else {
				p(" |")
			}
		}
		p("\n")
	}
	p("\n(The middle page's cursor is half the size's job count, so it differs by size; the host is the same.)\n\n")

	p("### Hosts view and `heed hosts`\n\n")
	p("On the database each size's last run left (%d requests done or more): every host's counts against a count of its\n", fs[0].N)
	p("jobs (GROUP BY host over the jobs table, not timed); `Reader.Hosts`, every column, as `heed hosts` reads it, and\n")
	p("`Reader.HostCounts`, the counts the window reads every second (median and slowest of 5 each); `heed hosts\n")
	p("--json --db COPY` as a child; and a change — one done job queued again with Store.SetState, as the\n")
	p("window's Retry does — timed from before the commit until a HostCounts call that shows it has returned.\n\n")
	p("| Queued jobs | Hosts listed | Hosts whose counts are wrong | Queued / done (hosts rows) | Queued / done (counted) | Reader.Hosts | slowest | Reader.HostCounts | slowest | heed hosts | its lines | Change shown after |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range fs {
		h := f.Hosts2
		seen := ms(h.Change)
		if !h.ChangeSeen {
			seen = "**not shown**"
		}
		p("| %d | %d | %d | %d / %d | %d / %d | %s | %s | %s | %s | %s (%s RSS) | %d | %s |\n", f.Jobs, h.Rows, h.Mismatched,
			h.Queued, h.Done, h.CountedQueued, h.CountedDone, ms(h.Call), ms(h.CallMax), ms(h.Poll), ms(h.PollMax),
			secs(h.CLI.Wall), mib(h.CLI.MaxRSS), h.CLILines, seen)
	}
	p("\n")
	r.frontierGoals(b)
}

// shares are the profile's core + refills time, its SQLite time (refills
// included) and its total.
func (f frontierSize) shares() (core, sqlite, total time.Duration) {
	for n, v := range f.Parts {
		total += v
		switch n {
		case bench.CorePart:
			core += v
		case bench.RefillPart:
			core += v
			sqlite += v
		case bench.SQLitePart:
			sqlite += v
		}
	}
	return core, sqlite, max(total, 1)
}

func (r *report) frontierGoals(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("### Goals of issue #30\n\n| Goal | Queued jobs | Measured | Met | Load average before |\n|---|---|---|---|---|\n")
	for _, f := range r.Frontier {
		first := medianRun(f.Runs, func(x frontierRun) float64 { return x.Child.FirstReq.Seconds() })
		rss := medianRun(f.Runs, func(x frontierRun) float64 { return float64(x.M.MaxRSS) })
		worstRSS := 0.0
		for _, x := range f.Runs {
			worstRSS = max(worstRSS, float64(x.M.MaxRSS))
		}
		cpu := medianRun(f.Runs, perDispatch)
		core, _, _ := f.shares()
		coreEach := core.Seconds() / float64(f.Runs[f.PartsOf].Child.Requests)
		p("| first request under 2 s | %d | %.2f s | %s | %s |\n", f.Jobs, first, verdict(first < 2), f.Load)
		p("| peak RSS under 300 MB | %d | %.0f MB (highest run %.0f MB) | %s | %s |\n", f.Jobs, rss/1e6, worstRSS/1e6, verdict(worstRSS < 300e6), f.Load)
		p("| CPU per dispatch at most 20 µs, whole process | %d | %s | %s | %s |\n", f.Jobs, us(cpu), verdict(cpu <= 20e-6), f.Load)
		p("| CPU per dispatch at most 20 µs, core + refills only | %d | %s | %s | %s |\n", f.Jobs, us(coreEach), verdict(coreEach <= 20e-6), f.Load)
		worst := time.Duration(0)
		for _, pg := range f.Pages {
			worst = max(worst, pg.First, pg.Max)
		}
		p("| every jobs-view page under 50 ms (first call included) | %d | slowest %s | %s | %s |\n", f.Jobs, ms(worst), verdict(worst < 50*time.Millisecond), f.Load)
		h := f.Hosts2
		ok := h.Mismatched == 0 && h.Queued == h.CountedQueued && h.Done == h.CountedDone
		p("| hosts' counts correct | %d | %d hosts wrong | %s | %s |\n", f.Jobs, h.Mismatched, verdict(ok), f.Load)
		p("| hosts view refreshed within a second of a change | %d | change shown after %s; HostCounts call %s, heed hosts %s | %s | %s |\n",
			f.Jobs, ms(h.Change), ms(h.PollMax), secs(h.CLI.Wall), verdict(h.ChangeSeen && h.Change < time.Second && h.PollMax < time.Second), f.Load)
	}
	p("\n")
}

// ratio is the new tree's median ns/op over the old one's.
func (on *oldNewResult) ratio(bn oldNewBench) float64 {
	n, _, _ := medianMetric(bn.New, "ns/op")
	o, _, _ := medianMetric(bn.Old, "ns/op")
	if o == 0 {
		return 0
	}
	return n / o
}

func (r *report) oldNewSection(b *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	if r.OldNew == nil && r.OldSkipped == "" {
		return
	}
	p("## This tree beside the old design\n\n")
	if r.OldNew == nil {
		p("Not measured: %s. `make bench BENCH_OLD=PATH` runs it, PATH a git worktree of the commit to compare with.\n\n", r.OldSkipped)
		return
	}
	on := r.OldNew
	p("The politeness core's and the store's benchmarks of this tree (%s) and of the old design (%s, the\n", on.NewCommit, on.OldCommit)
	p("worktree at `%s`), built as test binaries and run in turns in this run: %d rounds, each running every\n", on.OldTree, on.Rounds)
	p("benchmark once in each tree, old first in odd rounds and new first in even ones. Their temporary\n")
	p("databases are on the scratch file system. BenchmarkEnqueue10Hosts is not in either tree: it is laid\n")
	p("into both storage packages for this run with `go test -overlay` (bench/cmd/e2e/testdata).\n\n")
	p("| Benchmark | What one op is | old ns/op (median, min – max) | new ns/op (median, min – max) | new ÷ old | old B/op, allocs/op | new B/op, allocs/op |\n")
	p("|---|---|---|---|---|---|---|\n")
	for _, bn := range on.Benches {
		om, olo, ohi := medianMetric(bn.Old, "ns/op")
		nm, nlo, nhi := medianMetric(bn.New, "ns/op")
		ob, _, _ := medianMetric(bn.Old, "B/op")
		oa, _, _ := medianMetric(bn.Old, "allocs/op")
		nb, _, _ := medianMetric(bn.New, "B/op")
		na, _, _ := medianMetric(bn.New, "allocs/op")
		p("| %s %s | %s | %s (%s – %s) | %s (%s – %s) | **%.2f×** | %s, %s | %s, %s |\n", bn.Pkg, bn.Name, bn.Note,
			num(om), num(olo), num(ohi), num(nm), num(nlo), num(nhi), on.ratio(bn), num(ob), num(oa), num(nb), num(na))
	}
	p("\nLoad average before each round: %s.\n\n", strings.Join(on.Load, "; "))
	for _, bn := range on.Benches {
		if bn.OldTop == "" || bn.NewTop == "" {
			continue
		}
		p("Where %s's time goes, one more run of each with a CPU profile (`go tool pprof -top -cum`), old:\n\n", bn.Name)
		p("```\n%s\n```\n\nnew:\n\n```\n%s\n```\n\n", strings.TrimSpace(bn.OldTop), strings.TrimSpace(bn.NewTop))
	}
	if len(on.Missing) > 0 {
		p("Not compared: %s.\n\n", strings.Join(on.Missing, "; "))
	}
}
