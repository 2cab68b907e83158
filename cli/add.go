package cli

import (
	"github.com/spf13/cobra"
)

func newAddCmd(env Env, c *common) *cobra.Command {
	o := &queueOpts{}
	cmd := &cobra.Command{
		Use:   "add URL... | -i FILE | -",
		Short: "Queue URLs without downloading them",
		Long: `Queue URLs without downloading them: heed get, or the window, downloads them
later. URLs come from the arguments (one URL each), from a list (-i FILE: one
or more URLs a line, # starts a comment) or from standard input (-).

A URL Heed already knows is one job; one whose download already ended is
queued again only with --again. The download folder is chosen by the run that
downloads them (heed get --dir), not here.

Exit status: 0 when every URL was queued or known, 1 when a line was rejected
or a known URL had failed, 2 on bad usage, 3 when the database is unusable.`,
		Example: `  heed add https://example.com/a.iso https://example.org/b.pdf
  heed add -i urls.txt
  heed add - < urls.txt
  heed get --dir out          # later: download what is queued`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(queueAndRun(cmd.Context(), env, c, o, args, false))
		},
	}
	cmd.Flags().SortFlags = false
	inputFlags(cmd.Flags(), o)
	return cmd
}
