package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"heed/storage"
)

// newRoot is the heed command with every command under it, writing to env.
// Without a command, it opens the window.
func newRoot(env Env) *cobra.Command {
	c := &common{}
	var request requestFlags // the window's
	root := &cobra.Command{
		Use:   "heed",
		Short: "Download lists of URLs politely, each host at its own pace",
		Long: `Heed downloads lists of URLs without getting you blocked: it fetches them
politely, each host at its own pace, backs off when a host says it is busy,
and shows what every host is doing and why anything waits.

Without a command, heed opens its window.`,
		Example: `  heed                                  # open the window
  heed https://example.com/a.iso        # open the window with a URL queued
  heed get --dir out https://example.com/a.iso https://example.org/b.pdf
  heed get --dir out -i urls.txt        # a list: one or more URLs a line
  heed crawl --dir site https://example.com/docs/
  heed hosts                            # how each host stands
  heed help get                         # get's flags and their defaults`,
		Version:       env.Version,
		Args:          rootArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, urls []string) error {
			if env.Window == nil {
				return cmd.Help()
			}
			// One Heed on a database: a second window hands its URLs to the
			// first and brings that one forward.
			if code, ok := handOffWindow(env, c, urls); ok {
				return exit(code)
			}
			return exit(env.Window(cmd.Context(), WindowOptions{DB: c.db, Dir: c.dir, URLs: urls,
				Cookies: request.cookies, Netrc: !request.noNetrc}))
		},
	}
	root.SetVersionTemplate("heed {{.Version}}\n")
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(flagError)
	root.SetUsageFunc(usage)
	root.PersistentFlags().StringVar(&c.db, "db", "",
		"the database that keeps the queue and the history (default "+home(defaultDB())+")")
	root.PersistentFlags().StringVar(&c.dir, "dir", "",
		"the download folder (default: the current folder for get and crawl, ~/Downloads/Heed for the window)")
	root.PersistentFlags().BoolP("help", "h", false, "show the command's help")
	root.Flags().BoolP("version", "v", false, "print Heed's version")
	request.register(root.Flags())
	root.PersistentFlags().Lookup("db").Value = placeholder{root.PersistentFlags().Lookup("db").Value, "FILE"}
	root.PersistentFlags().Lookup("dir").Value = placeholder{root.PersistentFlags().Lookup("dir").Value, "FOLDER"}
	root.AddCommand(newGetCmd(env, c), newAddCmd(env, c), newJobsCmd(env, c), newHostsCmd(env, c),
		newHostCmd(env, c), newHistoryCmd(env, c), newExportCmd(env, c), newImportCmd(env, c), newCrawlCmd(env, c), newCrawlsCmd(env, c), newWorkerCmd(env, c), newWorkersCmd(env, c), newDemoCmd(env, c),
		newVersionCmd(env))
	return root
}

// rootArgs refuses what is not a command, with the commands it may have
// meant; URLs (http:// or https://) are for the window to queue.
func rootArgs(cmd *cobra.Command, args []string) error {
	urls := len(args) > 0
	for _, a := range args {
		l := strings.ToLower(strings.TrimSpace(a))
		urls = urls && (strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://"))
	}
	if len(args) == 0 || urls {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	}
	return errors.New(msg)
}

// noArgs is for the commands that take only flags: an argument left over
// is a mistake (heed history example.com, for --host).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s takes no arguments, only flags: %q is one too many", cmd.CommandPath(), args[0])
	}
	return nil
}

// flagError says a flag's mistake as "--burst: 1.5 is not a whole number",
// and points a single-dash long flag (-rate) to its two dashes.
func flagError(cmd *cobra.Command, err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		return fmt.Errorf("--%s: %w", bad.GetFlag().Name, bad.Unwrap())
	}
	var missing *pflag.NotExistError
	if errors.As(err, &missing) {
		if s := missing.GetSpecifiedShortnames(); len(s) > 1 && cmd.Flags().Lookup(s) != nil {
			return fmt.Errorf("%w: long flags take two dashes: --%s", err, s)
		}
	}
	return err
}

// placeholder names a string flag's value in help (--db FILE) without
// writing the name into its description.
type placeholder struct {
	pflag.Value
	name string
}

func (p placeholder) Type() string { return p.name }

// defaultDB is the database heed uses without --db.
func defaultDB() string {
	p, err := storage.DefaultPath()
	if err != nil {
		return "heed.db in your data folder"
	}
	return p
}

// home writes p under the home folder as ~/….
func home(p string) string {
	if h, err := os.UserHomeDir(); err == nil && h != "" && strings.HasPrefix(p, h+string(filepath.Separator)) {
		return "~" + p[len(h):]
	}
	return p
}

// usage is cobra's usage text, with a command's politeness flags in a
// section of their own under the title its "politeness" annotation gives.
func usage(c *cobra.Command) error {
	w := c.OutOrStdout()
	fmt.Fprint(w, "Usage:")
	if c.Runnable() {
		fmt.Fprintf(w, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n  %s [command]", c.CommandPath())
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprint(w, "\n\nCommands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(w, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	own, polite := pflag.NewFlagSet("own", pflag.ContinueOnError), pflag.NewFlagSet("polite", pflag.ContinueOnError)
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Annotations[politeGroup]; ok {
			polite.AddFlag(f)
		} else {
			own.AddFlag(f)
		}
	})
	section(w, "Flags", own)
	section(w, c.Annotations[politeGroup], polite)
	section(w, "Flags of every command", c.InheritedFlags())
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\n\nRun '%s COMMAND --help' (or '%[1]s help COMMAND') for a command's flags.", c.CommandPath())
	}
	fmt.Fprintln(w)
	return nil
}

// section writes the flags of fs under title, if it has any to show.
func section(w io.Writer, title string, fs *pflag.FlagSet) {
	if !fs.HasAvailableFlags() {
		return
	}
	fs.SortFlags = false
	fmt.Fprintf(w, "\n\n%s:\n%s", title, strings.TrimRight(fs.FlagUsagesWrapped(80), " \n"))
}
