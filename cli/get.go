package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"heed/engine"
	"heed/engine/fetch"
)

// cmdGet queues the given URLs, then downloads everything queued until
// nothing is runnable (SPEC §9).
func cmdGet(ctx context.Context, env Env, args []string) int {
	return queueAndRun(ctx, env, "get", args, true)
}

// cmdAdd only queues.
func cmdAdd(ctx context.Context, env Env, args []string) int {
	return queueAndRun(ctx, env, "add", args, false)
}

func queueAndRun(ctx context.Context, env Env, name string, args []string, download bool) int {
	fs, c := newFlags(env, name)
	input := fs.String("i", "", "read URLs from `file`, one or more per line (- for standard input)")
	again := fs.Bool("again", false, "queue URLs that are already done, failed or cancelled again")
	workers := fs.Int("workers", 16, "requests in flight across all hosts (L1)")
	globalRate := fs.Float64("global-rate", 0, "requests per `second` across all hosts, 0 = no cap (L2)")
	bandwidth := fs.Int64("bandwidth", 0, "download `bytes` per second across all hosts, 0 = no cap (L2)")
	maxSize := fs.Int64("max-size", 0, "largest file in `bytes`, 0 = no cap (F8)")
	userAgent := fs.String("user-agent", "", "User-Agent header (default: Heed/VERSION)")
	allowDowngrade := fs.Bool("allow-downgrade", false, "follow redirects from https to http (N2)")
	quiet := false
	fs.BoolVar(&quiet, "q", false, "quiet: print no line per download, only problems and the summary")
	fs.BoolVar(&quiet, "quiet", false, "same as -q")
	tf := registerTunables(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	tf.visited()
	defaults, err := tf.apply(engine.DefaultTunables())
	if err != nil {
		return usageErr(env, "%v", err)
	}
	if *workers < 1 || *workers > 4096 {
		return usageErr(env, "--workers: %d is out of range 1…4096", *workers)
	}
	if !httpguts.ValidHeaderFieldValue(*userAgent) {
		return usageErr(env, "--user-agent: %q holds characters a header cannot (line breaks, control characters)", *userAgent)
	}
	if *globalRate < 0 || *bandwidth < 0 || *maxSize < 0 {
		return usageErr(env, "--global-rate, --bandwidth and --max-size cannot be negative")
	}
	if !download && len(pos) == 0 && *input == "" {
		return usageErr(env, "add: no URLs given (pass URLs, -i FILE, or - for standard input)")
	}
	in, given, err := urlInput(env, pos, *input)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUsage
	}
	defer in.Close()
	if code := folderUsable(env, c); code != ExitOK {
		return code
	}
	db, code := openDB(env, c)
	if code != ExitOK {
		return code
	}
	defer db.Close()
	dir, code := downloadDir(env, c)
	if code != ExitOK {
		return code
	}
	if download {
		if err := CheckFolder(dir); err != nil {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return ExitUnusable
		}
	} else if c.dir != "" {
		// Jobs have no folder of their own: the run that downloads them
		// chooses it. Said, so that nobody expects add to remember it.
		fmt.Fprintf(env.Stderr, "heed: add only queues; the folder is chosen when they download: heed get --dir %s\n", c.dir)
	}
	p := newProgress(env)
	p.quiet = quiet
	eng, err := engine.New(ctx, db, engine.Options{
		Dir: dir, Version: env.Version, UserAgent: *userAgent, Defaults: defaults, Workers: *workers,
		GlobalRatePerSec: *globalRate, BandwidthBytesPerSec: *bandwidth, MaxSize: *maxSize,
		AllowDowngrade: *allowDowngrade, OnJob: p.jobEnded,
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	defer eng.Close()

	// Downloads start as soon as the first URLs are stored, while the rest
	// are (see Engine.AddFrom): the run is held open for them (Adding)
	// until they are all added, and stopped if the command ends before it.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var ran chan error // the run's result, once it started
	run := func() {
		if ran == nil {
			ran = make(chan error, 1)
			go func() { ran <- eng.RunUntilIdle(runCtx) }()
		}
	}
	added := func() {}
	if download {
		added = eng.Adding()
	}
	abandon := func() { // for a return before the run ends
		added()
		if ran != nil {
			stopRun()
			<-ran
			p.mu.Lock()
			p.flush() // what it downloaded is reported all the same
			p.mu.Unlock()
		}
	}
	rejected := false
	// finish lets the run end (or starts it) and sums it up.
	finish := func() int {
		stopDraw := p.start(eng)
		run()
		added()
		err := <-ran
		stopDraw()
		interrupted := ctx.Err() != nil
		if errors.Is(err, engine.ErrNotRecorded) {
			fmt.Fprintf(env.Stderr, "heed: database %s: %v\nheed: downloads stopped; the jobs it could not record are queued again when Heed next starts\n",
				db.Path(), err)
			return ExitUnusable
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return ExitUnusable
		}
		counts, err := db.Counts(context.Background())
		if err != nil {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return ExitUnusable
		}
		p.summary(counts, interrupted)
		switch {
		case interrupted:
			return ExitInterrupt
		case p.failed > 0 || counts.Queued > 0 || rejected:
			return ExitFailed
		}
		return ExitOK
	}
	if given {
		var tally addTally
		rep, err := eng.AddFrom(ctx, in, engine.AddOptions{Again: *again, Batch: func(b engine.AddReport) {
			tally.add(env, b, quiet, *again)
			if download {
				run() // downloads start once the first part is stored
			}
		}})
		_ = rep // with Batch, each part's report went to tally
		if err != nil && ran != nil && ctx.Err() != nil {
			// A Ctrl-C while the list was being stored, once downloads had
			// started: they stop as any interrupted run's do.
			fmt.Fprintf(env.Stderr, "heed: interrupted while queueing: queued %d, duplicates %d; the rest of the list may not be (give it again to queue it)\n",
				tally.queued, tally.dups)
			return finish()
		}
		if err != nil {
			abandon()
			fmt.Fprintf(env.Stderr, "heed: queueing: %v\n", err)
			if tally.queued+tally.dups > 0 { // the parts stored before it stay
				fmt.Fprintf(env.Stderr, "heed: queued %d, duplicates %d before that; the rest of the list may not be\n",
					tally.queued, tally.dups)
			}
			if errors.Is(err, fetch.ErrNotAList) {
				return ExitUsage
			}
			return ExitUnusable
		}
		tally.more(env)
		rejected = tally.rejected > 0 || tally.failedBefore
		fmt.Fprintf(env.Stderr, "queued %d, duplicates %d (queued again %d), rejected %d\n",
			tally.queued, tally.dups, tally.again, tally.rejected)
		if tally.queued == 0 && tally.dups == 0 {
			abandon()
			return ExitUsage
		}
	}
	if !download {
		if rejected {
			return ExitFailed
		}
		return ExitOK
	}

	return finish()
}

// addTally sums up what a list's parts did as they are stored, and says
// on the way what needs saying: each rejected line, and the URLs given
// that are not downloaded again because their jobs already ended (J2) —
// failed or cancelled ones always, done ones unless quiet, each with the
// flag that would download it again, the first few of them by name.
type addTally struct {
	queued, dups, again, rejected int
	heldBack                      int  // ended duplicates left as they are
	failedBefore                  bool // one of them had failed or been cancelled: exit 1
}

// heldShown is how many ended duplicates are named one by one.
const heldShown = 10

func (t *addTally) add(env Env, b engine.AddReport, quiet, again bool) {
	t.queued += len(b.Queued)
	t.dups += len(b.Duplicates)
	t.again += b.Again
	t.rejected += len(b.Rejected)
	for _, r := range b.Rejected {
		fmt.Fprintf(env.Stderr, "heed: rejected %q (line %d): %s\n", r.Text, r.Line, r.Reason)
	}
	if again {
		return
	}
	for i, u := range b.Duplicates {
		var why string
		switch st := b.DuplicateStates[i]; st {
		case engine.JobFailed, engine.JobCancelled:
			t.failedBefore = true
			why = "already " + string(st)
		case engine.JobDone:
			if quiet {
				continue
			}
			why = "already downloaded"
		default:
			continue
		}
		if t.heldBack++; t.heldBack <= heldShown {
			fmt.Fprintf(env.Stderr, "heed: %s, not fetched again (--again fetches it): %s\n", why, u)
		}
	}
}

// more says how many ended duplicates were not named.
func (t *addTally) more(env Env) {
	if t.heldBack > heldShown {
		fmt.Fprintf(env.Stderr, "heed: … and %d more not fetched again\n", t.heldBack-heldShown)
	}
}

// progress shows what get is doing: bars redrawn in place on a terminal,
// one plain line per finished attempt otherwise.
type progress struct {
	env   Env
	quiet bool // no line per finished download

	mu        sync.Mutex
	out       *bufio.Writer         // lines for a pipe or a file, flushed every flushEvery
	drawn     int                   // lines of bars on screen
	said      time.Time             // when the last line was written (a report or a wait)
	waiting   string                // why nothing runs, shown with the bars on a terminal
	looked    time.Time             // when noteWait last took a snapshot
	snap      []engine.HostSnapshot // noteWait's, reused: 100,000 hosts are 155 MB a copy
	done      int
	failed    int
	retried   int // attempts to be made again after an error (R2)
	throttled int // throttle responses, which use up no attempt (R3)
	bytes     int64
	started   time.Time
}

func newProgress(env Env) *progress {
	now := time.Now()
	return &progress{env: env, started: now, said: now}
}

// jobEnded is the engine's OnJob hook: it runs on the engine's goroutines.
func (p *progress) jobEnded(j engine.JobEnd) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.said = time.Now()
	w := p.writer()
	switch j.Outcome {
	case "ok":
		p.done++
		p.bytes += j.Bytes
		if !p.quiet {
			fmt.Fprintf(w, "done     %s → %s (%s, sha256 %s)\n", j.URL, j.File, humanBytes(j.Bytes), j.SHA256)
		}
	case "failed":
		p.failed++
		fmt.Fprintf(w, "failed   %s: %s\n", j.URL, j.Err)
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
			fmt.Fprintf(w, "%-8s %s: %s; %s\n", j.Outcome, j.URL, j.Err, next)
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
			fmt.Fprintf(w, "stopped  %s%s\n", j.URL, why)
		}
	}
}

