package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"heed/engine"
	"heed/engine/fetch"
	"heed/storage"
)

// frontierChild is what `e2e frontier-child` measured in its own process.
type frontierChild struct {
	Requests int64         `json:"requests"` // RoundTrip calls
	Open     time.Duration `json:"open"`     // storage.Open
	New      time.Duration `json:"new"`      // engine.New
	FirstReq time.Duration `json:"first"`    // from just before storage.Open to the first RoundTrip
	LastReq  time.Duration `json:"last"`     // … to the n-th RoundTrip
	Total    time.Duration `json:"total"`    // … until Run returned and the database was closed
	// CPU time of the process (user+sys, getrusage) at the first request,
	// at the n-th and at the end.
	CPUFirst time.Duration `json:"cpu_first"`
	CPULast  time.Duration `json:"cpu_last"`
	CPUEnd   time.Duration `json:"cpu_end"`
	// Windowed is the most queued jobs the core held in its windows at once
	// (sampled every 100 ms), Hosts the hosts it knew.
	Windowed int `json:"windowed"`
	Hosts    int `json:"hosts"`
	// HeapInuse is the Go heap in use at the n-th request.
	HeapInuse uint64 `json:"heap_inuse"`
}

// memTransport answers every request in memory with a tiny 200: no socket,
// no server. It counts the requests and cancels the run at the n-th.
type memTransport struct {
	n, count atomic.Int64
	start    time.Time
	first    atomic.Int64 // nanoseconds since start, 0 until the first request
	once     sync.Once
	stop     func(time.Duration)
}

var okBody = []byte("ok\n")

func (t *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	k := t.count.Add(1)
	if k == 1 {
		t.first.Store(int64(time.Since(t.start)))
	}
	if k == t.n.Load() {
		t.once.Do(func() { t.stop(time.Since(t.start)) })
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Length": {"3"}, "Content-Type": {"application/octet-stream"}},
		Body:          io.NopCloser(strings.NewReader(string(okBody))),
		ContentLength: int64(len(okBody)), Request: req,
	}, nil
}

// frontierChildMain is `e2e frontier-child -db DB -dir DIR -n N -out FILE
// [-cpuprofile F] [-memprofile F]`: it opens DB, runs the engine with
// politeness off over an in-memory transport until N requests were made,
// and writes what it measured as JSON to FILE.
func frontierChildMain(args []string) int {
	fs := flag.NewFlagSet("frontier-child", flag.ExitOnError)
	dbPath := fs.String("db", "", "database")
	dir := fs.String("dir", "", "download folder")
	n := fs.Int64("n", 100000, "requests to make before stopping")
	workers := fs.Int("workers", 1024, "requests in flight across all hosts")
	out := fs.String("out", "", "result file (JSON)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run here")
	memProfile := fs.String("memprofile", "", "write a heap profile, taken at the n-th request, here")
	_ = fs.Parse(args)
	res, err := frontierChildRun(*dbPath, *dir, *n, *workers, *cpuProfile, *memProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "frontier-child:", err)
		return 1
	}
	b, _ := json.Marshal(res)
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "frontier-child:", err)
		return 1
	}
	return 0
}

func frontierChildRun(dbPath, dir string, n int64, workers int, cpuProfile, memProfile string) (frontierChild, error) {
	var res frontierChild
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return res, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return res, err
		}
		defer pprof.StopCPUProfile()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var heapErr error
	tr := &memTransport{}
	tr.n.Store(n)
	tr.stop = func(at time.Duration) {
		res.LastReq, res.CPULast = at, processCPU()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		res.HeapInuse = ms.HeapInuse
		if memProfile != "" {
			heapErr = writeHeap(memProfile)
		}
		cancel()
	}
	tun := engine.DefaultTunables()
	tun.RatePerMin, tun.Burst, tun.MaxInflight = engine.MaxRatePerMin, engine.MaxBurst, engine.MaxMaxInflight
	tun.JitterMin, tun.JitterMax = 0, 0

	tr.start = time.Now()
	db, err := storage.Open(dbPath)
	if err != nil {
		return res, err
	}
	res.Open = time.Since(tr.start)
	eng, err := engine.New(ctx, db, engine.Options{Dir: dir, Defaults: tun, Workers: workers, Version: "bench",
		Fetch: fetch.Config{Transport: tr}})
	if err != nil {
		db.Close()
		return res, err
	}
	res.New = time.Since(tr.start) - res.Open
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				st := eng.Core().Stats()
				res.Windowed, res.Hosts = max(res.Windowed, st.Windowed), st.Hosts
			}
		}
	}()
	var firstCPU atomic.Int64
	go func() { // the CPU time at the first request, as near to it as a poll gets
		for ctx.Err() == nil && tr.first.Load() == 0 {
			time.Sleep(200 * time.Microsecond)
		}
		firstCPU.Store(int64(processCPU()))
	}()
	runErr := eng.Run(ctx)
	<-sampled
	res.Requests = tr.count.Load()
	res.FirstReq = time.Duration(tr.first.Load())
	res.CPUFirst = time.Duration(firstCPU.Load())
	cerr := eng.Close()
	derr := db.Close()
	res.Total, res.CPUEnd = time.Since(tr.start), processCPU()
	if runErr != nil && runErr != context.Canceled {
		return res, runErr
	}
	if res.Requests < n {
		return res, fmt.Errorf("the run stopped after %d requests of %d", res.Requests, n)
	}
	if heapErr != nil {
		return res, heapErr
	}
	if cerr != nil {
		return res, cerr
	}
	return res, derr
}

func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// processCPU is the user+system CPU time of this process so far.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
