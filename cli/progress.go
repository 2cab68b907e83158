package cli

import (
	"bufio"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/vbauerster/mpb/v8"

	"heed/engine"
)

// progress shows what get is doing. On a terminal: a line per download in
// flight and a total line under them, redrawn in place by mpb at the
// terminal's width (asked at each redraw, so a resize is followed), with
// the reports of finished downloads printed above them. Elsewhere: one
// plain line per finished attempt, written out every flushEvery, and a
// line saying why nothing runs every waitEvery while nothing does.
type progress struct {
	env   Env
	quiet bool // no line per finished download, no bars: only problems and the summary
	bars  bool // a terminal, and not quiet
	// counts, when set, is the database's job counts (for the queued count
	// of the total line).
	counts func() (engine.Counts, error)
	// again is the command that goes on after Ctrl-C ("heed get again" when
	// unset; "heed crawl --resume 3").
	again string

	mu        sync.Mutex
	out       *bufio.Writer // lines for a pipe or a file, flushed every flushEvery
	said      time.Time     // when the last line was written (a report or a wait)
	looked    time.Time     // when noteWait last took a snapshot
	waiting   string        // why nothing runs
	snap      []engine.HostSnapshot
	done      int
	failed    int
	skipped   int // kept from being fetched by robots.txt or a trap rule: not a failure
	retried   int // attempts to be made again after an error (R2)
	throttled int // throttle responses, which use up no attempt (R3)
	bytes     int64
	started   time.Time
	firstEnd  time.Time // when the first job of the run ended, for the ETA by jobs
	queued    int64     // as of the last look at the counts
	countedAt time.Time

	// On a terminal, while the bars are drawn (live):
	live   bool
	mp     *mpb.Progress
	total  *mpb.Bar
	dls    map[int64]*download // by job id
	ended  map[int64]time.Time // when a job's attempt ended: its bar is not drawn again from an older snapshot
	view   sync.Mutex          // guards what the bars' decorators read: below, and each download's numbers
	line   string              // the total line
	hostW  int                 // the host column's width
	stopMu sync.Mutex
	stop   func()

	width, height atomic.Int32 // the terminal's usable size at the last redraw
}

func newProgress(env Env, quiet bool) *progress {
	now := time.Now()
	return &progress{env: env, quiet: quiet, bars: env.Interactive && !quiet, started: now, said: now}
}

// flushEvery is how often reports to a pipe or a file are written out, and
// how often the bars' numbers are taken from the engine.
const flushEvery = 250 * time.Millisecond

// waitEvery is how often a pipe or a file is told why nothing runs, while
// nothing does: a host that backs off for minutes must not look hung.
const waitEvery = 10 * time.Second

// jobEnded is the engine's OnJob hook: it runs on the engine's goroutines.
func (p *progress) jobEnded(j engine.JobEnd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.said = time.Now()
	if p.firstEnd.IsZero() {
		p.firstEnd = p.said
	}
	if p.live {
		p.ended[j.ID] = p.said
		if d := p.dls[j.ID]; d != nil {
			d.bar.Abort(true)
			delete(p.dls, j.ID)
		}
	}
	switch j.Outcome {
	case "ok":
		p.done++
		p.bytes += j.Bytes
		if !p.quiet {
			p.report("done     ", j.URL, fmt.Sprintf(" → %s (%s, sha256 %s)", j.File, humanBytes(j.Bytes), shortSHA(j.SHA256)))
		}
	case "failed":
		p.failed++
		p.report("failed   ", j.URL, ": "+j.Err)
	case "skipped": // a crawl's URL that robots.txt or a trap rule keeps out: not a problem
		p.skipped++
		if !p.quiet {
			p.report("skipped  ", j.URL, " — "+j.Err)
		}
	case "retry", "throttled":
		if j.Outcome == "throttled" {
			p.throttled++ // counted apart: a throttle uses up no attempt (R3)
		} else {
			p.retried++
		}
		if !p.quiet {
			next := fmt.Sprintf("next try in %s", max(time.Until(j.NotBefore).Round(100*time.Millisecond), 0))
			if j.Held {
				next = "host paused: next try once it is resumed (heed host " + j.Host + " --resume)"
			}
			p.report(fmt.Sprintf("%-8s ", j.Outcome), j.URL, ": "+j.Err+"; "+next)
		}
	case "canceled":
		if !p.quiet {
			why := ""
			if j.Err != "" {
				why = ": " + j.Err
			}
			if j.Bytes > 0 {
				why += " (partial file kept)"
			}
			p.report("stopped  ", j.URL, why)
		}
	}
}