// writer is where finished downloads are reported (caller holds mu): the
// terminal itself, between redraws of the bars, or else a buffer flushed
// every flushEvery, so thousands of small files a second do not cost a
// write to a pipe each.
func (p *progress) writer() io.Writer {
	if p.env.Interactive {
		return p.env.Stdout
	}
	if p.out == nil {
		p.out = bufio.NewWriterSize(p.env.Stdout, 64<<10)
	}
	return p.out
}

// flushEvery is how often reports to a pipe or a file are written out.
const flushEvery = 250 * time.Millisecond

// flush writes out buffered reports (caller holds mu).
func (p *progress) flush() {
	if p.out != nil {
		p.out.Flush()
	}
}

// start draws bars every 250 ms on a terminal, or writes out the buffered
// reports as often elsewhere; the returned func stops it, with everything
// written.
func (p *progress) start(eng *engine.Engine) func() {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				p.mu.Lock()
				p.clear()
				p.flush()
				p.mu.Unlock()
				return
			case <-t.C:
				active := eng.Active()
				p.noteWait(eng, active)
				if p.env.Interactive {
					p.draw(active)
				} else {
					p.mu.Lock()
					p.flush()
					p.mu.Unlock()
				}
			}
		}
	}()
	return func() { close(stop); wg.Wait() }
}

