package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"heed/engine"
	"heed/engine/fetch"
)

type historyOpts struct {
	json, csv     bool
	host, outcome string
	limit         int
}

func newHistoryCmd(env Env, c *common) *cobra.Command {
	o := &historyOpts{}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List every request Heed made, newest first",
		Long: `List every request Heed made, newest first: when it started, its job and try,
the host, the status and outcome, how long it took, the bytes it brought, the
host's backoff level and breaker at the time, and the error. As a table, or as
JSON lines or CSV for other tools. It reads the database as it stands, also
while another Heed runs on it.`,
		Example: `  heed history --limit 20
  heed history --host example.com --outcome throttled
  heed history --csv > history.csv`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(runHistory(cmd.Context(), env, c, o))
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.BoolVar(&o.json, "json", false, "one JSON object per line")
	f.BoolVar(&o.csv, "csv", false, "CSV with a header line")
	f.StringVar(&o.host, "host", "", "only requests to HOST (a host name, host:port or a URL on it)")
	f.StringVar(&o.outcome, "outcome", "", "only requests with OUTCOME: "+strings.Join(engine.Outcomes, ", "))
	f.IntVar(&o.limit, "limit", 0, "at most N requests (default: all)")
	name(f, "host", "HOST")
	name(f, "outcome", "OUTCOME")
	name(f, "limit", "N")
	return cmd
}

func runHistory(ctx context.Context, env Env, c *common, o *historyOpts) int {
	if o.json && o.csv {
		return usageErr(env, "history: choose one of --json and --csv")
	}
	if o.limit < 0 {
		return usageErr(env, "--limit cannot be negative")
	}
	if o.outcome != "" && !slices.Contains(engine.Outcomes, o.outcome) {
		return usageErr(env, "--outcome: %q is not an outcome (%s)", o.outcome, strings.Join(engine.Outcomes, ", "))
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
	q := engine.HistoryQuery{Host: host, Outcome: o.outcome, Limit: o.limit}
	var err error
	switch {
	case o.json:
		err = engine.WriteHistoryJSON(ctx, env.Stdout, db, q)
	case o.csv:
		err = engine.WriteHistoryCSV(ctx, env.Stdout, db, q)
	default:
		var page []engine.Attempt
		if page, err = newestByStart(ctx, db, q); err != nil {
			break
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STARTED\tJOB\tTRY\tHOST\tSTATUS\tOUTCOME\tMS\tBYTES\tLEVEL\tBREAKER\tERROR")
		for _, a := range page {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\n", a.StartedAt.Local().Format("2006-01-02 15:04:05.000"),
				a.JobID, a.Attempt, a.Host, a.Status, a.Outcome, a.Duration.Milliseconds(), a.Bytes, a.Level, a.Breaker, a.Error)
		}
		tw.Flush()
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	return ExitOK
}

// historyPage is how many attempts newestByStart reads at a time.
const historyPage = 1000

// commitLag is how much later than its end an attempt may be stored
// (its history row waits for a group commit): newestByStart reads that
// much further back before it trusts an order by start.
const commitLag = 5 * time.Second

// newestByStart is the attempts q selects, newest start first, at most
// q.Limit of them (0: all). The store keeps them in the order they ended;
// an attempt that started before others may end after them, so this reads
// on in that order until no attempt further back can have started after
// the last one kept.
func newestByStart(ctx context.Context, r engine.Reader, q engine.HistoryQuery) ([]engine.Attempt, error) {
	limit := q.Limit
	var all []engine.Attempt
	for {
		page := q
		page.Limit = historyPage
		got, err := r.History(ctx, page)
		if err != nil {
			return nil, err
		}
		all = append(all, got...)
		if len(got) < historyPage {
			break
		}
		q.BeforeID = got[len(got)-1].ID
		if limit > 0 && len(all) >= limit {
			// Stop once the oldest end read is before the limit-th newest start.
			starts := make([]time.Time, len(all))
			for i, a := range all {
				starts[i] = a.StartedAt
			}
			slices.SortFunc(starts, func(a, b time.Time) int { return b.Compare(a) })
			last := got[len(got)-1]
			if last.StartedAt.Add(last.Duration).Add(commitLag).Before(starts[limit-1]) {
				break
			}
		}
	}
	slices.SortStableFunc(all, func(a, b engine.Attempt) int {
		return cmp.Or(b.StartedAt.Compare(a.StartedAt), cmp.Compare(b.ID, a.ID))
	})
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	for i := range all {
		all[i].URL = fetch.Redact(all[i].URL)
	}
	return all, nil
}