// report writes a line about a download (caller holds mu): what happened,
// its URL, and the rest. On a terminal the URL is shortened in its middle
// to keep the line within the terminal's width, where it can be: the whole
// URL is in heed jobs.
func (p *progress) report(what, url, rest string) {
	if p.env.Interactive {
		w, _ := p.size()
		if room := w - runewidth.StringWidth(what+rest); runewidth.StringWidth(url) > room {
			url = shorten(url, max(room, 12))
		}
	}
	p.printf("%s%s%s\n", what, url, rest)
}

// size is the terminal's usable size, as the last redraw found it (or as
// Env says, before the first).
func (p *progress) size() (width, height int) {
	if w, h := int(p.width.Load()), int(p.height.Load()); w > 0 && h > 0 {
		return w, h
	}
	w, h, _ := termWriter{size: p.env.TermSize}.GetTermSize()
	return w, h
}

// shortSHA is the start of a SHA-256, enough to tell files apart by eye;
// heed jobs --json has it whole.
func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// printf writes a report line (caller holds mu): above the bars while they
// are drawn, else into the buffer for a pipe or a file, flushed every
// flushEvery so that thousands of small files a second do not cost a write
// each, or straight to the terminal.
func (p *progress) printf(format string, a ...any) {
	switch {
	case p.live:
		fmt.Fprintf(p.mp, format, a...)
	case p.env.Interactive:
		fmt.Fprintf(p.env.Stdout, format, a...)
	default:
		if p.out == nil {
			p.out = bufio.NewWriterSize(p.env.Stdout, 64<<10)
		}
		fmt.Fprintf(p.out, format, a...)
	}
}

// say writes a message meant for standard error: above the bars when they
// are drawn on the same terminal, so as not to break them.
func (p *progress) say(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.env.ErrTerminal {
		fmt.Fprintf(p.mp, format, a...)
		return
	}
	fmt.Fprintf(p.env.Stderr, format, a...)
}

// flush writes out buffered reports (caller holds mu).
func (p *progress) flush() {
	if p.out != nil {
		p.out.Flush()
	}
}

// start shows the progress of eng's run until the returned func is called;
// calling it again does nothing. On a terminal it draws the bars; elsewhere
// it writes out the buffered reports every flushEvery.
func (p *progress) start(eng *engine.Engine) func() {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	if p.stop != nil {
		return p.stop
	}
	if p.bars {
		p.mu.Lock()
		p.startBars()
		p.mu.Unlock()
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				active := eng.Active()
				p.noteWait(eng, active)
				p.mu.Lock()
				if p.live {
					p.update(active)
				} else {
					p.flush()
				}
				p.mu.Unlock()
			}
		}
	}()
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
			p.mu.Lock()
			mp := p.stopBars()
			p.mu.Unlock()
			if mp != nil {
				mp.Wait() // the last redraw leaves the reports, without the bars
			}
			p.mu.Lock()
			p.flush()
			p.mu.Unlock()
		})
	}
	return p.stop
}

// noteWait finds why nothing runs when no download is active: for the
// total line on a terminal, and a line every waitEvery elsewhere.
func (p *progress) noteWait(eng *engine.Engine, active []engine.Active) {
	p.mu.Lock()
	idle := len(active) == 0 && (p.bars || (!p.env.Interactive && !p.quiet && time.Since(p.said) >= waitEvery))
	if !idle {
		p.waiting = ""
	}
	p.mu.Unlock()
	if !idle || time.Since(p.looked) < time.Second {
		return // at most one snapshot a second: it copies every host
	}
	p.looked = time.Now()
	p.snap = eng.Core().SnapshotInto(p.snap[:0], time.Now())
	why := whyWaitingWith(p.snap, eng.Robots)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting = why
	if !p.bars && why != "" {
		p.printf("waiting  %s\n", why)
		p.said = time.Now()
	}
}

