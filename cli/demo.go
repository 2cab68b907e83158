package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"heed/engine/demo"
)

// Demo is a running set of demo hosts with the database and folder to use.
type Demo struct {
	*demo.Server
	DB, Dir string
	URLs    []string
}

// StartDemo starts Heed's demo hosts on loopback — one healthy, one that
// throttles with Retry-After, one with flaky 503s, one slow, one that drops
// connections mid-body — with files per host. Where db or dir is empty it
// picks a fresh temporary folder. It describes the hosts on w.
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
	for _, h := range srv.Hosts() {
		fmt.Fprintf(w, "demo host %-10s %s\n", h.Behavior, h.BaseURL)
	}
	fmt.Fprintf(w, "database %s, downloads in %s\n", db, dir)
	return &Demo{Server: srv, DB: db, Dir: dir, URLs: srv.URLs()}, nil
}

func newDemoCmd(env Env, c *common) *cobra.Command {
	var files int
	var headless bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch Heed be polite to five misbehaving demo hosts on loopback",
		Long: `Start five demo hosts on loopback — one healthy, one that throttles with
Retry-After, one with flaky 503s, one slow, one that drops connections — and
download their files, so that you can watch Heed be polite without touching
the internet. It opens the window when there is a display; with --headless
(or without a display) it downloads in the terminal, as heed get does.

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

// runDemo serves the demo hosts and downloads every file they serve: in
// the window when one can open, else in the terminal.
func runDemo(ctx context.Context, env Env, c *common, files int, headless bool) int {
	window := !headless && env.Window != nil && (env.Display == nil || env.Display() == nil)
	d, err := StartDemo(env.Stderr, files, c.db, c.dir)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitFailed
	}
	defer d.Close()
	if window {
		labels := map[string]string{}
		for _, h := range d.Server.Hosts() {
			labels[h.Addr] = h.Name
		}
		return env.Window(ctx, WindowOptions{DB: d.DB, Dir: d.Dir, URLs: d.URLs, Labels: labels})
	}
	env.Stdin = strings.NewReader(strings.Join(d.URLs, "\n"))
	o := &queueOpts{input: "-", workers: 16, tunables: registerTunables(pflag.NewFlagSet("demo", pflag.ContinueOnError), true)}
	return queueAndRun(ctx, env, &common{db: d.DB, dir: d.Dir}, o, nil, true)
}
