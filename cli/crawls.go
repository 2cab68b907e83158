package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"heed/engine"
)

func newCrawlsCmd(env Env, c *common) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "crawls",
		Short: "List crawls: their seeds, their scope and what each has done",
		Long: `List every crawl heed crawl started: its id, whether it runs, is paused or was
cancelled, its scope and depth, its jobs done, left to fetch (queued, in
flight or paused), skipped (by robots.txt or a trap rule) and failed, the
links it found out of scope, the bytes of its pages, and its seeds. As JSON
lines, each object has the jobs in every state and the crawl's rules. It
reads the database as it stands, also while another Heed runs on it.`,
		Example: `  heed crawls
  heed crawls --json | jq 'select(.queued > 0) | .id'
  heed crawl --resume 3     # go on with crawl 3`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(runCrawls(cmd.Context(), env, c, asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	return cmd
}

func runCrawls(ctx context.Context, env Env, c *common, asJSON bool) int {
	db, code := openExisting(env, c)
	if code != ExitOK {
		return code
	}
	defer db.Close()
	cs, err := db.Crawls(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetEscapeHTML(false)
		for _, cr := range cs {
			enc.Encode(engine.CrawlLineOf(cr))
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSCOPE\tDEPTH\tDONE\tQUEUED\tSKIPPED\tFAILED\tOUT OF SCOPE\tBYTES\tSEEDS")
	for _, cr := range cs {
		l := engine.CrawlLineOf(cr)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", l.ID, l.State, l.Scope, l.Depth, l.Done,
			l.Queued+l.Active+l.Paused, l.Skipped, l.Failed, l.OutOfScope, humanBytes(l.Bytes), seedList(l.Seeds))
	}
	tw.Flush()
	return ExitOK
}

// seedList is a crawl's seeds in its table: the first three, and how many
// more (heed crawls --json has them all).
func seedList(seeds []string) string {
	const shown = 3
	if len(seeds) <= shown {
		return strings.Join(seeds, " ")
	}
	return fmt.Sprintf("%s (and %d more)", strings.Join(seeds[:shown], " "), len(seeds)-shown)
}
