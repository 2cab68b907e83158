package cli

import (
	"context"

	"github.com/spf13/cobra"
)

type exportOpts struct {
	state, host string
}

func newExportCmd(env Env, c *common) *cobra.Command {
	o := &exportOpts{}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the queue out as JSON lines, for heed import",
		Long: `Write every job out as one JSON object a line: its URL, state, the file it was
saved as, its tries and the crawl that found it, as heed jobs --json does.
Passwords in URLs are masked (user:***@), never written out. heed import
queues such a file into another database, or into this one again.

It reads the database as it stands, also while another Heed runs on it.`,
		Example: `  heed export > queue.jsonl
  heed export --state queued > todo.jsonl
  heed import --db other.db queue.jsonl`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(runExport(cmd.Context(), env, c, o))
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&o.state, "state", "", "only jobs in STATE: "+states())
	f.StringVar(&o.host, "host", "", "only jobs of HOST (a host name, host:port or a URL on it)")
	name(f, "state", "STATE")
	name(f, "host", "HOST")
	return cmd
}

// runExport is heed jobs --json: the same lines, which heed import reads back.
func runExport(ctx context.Context, env Env, c *common, o *exportOpts) int {
	return runJobs(ctx, env, c, &jobsOpts{json: true, state: o.state, host: o.host})
}
