package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"heed/bench"
	"heed/engine"
	"heed/engine/demo"
	"heed/storage"
)

// dispatchBench is the setup of case (c) and of the scale run: many demo
// hosts on 127.0.0.1, each on its own port, so each is its own host to
// Heed's politeness core.
type dispatchBench struct {
	o           options
	rn          bench.Runner
	heed        string
	srv         *demo.Server
	hosts, jobs int
	urls        []string
	root        string
}

func newDispatchBench(o options, rn bench.Runner, heedBin string) (*dispatchBench, error) {
	d := &dispatchBench{o: o, rn: rn, heed: heedBin, hosts: o.n(10000), root: filepath.Join(o.tmp, "dispatch")}
	cfg := demo.FastConfig(d.hosts, 10, 1<<10)
	cfg.Addr = func(int) string { return "127.0.0.1:0" }
	logf("starting %d demo hosts", d.hosts)
	srv, err := demo.Start(cfg)
	if err != nil {
		return nil, err
	}
	d.srv = srv
	d.urls = srv.URLs()
	d.jobs = len(d.urls)
	return d, os.MkdirAll(d.root, 0o755)
}

func (d *dispatchBench) close() { _ = d.srv.Close() }

// dispatchResult is case (c): heed get with the default politeness against
// many hosts for a fixed window.
type dispatchResult struct {
	Hosts, Jobs           int
	Window                time.Duration
	Runs                  []dispatchRun
	LoadBefore, LoadAfter string
}

type dispatchRun struct {
	Add      bench.Measure // heed add -i of every URL (not counted below)
	Get      bench.Measure // heed get, started to stopped
	FirstReq time.Duration // from start to the first request at a demo host
	Requests int64         // requests the demo hosts received
}

// perRequest queues every URL with `heed add` (untimed), then runs `heed
// get` for the window, stops it with SIGINT and divides its CPU time by the
// requests the demo hosts received.
func (d *dispatchBench) perRequest(ctx context.Context) (res dispatchResult, err error) {
	res = dispatchResult{Hosts: d.hosts, Jobs: d.jobs, Window: d.o.window, LoadBefore: loadavg()}
	defer func() { res.LoadAfter = loadavg() }()
	urlFile := filepath.Join(d.root, "urls.txt")
	if err := os.WriteFile(urlFile, []byte(strings.Join(d.urls, "\n")+"\n"), 0o644); err != nil {
		return res, err
	}
	for r := range d.o.slowRuns {
		base := filepath.Join(d.root, fmt.Sprintf("c-%d", r))
		db, out := filepath.Join(base, "heed.db"), filepath.Join(base, "out")
		if err := os.MkdirAll(out, 0o755); err != nil {
			return res, err
		}
		var run dispatchRun
		var err error
		run.Add, err = d.rn.Run(exec.Command(d.heed, "add", "-i", urlFile, "--db", db))
		if err != nil {
			return res, err
		}
		run.Get, run.FirstReq, run.Requests, err = d.runGet(db, out, d.o.window, false)
		if err != nil {
			return res, err
		}
		logf("  run %d: %d requests in %v, %v cpu, first after %v, %d MiB max RSS", r+1, run.Requests,
			run.Get.Wall.Round(time.Millisecond), (run.Get.User + run.Get.Sys).Round(time.Millisecond),
			run.FirstReq.Round(time.Millisecond), run.Get.MaxRSS>>20)
		res.Runs = append(res.Runs, run)
		if err := os.RemoveAll(base); err != nil {
			return res, err
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
	return res, nil
}

// runGet runs `heed get` on db until window has passed — counted from the
// first request when afterFirst — then interrupts it. It returns the
// process's measure, when the first request reached a demo host, and how
// many requests the hosts received meanwhile.
func (d *dispatchBench) runGet(db, out string, window time.Duration, afterFirst bool) (bench.Measure, time.Duration, int64, error) {
	before := d.srv.Requests()
	ch, err := d.rn.Start(exec.Command(d.heed, "get", "--db", db, "--dir", out))
	if err != nil {
		return bench.Measure{}, 0, 0, err
	}
	const giveUp = 5 * time.Minute
	var first time.Duration
	deadline := ch.Started().Add(window)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-ch.Exited():
			break wait
		case now := <-tick.C:
			if first == 0 && d.srv.Requests() > before {
				first = now.Sub(ch.Started())
				if afterFirst {
					deadline = now.Add(window)
				}
			}
			if now.After(deadline) && (first > 0 || !afterFirst) || now.Sub(ch.Started()) > giveUp {
				break wait
			}
		}
	}
	m, err := ch.Interrupt()
	n := d.srv.Requests() - before
	if err == nil && first == 0 {
		err = errors.New("heed get sent no request to a demo host")
	}
	return m, first, n, err
}

