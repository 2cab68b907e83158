package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"heed/engine"
	"heed/engine/crawl"
	"heed/engine/demo"
)

// Demo is a running set of demo hosts and the demo site, with the database
// and folder to use.
type Demo struct {
	*demo.Server
	Site    *demo.SiteServer
	DB, Dir string
	URLs    []string
}

// Close stops the demo hosts and the site.
func (d *Demo) Close() error {
	return errors.Join(d.Server.Close(), d.Site.Close())
}

// StartDemo starts Heed's demo hosts on loopback — one healthy, one that
// throttles with Retry-After, one with flaky 503s, one slow, one that drops
// connections mid-body, one with a quota — with files per host, and the demo
// site to crawl. Where db or dir is empty it picks a fresh temporary folder.
// It describes the hosts on w.
func StartDemo(w io.Writer, files int, db, dir string) (*Demo, error) {
	if files < 1 || files > 100000 {
		return nil, fmt.Errorf("--files: %d is out of range 1…100000", files)
	}
	if db == "" || dir == "" {
		tmp, err := os.MkdirTemp("", "heed-demo-")
		if err != nil {
			return nil, err
		}
		if db == "" {
			db = filepath.Join(tmp, "heed.db")
		}
		if dir == "" {
			dir = filepath.Join(tmp, "downloads")
		}
	}
	cfg := demo.DefaultConfig()
	cfg.Files = files
	srv, err := demo.Start(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting the demo hosts: %w", err)
	}
	site, err := demo.StartSite("")
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("starting the demo site: %w", err)
	}
	for _, h := range srv.Hosts() {
		fmt.Fprintf(w, "demo host %-10s %s\n", h.Behavior, h.BaseURL)
	}
	fmt.Fprintf(w, "demo site %-10s %s (crawled; its robots.txt keeps out /private/ and asks for a Crawl-delay of 2 s)\n",
		demo.SiteName, site.URL)
	fmt.Fprintf(w, "database %s, downloads in %s\n", db, dir)
	return &Demo{Server: srv, Site: site, DB: db, Dir: dir, URLs: srv.URLs()}, nil
}

// crawlSite stores a crawl of the demo site in the database, with Heed's
// defaults (host scope, depth 5, robots.txt obeyed), for the run that opens
// the database next to carry out, as it does any stored crawl. It says why
// on env.Stderr when it cannot.
func (d *Demo) crawlSite(ctx context.Context, env Env) int {
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	db, code := openDB(env, &common{db: d.DB, dir: d.Dir})
	if code != ExitOK {
		return code
	}
	defer db.Close()
	eng, err := engine.New(ctx, db, engine.Options{Dir: d.Dir, Version: env.Version})
	if err == nil {
		defer eng.Close()
		_, _, err = eng.StartCrawl(ctx, engine.Crawl{Seeds: []string{d.Site.URL}, Scope: "host",
			Depth: crawl.DefaultDepth, Robots: true})
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: crawling the demo site: %v\n", err)
		return ExitUnusable
	}
	return ExitOK
}

func newDemoCmd(env Env, c *common) *cobra.Command {
	var files int
	var headless bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch Heed be polite to misbehaving demo hosts and crawl a demo site, on loopback",
		Long: `Start six demo hosts on loopback — one healthy, one that throttles with
Retry-After, one with flaky 503s, one slow, one that drops connections, one
with a quota — and download their files; and start a small demo web site and
crawl it (its robots.txt keeps crawlers out of /private/ and asks for a
Crawl-delay of 2 s; a calendar and an archive are crawler traps), so that you
can watch Heed be polite without touching the internet. It opens the window
when there is a display; with --headless (or without a display) it downloads
in the terminal, as heed get does.

Unless --db and --dir say otherwise, the database and the downloads go into a
new temporary folder.`,
		Example: `  heed demo
  heed demo --headless --files 10`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(runDemo(cmd.Context(), env, c, files, headless))
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.IntVar(&files, "files", 60, "files per demo host")
	f.BoolVar(&headless, "headless", false, "download in the terminal even when a window could open")
	name(f, "files", "N")
	return cmd
}

// runDemo serves the demo hosts and the site, downloads every file the
// hosts serve and crawls the site: in the window when one can open, else in
// the terminal.
func runDemo(ctx context.Context, env Env, c *common, files int, headless bool) int {
	window := !headless && env.Window != nil && (env.Display == nil || env.Display() == nil)
	d, err := StartDemo(env.Stderr, files, c.db, c.dir)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitFailed
	}
	defer d.Close()
	if code := d.crawlSite(ctx, env); code != ExitOK {
		return code
	}
	if window {
		labels := map[string]string{d.Site.Addr: demo.SiteName}
		for _, h := range d.Server.Hosts() {
			labels[h.Addr] = h.Name
		}
		return env.Window(ctx, WindowOptions{DB: d.DB, Dir: d.Dir, URLs: d.URLs, Labels: labels})
	}
	env.Stdin = strings.NewReader(strings.Join(d.URLs, "\n"))
	o := &queueOpts{input: "-", workers: 16, tunables: registerTunables(pflag.NewFlagSet("demo", pflag.ContinueOnError), true)}
	return queueAndRun(ctx, env, &common{db: d.DB, dir: d.Dir}, o, nil, true)
}
