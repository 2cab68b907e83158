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
	"heed/storage"
	"heed/storage/postgres"
)

// queueOpts are the flags of get and add; crawl has them too, but --again.
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
	request        requestFlags
	fetch          fetch.Config // what request gives, read by runDefaults
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
	runFlags(f, o, env)
	return cmd
}

// runFlags are the flags of a run that get and crawl share: the limits over
// all hosts, the client's, and the politeness defaults.
func runFlags(f *pflag.FlagSet, o *queueOpts, env Env) {
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
	o.request.register(f)
	o.tunables = registerTunables(f, true)
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

// runDefaults are the defaults of every host and the limits over all hosts
// that o's flags give a run (get, crawl), checked: a mistake is a usage
// error, said.
func (o *queueOpts) runDefaults(env Env) (engine.Tunables, int) {
	defaults, err := o.tunables.apply(engine.DefaultTunables())
	if err != nil {
		return defaults, usageErr(env, "%v", err)
	}
	if o.workers < 1 || o.workers > 4096 {
		return defaults, usageErr(env, "--workers: %d is out of range 1…4096", o.workers)
	}
	if !httpguts.ValidHeaderFieldValue(o.userAgent) {
		return defaults, usageErr(env, "--user-agent: %q holds characters a header cannot (line breaks, control characters)", o.userAgent)
	}
	if o.globalRate < 0 || o.bandwidth < 0 || o.maxSize < 0 {
		return defaults, usageErr(env, "--global-rate, --bandwidth and --max-size cannot be negative")
	}
	if o.fetch, err = o.request.config(env.Stderr); err != nil {
		return defaults, usageErr(env, "%v", err)
	}
	return defaults, ExitOK
}

func queueAndRun(ctx context.Context, env Env, c *common, o *queueOpts, args []string, download bool) int {
	defaults := engine.DefaultTunables()
	if download {
		var code int
		if defaults, code = o.runDefaults(env); code != ExitOK {
			return code
		}
	}
	given := len(args) > 0 || o.input != ""
	if !download && !given {
		return usageErr(env, "add: no URLs given (pass URLs, -i FILE, or - for standard input)")
	}
	if download && !given { // nothing to queue: there must be a queue
		path, err := DBPath(c.db)
		if err == nil && !postgres.IsURL(path) {
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
	if !download { // another Heed on the database queues them, if one answers
		if code, ok := handOffAdd(env, c, o, in); ok {
			return code
		}
	}
	var check func(Database) int
	if download && !given {
		check = func(db Database) int {
			if n, err := db.Counts(ctx); err == nil && n.Queued+n.Active == 0 {
				return usageErr(env, nothingToDo)
			}
			return ExitOK
		}
	}
	s, code := openSession(ctx, env, c, o, defaults, download, check)
	if code != ExitOK {
		return code
	}
	defer s.close()
	p := s.p
	if given {
		var tally addTally
		_, err := s.eng.AddFrom(ctx, in, engine.AddOptions{Again: o.again, Batch: func(b engine.AddReport) {
			tally.add(p, b, o.quiet, o.again) // with Batch, each part's report comes here
			if download {
				s.start() // downloads start once the first part is stored
			}
		}})
		if err != nil && s.started() && ctx.Err() != nil {
			// A Ctrl-C while the list was being stored, once downloads had
			// started: they stop as any interrupted run's do.
			p.say("heed: interrupted while queueing: queued %d, duplicates %d; the rest of the list may not be (give it again to queue it)\n",
				tally.queued, tally.dups)
			return s.finish()
		}
		if err != nil {
			s.abandon()
			fmt.Fprintf(env.Stderr, "heed: queueing: %v\n", err)
			if tally.queued+tally.dups > 0 { // the parts stored before it stay
				fmt.Fprintf(env.Stderr, "heed: queued %d, duplicates %d before that; the rest of the list may not be\n",
					tally.queued, tally.dups)
			}
			if errors.Is(err, fetch.ErrNotAList) || errors.Is(err, engine.ErrBadImportLine) {
				return ExitUsage
			}
			return ExitUnusable
		}
		tally.more(p)
		s.rejected = tally.rejected > 0 || tally.failedBefore
		p.say("queued %d, duplicates %d (queued again %d), rejected %d\n",
			tally.queued, tally.dups, tally.again, tally.rejected)
		if tally.queued == 0 && tally.dups == 0 {
			s.abandon()
			return ExitUsage
		}
	}
	if !download {
		if s.rejected {
			return ExitFailed
		}
		return ExitOK
	}
	return s.finish()
}

// session is one headless run on the database, which get and crawl share:
// the engine over it, the progress shown, and the run that downloads
// everything queued until nothing is runnable. What they queue first is
// theirs; how the run goes, what it shows and how it exits are the
// session's.
type session struct {
	env Env
	ctx context.Context // the command's: it ends on Ctrl-C
	db  Database
	eng *engine.Engine
	p   *progress
	// rejected says that part of what was given could not be queued (a
	// line rejected, a URL whose job had failed): the run exits 1.
	rejected bool

	runCtx   context.Context
	stopRun  context.CancelFunc
	ran      chan error // the run's result, once it started
	over     bool       // the run's result was taken
	stopShow func()
	added    func()   // releases the hold that keeps the run open for URLs to come
	handoff  *Handoff // where heed add hands its URLs to this run
}

// openSession opens the database and an engine over it with o's flags and
// defaults, for a run (download) or for queueing only (add). check, when
// set, looks at the database before the download folder is made, and ends
// the command with the code it returns when that is not ExitOK. A run is
// held open (Engine.Adding) until finish: downloads may start while the
// URLs are still being added, and it does not end for want of them.
func openSession(ctx context.Context, env Env, c *common, o *queueOpts, defaults engine.Tunables, download bool,
	check func(Database) int) (*session, int) {
	if code := folderUsable(env, c); code != ExitOK {
		return nil, code
	}
	db, code := openDB(env, c)
	if code != ExitOK {
		return nil, code
	}
	fail := func(code int) (*session, int) {
		db.Close()
		return nil, code
	}
	if check != nil {
		if code := check(db); code != ExitOK {
			return fail(code)
		}
	}
	dir, code := downloadDir(env, c)
	if code != ExitOK {
		return fail(code)
	}
	if download {
		if err := CheckFolder(dir); err != nil {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return fail(ExitUnusable)
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
		AllowDowngrade: o.allowDowngrade, OnJob: p.jobEnded, Fetch: o.fetch,
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return fail(ExitUnusable)
	}
	s := &session{env: env, ctx: ctx, db: db, eng: eng, p: p, stopShow: func() {}, added: func() {}}
	s.runCtx, s.stopRun = context.WithCancel(ctx)
	if download {
		s.added = eng.Adding()
		if sdb, ok := db.(*storage.DB); ok { // one Heed on an SQLite database: heed add hands over to it
			if s.handoff, err = ServeHandoff(sdb.Path(), eng, nil); err != nil {
				fmt.Fprintf(env.Stderr, "heed: %v; heed add is refused until this run ends\n", err)
			}
		}
	}
	return s, ExitOK
}

// start starts the run and its progress, once.
func (s *session) start() {
	if s.ran != nil {
		return
	}
	s.stopShow = s.p.start(s.eng)
	s.ran = make(chan error, 1)
	go func() { s.ran <- s.eng.RunUntilIdle(s.runCtx) }()
}

// started says whether the run has started.
func (s *session) started() bool { return s.ran != nil }

// abandon stops the run, if it started, for a return before its end; what
// it downloaded is reported all the same.
func (s *session) abandon() {
	s.added()
	if s.ran != nil && !s.over {
		s.stopRun()
		<-s.ran
		s.over = true
		s.stopShow()
	}
}

// close abandons the run if it is still going and closes the engine and
// the database.
func (s *session) close() {
	s.handoff.Close()
	s.abandon()
	s.stopRun()
	s.eng.Close()
	s.db.Close()
}

// finish lets the run end (or starts it), sums it up and returns the exit
// code: 0 when nothing failed and nothing is left queued, 1 when a job
// failed, something given was not queued or a job waits on a paused host,
// 3 when the database could not record, 130 on Ctrl-C.
func (s *session) finish() int {
	env, p := s.env, s.p
	s.start()
	s.added()
	err := <-s.ran
	s.over = true
	s.stopShow()
	interrupted := s.ctx.Err() != nil
	if errors.Is(err, engine.ErrNotRecorded) {
		fmt.Fprintf(env.Stderr, "heed: database %s: %v\nheed: downloads stopped; the jobs it could not record are queued again when Heed next starts\n",
			s.db.Path(), err)
		return ExitUnusable
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	counts, err := s.db.Counts(context.Background())
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	p.summary(counts, interrupted)
	switch {
	case interrupted:
		return ExitInterrupt
	case p.failed > 0 || counts.Queued > 0 || s.rejected:
		return ExitFailed
	}
	return ExitOK
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
