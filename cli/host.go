package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"heed/engine"
	"heed/engine/fetch"
)

type hostOpts struct {
	pause, resume, probe, reset, trip, defaults, json bool
	tunables                                          *tunableFlags
}

func newHostCmd(env Env, c *common) *cobra.Command {
	o := &hostOpts{}
	d := engine.DefaultTunables()
	cmd := &cobra.Command{
		Use:   "host HOST",
		Short: "Show one host, or pause, resume or retune it",
		Long: fmt.Sprintf(`Show one host, or change it: pause or resume it, act on its circuit breaker,
or give it settings of its own. HOST is a host name, host:port, or a URL on it.
Each change is kept in the database at once and holds for every later run; a
host without settings of its own follows the defaults (%s requests a minute,
burst %d, %d at a time, …; see heed get --help).

Only the settings you give change; the others keep their value.`,
			strconv.FormatFloat(d.RatePerMin, 'f', -1, 64), d.Burst, d.MaxInflight),
		Example: `  heed host example.com
  heed host example.com --pause
  heed host example.com --rate 10 --burst 1    # gentler than the defaults
  heed host example.com --reset                # close its breaker
  heed host api.example.com --header "Authorization: Bearer $TOKEN" --host-bandwidth 1048576
  heed host example.com --follow-defaults      # drop its own settings`,
		Annotations: map[string]string{politeGroup: "Settings of the host (only those you give change)"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("host: give exactly one HOST (such as example.com or example.com:8080)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return exit(runHost(cmd.Context(), env, c, o, args[0]))
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.BoolVar(&o.pause, "pause", false, "pause the host: nothing is sent to it until it is resumed")
	f.BoolVar(&o.resume, "resume", false, "resume the paused host")
	f.BoolVar(&o.trip, "trip", false, "open the host's circuit breaker: nothing is sent to it until its probe")
	f.BoolVar(&o.probe, "probe", false, "let the open breaker's probe go now")
	f.BoolVar(&o.reset, "reset", false, "close the breaker: requests go again at once")
	f.BoolVar(&o.defaults, "follow-defaults", false, "drop the host's own settings and follow the defaults")
	f.BoolVar(&o.json, "json", false, "print the host as one JSON object, with the settings in force")
	o.tunables = registerTunables(f, false)
	return cmd
}

// runHost shows one host, or changes it: pause or resume it, act on its
// breaker, or retune it. Changes are stored at once and picked up by a
// Heed started later (a running Heed holds the database: S6).
func runHost(ctx context.Context, env Env, c *common, o *hostOpts, arg string) int {
	tf := o.tunables
	if o.pause && o.resume {
		return usageErr(env, "host: --pause and --resume together make no sense")
	}
	if n := btoi(o.trip) + btoi(o.reset) + btoi(o.probe); n > 1 {
		return usageErr(env, "host: give one of --trip, --reset and --probe")
	}
	if o.defaults && tf.any() {
		return usageErr(env, "host: --follow-defaults drops the host's own settings; it makes no sense with new ones")
	}
	host, err := hostArg(arg)
	if err != nil {
		return usageErr(env, "host: %q is not a host name: %v", arg, err)
	}
	db, code := openDB(env, c)
	if code != ExitOK {
		return code
	}
	defer db.Close()
	dir, code := downloadDir(env, c)
	if code != ExitOK {
		return code
	}
	// The commands the window gives, on an engine that does not run: each
	// is on disk when it returns.
	eng, err := engine.New(ctx, db, engine.Options{Dir: dir, Version: env.Version})
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	defer eng.Close()
	var steps []func() error
	if o.defaults {
		steps = append(steps, func() error { return eng.UseDefaults(ctx, host) })
	}
	if tf.any() {
		_, cur := eng.HostState(host)
		t, err := tf.apply(cur)
		if err != nil {
			return usageErr(env, "%v", err)
		}
		steps = append(steps, func() error { return eng.SetHostTunables(ctx, host, t) })
	}
	switch {
	case o.pause:
		steps = append(steps, func() error { return eng.PauseHost(ctx, host, "paused from the command line") })
	case o.resume:
		steps = append(steps, func() error { return eng.ResumeHost(ctx, host) })
	}
	switch {
	case o.trip:
		steps = append(steps, func() error { return eng.TripBreaker(ctx, host) })
	case o.reset:
		steps = append(steps, func() error { return eng.ResetBreaker(ctx, host) })
	case o.probe:
		steps = append(steps, func() error { return eng.ProbeNow(ctx, host) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return ExitUnusable
		}
	}
	hs, eff := eng.HostState(host)
	l := newHostLine(hs)
	l.Effective = redacted(&eff)
	rf, ok, err := db.Robots(ctx, host)
	if err != nil {
		fmt.Fprintf(env.Stderr, "heed: %v\n", err)
		return ExitUnusable
	}
	l.setRobots(rf, ok)
	if snap, ok := eng.Core().HostSnapshot(host); ok {
		l.Quota = snap.Quota
	}
	if o.json { // a line of heed hosts --json, with the tunables in effect
		hosts, err := db.Hosts(ctx)
		if err != nil {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return ExitUnusable
		}
		for _, h := range hosts {
			if h.Host == host {
				l.setJobs(h.Counts)
			}
		}
		json.NewEncoder(env.Stdout).Encode(l)
		return ExitOK
	}
	t := eff
	fmt.Fprintf(env.Stdout, "host          %s\n", host)
	fmt.Fprintf(env.Stdout, "paused        %v %s\n", hs.Paused, hs.PauseReason)
	fmt.Fprintf(env.Stdout, "backoff level %d\n", hs.Level)
	if !hs.Gate.IsZero() {
		fmt.Fprintf(env.Stdout, "gate          %s\n", hs.Gate.Format("2006-01-02 15:04:05 MST"))
	}
	fmt.Fprintf(env.Stdout, "breaker       %s (%d failures)\n", hs.Breaker, hs.Failures)
	own := "defaults"
	if hs.Tunables != nil {
		own = "its own"
	}
	fmt.Fprintf(env.Stdout, "settings      %s: %.4g/min, burst %d, %d in flight, jitter %s–%s, backoff %s–%s, breaker %d/%s, %d attempts %s\n",
		own, t.RatePerMin, t.Burst, t.MaxInflight, shortDuration(t.JitterMin), shortDuration(t.JitterMax),
		shortDuration(t.BackoffBase), shortDuration(t.BackoffMax), t.FailureThreshold, shortDuration(t.RecoveryTimeout),
		t.Retry.MaxAttempts, t.Retry.Strategy)
	if t.Proxy != "" {
		fmt.Fprintf(env.Stdout, "proxy         %s\n", fetch.Redact(t.Proxy))
	}
	for _, h := range t.Headers {
		fmt.Fprintf(env.Stdout, "header        %s\n", fetch.RedactHeader(h))
	}
	if t.BytesPerSec > 0 {
		fmt.Fprintf(env.Stdout, "bandwidth     %s/s\n", humanBytes(t.BytesPerSec))
	}
	if r := robotsColumn(*l); r != "" {
		fmt.Fprintf(env.Stdout, "robots        %s\n", r)
	}
	if l.Quota != "" {
		fmt.Fprintf(env.Stdout, "quota         %s\n", l.Quota)
	}
	return ExitOK
}

// hostArg is the host key of a HOST argument: a host, a host:port, or a URL
// pasted whole (https://example.com/a names example.com).
func hostArg(arg string) (string, error) {
	if strings.Contains(arg, "://") {
		return engine.HostKey(arg)
	}
	scheme := "http://"
	if strings.HasSuffix(arg, ":443") { // example.com:443 is the https site, whose key is example.com
		scheme = "https://"
	}
	return engine.HostKey(scheme + arg + "/")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
