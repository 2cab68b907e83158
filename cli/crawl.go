package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"heed/engine"
	"heed/engine/crawl"
	"heed/engine/fetch"
)

// crawlOpts are the flags of crawl: get's, and the crawl's rules.
type crawlOpts struct {
	queueOpts
	fs              *pflag.FlagSet
	scope           string
	depth, maxPages wholeValue
	include         []string
	exclude         []string
	noRobots        bool
	resume          wholeValue
}

// crawlRules are the flags that make a crawl's rules, which a resumed
// crawl keeps as it was started.
var crawlRules = []string{"scope", "depth", "max-pages", "include", "exclude", "no-robots"}

func newCrawlCmd(env Env, c *common) *cobra.Command {
	o := &crawlOpts{depth: crawl.DefaultDepth}
	cmd := &cobra.Command{
		Use:   "crawl [SEED]... [-i FILE | -] | --resume ID",
		Short: "Crawl from seed URLs, following links within a scope, until nothing is runnable",
		Long: `Crawl from the seed URLs you give: fetch each, read the links of every HTML
page (and the URLs of sitemaps), and fetch those within the crawl's scope, as
far as --depth links from a seed, each host at its own pace, as heed get does,
until nothing is runnable. Seeds come from the arguments, from a list (-i FILE:
one or more URLs a line, # starts a comment) or from standard input (-).

The scope is the seeds' hosts (--scope host, the default), their registrable
domains (--scope domain: www.example.com and example.com are one, a.github.io
and b.github.io are two) or what lies under each seed's folder (--scope prefix,
like wget --no-parent); --include and --exclude narrow it with regular
expressions on the whole URL. Links out of scope are counted, never fetched.

Before its first request to a host, a crawl fetches the host's robots.txt and
obeys it: a URL it disallows is kept as a skipped job, with the rule that
disallows it (heed jobs --state skipped), and its Crawl-delay slows the host.
--no-robots crawls without it. Each URL is one job, in this crawl or across
crawls and heed get: a seed Heed knows already is not fetched again.

Files are saved as FOLDER/HOST/PATH (example.com/docs/index.html). Ctrl-C
stops: partial files and every link found are kept, and heed crawl --resume ID
(or heed get) goes on where it stopped. heed crawls lists the crawls.

Exit status: 0 when every job is done or skipped, 1 when any failed or waits
on a paused host, 2 on bad usage, 3 when the database or the folder is
unusable, 130 on Ctrl-C.`,
		Example: `  heed crawl --dir site https://example.com/docs/
  heed crawl --scope prefix --depth 2 https://example.com/docs/guide/
  heed crawl --exclude '\.(zip|iso)$' --max-pages 500 https://example.com/
  heed crawl --rate 10 -i seeds.txt        # gentler than the defaults
  heed crawl --resume 3                    # go on with crawl 3 after Ctrl-C`,
		Annotations: map[string]string{politeGroup: "Politeness, for every host without settings of its own"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runCrawl(cmd.Context(), env, c, o, args))
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	o.fs = f
	f.StringVar(&o.scope, "scope", "host", "how far the crawl goes: host (the seeds' hosts), domain (their registrable domains) or prefix (under each seed's folder)")
	f.Var(&o.depth, "depth", "follow links at most N hops from a seed (0: the seeds only)")
	f.Var(&o.maxPages, "max-pages", "create at most N jobs (default: no limit)")
	f.StringArrayVar(&o.include, "include", nil, "follow only URLs that match the regular expression RE (repeatable: any of them)")
	f.StringArrayVar(&o.exclude, "exclude", nil, "never follow URLs that match the regular expression RE (repeatable)")
	f.BoolVar(&o.noRobots, "no-robots", false, "do not fetch or obey robots.txt in this crawl")
	f.Var(&o.resume, "resume", "go on with crawl ID (heed crawls lists them) until nothing is runnable")
	name(f, "scope", "SCOPE")
	name(f, "include", "RE")
	name(f, "exclude", "RE")
	name(f, "resume", "ID")
	f.Lookup("include").DefValue = "" // none: help shows no "(default [])"
	f.Lookup("exclude").DefValue = ""
	f.StringVarP(&o.input, "input", "i", "", "read seed URLs from FILE, one or more a line (- for standard input)")
	name(f, "input", "FILE")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print only problems and the summary")
	runFlags(f, &o.queueOpts, env)
	return cmd
}

func runCrawl(ctx context.Context, env Env, c *common, o *crawlOpts, args []string) int {
	defaults, code := o.runDefaults(env)
	if code != ExitOK {
		return code
	}
	if o.fs.Changed("resume") {
		return resumeCrawl(ctx, env, c, o, defaults, args)
	}
	// The rules are checked before anything is opened: a mistyped flag
	// leaves no database and no folder behind.
	mode, err := crawl.ParseMode(o.scope)
	if err != nil {
		return usageErr(env, "--scope: %v", err)
	}
	if o.depth < 0 {
		return usageErr(env, "--depth: %d is below 0 (0 fetches the seeds only)", o.depth)
	}
	if o.maxPages < 0 {
		return usageErr(env, "--max-pages: %d is below 0 (0 is no limit)", o.maxPages)
	}
	seeds, rejected, code := readSeeds(env, args, o.input)
	if code != ExitOK {
		return code
	}
	if len(seeds) == 0 {
		return usageErr(env, "crawl: no seed URLs given (pass URLs, -i FILE, or - for standard input)")
	}
	if _, err := crawl.NewScope(mode, seeds, o.include, o.exclude); err != nil {
		return usageErr(env, "%s", strings.TrimPrefix(err.Error(), "scope: "))
	}
	s, code := openSession(ctx, env, c, &o.queueOpts, defaults, true, nil)
	if code != ExitOK {
		return code
	}
	defer s.close()
	s.rejected = rejected
	list := make([]string, len(seeds))
	for i, u := range seeds {
		list[i] = u.String()
	}
	id, rep, err := s.eng.StartCrawl(ctx, engine.Crawl{Seeds: list, Scope: mode.String(), Depth: int(o.depth),
		MaxPages: int(o.maxPages), Include: o.include, Exclude: o.exclude, Robots: !o.noRobots})
	if err != nil {
		s.abandon()
		if ctx.Err() != nil {
			fmt.Fprintf(env.Stderr, "heed: interrupted before the crawl was stored\n")
			return ExitInterrupt
		}
		// Its rules were checked above: what is left is the database's.
		fmt.Fprintf(env.Stderr, "heed: storing the crawl: %v\n", err)
		return ExitUnusable
	}
	s.p.again = fmt.Sprintf("heed crawl --resume %d", id)
	// A seed with a job already (J2, W3) is not this crawl's: it is not
	// fetched again, nor are its links followed for this crawl.
	for i, u := range rep.Duplicates {
		why := "known already"
		if i < len(rep.DuplicateStates) && rep.DuplicateStates[i] != "" {
			st := rep.DuplicateStates[i]
			why = "already " + string(st)
			if st == engine.JobFailed || st == engine.JobCancelled {
				s.rejected = true
			}
		}
		s.p.say("heed: seed %s, not crawled again: %s\n", why, u)
	}
	s.p.say("crawl %d started: queued %d, known already %d; scope %s, depth %d\n",
		id, len(rep.Queued), len(rep.Duplicates), mode, o.depth)
	code = s.finish()
	s.sayCrawl(id)
	return code
}

// readSeeds reads the seed URLs given as arguments, in -i FILE or on
// standard input, saying each line it rejects (rejected then is true).
func readSeeds(env Env, args []string, input string) (seeds []*url.URL, rejected bool, code int) {
	in, _, err := urlInput(env, args, input)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return nil, false, ExitUsage
	}
	defer in.Close()
	l := fetch.NewListReader(in)
	for {
		urls, rejects, err := l.Next(1 << 16)
		for _, u := range urls {
			seeds = append(seeds, u.URL)
		}
		for _, r := range rejects {
			rejected = true
			fmt.Fprintf(env.Stderr, "heed: rejected %q (line %d): %s\n", fetch.Redact(r.Text), r.Line, r.Reason)
		}
		switch {
		case errors.Is(err, io.EOF):
			return seeds, rejected, ExitOK
		case errors.Is(err, fetch.ErrNotAList):
			fmt.Fprintf(env.Stderr, "heed: reading the seeds: %v\n", err)
			return nil, rejected, ExitUsage
		case err != nil:
			fmt.Fprintf(env.Stderr, "heed: reading the seeds: %v\n", err)
			return nil, rejected, ExitUnusable
		}
	}
}

