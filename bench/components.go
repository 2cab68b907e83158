package bench

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// A Component is a part of a process that CPU samples are charged to: the
// first component, in Components' order, with a frame matching one of its
// patterns anywhere in a sample's stack takes the sample. So the database's
// share holds what SQLite costs the attempt that waits on it, and the HTTP
// client's what it costs the download that calls it.
type Component struct {
	Name     string
	patterns []*regexp.Regexp
}

func component(name string, patterns ...string) Component {
	c := Component{Name: name}
	for _, p := range patterns {
		c.patterns = append(c.patterns, regexp.MustCompile(p))
	}
	return c
}

// Components are the parts of case (a) in-process, as BenchmarkEngineCaseA and
// BenchmarkPlainCaseA run it; a sample no component claims is "other".
var Components = []Component{
	component("demo hosts (the server side)", `^net/http\.\(\*conn\)\.serve$`, `^heed/engine/demo\.`),
	component("database (storage, SQLite)", `^heed/storage\.`, `^database/sql\.`, `^github\.com/mattn/go-sqlite3\.`),
	// A response body read under the downloader is the HTTP client's too (bodyEOFSignal).
	component("HTTP client", `^net/http\.\(\*persistConn\)\.`, `^net/http\.\(\*Transport\)\.`,
		`^net/http\.\(\*Client\)\.`, `^net/http\.send$`, `^net/http\.\(\*bodyEOFSignal\)\.`),
	component("files: create, write, hash, sync, name", `^heed/engine/fetch\.`, `^heed/bench\.plainOne$`, `^os\.\(\*File\)\.`),
	component("engine: queue, politeness, bookkeeping", `^heed/engine\.`),
	gcComponent, schedComponent,
	component("benchmark harness (setup, clean-up)", `^testing\.`, `^heed/bench_test\.`),
}

// FrontierComponents are the parts of the frontier benchmark's child
// (e2e frontier-child): the engine over a database of queued jobs, its
// requests answered in memory. The refills come first, so that the SQLite
// time of Store.NextJobs is theirs rather than the database's in general;
// the politeness core's share is dispatch and window bookkeeping.
var FrontierComponents = []Component{
	component(RefillPart, `^heed/storage\.\(\*DB\)\.NextJobs$`),
	component(SQLitePart, `^heed/storage\.`, `^database/sql\.`, `^github\.com/mattn/go-sqlite3\.`),
	// The in-memory transport runs under the fetcher, so its (small) cost is the fetcher's.
	component(FetchPart, `^heed/engine/fetch\.`, `^os\.`),
	component(CorePart, `^heed/engine\.\(\*Core\)\.`),
	component("engine: run loop, attempts, records", `^heed/engine\.`),
	gcComponent, schedComponent,
	component("benchmark harness", `^main\.`),
}

// CrawlComponents are the parts of `heed crawl` run in-process (e2e heed-cli,
// the crawl benchmark of issue #31). Link extraction reads each page back
// from its saved file and comes first; robots.txt's parsing next; then the
// parts of a download as in FrontierComponents, the politeness core, the
// rest of the engine (crawl bookkeeping included) and the command line's
// own output.
var CrawlComponents = []Component{
	component("links: extraction (engine/crawl, x/net/html)", `^heed/engine/crawl\.`, `^golang\.org/x/net/html\.`),
	component("robots.txt", `^heed/engine/robots\.`),
	component(RefillPart, `^heed/storage\.\(\*DB\)\.NextJobs$`),
	component(SQLitePart+", links", `^heed/storage\.`, `^database/sql\.`, `^github\.com/mattn/go-sqlite3\.`),
	component("HTTP client", `^net/http\.\(\*persistConn\)\.`, `^net/http\.\(\*Transport\)\.`,
		`^net/http\.\(\*Client\)\.`, `^net/http\.send$`, `^net/http\.\(\*bodyEOFSignal\)\.`),
	component(FetchPart, `^heed/engine/fetch\.`, `^os\.`),
	component(CorePart, `^heed/engine\.\(\*Core\)\.`),
	component("engine: run loop, attempts, crawl bookkeeping", `^heed/engine\.`),
	component("command line (heed/cli: progress, output)", `^heed/cli\.`),
	gcComponent, schedComponent,
}

// The parts of FrontierComponents that the frontier's goal counts, and the
// database's.
const (
	RefillPart = "refills: Store.NextJobs (SQLite)"
	SQLitePart = "SQLite: open, start, finish, history, host state"
	CorePart   = "politeness core: dispatch and windows"
	FetchPart  = "fetch: request, part create, write, hash, sync, rename"
)

var (
	gcComponent = component("garbage collector", `^runtime\.gcBgMarkWorker$`, `^runtime\.bgsweep$`, `^runtime\.bgscavenge$`,
		`^runtime\.gcAssistAlloc`)
	schedComponent = component("Go scheduler", `^runtime\.mcall$`, `^runtime\.schedule$`, `^runtime\.findRunnable$`)
)

// Other is the component of the samples no Component claims.
const Other = "other"

// ComponentCPU reads the output of `go tool pprof -traces` (a CPU profile's
// samples, each as its value and its stack, leaf first) and returns the CPU
// time of each of comps by name (Other for the samples none claims).
func ComponentCPU(traces string, comps []Component) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	sc := bufio.NewScanner(strings.NewReader(traces))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var value time.Duration
	var frames []string
	inSample := false
	flush := func() {
		if inSample {
			out[classify(comps, frames)] += value
		}
		inSample, frames = false, frames[:0]
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			flush()
			inSample = true
			continue
		}
		if !inSample || strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Fields(line) // "10ms runtime.unlock2", then "runtime.unlock (inline)" …
		if len(frames) == 0 {
			d, err := time.ParseDuration(f[0])
			if err != nil || len(f) < 2 {
				return nil, fmt.Errorf("bench: pprof traces: a sample starts with %q, not its value and leaf", line)
			}
			value, f = d, f[1:]
		}
		frames = append(frames, f[0])
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bench: pprof traces: no samples")
	}
	return out, nil
}

func classify(comps []Component, frames []string) string {
	for _, c := range comps {
		for _, fr := range frames {
			for _, p := range c.patterns {
				if p.MatchString(fr) {
					return c.Name
				}
			}
		}
	}
	return Other
}

// TracesDuration returns the wall time a profile covers, from the
// "Duration: 1.99s, Total samples = …" line of `go tool pprof -traces`.
func TracesDuration(traces string) (time.Duration, error) {
	for line := range strings.Lines(traces) {
		rest, ok := strings.CutPrefix(line, "Duration: ")
		if !ok {
			continue
		}
		d, _, _ := strings.Cut(rest, ",")
		return time.ParseDuration(strings.TrimSpace(d))
	}
	return 0, fmt.Errorf("bench: pprof traces: no Duration line")
}
