// Heed is a desktop crawl and download monitor: it downloads the URLs a person
// gives it politely, one governor per host, and shows each host's politeness
// state live.
//
//	heed                 open the window
//	heed version         print the version
//
// main only wires the parts together: storage, then the engine, then the
// window or a headless subcommand.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"fyne.io/fyne/v2/app"

	"heed/ui"
)

// version is Heed's version; FyneApp.toml carries the same number.
const version = "0.1.0"

// appID is Heed's reverse-DNS application id (FyneApp.toml's ID).
const appID = "app.heed.Heed"

// Exit codes shared by every subcommand (SPEC §9).
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitUnusable = 3
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "version" {
		fmt.Fprintf(stdout, "heed %s\n", version)
		return exitOK
	}
	fs := flag.NewFlagSet("heed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbPath := fs.String("db", "", "database `file` (default: heed.db in the user's data directory)")
	dir := fs.String("dir", "", "download `folder` (default: Heed in the user's Downloads folder)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "heed: unknown command %q (try: heed version)\n", fs.Arg(0))
		return exitUsage
	}
	return runWindow(*dbPath, *dir, stderr)
}

// runWindow opens the window. Without a display it says so and fails rather
// than letting the GL driver crash.
func runWindow(dbPath, dir string, stderr io.Writer) int {
	if err := haveDisplay(); err != nil {
		fmt.Fprintf(stderr, "heed: %v\n", err)
		return exitFailed
	}
	paths, err := resolvePaths(dbPath, dir)
	if err != nil {
		fmt.Fprintf(stderr, "heed: %v\n", err)
		return exitUnusable
	}
	a := app.NewWithID(appID)
	a.SetIcon(ui.Icon)
	w := ui.New(a, ui.Options{Version: version, DBPath: paths.db, Dir: paths.dir})
	w.ShowAndRun()
	return exitOK
}

// haveDisplay reports whether a window can be opened at all. On Linux and the
// BSDs that needs an X11 or Wayland display; elsewhere there always is one.
func haveDisplay() error {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no display: neither DISPLAY nor WAYLAND_DISPLAY is set; " +
				"run Heed in a desktop session, or use the headless commands (heed version)")
		}
	}
	return nil
}

type paths struct{ db, dir string }

// resolvePaths fills in the default database file and download folder and
// creates the folders that hold them.
func resolvePaths(dbPath, dir string) (paths, error) {
	if dbPath == "" {
		data, err := userDataDir()
		if err != nil {
			return paths{}, err
		}
		dbPath = filepath.Join(data, "heed.db")
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return paths{}, fmt.Errorf("no download folder: %w (pass --dir)", err)
		}
		dir = filepath.Join(home, "Downloads", "Heed")
	}
	for _, d := range []string{filepath.Dir(dbPath), dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return paths{}, fmt.Errorf("cannot create folder %s: %w", d, err)
		}
	}
	return paths{db: dbPath, dir: dir}, nil
}

// userDataDir is where Heed keeps its database: $XDG_DATA_HOME/heed, else
// ~/.local/share/heed on Unix, the OS's own place elsewhere.
func userDataDir() (string, error) {
	switch runtime.GOOS {
	case "windows", "darwin", "ios":
		base, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(base, "Heed"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "heed"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no data directory: %w (pass --db)", err)
	}
	return filepath.Join(home, ".local", "share", "heed"), nil
}
