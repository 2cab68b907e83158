// Package cli is Heed's command line (SPEC §9), built on cobra: get, add,
// jobs, hosts, host, history, demo, version, help and completion, one file
// each. It wires storage and the engine together the same way the window
// does, and imports no Fyne, so scripts and servers can run Heed without a
// display; `heed` alone and `heed demo` open the window through Env.Window,
// which main.go provides.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"heed/engine"
	"heed/engine/fetch"
	"heed/storage"
	"heed/storage/postgres"
)

// Exit codes (SPEC §9).
const (
	ExitOK        = 0   // every job done
	ExitFailed    = 1   // a job failed, or could not run
	ExitUsage     = 2   // bad usage
	ExitUnusable  = 3   // the database or download folder is unusable
	ExitInterrupt = 130 // stopped by SIGINT
)

// Env is what a command sees of the world: its streams, Heed's version,
// the terminal and the window, which main.go provides.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Version        string
	// Interactive reports whether Stdout is a terminal (progress bars)
	// rather than a file or pipe (plain lines); ErrTerminal whether Stderr
	// is one too, so that what get says on it while the bars are drawn goes
	// above them instead of through them.
	Interactive, ErrTerminal bool
	// TermSize is the size of Stdout's terminal, asked at each redraw so
	// that the bars follow a resize; nil is 80 × 24.
	TermSize func() (width, height int, err error)
	// Window opens the window and returns the exit code once it is closed;
	// nil where there is none (tests). Display says why no window can open
	// (no display), nil when one can.
	Window  func(ctx context.Context, w WindowOptions) int
	Display func() error
}

// WindowOptions is what the window opens with: the database and the
// download folder ("" for their defaults), and URLs to queue first.
type WindowOptions struct {
	DB, Dir string
	URLs    []string
	// Cookies is a cookies.txt to send cookies from ("" for none); with
	// Netrc, the logins of ~/.netrc are sent (see RequestConfig).
	Cookies string
	Netrc   bool
	// Labels name hosts in the window beside their address (the demo's
	// "throttling" for 127.0.0.3:41234), by host key.
	Labels map[string]string
}

// Main runs the command line args (without the program's name) and
// returns the exit code.
func Main(ctx context.Context, env Env, args []string) int {
	out := &errWriter{w: env.Stdout}
	env.Stdout = out
	root := newRoot(env)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	code := exitCode(env, cmd, err)
	if out.err != nil { // a full disk, a closed pipe: the listing or report is not all there
		fmt.Fprintf(env.Stderr, "heed: writing the output: %v\n", out.err)
		if code != ExitInterrupt { // a listing cut short by its own output is not a database fault (3)
			return ExitFailed
		}
	}
	return code
}

// exitError ends a command with its exit code; what went wrong has been
// said already.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exit is code as a command's result: nil for ExitOK.
func exit(code int) error {
	if code == ExitOK {
		return nil
	}
	return exitError(code)
}

// exitCode is the exit code of what Execute returned: a command's own, or
// 2 for every mistake on the command line (cobra's, the flags', ours),
// which is said here.
func exitCode(env Env, cmd *cobra.Command, err error) int {
	if err == nil {
		return ExitOK
	}
	var code exitError
	if errors.As(err, &code) {
		return int(code)
	}
	fmt.Fprintf(env.Stderr, "heed: %v\n", err)
	if cmd != nil {
		fmt.Fprintf(env.Stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return ExitUsage
}

// errWriter passes writes to w and keeps the first error, which then fails
// the command: output that did not get out is not a success.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// common holds the flags every command takes.
type common struct {
	db, dir string
	worker  string        // heed worker --name: the fleet member's name
	lease   time.Duration // heed worker --lease
}

// usageErr prints a usage error and returns ExitUsage.
func usageErr(env Env, format string, a ...any) int {
	fmt.Fprintf(env.Stderr, "heed: "+format+"\n", a...)
	return ExitUsage
}

// DBPath returns the database: p, else $HEED_DB, else storage's default
// file. A postgres:// URL names a PostgreSQL database (M1).
func DBPath(p string) (string, error) {
	if p != "" {
		return p, nil
	}
	if v := os.Getenv("HEED_DB"); v != "" {
		return v, nil
	}
	return storage.DefaultPath()
}

// Database is what the commands use of a database, SQLite's or
// PostgreSQL's.
type Database interface {
	engine.Store
	Counts(ctx context.Context) (engine.Counts, error)
	Path() string
	Close() error
}

// OpenDatabase opens the database at path: a postgres:// URL as a member
// of the fleet under worker ("" for the machine's name and the process id;
// SPEC §12), else an SQLite file.
func OpenDatabase(ctx context.Context, path, worker string, lease ...time.Duration) (Database, error) {
	if postgres.IsURL(path) {
		opts := []postgres.Option{postgres.WithWorker(worker)}
		if len(lease) > 0 && lease[0] > 0 {
			opts = append(opts, postgres.WithLease(lease[0]))
		}
		return postgres.Open(ctx, path, opts...)
	}
	return storage.Open(path)
}

// openDB opens the database, printing a clear message naming the file when
// it is unusable (S6, RELIABILITY F36).
func openDB(env Env, c *common) (Database, int) {
	path, err := DBPath(c.db)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return nil, ExitUnusable
	}
	db, err := OpenDatabase(context.Background(), path, c.worker, c.lease)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return nil, ExitUnusable
	}
	return db, ExitOK
}

