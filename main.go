// Heed is a desktop crawl and download monitor: it downloads the URLs a person
// gives it politely, one governor per host, and shows each host's politeness
// state live.
//
//	heed                 open the window
//	heed get URL...      download headless (see heed help)
//	heed version         print the version
//
// main only wires the parts together: the command line (package cli) reads
// the arguments and runs a command, or asks for the window, which main
// opens on the main thread: storage, then the engine, then the window.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"golang.org/x/term"

	"heed/cli"
	_ "heed/clocale" // before the toolkit reads the locale
	"heed/engine"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { // a second Ctrl-C stops at once, as people expect
		<-ctx.Done()
		stop()
	}()
	return offMain(func(onMain func(func() int) int) int {
		return cli.Main(ctx, cli.Env{
			Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Version: version,
			Interactive: isTerminal(stdout), ErrTerminal: isTerminal(stderr), TermSize: termSize(stdout),
			Display: haveDisplay,
			Window: func(ctx context.Context, w cli.WindowOptions) int {
				if err := haveDisplay(); err != nil {
					fmt.Fprintf(stderr, "heed: %v\n", err)
					return cli.ExitFailed
				}
				return onMain(func() int { return runWindow(ctx, w, stderr) })
			},
		}, args)
	})
}

// offMain runs f on a goroutine of its own and returns what it returns;
// what f hands to onMain runs on the caller's goroutine, the main one.
// The toolkit wires the main goroutine to the main thread as the program
// starts (twice over), which only the window needs; a command run there had
// every wait of its run loop hand the processor over to that one thread and
// back: a quarter of the thread switches of heed get on 20,000 small
// downloads.
func offMain(f func(onMain func(func() int) int) int) int {
	code := make(chan int, 1)
	work, done := make(chan func() int), make(chan int)
	go func() {
		code <- f(func(w func() int) int {
			work <- w
			return <-done
		})
	}()
	for {
		select {
		case c := <-code:
			return c
		case w := <-work:
			done <- w()
		}
	}
}

// isTerminal reports whether w is a terminal, for progress bars.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termSize asks the size of w's terminal, or is nil when w is not a file.
func termSize(w io.Writer) func() (int, int, error) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	return func() (int, int, error) { return term.GetSize(int(f.Fd())) }
}

// runWindow opens the database, starts the engine and shows the window
// until it closes, or until ctx ends (Ctrl-C); then the engine stops,
// keeping partial files, and every state is persisted. URLs, if any, are
// queued first (heed demo).
func runWindow(parent context.Context, o cli.WindowOptions, stderr io.Writer) int {
	dbPath, dir, urls := o.DB, o.Dir, o.URLs
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
	fc, err := cli.RequestConfig(o.Cookies, o.Netrc, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "heed: %v\n", err)
		return cli.ExitUsage
	}
	db, err := cli.OpenDatabase(parent, dbPath, "") // the window on a PostgreSQL queue is one of its workers
	if err != nil {
		fmt.Fprintf(stderr, "heed: %v\n", err)
		return cli.ExitUnusable
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	go func() {
		<-ctx.Done()
		if parent.Err() != nil { // Ctrl-C: close the window as its close button does
			fyne.Do(a.Quit)
		}
	}()
	feed := ui.NewFeed() // the window's per-host charts see every request through it
	eng, err := engine.New(ctx, db, engine.Options{Dir: dir, Version: version,
		SavedLimits: true, OnJob: feed.Job, OnEvent: feed.Event, Fetch: fc})
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
	w := ui.New(a, eng, ui.Options{Version: version, DBPath: db.Path(), Dir: dir, Feed: feed,
		HostLabels: o.Labels})
	// One Heed on the database: heed add and a second window hand their
	// URLs to this one, and the second asks this window forward.
	handoff, err := cli.ServeHandoff(dbPath, eng, func() {
		fyne.Do(func() { w.Window().Show(); w.Window().RequestFocus() })
	})
	if err != nil {
		fmt.Fprintf(stderr, "heed: %v; heed add is refused while this window is open\n", err)
	}
	defer handoff.Close() // before the engine closes
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
