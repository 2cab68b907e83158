package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"heed/bench"
	"heed/cli"
	"heed/engine"
)

// The crawl benchmark (issue #31): Heed and wget2 crawl the site of
// crawl_site.go, politely, and the site's log says what each did.
const (
	crawlRate    = 1.0 // requests a second per host: heed --rate 60, wget2 --wait=1
	crawlWorkers = 64  // heed --workers
	crawlGiveUp  = 40 * time.Minute
)

// crawlResult is the whole case.
type crawlResult struct {
	Hosts, PerHost int // hosts, and the URLs a polite crawl fetches on each
	Depth          int // the site's deepest page, in links from "/"
	HeedDepth      int // heed --depth
	Burst          int // heed --burst
	Runs           []crawlRun
	SiteCPU        time.Duration // the site's CPU over all runs
	Profile        crawlProfile
	LoadBefore     string
	LoadAfter      string
}

// crawlRun is one crawl by one tool, and what the site saw of it.
type crawlRun struct {
	Name, Command string
	Burst         int  // of the bucket it is checked against
	Stopped       bool // stopped by the driver (wget2 at fewer threads than hosts)
	M             bench.Measure
	Exit          int
	crawlStats
	SiteCPU               time.Duration
	Conns                 int64         // connections the site accepted during the run
	FirstAfter            time.Duration // from the crawler's start to the site's first request
	LoadBefore, LoadAfter string
	// Heed's own account: heed crawls --json, and what it printed besides
	// the expected 404s of the missing assets.
	Crawl      *engine.CrawlLine
	Expected   int      // lines about the site's missing assets (404)
	Unexpected []string // every other line, but the summary (at most 10)
	Lines      int
}

// crawlStats is what the site's log says of one run.
type crawlStats struct {
	Requests, Pages, Dups  int
	ByKind                 [numKinds]int
	HostsHit               int
	MinPerHost, MaxPerHost int
	First, Last            time.Duration // on the site's clock
	Window                 time.Duration // Last − First
	LongestQuiet           time.Duration // the longest time no host got a request
	Share                  float64       // (Requests − hosts·burst) / (hosts · rate · Window)
	// Early is the requests that came sooner than the bucket allows (burst
	// plus rate·t in any t), on EarlyHosts hosts; WorstEarly how much sooner
	// at most, MinGap the shortest time between two requests to one host.
	Early, EarlyHosts  int
	Early100           int // … of them sooner by more than 100 ms
	WorstEarly, MinGap time.Duration
	NotRobotsFirst     int   // hosts whose first request was not robots.txt
	Tenths             []int // requests in each tenth of the window
}

type crawlProfile struct {
	Top, Cum string
	Parts    map[string]time.Duration
	Pages    int // of the profiled run
}

// crawlTool is one run of the case: its name, its command line in the
// folder base, the burst its requests are checked against, and whether it
// is stopped once heed's wall time has passed.
type crawlTool struct {
	name    string
	args    func(base string) (bin string, args []string)
	burst   int
	limited bool
}

// crawlSite is the site child process.
type crawlSite struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ctl   string
	depth int
	seeds string
}

func startCrawlSite(self, dir string, hosts int) (*crawlSite, error) {
	s := &crawlSite{seeds: filepath.Join(dir, "seeds.txt")}
	s.cmd = exec.Command(self, "crawl-site", "-hosts", strconv.Itoa(hosts), "-seeds", s.seeds)
	s.cmd.Stderr = os.Stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	if s.ctl, s.depth, err = readReady(bufio.NewReader(out)); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *crawlSite) close() {
	s.stdin.Close()
	_ = s.cmd.Wait()
}

