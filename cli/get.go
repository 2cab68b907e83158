package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/net/http/httpguts"

	"heed/engine"
	"heed/engine/fetch"
)

// queueOpts are the flags of get and add.
type queueOpts struct {
	input          string
	again, quiet   bool
	workers        int
	globalRate     float64
	bandwidth      int64
	maxSize        int64
	userAgent      string
	allowDowngrade bool
	tunables       *tunableFlags
}

func newGetCmd(env Env, c *common) *cobra.Command {
	o := &queueOpts{}
	cmd := &cobra.Command{
		Use:   "get [URL]... [-i FILE | -]",
		Short: "Queue URLs, then download until nothing is runnable",
		Long: `Queue the URLs you give, then download everything queued until nothing is
runnable, each host at its own pace. URLs come from the arguments (one URL
each), from a list (-i FILE: one or more URLs a line, # starts a comment) or
from standard input (-). Downloads start while a long list is still being read.

Files go into the current folder unless you pass --dir. A URL Heed already
knows is one job; one whose download already ended is fetched again only with
--again. Ctrl-C stops: partial files are kept, and the next heed get resumes
them. Without URLs, heed get downloads what is already queued.

On a terminal, get shows a line per download in flight and a total; otherwise
a line per finished try.

Exit status: 0 when every job is done, 1 when any failed or waits on a paused
host, 2 on bad usage, 3 when the database or the folder is unusable, 130 on
Ctrl-C.`,
		Example: `  heed get https://example.com/a.iso https://example.org/b.pdf
  heed get --dir out -i urls.txt
  grep -o 'https://[^"]*\.pdf' page.html | heed get -
  heed get --rate 10 --burst 1 -i urls.txt   # gentler than the defaults
  heed get                                   # download what is already queued`,
		Annotations: map[string]string{politeGroup: "Politeness, for every host without settings of its own"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(queueAndRun(cmd.Context(), env, c, o, args, true))
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	inputFlags(f, o)
	f.IntVar(&o.workers, "workers", 16, "requests in flight at once over all hosts")
	f.Float64Var(&o.globalRate, "global-rate", 0, "at most N requests a second over all hosts (default: no limit)")
	f.Int64Var(&o.bandwidth, "bandwidth", 0, "at most BYTES a second downloaded over all hosts (default: no limit)")
	f.Int64Var(&o.maxSize, "max-size", 0, "refuse a file larger than BYTES (default: no limit)")
	f.StringVar(&o.userAgent, "user-agent", "", "the User-Agent header Heed sends (default \"Heed/"+env.Version+"\")")
	f.BoolVar(&o.allowDowngrade, "allow-downgrade", false, "follow redirects from https to http")
	name(f, "workers", "N")
	name(f, "global-rate", "N")
	name(f, "bandwidth", "BYTES")
	name(f, "max-size", "BYTES")
	name(f, "user-agent", "TEXT")
	o.tunables = registerTunables(f, true)
	return cmd
}

// inputFlags are the flags get and add share.
func inputFlags(f *pflag.FlagSet, o *queueOpts) {
	f.StringVarP(&o.input, "input", "i", "", "read URLs from FILE, one or more a line (- for standard input)")
	name(f, "input", "FILE")
	f.BoolVar(&o.again, "again", false, "queue again URLs whose download already ended (done, failed or cancelled)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print only problems and the summary")
}

// name sets how help calls a flag's value: --max-size BYTES.
func name(f *pflag.FlagSet, flag, placeholderName string) {
	fl := f.Lookup(flag)
	fl.Value = placeholder{fl.Value, placeholderName}
}

// nothingToDo is what a bare heed get says when nothing is queued.
const nothingToDo = "nothing to download: give URLs, -i FILE, or - for standard input"

func queueAndRun(ctx context.Context, env Env, c *common, o *queueOpts, args []string, download bool) int {
	defaults := engine.DefaultTunables()
	if download {
		var err error
		if defaults, err = o.tunables.apply(defaults); err != nil {
			return usageErr(env, "%v", err)
		}
		if o.workers < 1 || o.workers > 4096 {
			return usageErr(env, "--workers: %d is out of range 1…4096", o.workers)
		}
		if !httpguts.ValidHeaderFieldValue(o.userAgent) {
			return usageErr(env, "--user-agent: %q holds characters a header cannot (line breaks, control characters)", o.userAgent)
		}
		if o.globalRate < 0 || o.bandwidth < 0 || o.maxSize < 0 {
			return usageErr(env, "--global-rate, --bandwidth and --max-size cannot be negative")
		}
	}
	given := len(args) > 0 || o.input != ""
	if !download && !given {
		return usageErr(env, "add: no URLs given (pass URLs, -i FILE, or - for standard input)")
	}
	if download && !given { // nothing to queue: there must be a queue
		path, err := DBPath(c.db)
		if err == nil {
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return usageErr(env, nothingToDo)
			}
		}
	}
	in, _, err := urlInput(env, args, o.input)
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
	if download && !given {
		if n, err := db.Counts(ctx); err == nil && n.Queued+n.Active == 0 {
			return usageErr(env, nothingToDo)
		}
	}
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
	p := newProgress(env, o.quiet)
	p.counts = func() (engine.Counts, error) { return db.Counts(context.Background()) }
	eng, err := engine.New(ctx, db, engine.Options{
		Dir: dir, Version: env.Version, UserAgent: o.userAgent, Defaults: defaults, Workers: o.workers,
		GlobalRatePerSec: o.globalRate, BandwidthBytesPerSec: o.bandwidth, MaxSize: o.maxSize,
		AllowDowngrade: o.allowDowngrade, OnJob: p.jobEnded,
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
	stopShow := func() {}
	run := func() {
		if ran == nil {
			stopShow = p.start(eng)
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
			stopShow() // what it downloaded is reported all the same
		}
	}
	rejected := false
	// finish lets the run end (or starts it) and sums it up.
	finish := func() int {
		run()
		added()
		err := <-ran
		stopShow()
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
		_, err := eng.AddFrom(ctx, in, engine.AddOptions{Again: o.again, Batch: func(b engine.AddReport) {
			tally.add(p, b, o.quiet, o.again) // with Batch, each part's report comes here
			if download {
				run() // downloads start once the first part is stored
			}
		}})
		if err != nil && ran != nil && ctx.Err() != nil {
			// A Ctrl-C while the list was being stored, once downloads had
			// started: they stop as any interrupted run's do.
			p.say("heed: interrupted while queueing: queued %d, duplicates %d; the rest of the list may not be (give it again to queue it)\n",
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
		tally.more(p)
		rejected = tally.rejected > 0 || tally.failedBefore
		p.say("queued %d, duplicates %d (queued again %d), rejected %d\n",
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

func (t *addTally) add(p *progress, b engine.AddReport, quiet, again bool) {
	t.queued += len(b.Queued)
	t.dups += len(b.Duplicates)
	t.again += b.Again
	t.rejected += len(b.Rejected)
	for _, r := range b.Rejected {
		p.say("heed: rejected %q (line %d): %s\n", fetch.Redact(r.Text), r.Line, r.Reason)
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
			p.say("heed: %s, not fetched again (--again fetches it): %s\n", why, u)
		}
	}
}

// more says how many ended duplicates were not named.
func (t *addTally) more(p *progress) {
	if t.heldBack > heldShown {
		p.say("heed: … and %d more not fetched again\n", t.heldBack-heldShown)
	}
}