// openExisting is openDB for the commands that only read (jobs, hosts,
// history): a database that is not there is reported, not created, so that
// a mistyped --db does not show an empty list as if nothing were queued;
// and one that another Heed is running on is opened for reading only.
func openExisting(env Env, c *common) (Database, int) {
	path, err := DBPath(c.db)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return nil, ExitUnusable
	}
	if postgres.IsURL(path) {
		db, err := postgres.Open(context.Background(), path)
		if err != nil {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return nil, ExitUnusable
		}
		return db, ExitOK
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(env.Stderr, "heed: no database at %s (heed add or heed get creates it)\n", path)
		return nil, ExitUnusable
	}
	var db Database
	sdb, err := storage.Open(path)
	if err == nil {
		db = sdb
	}
	// A heed get or the window is running on it, or another program holds a
	// lock on it: list what is committed.
	locked, busy, readOnly := errors.Is(err, storage.ErrLocked), errors.Is(err, storage.ErrBusy), errors.Is(err, storage.ErrUnreadable)
	if locked || busy || readOnly {
		who := "another Heed is running on"
		switch {
		case busy:
			who = "another program holds a lock on"
		case readOnly:
			who = "Heed cannot write" // read-only media: listed as they are
		}
		if rdb, rerr := storage.OpenReader(path); rerr == nil {
			db, err = rdb, nil
			fmt.Fprintf(env.Stderr, "heed: %s %s: listing it as of now\n", who, path)
		}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return nil, ExitUnusable
	}
	return db, ExitOK
}

// downloadDir returns the download folder (the current folder by default,
// as curl and wget do), created if missing.
func downloadDir(env Env, c *common) (string, int) {
	dir := c.dir
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		err = os.MkdirAll(abs, 0o755)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: download folder %s: %v\n", dir, err)
		return "", ExitUnusable
	}
	return abs, ExitOK
}

// folderUsable says, before the database is opened, when --dir names
// something that can never be a folder (a file), so that a mistyped folder
// does not leave a database behind; the folder is created later, once the
// database is Heed's to use.
func folderUsable(env Env, c *common) int {
	if c.dir == "" {
		return ExitOK
	}
	if st, err := os.Stat(c.dir); err == nil && !st.IsDir() {
		fmt.Fprintf(env.Stderr, "heed: download folder %s: it is a file, not a folder\n", c.dir)
		return ExitUnusable
	}
	return ExitOK
}

// CheckFolder tells whether Heed can create files in the download folder
// dir, by creating and removing an empty one: a read-only or foreign folder
// is reported before any download starts and fails for it (exit 3).
func CheckFolder(dir string) error {
	f, err := os.CreateTemp(dir, ".heed-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("download folder %s: cannot create files there: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// excerpt is the start of s, to name it in a message.
func excerpt(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// urlInput is the URL list of get and add, read as it comes: the arguments
// (each one URL), then -i FILE or standard input ("-"). given says whether
// any was given. The caller closes it.
func urlInput(env Env, args []string, input string) (io.ReadCloser, bool, error) {
	var b strings.Builder
	var readers []io.Reader
	stdin := false
	for _, a := range args {
		if a == "-" {
			stdin = true
			continue
		}
		// An argument is one URL, as for curl and wget: the shell has already
		// split the command line, so a space inside is part of the URL.
		if strings.ContainsAny(a, "\r\n") {
			return nil, false, fmt.Errorf("the argument %q holds a line break: give one URL per argument, or a list with -i FILE", excerpt(a))
		}
		if strings.HasPrefix(strings.TrimSpace(a), "#") { // in a list a comment; here a mistake
			return nil, false, fmt.Errorf("the argument %q is not a URL", excerpt(a))
		}
		b.WriteString(fetch.OneURL(a))
		b.WriteByte('\n')
	}
	readers = append(readers, strings.NewReader(b.String()))
	var file *os.File
	switch {
	case input == "-":
		stdin = true
	case input != "":
		f, err := os.Open(input)
		if err != nil {
			return nil, false, fmt.Errorf("reading %s: %w", input, err)
		}
		file = f
		readers = append(readers, f)
	}
	if stdin {
		readers = append(readers, env.Stdin)
	}
	return readCloser{io.MultiReader(readers...), file}, len(args) > 0 || input != "", nil
}

// readCloser reads a list and closes the file it came from, if any.
type readCloser struct {
	io.Reader
	f *os.File
}

func (r readCloser) Close() error {
	if r.f != nil {
		return r.f.Close()
	}
	return nil
}
