package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"heed/engine"
)

type jobsOpts struct {
	json        bool
	state, host string
}

func newJobsCmd(env Env, c *common) *cobra.Command {
	o := &jobsOpts{}
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List jobs: every URL Heed knows, with its state",
		Long: `List jobs: every URL Heed knows, with its state, its tries, its file and the
last error, as a table or as JSON lines (one object per job, with the file's
whole SHA-256). It reads the database as it stands, also while another Heed
runs on it.`,
		Example: `  heed jobs
  heed jobs --state failed
  heed jobs --json --host example.com | jq -r .file`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(runJobs(cmd.Context(), env, c, o))
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.BoolVar(&o.json, "json", false, "one JSON object per line")
	f.StringVar(&o.state, "state", "", "only jobs in STATE: "+states())
	f.StringVar(&o.host, "host", "", "only jobs of HOST (a host name, host:port or a URL on it)")
	name(f, "state", "STATE")
	name(f, "host", "HOST")
	return cmd
}

// states lists the job states, for help and errors.
func states() string {
	s := make([]string, len(engine.JobStates))
	for i, st := range engine.JobStates {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

func runJobs(ctx context.Context, env Env, c *common, o *jobsOpts) int {
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
	q := engine.JobQuery{State: engine.JobState(o.state), Host: host}
	if o.json {
		if err := engine.WriteJobsJSON(ctx, env.Stdout, db, q); err != nil {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return ExitUnusable
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tHOST\tATTEMPTS\tBYTES\tFILE\tURL\tLAST ERROR")
	err := engine.EachJob(ctx, db, q, func(j engine.Job) error {
		l := engine.JobLineOf(j)
		file := l.File
		if l.Unnamed { // Heed stopped between recording it done and naming its file
			file += " (not named yet: the next heed get names it)"
		}
		_, err := fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", l.ID, l.State, l.Host, l.Attempts, l.Bytes, file, l.URL, l.LastError)
		return err
	})
	tw.Flush()
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	return ExitOK
}

// hostFilter turns a --host filter into its host key, as heed host takes it
// (Example.COM:80, a URL or an international name all name one host).
func hostFilter(env Env, host *string) int {
	if *host == "" {
		return ExitOK
	}
	key, err := hostArg(*host)
	if err != nil {
		return usageErr(env, "--host: %q is not a host: %v", *host, err)
	}
	*host = key
	return ExitOK
}
