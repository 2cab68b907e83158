// Package cli is Heed's headless command line (SPEC §9): get, add, jobs,
// hosts, host, history, demo and version. It wires storage and the engine
// together the same way the window does, and imports no Fyne, so scripts
// and servers can run Heed without a display.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"heed/engine/fetch"
	"heed/storage"
)

// Exit codes (SPEC §9).
const (
	ExitOK        = 0   // every job done
	ExitFailed    = 1   // a job failed, or could not run
	ExitUsage     = 2   // bad usage
	ExitUnusable  = 3   // the database or download folder is unusable
	ExitInterrupt = 130 // stopped by SIGINT
)

// Env is what a command sees of the world: its streams and Heed's version.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Version        string
	// Interactive reports whether Stdout is a terminal (progress bars)
	// rather than a file or pipe (plain lines).
	Interactive bool
}

// Commands are the subcommands Main knows, for its usage text.
var Commands = []struct{ Name, Usage, Summary string }{
	{"get", "get [flags] [URL...|-i FILE|-]", "queue URLs, then download headless until nothing is runnable"},
	{"add", "add [flags] URL...|-i FILE|-", "queue URLs only"},
	{"jobs", "jobs [--json] [--state S]", "list jobs"},
	{"hosts", "hosts [--json]", "list hosts and their politeness state"},
	{"host", "host HOST [--pause|--resume] [--rate N] [--burst N] [--max-inflight N] …", "show or change one host"},
	{"history", "history [--json|--csv] [--host H] [--outcome O] [--limit N]", "list attempts, newest first"},
	{"demo", "demo [flags]", "serve demo hosts on loopback and download from them"},
	{"version", "version", "print the version"},
	{"help", "help", "print this summary"},
}

// Is reports whether name is one of the subcommands.
func Is(name string) bool {
	for _, c := range Commands {
		if c.Name == name {
			return true
		}
	}
	return false
}

// Main runs subcommand args[0] with the rest of args and returns the exit code.
func Main(ctx context.Context, env Env, args []string) int {
	if len(args) == 0 {
		usage(env.Stderr)
		return ExitUsage
	}
	name, rest := args[0], args[1:]
	var run func(context.Context, Env, []string) int
	switch name {
	case "get":
		run = cmdGet
	case "add":
		run = cmdAdd
	case "jobs":
		run = cmdJobs
	case "hosts":
		run = cmdHosts
	case "host":
		run = cmdHost
	case "history":
		run = cmdHistory
	case "demo":
		run = cmdDemo
	case "version":
		run = func(_ context.Context, env Env, _ []string) int {
			fmt.Fprintf(env.Stdout, "heed %s\n", env.Version)
			return ExitOK
		}
	case "help":
		run = func(_ context.Context, env Env, _ []string) int {
			usage(env.Stdout)
			return ExitOK
		}
	default:
		fmt.Fprintf(env.Stderr, "heed: unknown command %q\n", name)
		usage(env.Stderr)
		return ExitUsage
	}
	out := &errWriter{w: env.Stdout}
	env.Stdout = out
	code := run(ctx, env, rest)
	if out.err != nil { // a full disk, a closed pipe: the listing or report is not all there
		fmt.Fprintf(env.Stderr, "heed: writing the output: %v\n", out.err)
		if code != ExitInterrupt { // a listing cut short by its own output is not a database fault (3)
			return ExitFailed
		}
	}
	return code
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

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: heed [--db FILE] [--dir FOLDER]      open the window")
	for _, c := range Commands {
		fmt.Fprintf(w, "       heed %-60s %s\n", c.Usage, c.Summary)
	}
}

// common holds the flags every subcommand takes.
type common struct {
	db, dir string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.db, "db", "", "database `file` (default: heed.db in the user's data directory)")
	fs.StringVar(&c.dir, "dir", "", "download `folder` (default: the current folder)")
}

// newFlags makes a flag set that reports errors to env.Stderr.
func newFlags(env Env, name string) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet("heed "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {} // parse prints the flags for -h, and only a hint after a mistake
	c := &common{}
	c.register(fs)
	return fs, c
}

// parse parses args, allowing flags after positional arguments too
// (`heed get URL --rate 600`), as people type them.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(fs.Output(), "usage of %s:\n", fs.Name())
				fs.PrintDefaults()
			} else { // the flag package said what was wrong, on one line
				fmt.Fprintf(fs.Output(), "(%s -h lists the flags)\n", fs.Name())
			}
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// usageErr prints a usage error and returns ExitUsage.
func usageErr(env Env, format string, a ...any) int {
	fmt.Fprintf(env.Stderr, "heed: "+format+"\n", a...)
	return ExitUsage
}

// flagErr maps a flag parsing error to an exit code (help is not an error).
func flagErr(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	return ExitUsage
}

// DBPath returns the database path: p, or storage's default.
func DBPath(p string) (string, error) {
	if p != "" {
		return p, nil
	}
	return storage.DefaultPath()
}

// openDB opens the database, printing a clear message naming the file when
// it is unusable (S6, RELIABILITY F36).
func openDB(env Env, c *common) (*storage.DB, int) {
	path, err := DBPath(c.db)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return nil, ExitUnusable
	}
	db, err := storage.Open(path)
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
func openExisting(env Env, c *common) (*storage.DB, int) {
	path, err := DBPath(c.db)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return nil, ExitUnusable
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(env.Stderr, "heed: no database at %s (heed add or heed get creates it)\n", path)
		return nil, ExitUnusable
	}
	db, err := storage.Open(path)
	// A heed get or the window is running on it, or another program holds a
	// lock on it: list what is committed.
	if locked, busy := errors.Is(err, storage.ErrLocked), errors.Is(err, storage.ErrBusy); locked || busy {
		who := "another Heed is running on"
		if busy {
			who = "another program holds a lock on"
		}
		if db, err = storage.OpenReader(path); err == nil {
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
