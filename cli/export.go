package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"heed/engine"
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

func runExport(ctx context.Context, env Env, c *common, o *exportOpts) int {
	if o.state != "" && !engine.JobState(o.state).Valid() {
		return usageErr(env, "--state: %q is not a job state (%s)", o.state, states())
	}
	host := o.host
	if code := hostFilter(env, &host); code != ExitOK {
		return code
	}
	db, code := openExisting(env, c)
	if code != ExitOK {
		return code
	}
	defer db.Close()
	if err := engine.WriteJobsJSON(ctx, env.Stdout, db, engine.JobQuery{State: engine.JobState(o.state), Host: host}); err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	return ExitOK
}
