// Command e2e times Heed against curl, wget2, aria2c and a plain Go client
// on loopback demo hosts, runs the frontier benchmark over databases of
// many queued jobs, sets the politeness core's and the store's Go
// benchmarks beside those of an older tree, and writes BENCHMARKS.md from
// what it measured. `make bench` runs it (bench/make-bench.sh); see
// bench/doc.go for the parts. From the bench module's folder:
//
//	go run ./cmd/e2e -repo .. -out ../BENCHMARKS.md -gobench gobench.txt -profile top.txt
//
// `e2e plain [-sha256|-default] -i URLFILE -P DIR -j N` is the plain-client
// floor (hashing each file with -sha256; on http.DefaultClient with
// -default), run as a child like every other tool; `e2e frontier-child` is
// one run of the frontier benchmark (frontier_child.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"heed/bench"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "plain" {
		os.Exit(plainMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "frontier-child" {
		os.Exit(frontierChildMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "crawl-site" {
		os.Exit(crawlSiteMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "heed-cli" {
		os.Exit(heedCLIMain(os.Args[2:]))
	}
	var o options
	flag.StringVar(&o.repo, "repo", "..", "Heed's source tree, to build heed from (its bench folder is this module)")
	flag.StringVar(&o.out, "out", "BENCHMARKS.md", "report to write")
	flag.StringVar(&o.tmp, "tmp", filepath.Join(os.TempDir(), "heed-bench"), "scratch folder (emptied first)")
	flag.StringVar(&o.gobench, "gobench", "", "`file` with the output of go test -bench, for the report")
	flag.StringVar(&o.profile, "profile", "", "`file` with go tool pprof -top of case (a), for the report")
	flag.StringVar(&o.profileB, "profile-b", "", "`file` with go tool pprof -top of case (b), for the report")
	flag.StringVar(&o.profileC, "profile-c", "", "`file` with go tool pprof -top of case (c), for the report")
	flag.StringVar(&o.tracesA, "traces-a", "", "`file` with go tool pprof -traces of case (a) in-process (BenchmarkEngineCaseA)")
	flag.StringVar(&o.tracesPlain, "traces-plain", "", "`file` with go tool pprof -traces of the plain client on case (a) (BenchmarkPlainCaseA)")
	flag.StringVar(&o.loadBefore, "load-before", "", "/proc/loadavg before the Go benchmarks")
	flag.StringVar(&o.cases, "cases", "a,a5k,b,c,scale,frontier,old,crawl", "cases to run")
	flag.StringVar(&o.fsInfo, "fs", "", "what the scratch folder's file system is, for the report (make-bench.sh says)")
	flag.StringVar(&o.commit, "commit", "", "what the measured tree is, for the report (default: its git commit)")
	flag.BoolVar(&o.freshFS, "fresh-fs", false, "the scratch folder is a file system made for this run")
	flag.StringVar(&o.old, "old", "", "`tree` of an older Heed (a git worktree) whose BenchmarkDispatch and BenchmarkEnqueue to set beside this one's")
	flag.IntVar(&o.oldRounds, "old-rounds", 5, "rounds of the old/new comparison (each runs old and new once, alternating)")
	flag.StringVar(&o.frontierSizes, "frontier", "100000,1000000", "queued jobs of each frontier database (over 100,000 hosts)")
	flag.IntVar(&o.frontierRuns, "frontier-runs", 3, "runs of the frontier benchmark at each size")
	flag.StringVar(&o.fixtures, "fixtures", filepath.Join(os.TempDir(), "heed-bench-fixtures"), "`folder` that caches the frontier's databases, by size and schema")
	flag.StringVar(&o.tools, "tools", "heed,curl,wget2,aria2c,plain-go,plain-go+sha256,plain-go/default", "tools to compare")
	flag.IntVar(&o.fastRuns, "runs", 5, "runs of each tool in cases (a) and (b)")
	flag.IntVar(&o.slowRuns, "slow-runs", 3, "runs of case (c) and of the scale run")
	flag.Float64Var(&o.scaleDown, "scale", 1, "multiply every case's file and host counts by this (for development)")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch folder (heed binary, scale database) afterwards")
	flag.DurationVar(&o.window, "window", 20*time.Second, "how long case (c) lets heed run")
	flag.IntVar(&o.crawlHosts, "crawl-hosts", 2000, "hosts of the crawl case's site (50 pages each)")
	flag.IntVar(&o.crawlBurst, "crawl-burst", 1, "heed --burst in the crawl case")
	flag.StringVar(&o.crawlWget2, "crawl-wget2", "0,64", "wget2 --max-threads of each wget2 run in the crawl case (0: one a host; fewer than the hosts stop at heed's wall time)")
	flag.BoolVar(&o.crawlProfile, "crawl-profile", true, "crawl once more with heed in-process under the CPU profiler")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
}

type options struct {
	repo, out, tmp, gobench, profile, profileB, profileC, loadBefore, cases, tools string
	tracesA, tracesPlain, fsInfo, old, frontierSizes, fixtures, commit             string
	fastRuns, slowRuns, oldRounds, frontierRuns, crawlHosts, crawlBurst            int
	crawlWget2                                                                     string
	scaleDown                                                                      float64
	keep, freshFS, crawlProfile                                                    bool
	window                                                                         time.Duration
}

func (o options) has(list, name string) bool {
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == name {
			return true
		}
	}
	return false
}

func (o options) n(x int) int { return max(1, int(float64(x)*o.scaleDown)) }

func run(ctx context.Context, o options) error {
	rep := &report{Started: time.Now(), LoadBefore: strings.TrimSpace(o.loadBefore), LoadStart: loadavg(),
		Scale: o.scaleDown, FS: o.fsInfo, FreshFS: o.freshFS, Commit: o.commit}
	if rep.Commit == "" {
		rep.Commit = commitOf(o.repo)
	}
	rep.NoFile = raiseNoFile()
	if err := os.RemoveAll(o.tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(o.tmp, 0o755); err != nil {
		return err
	}
	heedBin := filepath.Join(o.tmp, "heed")
	logf("building heed")
	build := exec.Command("go", "build", "-tags", "migrated_fynedo", "-o", heedBin, ".")
	build.Dir, build.Stdout, build.Stderr = o.repo, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building heed: %w", err)
	}
	wrapper := filepath.Join(o.tmp, "rusage")
	build = exec.Command("go", "build", "-o", wrapper, "./cmd/rusage")
	build.Dir, build.Stdout, build.Stderr = filepath.Join(o.repo, "bench"), os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the rusage wrapper: %w", err)
	}
	runner := bench.Runner{Wrapper: wrapper, Dir: o.tmp}
	floor, err := runner.Run(exec.Command("true"))
	if err != nil {
		return err
	}
	rep.RSSFloor = floor.MaxRSS
	self, err := os.Executable()
	if err != nil {
		return err
	}
	all := []bench.Tool{bench.Heed(heedBin), bench.Curl(), bench.Wget2(), bench.Aria2(), bench.Plain(self), bench.PlainSHA256(self), bench.PlainDefault(self)}
	if o.old != "" && o.has(o.cases, "old") {
		// The old design's heed takes its turns in cases (a), (a5k) and (b) beside this one.
		oldBin := filepath.Join(o.tmp, "heed-old")
		logf("building the old tree's heed (%s)", o.old)
		build := exec.Command("go", "build", "-tags", "migrated_fynedo", "-o", oldBin, ".")
		build.Dir, build.Stdout, build.Stderr = o.old, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building the old tree's heed: %w", err)
		}
		all = append(all[:1:1], append([]bench.Tool{bench.HeedOld(oldBin)}, all[1:]...)...)
		o.tools += ",heed-old"
	}
	var tools []bench.Tool
	for _, t := range all {
		if o.has(o.tools, t.Name) {
			tools = append(tools, t)
		}
	}
	rep.machine(tools)
	if rep.CreateCost, err = bench.CreateCost(o.tmp, 1000); err != nil {
		return fmt.Errorf("measuring the cost of a file create: %w", err)
	}
	logf("a file create costs %v of CPU here", rep.CreateCost.Round(time.Microsecond))

	cases := []e2eCase{
		{ID: "a", Hosts: o.n(50), Files: o.n(400), Size: 1 << 10, Runs: o.fastRuns, ShaEvery: 100},
		{ID: "a5k", Hosts: o.n(20), Files: o.n(250), Size: 1 << 10, Runs: o.fastRuns, ShaEvery: 50},
		{ID: "b", Hosts: 4, Files: 1, Size: o.n(256 << 20), Runs: o.fastRuns, ShaEvery: 2},
	}
	for _, c := range cases {
		if !o.has(o.cases, c.ID) {
			continue
		}
		c.Title = fmt.Sprintf("%d files of %s over %d hosts (%d each), 16 at a time", c.Hosts*c.Files, size(c.Size), c.Hosts, c.Files)
		logf("case %s: %s", c.ID, c.Title)
		res, err := runCase(ctx, o, runner, c, tools)
		if err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		rep.Cases = append(rep.Cases, res)
	}
	if o.has(o.cases, "c") || o.has(o.cases, "scale") {
		d, err := newDispatchBench(o, runner, heedBin)
		if err != nil {
			return err
		}
		defer d.close()
		if o.has(o.cases, "c") {
			logf("case c: %d URLs over %d hosts, default politeness, %s window", d.jobs, d.hosts, o.window)
			res, err := d.perRequest(ctx)
			if err != nil {
				return fmt.Errorf("case c: %w", err)
			}
			rep.Dispatch = &res
		}
		if o.has(o.cases, "scale") {
			res, err := d.scale(ctx)
			if err != nil {
				return fmt.Errorf("scale: %w", err)
			}
			rep.Scale1M = &res
		}
	}
	if o.has(o.cases, "frontier") {
		res, err := runFrontier(ctx, o, runner, heedBin)
		if err != nil {
			return fmt.Errorf("frontier: %w", err)
		}
		rep.Frontier = res
	}
	if o.has(o.cases, "crawl") {
		res, err := runCrawlCase(ctx, o, runner, heedBin)
		if err != nil {
			return fmt.Errorf("crawl: %w", err)
		}
		rep.Crawl = res
	}
	if o.has(o.cases, "old") {
		if o.old == "" {
			rep.OldSkipped = "no older tree was given (BENCH_OLD unset)"
		} else {
			res, err := compareOld(ctx, o)
			if err != nil {
				return fmt.Errorf("old/new: %w", err)
			}
			rep.OldNew = res
		}
	}
	if o.gobench != "" {
		f, err := os.Open(o.gobench)
		if err != nil {
			return err
		}
		rep.GoBench, err = bench.ParseGoBench(f)
		if err == nil {
			_, _ = f.Seek(0, 0)
			rep.GoBenchFailed, err = bench.GoBenchFailures(f)
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	if o.profile != "" {
		b, err := os.ReadFile(o.profile)
		if err != nil {
			return err
		}
		rep.Profile = string(b)
	}
	for _, f := range []struct {
		path string
		dst  *string
	}{{o.profileB, &rep.ProfileB}, {o.profileC, &rep.ProfileC}} {
		if f.path == "" {
			continue
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return err
		}
		*f.dst = string(b)
	}
	if o.tracesA != "" && o.tracesPlain != "" {
		var err error
		if rep.Parts, err = componentsOf(o.tracesA, o.tracesPlain); err != nil {
			return err
		}
	}
	rep.LoadEnd = loadavg()
	rep.Finished = time.Now()
	if err := os.WriteFile(o.out, []byte(rep.markdown()), 0o644); err != nil {
		return err
	}
	logf("wrote %s", o.out)
	if o.keep {
		return nil
	}
	return os.RemoveAll(o.tmp)
}

// raiseNoFile lifts the soft limit on open files to the hard one (case (c)
// listens on 10,000 ports; heed inherits the limit) and returns it.
func raiseNoFile() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	rl.Cur = rl.Max
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	return rl.Cur
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// componentsOf reads Heed's and the plain client's profiles of case (a), as
// pprof -traces printed them, and charges their samples to bench.Components.
func componentsOf(heedTraces, plainTraces string) (*partsResult, error) {
	var res partsResult
	for _, f := range []struct {
		path string
		dst  *map[string]time.Duration
		wall *time.Duration
	}{{heedTraces, &res.Heed, &res.HeedWall}, {plainTraces, &res.Plain, &res.PlainWall}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			return nil, err
		}
		if *f.dst, err = bench.ComponentCPU(string(b), bench.Components); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
		if *f.wall, err = bench.TracesDuration(string(b)); err != nil {
			return nil, fmt.Errorf("%s: %w", f.path, err)
		}
	}
	return &res, nil
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s e2e: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// plainMain is `e2e plain [-sha256|-default] -i URLFILE -P DIR -j N`.
func plainMain(args []string) int {
	fs := flag.NewFlagSet("plain", flag.ExitOnError)
	in := fs.String("i", "", "URL file")
	dir := fs.String("P", ".", "download folder")
	workers := fs.Int("j", 16, "goroutines")
	hashed := fs.Bool("sha256", false, "take each body's SHA-256 as it is written")
	dflt := fs.Bool("default", false, "send every request through http.DefaultClient")
	_ = fs.Parse(args)
	b, err := os.ReadFile(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	urls := strings.Fields(string(b))
	get := bench.PlainGet
	switch {
	case *hashed && *dflt:
		fmt.Fprintln(os.Stderr, "plain: -sha256 and -default do not go together")
		return 2
	case *hashed:
		get = func(ctx context.Context, urls []string, dir string, workers int) error {
			return bench.PlainGetSHA256(ctx, urls, dir, workers, nil)
		}
	case *dflt:
		get = bench.PlainGetDefault
	}
	if err := get(context.Background(), urls, *dir, *workers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// size renders a file size as "1 KiB", "256 MiB" or "12345 bytes".
func size(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
