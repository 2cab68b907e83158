package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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

// cmdDemo is the headless demo: it downloads every file the demo hosts
// serve, so anyone can watch Heed be polite without touching the internet.
// (With a display, heed demo opens the window instead.)
func cmdDemo(ctx context.Context, env Env, args []string) int {
	fs, c := newFlags(env, "demo")
	files := fs.Int("files", 60, "files per demo host")
	fs.Bool("headless", false, "stay in the terminal even when a display is available")
	if _, err := parse(fs, args); err != nil {
		return flagErr(err)
	}
	d, err := StartDemo(env.Stderr, *files, c.db, c.dir)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitFailed
	}
	defer d.Close()
	env.Stdin = strings.NewReader(strings.Join(d.URLs, "\n"))
	return cmdGet(ctx, env, []string{"--db", d.DB, "--dir", d.Dir, "-"})
}
