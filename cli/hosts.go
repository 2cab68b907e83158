package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"heed/engine"
)

func newHostsCmd(env Env, c *common) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "List hosts: how each stands, and its jobs",
		Long: `List every host Heed knows: whether it is idle, running, waiting (and how
long), paused or has its circuit breaker open; its backoff level (how many
doublings of the wait after "slow down" answers are in force); its settings
when it has its own; its queued, done and failed jobs; and the last status it
answered. It reads the database as it stands, also while another Heed runs on
it.`,
		Example: `  heed hosts
  heed hosts --json | jq 'select(.paused)'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(runHosts(cmd.Context(), env, c, asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	return cmd
}

// hostLine is one host in `heed hosts --json`.
type hostLine struct {
	Host        string           `json:"host"`
	Paused      bool             `json:"paused"`
	PauseReason string           `json:"pause_reason,omitempty"`
	Level       int              `json:"backoff_level"`
	Gate        *time.Time       `json:"gate,omitempty"`
	Breaker     string           `json:"breaker_state"`
	OpenedAt    *time.Time       `json:"breaker_opened_at,omitempty"`
	HalfOpenAt  *time.Time       `json:"breaker_half_open_at,omitempty"` // open: when a probe may go (B2, B6)
	Failures    int              `json:"failures"`
	LastStatus  int              `json:"last_status"`
	Own         bool             `json:"own_tunables"`
	Tunables    *engine.Tunables `json:"tunables,omitempty"`
	Effective   *engine.Tunables `json:"effective_tunables,omitempty"` // heed host only
	Jobs        map[string]int64 `json:"jobs"`
}

// newHostLine is s as heed hosts lists it, with its job counts. An open
// breaker's half-open time uses the host's own recovery timeout, or the
// default one heed get runs with.
func newHostLine(s engine.HostState) *hostLine {
	l := &hostLine{Host: s.Host, Paused: s.Paused, PauseReason: s.PauseReason, Level: s.Level,
		Breaker: s.Breaker.String(), Failures: s.Failures, LastStatus: s.LastStatus, Own: s.Tunables != nil,
		Tunables: s.Tunables, Jobs: map[string]int64{}}
	l.setJobs(s.Counts)
	if !s.Gate.IsZero() {
		g := s.Gate
		l.Gate = &g
	}
	if s.Breaker != engine.Closed && !s.OpenedAt.IsZero() {
		o := s.OpenedAt
		l.OpenedAt = &o
		if s.Breaker == engine.Open && s.Tunables != nil {
			// Only a host's own recovery timeout is known here: one that
			// follows the defaults takes those of the Heed that runs it
			// (heed get --breaker-timeout, or the window's saved ones).
			h := o.Add(s.Tunables.RecoveryTimeout)
			l.HalfOpenAt = &h
		}
	}
	return l
}

// setJobs fills the line's job counts, the states that have any.
func (l *hostLine) setJobs(c engine.Counts) {
	for _, st := range engine.JobStates {
		if n := c.Of(st); n > 0 {
			l.Jobs[string(st)] = n
		}
	}
}

// hostLines is every host the database knows, with its job counts, as the
// hosts rows keep them.
func hostLines(ctx context.Context, db engine.Reader) ([]hostLine, error) {
	states, err := db.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]hostLine, 0, len(states))
	for _, s := range states {
		out = append(out, *newHostLine(s))
	}
	return out, nil
}

// hostState is what the STATE and WAIT columns of heed hosts say of l at now.
func hostState(l hostLine, now time.Time) (state, wait string) {
	state = "idle" // nothing queued, nothing in flight
	if l.Jobs["queued"]+l.Jobs["active"] > 0 {
		state = "running"
	}
	if l.Gate != nil && l.Gate.After(now) {
		wait = l.Gate.Sub(now).Round(time.Second).String()
		if state == "running" {
			state = "waiting"
		}
	}
	if l.Breaker == "open" {
		state = "breaker open"
		switch {
		case l.HalfOpenAt != nil && l.HalfOpenAt.After(now):
			wait = "probe in " + l.HalfOpenAt.Sub(now).Round(time.Second).String()
		case l.HalfOpenAt != nil:
			wait = "probe due"
		case l.OpenedAt != nil: // its recovery timeout is the running Heed's
			wait = "open for " + now.Sub(*l.OpenedAt).Round(time.Second).String()
		}
	}
	if l.Paused {
		state = "paused"
		if l.PauseReason != "" {
			state += " (" + l.PauseReason + ")"
		}
	}
	return state, wait
}

func runHosts(ctx context.Context, env Env, c *common, asJSON bool) int {
	db, code := openExisting(env, c)
	if code != ExitOK {
		return code
	}
	defer db.Close()
	lines, err := hostLines(ctx, db)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		for _, l := range lines {
			enc.Encode(l)
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tSTATE\tLEVEL\tWAIT\tBREAKER\tRATE\tQUEUED\tDONE\tFAILED\tLAST")
	now := time.Now()
	for _, l := range lines {
		state, wait := hostState(l, now)
		rate := "default"
		if l.Tunables != nil { // its own, set with heed host HOST --rate …
			rate = fmt.Sprintf("%s/min, burst %d, %d at once", strconv.FormatFloat(l.Tunables.RatePerMin, 'f', -1, 64),
				l.Tunables.Burst, l.Tunables.MaxInflight)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", l.Host, state, l.Level, wait, l.Breaker, rate,
			l.Jobs["queued"], l.Jobs["done"], l.Jobs["failed"], l.LastStatus)
	}
	tw.Flush()
	return ExitOK
}
