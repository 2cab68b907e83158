package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"heed/engine"
)

// cmdJobs lists jobs, as a table or as JSON lines.
func cmdJobs(ctx context.Context, env Env, args []string) int {
	fs, c := newFlags(env, "jobs")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	state := fs.String("state", "", "only jobs in this `state` (queued, active, paused, done, failed, cancelled)")
	host := fs.String("host", "", "only jobs of this `host`")
	if code := parseNoArgs(env, fs, args); code != ExitOK {
		return code
	}
	if *state != "" && !engine.JobState(*state).Valid() {
		return usageErr(env, "--state: %q is not a job state (queued, active, paused, done, failed, cancelled, skipped)", *state)
	}
	if code := hostFilter(env, host); code != ExitOK {
		return code
	}
	db, code := openExisting(env, c)
	if code != ExitOK {
		return code
	}
	defer db.Close()
	q := engine.JobQuery{State: engine.JobState(*state), Host: *host}
	if *asJSON {
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

// parseNoArgs parses the flags of a command that takes no arguments: an
// argument left over is a mistake (heed history example.com, for --host).
func parseNoArgs(env Env, fs *flag.FlagSet, args []string) int {
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) > 0 {
		return usageErr(env, "%s takes no arguments, only flags: %q is one too many (%s -h lists the flags)", fs.Name(), pos[0], fs.Name())
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

// newHostLine is s as heed hosts lists it, its job counts still to come.
// An open breaker's half-open time uses the host's own recovery timeout,
// or the default one heed get runs with.
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

// cmdHosts lists every host with its persisted politeness state and job counts.
func cmdHosts(ctx context.Context, env Env, args []string) int {
	fs, c := newFlags(env, "hosts")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if code := parseNoArgs(env, fs, args); code != ExitOK {
		return code
	}
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
	if *asJSON {
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
		state, wait := "running", ""
		if l.Gate != nil && l.Gate.After(now) {
			state, wait = "waiting", l.Gate.Sub(now).Round(time.Second).String()
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

// cmdHistory prints attempts, newest first.
func cmdHistory(ctx context.Context, env Env, args []string) int {
	fs, c := newFlags(env, "history")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	asCSV := fs.Bool("csv", false, "CSV with a header line")
	host := fs.String("host", "", "only attempts to this `host`")
	outcome := fs.String("outcome", "", "only attempts with this `outcome` ("+strings.Join(engine.Outcomes, ", ")+")")
	limit := fs.Int("limit", 0, "at most `N` attempts, 0 = all")
	if code := parseNoArgs(env, fs, args); code != ExitOK {
		return code
	}
	if *asJSON && *asCSV {
		return usageErr(env, "history: choose one of --json and --csv")
	}
	if *limit < 0 {
		return usageErr(env, "--limit cannot be negative")
	}
	if *outcome != "" && !slices.Contains(engine.Outcomes, *outcome) {
		return usageErr(env, "--outcome: %q is not an outcome (%s)", *outcome, strings.Join(engine.Outcomes, ", "))
	}
	if code := hostFilter(env, host); code != ExitOK {
		return code
	}
	db, code := openExisting(env, c)
	if code != ExitOK {
		return code
	}
	defer db.Close()
	f := engine.HistoryQuery{Host: *host, Outcome: *outcome, Limit: *limit}
	var err error
	switch {
	case *asJSON:
		err = engine.WriteHistoryJSON(ctx, env.Stdout, db, f)
	case *asCSV:
		err = engine.WriteHistoryCSV(ctx, env.Stdout, db, f)
	default:
		var page []engine.Attempt
		page, err = db.History(ctx, f)
		tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STARTED\tJOB\tTRY\tHOST\tSTATUS\tOUTCOME\tMS\tBYTES\tLEVEL\tBREAKER\tERROR")
		for _, a := range page {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%d\t%d\t%d\t%s\t%s\n", a.StartedAt.Format("15:04:05.000"), a.JobID,
				a.Attempt, a.Host, a.Status, a.Outcome, a.Duration.Milliseconds(), a.Bytes, a.Level, a.Breaker, a.Error)
		}
		tw.Flush()
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	return ExitOK
}