// clear erases the bars drawn last (caller holds mu).
func (p *progress) clear() {
	for ; p.drawn > 0; p.drawn-- {
		fmt.Fprint(p.env.Stdout, "\x1b[1A\x1b[2K")
	}
}

func (p *progress) draw(active []engine.Active) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	const maxRows = 8
	for i, a := range active {
		if i == maxRows {
			fmt.Fprintf(p.env.Stdout, "  … and %d more\n", len(active)-maxRows)
			p.drawn++
			break
		}
		fmt.Fprintln(p.env.Stdout, bar(a, time.Now()))
		p.drawn++
	}
	wait := ""
	if len(active) == 0 && p.waiting != "" {
		wait = "; waiting: " + p.waiting
	}
	fmt.Fprintf(p.env.Stdout, "%d done, %d failed, %s, %d throttled, %s in %s%s\n", p.done, p.failed, retries(p.retried),
		p.throttled, humanBytes(p.bytes), time.Since(p.started).Round(time.Second), wait)
	p.drawn++
}

// waitEvery is how often a pipe or a file is told why nothing runs, while
// nothing does: a host that backs off for minutes must not look hung.
const waitEvery = 10 * time.Second

// noteWait finds why nothing runs when no download is active: for the bars'
// status line on a terminal, and a line every waitEvery elsewhere.
func (p *progress) noteWait(eng *engine.Engine, active []engine.Active) {
	p.mu.Lock()
	idle := len(active) == 0 && (p.env.Interactive || (!p.quiet && time.Since(p.said) >= waitEvery))
	if !idle {
		p.waiting = ""
	}
	p.mu.Unlock()
	if !idle || time.Since(p.looked) < time.Second {
		return // at most one snapshot a second: it copies every host
	}
	p.looked = time.Now()
	p.snap = eng.Core().SnapshotInto(p.snap[:0], time.Now())
	why := whyWaiting(p.snap)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting = why
	if !p.env.Interactive && !p.quiet && why != "" {
		fmt.Fprintf(p.writer(), "waiting  %s\n", why)
		p.said = time.Now()
	}
}