// whyWaiting names the host with queued jobs that may go first, and what it
// waits for ("example.com: breaker open, probe in 25s (3 hosts wait)"), or
// "" when no host has queued jobs.
func whyWaiting(hosts []engine.HostSnapshot) string { return whyWaitingWith(hosts, nil) }

// whyWaitingWith is whyWaiting, adding what robots (when set) says of the
// waiting host's robots.txt when a crawl waits on it ("… — robots:
// disallow all (HTTP 503)"): being fetched, unreachable, or a kept copy
// standing in.
func whyWaitingWith(hosts []engine.HostSnapshot, robots func(host string) (engine.RobotsView, bool)) string {
	var first *engine.HostSnapshot
	n := 0
	for i := range hosts {
		h := &hosts[i]
		if h.Waiting == engine.WaitEmpty {
			continue
		}
		n++
		switch {
		case first == nil:
			first = h
		case first.NextDue.IsZero() && !h.NextDue.IsZero(), !h.NextDue.IsZero() && h.NextDue.Before(first.NextDue):
			first = h
		}
	}
	if first == nil || first.Waiting == engine.WaitReady {
		return "" // about to go: nothing to explain
	}
	in := func(d time.Duration) string { return max(d, 0).Round(time.Second).String() }
	next := ""
	if !first.NextDue.IsZero() {
		next = ", next request in " + in(first.NextDue.Sub(first.At))
	}
	var what string
	switch first.Waiting {
	case engine.WaitBreaker:
		what = "breaker open, probe in " + in(first.HalfOpenIn)
		if first.ProbeOut {
			what = "breaker half-open, its probe out"
		}
	case engine.WaitGate:
		what = fmt.Sprintf("backing off (level %d%s)", first.Level, next)
	case engine.WaitPaused:
		what = "paused"
		if first.PauseReason != "" {
			what += ": " + first.PauseReason
		}
	case engine.WaitToken:
		what = "rate limit" + next
	case engine.WaitRetryDelay:
		what = "retry delay" + next
	case engine.WaitJitter:
		what = "spacing between requests" + next
	case engine.WaitCrawlDelay:
		what = "its robots.txt asks for a crawl-delay of " + first.CrawlDelay.String() + next
	default:
		what = first.Waiting.String() + next
	}
	s := first.Host + ": " + what
	if robots != nil {
		if v, ok := robots(first.Host); ok && !strings.HasPrefix(v.State, "ok") && !strings.HasPrefix(v.State, "allow all") {
			s += " — " + v.String()
		}
	}
	if n > 1 {
		s += fmt.Sprintf(" (%d hosts wait)", n)
	}
	return s
}

// retries says how many attempts are made again: "1 retry", "2 retries".
func retries(n int) string {
	if n == 1 {
		return "1 retry"
	}
	return fmt.Sprintf("%d retries", n)
}

// summary says what the run did, on standard error, once the bars are gone.
func (p *progress) summary(counts engine.Counts, interrupted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.env.Stderr
	skipped := ""
	if p.skipped > 0 {
		skipped = fmt.Sprintf(", %d skipped", p.skipped)
	}
	fmt.Fprintf(w, "this run: %d done (%s)%s, %d failed, %s, %d throttled in %s\n", p.done, humanBytes(p.bytes),
		skipped, p.failed, retries(p.retried), p.throttled, time.Since(p.started).Round(time.Millisecond))
	if q := counts.Queued; q > 0 {
		why := "held by paused hosts (heed hosts shows why; heed host HOST --resume)"
		if interrupted {
			again := p.again
			if again == "" {
				again = "heed get again"
			}
			why = "still queued (run " + again + " to go on; partial files are kept and resumed)"
		}
		noun := "jobs"
		if q == 1 {
			noun = "job"
		}
		fmt.Fprintf(w, "%d %s %s\n", q, noun, why)
	}
}

// humanBytes renders n as 1.5 KiB, 20 MiB ….
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
