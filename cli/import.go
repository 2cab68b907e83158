package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/spf13/cobra"

	"heed/engine"
)

func newImportCmd(env Env, c *common) *cobra.Command {
	o := &queueOpts{}
	cmd := &cobra.Command{
		Use:   "import FILE | -",
		Short: "Queue the URLs of a heed export file (or of a URL list)",
		Long: `Queue the URLs of a file heed export wrote (one JSON object a line), or of a
plain list of URLs, into this database; - reads standard input. Only the URLs
are taken: each becomes a queued job, or is reported as a duplicate when this
database knows it already; nothing queued or downloaded here is changed.

A URL whose password heed export masked (user:***@) is queued without it:
give it again with its password if the server needs one. A line that is
neither a URL list line nor a job object stops the import with its line
number; the lines before it stay queued.

When another Heed runs on the database, it queues them, as for heed add.

Exit status: 0 when every URL was queued or known, 1 when a line was rejected
or a known URL had failed, 2 on bad usage or a malformed line, 3 when the
database is unusable.`,
		Example: `  heed export > queue.jsonl
  heed import --db other.db queue.jsonl
  heed export --db old.db --state queued | heed import -`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runImport(cmd.Context(), env, c, o, args[0]))
		},
	}
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print only problems and the summary")
	return cmd
}

func runImport(ctx context.Context, env Env, c *common, o *queueOpts, file string) int {
	in := env.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintf(env.Stderr, "heed: reading %s: %v\n", file, err)
			return ExitUsage
		}
		defer f.Close()
		in = f
	}
	// The file, as the URL list heed add reads: one line for each of its
	// lines, so that a rejected URL is named by its line in the file.
	pr, pw := io.Pipe()
	defer pr.Close()
	var masked atomic.Int64
	go func() { pw.CloseWithError(engine.ImportList(in, pw, &masked)) }()
	env.Stdin, o.input = pr, "-"
	code := queueAndRun(ctx, env, c, o, nil, false)
	if n := masked.Load(); n > 0 {
		fmt.Fprintf(env.Stderr, "heed: %d URLs had their password masked by heed export: queued without it\n", n)
	}
	return code
}