// resumeCrawl goes on with crawl o.resume: resumed if it was paused, then
// run, with everything else queued, until nothing is runnable.
func resumeCrawl(ctx context.Context, env Env, c *common, o *crawlOpts, defaults engine.Tunables, args []string) int {
	id := int64(o.resume)
	if len(args) > 0 || o.input != "" {
		return usageErr(env, "crawl --resume: crawl %d has its seeds; give no others", id)
	}
	for _, r := range crawlRules {
		if o.fs.Changed(r) {
			return usageErr(env, "crawl --resume: crawl %d keeps the rules it was started with; --%s cannot change them", id, r)
		}
	}
	if path, err := DBPath(c.db); err == nil {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return usageErr(env, "crawl --resume: no crawl %d: there is no database at %s", id, path)
		}
	}
	var state engine.CrawlState
	check := func(db Database) int {
		cr, ok, err := crawlByID(ctx, db, id)
		switch {
		case err != nil:
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return ExitUnusable
		case !ok:
			return usageErr(env, "crawl --resume: no crawl %d (heed crawls lists them)", id)
		case cr.State == engine.CrawlCancelled:
			return usageErr(env, "crawl --resume: crawl %d was cancelled: nothing of it is left to fetch", id)
		}
		state = cr.State
		return ExitOK
	}
	s, code := openSession(ctx, env, c, &o.queueOpts, defaults, true, check)
	if code != ExitOK {
		return code
	}
	defer s.close()
	s.p.again = fmt.Sprintf("heed crawl --resume %d", id)
	if state == engine.CrawlPaused {
		if _, err := s.eng.ResumeCrawl(ctx, id); err != nil {
			fmt.Fprintf(env.Stderr, "heed: resuming crawl %d: %v\n", id, err)
			return ExitUnusable
		}
	}
	if cr, ok, err := crawlByID(ctx, s.db, id); err == nil && ok {
		n := cr.Counts
		s.p.say("crawl %d: going on with %d queued, %d done, %d skipped, %d failed\n",
			id, n.Queued+n.Active, n.Done, n.Skipped, n.Failed)
	}
	code = s.finish()
	s.sayCrawl(id)
	return code
}

// crawlByID returns the crawl id as r stores it.
func crawlByID(ctx context.Context, r engine.Reader, id int64) (engine.Crawl, bool, error) {
	cs, err := r.Crawls(ctx)
	if err != nil {
		return engine.Crawl{}, false, err
	}
	for _, cr := range cs {
		if cr.ID == id {
			return cr, true, nil
		}
	}
	return engine.Crawl{}, false, nil
}

// sayCrawl sums crawl id up as a whole, under the run's summary: its jobs
// of every run, and the links it found out of scope.
func (s *session) sayCrawl(id int64) {
	cr, ok, err := crawlByID(context.Background(), s.db, id)
	if err != nil || !ok {
		return
	}
	l := engine.CrawlLineOf(cr)
	fmt.Fprintf(s.env.Stderr, "crawl %d: %d done (%s), %d skipped, %d failed, %d queued, %d links out of scope\n",
		l.ID, l.Done, humanBytes(l.Bytes), l.Skipped, l.Failed, l.Queued+l.Active+l.Paused, l.OutOfScope)
}
