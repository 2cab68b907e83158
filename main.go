// Heed is a desktop crawl and download monitor: it downloads the URLs a person
// gives it politely, one governor per host, and shows each host's politeness
// state live.
//
//	heed                 open the window
//	heed get URL...      download headless (see heed help)
//	heed version         print the version
//
// main only wires the parts together: storage, then the engine, then the
// window or a headless subcommand.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"fyne.io/fyne/v2/app"
	"golang.org/x/term"

	"heed/cli"
	_ "heed/clocale" // before the toolkit reads the locale
	"heed/engine"
	"heed/storage"
	"heed/ui"
)

// version is Heed's version; FyneApp.toml carries the same number.
const version = "0.1.0"

// appID is Heed's reverse-DNS application id (FyneApp.toml's ID).
const appID = "app.heed.Heed"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	demo := len(args) > 0 && args[0] == "demo" && !slices.Contains(args, "--headless") && haveDisplay() == nil
	if len(args) > 0 && cli.Is(args[0]) && !demo {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		go func() { // a second Ctrl-C stops at once, as people expect
			<-ctx.Done()
			stop()
		}()
		return headless(func() int {
			return cli.Main(ctx, cli.Env{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Version: version,
				Interactive: isTerminal(stdout)}, args)
		})
	}
	if demo {
		args = args[1:]
	}
	fs := flag.NewFlagSet("heed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", "", "database `file` (default: heed.db in the user's data directory)")
	dir := fs.String("dir", "", "download `folder` (default: Heed in the user's Downloads folder)")
	files := 60
	if demo {
		fs.IntVar(&files, "files", files, "files per demo host")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cli.ExitOK
		}
		return cli.ExitUsage
	}
	if fs.NArg() > 0 {
		if cli.Is(fs.Arg(0)) { // heed --db x jobs
			fmt.Fprintf(stderr, "heed: flags go after the command: heed %s %s\n", fs.Arg(0), strings.Join(args[:len(args)-fs.NArg()], " "))
			return cli.ExitUsage
		}
		fmt.Fprintf(stderr, "heed: unknown command %q (try: heed help)\n", fs.Arg(0))
		return cli.ExitUsage
	}
	if err := haveDisplay(); err != nil {
		fmt.Fprintf(stderr, "heed: %v\n", err)
		return cli.ExitFailed
	}
	var urls []string
	if demo {
		d, err := cli.StartDemo(stderr, files, *dbPath, *dir)
		if err != nil {
			fmt.Fprintf(stderr, "heed: %v\n", err)
			return cli.ExitFailed
		}
		defer d.Close()
		*dbPath, *dir, urls = d.DB, d.Dir, d.URLs
	}
	return runWindow(*dbPath, *dir, urls, stderr)
}

// headless runs f on a goroutine of its own and returns what it returns.
// The toolkit wires the main goroutine to the main thread as the program
// starts (twice over), which only a window needs; a command run there had
// every wait of its run loop hand the processor over to that one thread and
// back: a quarter of the thread switches of heed get on 20,000 small
// downloads.
func headless(f func() int) int {
	code := make(chan int, 1)
	go func() { code <- f() }()
	return <-code
}

// isTerminal reports whether w is a terminal, for progress bars.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runWindow opens the database, starts the engine and shows the window
// until it closes; then the engine stops, keeping partial files, and every
// state is persisted. urls, if any, are queued first (heed demo).
func runWindow(dbPath, dir string, urls []string, stderr io.Writer) int {
	a := app.NewWithID(appID)
	a.SetIcon(ui.Icon)
	if dir == "" {
		dir = a.Preferences().String(ui.PrefFolder) // chosen in the window (U7)
	}
	dbPath, err := cli.DBPath(dbPath)
	if err == nil && dir == "" {
		dir, err = defaultDownloadDir()
	}
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		err = cli.CheckFolder(dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "heed: %v\n", err)
		return cli.ExitUnusable
	}
	db, err := storage.Open(dbPath)
	if err != nil {
		fmt.Fprintf(stderr, "heed: %v\n", err)
		return cli.ExitUnusable
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	feed := ui.NewFeed() // the window's per-host charts see every request through it
	eng, err := engine.New(ctx, db, engine.Options{Dir: dir, Version: version,
		SavedLimits: true, OnJob: feed.Job, OnEvent: feed.Event})
	if err != nil {
		fmt.Fprintf(stderr, "heed: %v\n", err)
		return cli.ExitUnusable
	}
	defer eng.Close()
	if len(urls) > 0 {
		if _, err := eng.Add(ctx, strings.Join(urls, "\n")); err != nil {
			fmt.Fprintf(stderr, "heed: %v\n", err)
			return cli.ExitUnusable
		}
	}
	w := ui.New(a, eng, ui.Options{Version: version, DBPath: db.Path(), Dir: dir, Feed: feed})
	stopped := make(chan error, 1)
	go func() {
		err := eng.Run(ctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			w.EngineStopped(err) // the window stays open, saying why
		}
		stopped <- err
	}()
	w.ShowAndRun()
	cancel()
	if err := <-stopped; err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "heed: %v\n", err)
		return cli.ExitFailed
	}
	return cli.ExitOK
}

// haveDisplay reports whether a window can be opened at all. On Linux and the
// BSDs that needs an X11 or Wayland display; elsewhere there always is one.
func haveDisplay() error {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no display: neither DISPLAY nor WAYLAND_DISPLAY is set; " +
				"run Heed in a desktop session, or use the headless commands (heed get, heed version)")
		}
	}
	return nil
}

// defaultDownloadDir is where the window saves files unless told otherwise:
// Heed in the user's Downloads folder.
func defaultDownloadDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no download folder: %w (pass --dir)", err)
	}
	return filepath.Join(home, "Downloads", "Heed"), nil
}