// whyWaiting names the host with queued jobs that may go first, and what it
// waits for ("example.com: breaker open, probe in 25s (3 hosts wait)"), or
// "" when no host has queued jobs.
func whyWaiting(hosts []engine.HostSnapshot) string {
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
	default:
		what = first.Waiting.String() + next
	}
	s := first.Host + ": " + what
	if n > 1 {
		s += fmt.Sprintf(" (%d hosts wait)", n)
	}
	return s
}

// bar renders one download as a line: host, a bar, percent, speed, URL.
func bar(a engine.Active, now time.Time) string {
	const width = 24
	frac := -1.0
	if a.Size > 0 {
		frac = min(float64(a.Bytes)/float64(a.Size), 1)
	}
	var b strings.Builder
	b.WriteString("▕")
	if frac < 0 {
		b.WriteString(strings.Repeat("·", width))
	} else {
		n := int(frac * width)
		b.WriteString(strings.Repeat("█", n) + strings.Repeat("░", width-n))
	}
	b.WriteString("▏")
	pct := "   ?"
	if frac >= 0 {
		pct = fmt.Sprintf("%3.0f%%", frac*100)
	}
	speed := ""
	if el := now.Sub(a.Started).Seconds(); el > 0.2 {
		speed = humanBytes(int64(float64(a.Bytes-a.StartBytes)/el)) + "/s"
	}
	return fmt.Sprintf("%-22.22s %s %s %10s  %s", a.Host, b.String(), pct, speed, a.URL)
}

// retries says how many attempts are made again: "1 retry", "2 retries".
func retries(n int) string {
	if n == 1 {
		return "1 retry"
	}
	return fmt.Sprintf("%d retries", n)
}

func (p *progress) summary(counts engine.Counts, interrupted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.env.Stderr
	fmt.Fprintf(w, "this run: %d done (%s), %d failed, %s, %d throttled in %s\n", p.done, humanBytes(p.bytes),
		p.failed, retries(p.retried), p.throttled, time.Since(p.started).Round(time.Millisecond))
	if q := counts.Queued; q > 0 {
		why := "held by paused hosts (heed hosts shows why; heed host HOST --resume)"
		if interrupted {
			why = "still queued (run heed get again to go on; partial files are kept and resumed)"
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
