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
	"heed/engine/fetch"
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
answered. Once a crawl has run, also its skipped jobs and its robots.txt as a
crawl last fetched it, with its Crawl-delay. It reads the database as it
stands, also while another Heed runs on it.`,
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
	// What crawls learnt of the host: its robots.txt as Heed last kept it
	// ("ok", "allow all (HTTP 404)"; "" when no crawl fetched it), when it
	// was fetched, and the Crawl-delay in force (0: none).
	Robots        string     `json:"robots,omitempty"`
	RobotsFetched *time.Time `json:"robots_fetched,omitempty"`
	CrawlDelayMS  int64      `json:"crawl_delay_ms,omitempty"`
	// Quota is the server's own quota as Heed paces from it; heed host
	// only, where the engine is open: it alone knows what the quota's
	// state means now.
	Quota string `json:"quota,omitempty"`
	// In a fleet (PostgreSQL): the worker that leases the host and until
	// when (M4); absent when nobody does.
	Owner      string     `json:"owner,omitempty"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
}

// newHostLine is s as heed hosts lists it, with its job counts. An open
// breaker's half-open time uses the host's own recovery timeout, or the
// default one heed get runs with.
func newHostLine(s engine.HostState) *hostLine {
	l := &hostLine{Host: s.Host, Paused: s.Paused, PauseReason: s.PauseReason, Level: s.Level,
		Breaker: s.Breaker.String(), Failures: s.Failures, LastStatus: s.LastStatus, Own: s.Tunables != nil,
		Tunables: redacted(s.Tunables), Jobs: map[string]int64{}}
	l.setJobs(s.Counts)
	l.CrawlDelayMS = s.CrawlDelay.Milliseconds()
	if s.Owner != "" && !s.LeaseUntil.IsZero() {
		u := s.LeaseUntil
		l.Owner, l.LeaseUntil = s.Owner, &u
	}
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

// setRobots fills the line's robots.txt state from the copy Heed keeps of
// it (f; ok false when none), in the words the window uses: "ok", or
// "allow all (HTTP 404)" for a file the host does not have. Only a file
// whose verdict stands is kept, so a host whose robots.txt is unreachable
// shows the copy its crawl falls back on, or nothing.
func (l *hostLine) setRobots(f engine.RobotsFile, ok bool) {
	if !ok || f.Fetched.IsZero() {
		return
	}
	l.Robots = "ok"
	if f.Status < 200 || f.Status > 299 {
		l.Robots = fmt.Sprintf("allow all (HTTP %d)", f.Status)
	}
	at := f.Fetched
	l.RobotsFetched = &at
}

// robotsColumn is what the ROBOTS column of heed hosts says of l: its
// robots.txt state and its Crawl-delay ("ok, crawl-delay 5s").
func robotsColumn(l hostLine) string {
	s := l.Robots
	if l.CrawlDelayMS > 0 {
		d := "crawl-delay " + shortDuration(time.Duration(l.CrawlDelayMS)*time.Millisecond)
		if s == "" {
			return d
		}
		s += ", " + d
	}
	return s
}

// robotsReader is the database's copy of each host's robots.txt.
type robotsReader interface {
	Robots(ctx context.Context, host string) (engine.RobotsFile, bool, error)
}

// hostLines is every host the database knows, with its job counts, as the
// hosts rows keep them, and, once any crawl was started, the robots.txt
// kept for each.
func hostLines(ctx context.Context, db interface {
	engine.Reader
	robotsReader
}) ([]hostLine, error) {
	states, err := db.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	crawls, err := db.Crawls(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]hostLine, 0, len(states))
	for _, s := range states {
		l := newHostLine(s)
		if len(crawls) > 0 { // else no robots.txt was ever fetched: no host is asked
			f, ok, err := db.Robots(ctx, s.Host)
			if err != nil {
				return nil, err
			}
			l.setRobots(f, ok)
		}
		out = append(out, *l)
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
	// A ROBOTS column once a crawl has been: a host it has not fetched is
	// left blank.
	robots, fleet := false, false
	for _, l := range lines {
		robots = robots || robotsColumn(l) != ""
	}
	_, fleet = db.(engine.FleetReader) // a PostgreSQL queue: each host's owner
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	head := "HOST\tSTATE\tLEVEL\tWAIT\tBREAKER\tRATE\tQUEUED\tDONE\tFAILED\tLAST"
	if robots {
		head += "\tSKIPPED\tROBOTS"
	}
	if fleet {
		head += "\tOWNER"
	}
	fmt.Fprintln(tw, head)
	now := time.Now()
	for _, l := range lines {
		state, wait := hostState(l, now)
		rate := "default"
		if l.Tunables != nil { // its own, set with heed host HOST --rate …
			rate = fmt.Sprintf("%s/min, burst %d, %d at once", strconv.FormatFloat(l.Tunables.RatePerMin, 'f', -1, 64),
				l.Tunables.Burst, l.Tunables.MaxInflight)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d", l.Host, state, l.Level, wait, l.Breaker, rate,
			l.Jobs["queued"], l.Jobs["done"], l.Jobs["failed"], l.LastStatus)
		if robots {
			fmt.Fprintf(tw, "\t%d\t%s", l.Jobs["skipped"], robotsColumn(l))
		}
		if fleet {
			owner := "-"
			if l.LeaseUntil != nil && l.LeaseUntil.After(now) {
				owner = l.Owner
			}
			fmt.Fprintf(tw, "\t%s", owner)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	return ExitOK
}

// redacted is t with its proxy's password and its headers' secrets masked,
// for output (N4, N5).
func redacted(t *engine.Tunables) *engine.Tunables {
	if t == nil || t.Proxy == "" && len(t.Headers) == 0 {
		return t
	}
	c := *t
	c.Proxy = fetch.Redact(c.Proxy)
	c.Headers = make([]string, len(t.Headers))
	for i, h := range t.Headers {
		c.Headers[i] = fetch.RedactHeader(h)
	}
	return &c
}