// scaleResult is the scale run: a database of Jobs queued jobs over Hosts
// hosts, of which Live listen.
type scaleResult struct {
	Jobs, Hosts, Live int
	Enqueue           time.Duration // storage.Enqueue of every job, in-process
	DBBytes           int64
	Window            time.Duration // heed ran this long after its first request
	Runs              []dispatchRun
	LoadBefore        string // before the first run
	LoadAfter         string
}

// scale builds a database of 1,000,000 queued jobs over 100,000 hosts with
// storage.Enqueue, then runs `heed get` on a copy of it, each run, and
// measures the time to the first request and the peak RSS. Only the demo
// hosts listen (10 jobs each); the other hosts are loopback addresses
// 127.100.x.y and 127.101.x.y on port 9 where nothing listens, so their
// requests are refused at once and never leave the machine.
func (d *dispatchBench) scale(ctx context.Context) (res scaleResult, err error) {
	const perHost = 10
	hosts := d.o.n(100000)
	res = scaleResult{Hosts: hosts, Live: min(d.hosts, hosts), Window: 10 * time.Second}
	if err := refused("127.100.0.1:9"); err != nil {
		return res, err
	}
	urls := d.urls
	if len(urls) > hosts*perHost {
		urls = urls[:hosts*perHost]
	}
	urls = urls[:len(urls):len(urls)]
	for i := 0; len(urls) < hosts*perHost; i++ {
		h := fmt.Sprintf("127.%d.%d.%d:9", 100+i/62500, i/250%250+1, i%250+1)
		for f := range perHost {
			urls = append(urls, fmt.Sprintf("http://%s/files/dead%d-%05d.bin", h, i, f))
		}
	}
	res.Jobs = len(urls)
	logf("scale: queueing %d jobs over %d hosts (%d listening)", res.Jobs, hosts, res.Live)
	pristine := filepath.Join(d.root, "scale.db")
	start := time.Now()
	if err := enqueueAll(ctx, pristine, urls); err != nil {
		return res, err
	}
	res.Enqueue = time.Since(start)
	if st, err := os.Stat(pristine); err == nil {
		res.DBBytes = st.Size()
	}
	logf("  queued in %v, database %d MiB", res.Enqueue.Round(time.Millisecond), res.DBBytes>>20)
	res.LoadBefore = loadavg()
	defer func() { res.LoadAfter = loadavg() }()
	for r := range d.o.slowRuns {
		base := filepath.Join(d.root, fmt.Sprintf("scale-%d", r))
		db, out := filepath.Join(base, "heed.db"), filepath.Join(base, "out")
		if err := os.MkdirAll(out, 0o755); err != nil {
			return res, err
		}
		if err := copyFile(pristine, db); err != nil {
			return res, err
		}
		var run dispatchRun
		var err error
		run.Get, run.FirstReq, run.Requests, err = d.runGet(db, out, res.Window, true)
		if err != nil {
			return res, err
		}
		logf("  run %d: first request after %v, %d requests, %d MiB max RSS", r+1,
			run.FirstReq.Round(time.Millisecond), run.Requests, run.Get.MaxRSS>>20)
		res.Runs = append(res.Runs, run)
		_ = os.RemoveAll(base)
	}
	return res, nil
}

// enqueueAll writes a fresh database at path with every URL queued, through
// the same storage.Enqueue that heed add uses, in batches.
func enqueueAll(ctx context.Context, path string, urls []string) error {
	db, err := storage.Open(path)
	if err != nil {
		return err
	}
	const batch = 50000
	jobs := make([]engine.NewJob, 0, batch)
	for i, u := range urls {
		host, err := engine.HostKey(u)
		if err != nil {
			db.Close()
			return err
		}
		jobs = append(jobs, engine.NewJob{URL: u, Key: u, Host: host})
		if len(jobs) == batch || i == len(urls)-1 {
			res, err := db.Enqueue(ctx, jobs, 0)
			for _, e := range res {
				if err == nil && e.Duplicate {
					err = fmt.Errorf("%d queued twice", e.ID)
				}
			}
			if err != nil {
				db.Close()
				return err
			}
			jobs = jobs[:0]
		}
	}
	return db.Close()
}

// refused checks that nothing listens at addr, so the scale run's dead
// hosts really are refused on loopback.
func refused(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("something listens at %s; the scale run needs it free", addr)
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
