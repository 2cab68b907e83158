package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"heed/engine"
	"heed/storage/postgres"
)

func newWorkerCmd(env Env, c *common) *cobra.Command {
	o := &queueOpts{}
	var untilIdle bool
	cmd := &cobra.Command{
		Use:   "worker --db postgres://… [--until-idle] [--name NAME]",
		Short: "Download a shared PostgreSQL queue, one of a fleet of workers",
		Long: `Work on the queue of a PostgreSQL database that several heed worker processes,
on one or many machines, share (--db postgres://… or HEED_DB). Each host is
leased to one worker at a time, in the database, so it is paced by one
governor whichever worker runs it, and its backoff, Retry-After and breaker
survive any worker. A worker claims hosts whose work is due, within its fair
share, renews its leases while it works and gives hosts back when it has
nothing for them. One that dies loses its hosts when their leases expire
(30 s); another takes them over, with their state, and queues again what it
was downloading. Files go into --dir, on this worker's machine.

Queue URLs into the database from anywhere (heed add --db postgres://…);
pause or retune a host with heed host: the worker holding it applies it
within a second. heed workers lists the fleet.

Without --until-idle a worker runs until SIGINT (exit 130) or SIGTERM
(exit 0), giving its leases back; with it, it exits once nothing is queued or
in flight in the whole database, with get's exit codes.`,
		Example: `  heed worker --db postgres://heed@db.example/heed --dir /data/heed
  HEED_DB=postgres:///heed heed worker --name left --until-idle --rate 120 --burst 1`,
		Annotations: map[string]string{politeGroup: "Politeness, for every host without settings of its own"},
		Args:        noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(runWorker(cmd.Context(), env, c, o, untilIdle))
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.BoolVar(&untilIdle, "until-idle", false, "exit once nothing is queued or in flight in the whole database")
	f.StringVar(&c.worker, "name", "", "this worker's name in the fleet (default: the machine's name and the process id)")
	f.DurationVar(&c.lease, "lease", postgres.DefaultLease, "how long the hosts it holds stay its own if it stops renewing them (it dies)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print only problems and the summary")
	runFlags(f, o, env)
	name(f, "name", "NAME")
	name(f, "lease", "DURATION")
	return cmd
}

func runWorker(ctx context.Context, env Env, c *common, o *queueOpts, untilIdle bool) int {
	path, err := DBPath(c.db)
	if err != nil || !postgres.IsURL(path) {
		return usageErr(env, "worker: a worker shares a PostgreSQL queue: give --db postgres://… (or set HEED_DB)")
	}
	defaults, code := o.runDefaults(env)
	if code != ExitOK {
		return code
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	s, code := openSession(ctx, env, c, o, defaults, true, nil)
	if code != ExitOK {
		return code
	}
	defer s.close()
	if untilIdle {
		return s.finish()
	}
	s.added() // nothing to add: the run ends only with a signal
	stop := s.p.start(s.eng)
	err = s.eng.Run(s.runCtx)
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	select {
	case <-term:
		return ExitOK
	default:
		return ExitInterrupt
	}
}

func newWorkersCmd(env Env, c *common) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List the workers of a PostgreSQL queue",
		Long: `List every heed worker that has worked on the PostgreSQL database: its name and
machine, whether it is alive (a heartbeat within a lease), the hosts it holds,
its requests in flight and its rate lately, and its last heartbeat.`,
		Example: `  heed workers --db postgres:///heed
  heed workers --json | jq -r 'select(.alive) | .name'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exit(runWorkers(cmd.Context(), env, c, asJSON))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	return cmd
}

// workerLine is one line of heed workers --json.
type workerLine struct {
	Name      string    `json:"name"`
	Machine   string    `json:"machine"`
	Alive     bool      `json:"alive"`
	Hosts     int       `json:"hosts"`
	Inflight  int       `json:"inflight"`
	Requests  int64     `json:"requests"`
	Rate      float64   `json:"rate_per_sec"`
	Started   time.Time `json:"started"`
	Heartbeat time.Time `json:"heartbeat"`
}

func runWorkers(ctx context.Context, env Env, c *common, asJSON bool) int {
	db, code := openExisting(env, c)
	if code != ExitOK {
		return code
	}
	defer db.Close()
	fr, ok := db.(engine.FleetReader)
	if !ok {
		return usageErr(env, "workers: only a PostgreSQL queue has workers: give --db postgres://…")
	}
	ws, err := fr.Workers(ctx)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		for _, w := range ws {
			enc.Encode(workerLine{Name: w.Name, Machine: w.Machine, Alive: w.Alive, Hosts: w.Hosts, Inflight: w.Inflight,
				Requests: w.Requests, Rate: w.Rate, Started: w.Started, Heartbeat: w.Heartbeat})
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMACHINE\tSTATE\tHOSTS\tIN FLIGHT\tREQUESTS/S\tLAST HEARTBEAT")
	for _, w := range ws {
		state := "alive"
		switch {
		case w.Stopped:
			state = "stopped"
		case !w.Alive:
			state = "gone"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.1f\t%s\n", w.Name, w.Machine, state, w.Hosts, w.Inflight, w.Rate,
			w.Heartbeat.Local().Format("2006-01-02 15:04:05"))
	}
	tw.Flush()
	return ExitOK
}
