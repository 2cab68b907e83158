package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"heed/engine"
)

// cmdHost shows one host, or changes it: pause or resume it, act on its
// breaker, or retune it. Changes are stored at once and picked up by a
// Heed started later (a running Heed holds the database: S6).
func cmdHost(ctx context.Context, env Env, args []string) int {
	fs, c := newFlags(env, "host")
	pause := fs.Bool("pause", false, "pause the host (G9)")
	resume := fs.Bool("resume", false, "resume the host (G9)")
	probe := fs.Bool("probe", false, "breaker: probe now, open → half-open (B5)")
	reset := fs.Bool("reset", false, "breaker: reset to closed (B5)")
	trip := fs.Bool("trip", false, "breaker: trip open (B5)")
	clear := fs.Bool("follow-defaults", false, "drop the host's own tunables and follow the defaults")
	asJSON := fs.Bool("json", false, "print the host as one JSON object")
	tf := registerTunables(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	tf.visited()
	if len(pos) != 1 {
		return usageErr(env, "host: give exactly one HOST (such as example.com or example.com:8080)")
	}
	if *pause && *resume {
		return usageErr(env, "host: --pause and --resume together make no sense")
	}
	if n := btoi(*trip) + btoi(*reset) + btoi(*probe); n > 1 {
		return usageErr(env, "host: give one of --trip, --reset and --probe")
	}
	if *clear && tf.any() {
		return usageErr(env, "host: --follow-defaults drops the host's own settings; it makes no sense with new ones")
	}
	host, err := hostArg(pos[0])
	if err != nil {
		return usageErr(env, "host: %q is not a host name: %v", pos[0], err)
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
	if *clear {
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
	case *pause:
		steps = append(steps, func() error { return eng.PauseHost(ctx, host, "paused from the command line") })
	case *resume:
		steps = append(steps, func() error { return eng.ResumeHost(ctx, host) })
	}
	switch {
	case *trip:
		steps = append(steps, func() error { return eng.TripBreaker(ctx, host) })
	case *reset:
		steps = append(steps, func() error { return eng.ResetBreaker(ctx, host) })
	case *probe:
		steps = append(steps, func() error { return eng.ProbeNow(ctx, host) })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			fmt.Fprintf(env.Stderr, "heed: %v\n", err)
			return ExitUnusable
		}
	}
	hs, eff := eng.HostState(host)
	state := struct {
		engine.HostState
		Effective engine.Tunables
	}{hs, eff}
	if *asJSON { // a line of heed hosts --json, with the tunables in effect
		l := newHostLine(state.HostState)
		eff := state.Effective
		l.Effective = &eff
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
	t := state.Effective
	fmt.Fprintf(env.Stdout, "host          %s\n", host)
	fmt.Fprintf(env.Stdout, "paused        %v %s\n", state.Paused, state.PauseReason)
	fmt.Fprintf(env.Stdout, "backoff level %d\n", state.Level)
	if !state.Gate.IsZero() {
		fmt.Fprintf(env.Stdout, "gate          %s\n", state.Gate.Format("2006-01-02 15:04:05 MST"))
	}
	fmt.Fprintf(env.Stdout, "breaker       %s (%d failures)\n", state.Breaker, state.Failures)
	own := "defaults"
	if state.Tunables != nil {
		own = "its own"
	}
	fmt.Fprintf(env.Stdout, "tunables      %s: %.4g/min, burst %d, %d in flight, jitter %s–%s, backoff %s–%s, breaker %d/%s, %d attempts %s\n",
		own, t.RatePerMin, t.Burst, t.MaxInflight, t.JitterMin, t.JitterMax, t.BackoffBase, t.BackoffMax,
		t.FailureThreshold, t.RecoveryTimeout, t.Retry.MaxAttempts, t.Retry.Strategy)
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