func (s *crawlSite) reset() error {
	resp, err := http.Post("http://"+s.ctl+"/reset", "text/plain", nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (s *crawlSite) log() (crawlLog, error) {
	var l crawlLog
	resp, err := http.Get("http://" + s.ctl + "/log")
	if err != nil {
		return l, err
	}
	defer resp.Body.Close()
	return l, json.NewDecoder(resp.Body).Decode(&l)
}

// runCrawlCase starts the site, then crawls it with heed (the built binary),
// with heed in-process under the CPU profiler, and with wget2 at each of
// threads (0: one thread a host; fewer threads than hosts are stopped when
// heed's wall time has passed).
func runCrawlCase(ctx context.Context, o options, rn bench.Runner, heedBin string) (*crawlResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(o.tmp, "crawl")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	res := &crawlResult{Hosts: o.n(o.crawlHosts), PerHost: crawlPerHost, Burst: o.crawlBurst}
	logf("crawl: starting the site, %d hosts of %d pages", res.Hosts, crawlPages)
	site, err := startCrawlSite(self, root, res.Hosts)
	if err != nil {
		return nil, err
	}
	defer site.close()
	res.Depth = site.depth
	res.HeedDepth = site.depth + 1 // the assets are a link further than the deepest page
	res.LoadBefore = loadavg()
	heedArgs := func(base string) []string {
		return []string{"crawl", "--db", filepath.Join(base, "heed.db"), "--dir", filepath.Join(base, "out"),
			"--rate", "60", "--burst", strconv.Itoa(res.Burst), "--workers", strconv.Itoa(crawlWorkers), "-q",
			"-i", site.seeds, "--scope", "host", "--depth", strconv.Itoa(res.HeedDepth)}
	}
	display := func(args []string) string {
		s := strings.Join(args, " ")
		s = strings.ReplaceAll(s, site.seeds, "SEEDS")
		return strings.ReplaceAll(s, root+"/", "")
	}
	runs := []crawlTool{{name: "heed", burst: res.Burst, args: func(base string) (string, []string) { return heedBin, heedArgs(base) }}}
	if o.crawlProfile {
		runs = append(runs, crawlTool{name: "heed, profiled", burst: res.Burst, args: func(base string) (string, []string) {
			return self, append([]string{"heed-cli", "-cpuprofile", filepath.Join(base, "cpu.pprof"), "--"}, heedArgs(base)...)
		}})
	}
	for _, t := range strings.Split(o.crawlWget2, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("-crawl-wget2: %q is not a count of threads", t)
		}
		if n == 0 || n > res.Hosts {
			n = res.Hosts
		}
		threads := strconv.Itoa(n)
		runs = append(runs, crawlTool{name: "wget2, " + threads + " threads", burst: 1, limited: n < res.Hosts,
			args: func(base string) (string, []string) {
				return "wget2", []string{"--no-config", "-r", "-l", "inf", "--robots=on", "--wait=1", "--no-random-wait",
					"--max-threads=" + threads, "-i", site.seeds, "-P", filepath.Join(base, "out"), "-q"}
			}})
	}
	var heedWall time.Duration
	for i, r := range runs {
		base := filepath.Join(root, fmt.Sprintf("run-%d", i))
		if err := os.MkdirAll(filepath.Join(base, "out"), 0o755); err != nil {
			return nil, err
		}
		if err := site.reset(); err != nil {
			return nil, err
		}
		before, err := site.log()
		if err != nil {
			return nil, err
		}
		cpu0 := before.CPU
		bin, args := r.args(base)
		run := crawlRun{Name: r.name, Burst: r.burst, Command: display(append([]string{filepath.Base(bin)}, args...)), LoadBefore: loadavg()}
		if r.name == "heed, profiled" {
			run.Command = "e2e heed-cli -cpuprofile CPU -- " + display(heedArgs(base)) + "   (cli.Main in-process)"
		}
		limit := crawlGiveUp
		if r.limited && heedWall > 0 {
			limit = heedWall
		}
		logf("crawl: %s (at most %v)", r.name, limit)
		var started time.Time
		run.M, started, run.Exit, run.Stopped, err = runLogged(rn, exec.Command(bin, args...), filepath.Join(base, "output.txt"), limit)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		run.LoadAfter = loadavg()
		l, err := site.log()
		if err != nil {
			return nil, err
		}
		run.SiteCPU = l.CPU - cpu0
		run.Conns = l.Conns - before.Conns
		run.crawlStats = analyzeCrawl(l, res.Hosts, run.Burst)
		run.FirstAfter = time.Unix(0, l.Start).Add(run.First).Sub(started)
		if strings.HasPrefix(r.name, "heed") {
			if r.name == "heed" {
				heedWall = run.M.Wall
			}
			if err := heedAccount(&run, heedBin, base); err != nil {
				return nil, err
			}
		}
		if r.name == "heed, profiled" {
			if res.Profile, err = crawlProfileOf(filepath.Join(base, "cpu.pprof")); err != nil {
				return nil, err
			}
			res.Profile.Pages = run.Pages
		}
		logf("  %d requests (%d pages) in %v, window %v, share %.1f %%, cpu %v (%.0f µs a page), %.1f MiB max RSS, %d early (worst %v), exit %d",
			run.Requests, run.Pages, run.M.Wall.Round(time.Millisecond), run.Window.Round(time.Millisecond), 100*run.Share,
			(run.M.User + run.M.Sys).Round(time.Millisecond), perPage(run), float64(run.M.MaxRSS)/(1<<20), run.Early,
			run.WorstEarly.Round(time.Millisecond), run.Exit)
		res.Runs = append(res.Runs, run)
		res.SiteCPU += run.SiteCPU
		if !o.keep {
			_ = os.RemoveAll(base)
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	res.LoadAfter = loadavg()
	return res, nil
}

// runLogged runs cmd with its output in logFile until it exits, or until
// limit has passed, when it is stopped: SIGINT, and again every 5 s while it
// runs (wget2 finishes what it has queued on the first, and stops on the
// second). It returns when it started, its exit status (128+N for a signal)
// and whether it was stopped.
func runLogged(rn bench.Runner, cmd *exec.Cmd, logFile string, limit time.Duration) (m bench.Measure, started time.Time, code int, stopped bool, err error) {
	f, err := os.Create(logFile)
	if err != nil {
		return m, started, 0, false, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	ch, err := rn.Start(cmd)
	if err != nil {
		return m, started, 0, false, err
	}
	started = ch.Started()
	select {
	case <-ch.Exited():
	case <-time.After(limit):
		stopped = true
		for done := false; !done; {
			_ = ch.Signal(os.Interrupt)
			select {
			case <-ch.Exited():
				done = true
			case <-time.After(5 * time.Second):
			}
		}
	}
	m, err = ch.Interrupt()
	code = ch.ExitCode()
	// heed: a job failed; wget2: a server answered an error. A run the
	// driver stopped may end any way (wget2 1.99.1 aborted on
	// being stopped, 134): its exit status is in the report.
	if err != nil && !stopped && code != 1 && code != 8 {
		b, _ := os.ReadFile(logFile)
		return m, started, code, stopped, fmt.Errorf("%v: %s", err, b[max(0, len(b)-2000):])
	}
	return m, started, code, stopped, nil
}

// analyzeCrawl reads the site's log of one run. Each host's requests are
// checked against a token bucket of burst and crawlRate: over any span t
// between two of its requests, a host may get at most burst + rate·t.
func analyzeCrawl(l crawlLog, hosts, burst int) crawlStats {
	var s crawlStats
	s.MinPerHost, s.MinGap = -1, -1
	first, last := int64(-1), int64(-1)
	var all []int64
	for _, hits := range l.Hosts {
		if len(hits) == 0 {
			s.MinPerHost = 0
			continue
		}
		slices.SortFunc(hits, func(a, b crawlHit) int { return int(a.T - b.T) })
		s.HostsHit++
		s.Requests += len(hits)
		if s.MinPerHost < 0 || len(hits) < s.MinPerHost {
			s.MinPerHost = len(hits)
		}
		s.MaxPerHost = max(s.MaxPerHost, len(hits))
		if hits[0].Kind != kindRobots {
			s.NotRobotsFirst++
		}
		seen := map[uint8]bool{}
		early := 0
		for j, h := range hits {
			s.ByKind[h.Kind]++
			if seen[h.URL] && h.URL != unknownURL {
				s.Dups++
			}
			seen[h.URL] = true
			all = append(all, h.T)
			if j > 0 {
				if g := time.Duration(h.T - hits[j-1].T); s.MinGap < 0 || g < s.MinGap {
					s.MinGap = g
				}
			}
			soonest := time.Duration(-1 << 62) // how much sooner than allowed request j came
			for i := range j {
				n := j - i + 1
				if n <= burst {
					break
				}
				allowed := time.Duration(float64(n-burst) / crawlRate * 1e9)
				soonest = max(soonest, allowed-time.Duration(h.T-hits[i].T))
			}
			if soonest > 100*time.Millisecond {
				s.Early100++
			}
			if soonest > 0 {
				early++
				s.WorstEarly = max(s.WorstEarly, soonest)
			}
		}
		s.Early += early
		if early > 0 {
			s.EarlyHosts++
		}
		if first < 0 || hits[0].T < first {
			first = hits[0].T
		}
		last = max(last, hits[len(hits)-1].T)
	}
	s.Pages = s.ByKind[kindPage]
	if s.Requests == 0 {
		return s
	}
	s.First, s.Last = time.Duration(first), time.Duration(last)
	s.Window = s.Last - s.First
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		s.LongestQuiet = max(s.LongestQuiet, time.Duration(all[i]-all[i-1]))
	}
	s.Tenths = make([]int, 10)
	for _, t := range all {
		k := 0
		if s.Window > 0 {
			k = min(9, int(10*float64(t-first)/float64(s.Window)))
		}
		s.Tenths[k]++
	}
	if s.Window > 0 {
		s.Share = float64(max(0, s.Requests-s.HostsHit*burst)) / (float64(hosts) * crawlRate * s.Window.Seconds())
	}
	return s
}

// heedAccount reads what heed says of its crawl (heed crawls --json) and
// sorts what it printed: the 404s of the site's missing assets are
// expected, anything else is listed in the report.
func heedAccount(run *crawlRun, heedBin, base string) error {
	out, err := exec.Command(heedBin, "crawls", "--json", "--db", filepath.Join(base, "heed.db")).Output()
	if err != nil {
		return fmt.Errorf("heed crawls: %w", err)
	}
	var line engine.CrawlLine
	if err := json.Unmarshal(bytes.TrimSpace(out), &line); err != nil {
		return fmt.Errorf("heed crawls --json: %w (%q)", err, out)
	}
	run.Crawl = &line
	b, err := os.ReadFile(filepath.Join(base, "output.txt"))
	if err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		run.Lines++
		switch {
		case strings.HasPrefix(l, "failed ") && strings.Contains(l, "HTTP 404") &&
			(strings.Contains(l, "/favicon.ico") || strings.Contains(l, "/img/photo-1.jpg") || strings.Contains(l, "/img/photo-3.jpg")):
			run.Expected++
		case strings.HasPrefix(l, "crawl ") || strings.HasPrefix(l, "this run: "):
		default:
			if len(run.Unexpected) < 10 {
				run.Unexpected = append(run.Unexpected, l)
			}
		}
	}
	return nil
}

// crawlProfileOf reads the profiled run's CPU profile.
func crawlProfileOf(path string) (crawlProfile, error) {
	var p crawlProfile
	var err error
	if p.Top, err = pprofOut("-top", "-nodecount", "25", path); err != nil {
		return p, err
	}
	if p.Cum, err = pprofOut("-top", "-cum", "-nodecount", "40", path); err != nil {
		return p, err
	}
	traces, err := pprofOut("-traces", path)
	if err != nil {
		return p, err
	}
	p.Parts, err = bench.ComponentCPU(traces, bench.CrawlComponents)
	return p, err
}

// heedCLIMain is `e2e heed-cli [-cpuprofile FILE] [-memprofile FILE] -- ARGS`:
// heed's command line (cli.Main, what the heed binary runs) in this process,
// under the CPU profiler, or recording what it allocates.
func heedCLIMain(args []string) int {
	fs := flag.NewFlagSet("heed-cli", flag.ExitOnError)
	cpu := fs.String("cpuprofile", "", "write a CPU profile of the whole run here")
	mem := fs.String("memprofile", "", "write what the run allocated (go tool pprof -sample_index=alloc_space) here")
	_ = fs.Parse(args)
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if *mem != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			f, err := os.Create(*mem)
			if err == nil {
				err = errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Main(ctx, cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Version: "bench"}, fs.Args())
}

func perPage(r crawlRun) float64 {
	if r.Pages == 0 {
		return 0
	}
	return float64((r.M.User + r.M.Sys).Microseconds()) / float64(r.Pages)
}

// crawlSection is the report's section of the crawl benchmark.
func (r *report) crawlSection(b *strings.Builder, c *crawlResult) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	total := c.Hosts * c.PerHost
	p("## Crawl: %d hosts × %d pages, 60 requests a minute a host (issue #31)\n\n", c.Hosts, crawlPages)
	p("The site is %d loopback hosts (127.2.x.y, a port each), served by a child process of its own (`e2e crawl-site`,\n", c.Hosts)
	p("bench/cmd/e2e/crawl_site.go), so its CPU is not the crawler's. Each host has %d HTML pages of about 4.4 KiB\n", crawlPages)
	p("(`/` and /p/01.html … /p/49.html) with 18 links each: a navigation bar, links in the text, a \"see also\" list,\n")
	p("two links to pages of other hosts of the site, one to a host outside it; every page also links a stylesheet,\n")
	p("a missing favicon (404) and one of four photos, two of them tiny JPEGs and two missing (404). robots.txt\n")
	p("allows all but `/private/`, which only `/` links to. The deepest page is %d links from `/`. A crawl that\n", c.Depth)
	p("obeys robots.txt and fetches every URL once makes %d requests a host (robots.txt, %d pages, %d assets):\n", c.PerHost, crawlPages, crawlAssets)
	p("%d requests, %d of them pages. The seeds are every host's `/`.\n\n", total, c.Hosts*crawlPages)
	p("Heed runs with `--rate 60 --burst %d`: at burst 1 the rule a host can check is the plainest — no two requests\n", c.Burst)
	p("less than a second apart — and it is the rule wget2's `--wait=1` keeps per thread; the default burst 4 would let\n")
	p("each host's first four requests go back to back. The rest is Heed's default politeness (one request in flight\n")
	p("a host, jitter 0–250 ms, which at burst 1 stays inside the second the bucket waits anyway), with 64 workers.\n")
	p("wget2's `--wait` is **per thread**, not per host: a thread sleeps a second after each of its downloads, whichever\n")
	p("host it takes next, and threads are not tied to hosts. So wget2 can only reach the %d requests a second that\n", c.Hosts)
	p("politeness allows here with a thread a host (%d threads); with Heed's 64 it makes at most 64 a second, and that\n", c.Hosts)
	p("run is stopped when Heed's wall time has passed. Each run crawls into a fresh folder (and Heed a fresh database).\n\n")
	p("| Run | Command |\n|---|---|\n")
	for _, run := range c.Runs {
		p("| %s | `%s` |\n", run.Name, run.Command)
	}
	p("\n")
	p("| Run | Pages | Requests | Wall | Window | Achieved req/s | Share of allowed | CPU (user+sys) | CPU per page | Peak RSS | Requests sooner than the bucket allows: all / by over 100 ms (hosts; worst) | Shortest gap on a host |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range c.Runs {
		rate := 0.0
		if run.Window > 0 {
			rate = float64(run.Requests) / run.Window.Seconds()
		}
		name := run.Name
		if run.Stopped {
			name += " (stopped)"
		}
		p("| %s | %d | %d | %s | %s | %.0f | **%.1f %%** | %s | %.0f µs | %s | %d / %d (%d hosts; %s sooner) | %s |\n",
			name, run.Pages, run.Requests, secs(run.M.Wall), secs(run.Window), rate, 100*run.Share, secs(run.M.User+run.M.Sys),
			perPage(run), mib(run.M.MaxRSS), run.Early, run.Early100, run.EarlyHosts, msecs(run.WorstEarly), msecs(run.MinGap))
	}
	p("\n")
	p("- *Window*: from the site's first request of the run to its last. *Wall* is the process's, start-up included.\n")
	p("- *Share of allowed*: (requests − hosts × burst) / (hosts × 1 request a second × window). Politeness lets a host\n")
	p("  have at most burst + t requests in any t seconds, so over the window the %d hosts can have at most\n", c.Hosts)
	p("  hosts × burst + hosts × window requests: the share is the achieved rate, less the bursts, over the rate the\n")
	p("  politeness allows (%d a second); 100 %% is the fastest a polite crawl can go. wget2 is measured against burst 1.\n", c.Hosts)
	p("- *CPU per page*: the crawler's user+system CPU time (rusage of the child, through the rusage wrapper) over the\n")
	p("  HTML pages the site served it; assets, robots.txt and link extraction are in it. Peak RSS is its ru_maxrss.\n")
	p("- *Requests sooner than the bucket allows*: for each host, its requests as the site received them, each checked\n")
	p("  against every earlier one: the j-th after the i-th may come no sooner than (j − i + 1 − burst) seconds after it.\n")
	p("  The times are arrivals at the site, not the crawler's dispatches: what the host sees.\n\n")
	p("| Run | Exit | First request after | Hosts that got requests | Requests a host (min – max) | By kind | Fetched twice | First request not robots.txt | Longest second without a request | Requests in each tenth of the window | Connections opened (a host) | Site's CPU | Load average before → after |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range c.Runs {
		var kinds []string
		for k, n := range run.ByKind {
			if n > 0 {
				kinds = append(kinds, fmt.Sprintf("%s %d", kindNames[k], n))
			}
		}
		tenths := make([]string, len(run.Tenths))
		for i, n := range run.Tenths {
			tenths[i] = strconv.Itoa(n)
		}
		p("| %s | %d | %s | %d | %d – %d | %s | %d | %d | %s | %s | %d (%.1f) | %s | %s → %s |\n", run.Name, run.Exit, secs(run.FirstAfter), run.HostsHit, max(0, run.MinPerHost),
			run.MaxPerHost, strings.Join(kinds, ", "), run.Dups, run.NotRobotsFirst, msecs(run.LongestQuiet), strings.Join(tenths, " "),
			run.Conns, float64(run.Conns)/float64(max(run.HostsHit, 1)), secs(run.SiteCPU), run.LoadBefore, run.LoadAfter)
	}
	p("\n")
	p("(\"Longest second without a request\" is the longest time in which no host of the site got a request: a stall\n")
	p("shows there. \"Connections opened\" are the TCP connections the site accepted during the run, and in brackets\n")
	p("per host that got requests: 1.0 means every host kept one connection for all its requests. Exit 1 from heed and 8 from wget2 are the site's 404s; a run the driver stopped exits as it\n")
	p("may — 130 for SIGINT, 134 when wget2 aborts on being stopped, as 1.99.1 did here — and what it fetched until then is counted.)\n\n")
	for _, run := range c.Runs {
		if run.Crawl == nil {
			continue
		}
		l := run.Crawl
		p("%s, as `heed crawls --json` tells it: %d done, %d queued, %d active, %d skipped, %d failed, %d links out of\n",
			run.Name, l.Done, l.Queued, l.Active, l.Skipped, l.Failed, l.OutOfScope)
		p("scope, %s. It printed %d lines, %d of them the expected 404s of the missing assets",
			mib(l.Bytes), run.Lines, run.Expected)
		if len(run.Unexpected) == 0 {
			p(", and nothing else but its summary.\n\n")
		} else {
			p("; the others (at most 10):\n\n```\n%s\n```\n\n", strings.Join(run.Unexpected, "\n"))
		}
	}
	if c.Profile.Top != "" {
		p("### Where Heed's CPU per page goes\n\n")
		p("The run \"heed, profiled\" is the same crawl by heed's command line (cli.Main) in the e2e binary, under the CPU\n")
		p("profiler. Its samples, charged to the first part in this order with a function on their stack\n")
		p("(bench.CrawlComponents), per page of that run:\n\n")
		p("| Part | CPU | Share | Per page |\n|---|---|---|---|\n")
		var all time.Duration
		for _, v := range c.Profile.Parts {
			all += v
		}
		names := make([]string, 0, len(bench.CrawlComponents)+1)
		for _, comp := range bench.CrawlComponents {
			names = append(names, comp.Name)
		}
		names = append(names, bench.Other)
		for _, n := range names {
			v := c.Profile.Parts[n]
			per := 0.0
			if c.Profile.Pages > 0 {
				per = float64(v.Microseconds()) / float64(c.Profile.Pages)
			}
			p("| %s | %s | %s | %.0f µs |\n", n, secs(v), percent(float64(v)/float64(max(all, 1))), per)
		}
		p("| **all** | **%s** | | **%.0f µs** |\n\n", secs(all), float64(all.Microseconds())/float64(max(c.Profile.Pages, 1)))
		p("`go tool pprof -top`:\n\n```\n%s\n```\n\n", strings.TrimSpace(c.Profile.Top))
		p("`go tool pprof -top -cum`:\n\n```\n%s\n```\n\n", strings.TrimSpace(c.Profile.Cum))
	}
}

func msecs(d time.Duration) string {
	if d < 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/1e6)
}
