package bench_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"heed/bench"
	"heed/engine"
	"heed/engine/demo"
	"heed/storage"
)

// BenchmarkEngineCaseA runs case (a) of the comparison in-process: 20,000
// files of 1 KiB over 50 demo hosts, politeness off, 16 workers — what
// `heed get --rate 600000 --burst 10000 --max-inflight 16 --jitter 0-0
// --workers 16 -i URLFILE` does, minus the process. Each iteration gets a
// fresh database and folder. Run it with -cpuprofile to see where Heed's
// time goes (make bench does, and puts the top of the profile in
// BENCHMARKS.md). The demo hosts run in the same process, so their cost is
// in the profile too, under heed/engine/demo and net/http's server.
func BenchmarkEngineCaseA(b *testing.B) { benchCase(b, 50, 400, 1<<10) }

// BenchmarkPlainCaseA is case (a) with the plain Go client (PlainGet), in
// the same process as its demo hosts, as BenchmarkEngineCaseA runs Heed: its
// profile beside Heed's shows what Heed adds to each download.
func BenchmarkPlainCaseA(b *testing.B) {
	srv, err := demo.Start(demo.FastConfig(50, 400, 1<<10))
	require.NoError(b, err)
	b.Cleanup(func() { _ = srv.Close() })
	for b.Loop() {
		require.NoError(b, bench.PlainGet(context.Background(), srv.URLs(), b.TempDir(), 16))
	}
	b.SetBytes(int64(50 * 400 << 10))
	b.ReportMetric(float64(len(srv.URLs())*b.N)/b.Elapsed().Seconds(), "urls/s")
	b.ReportMetric(float64(srv.Conns())/float64(b.N), "conns/op")
}

// BenchmarkEngineCaseB is case (b) in-process: 4 files of 256 MiB, one on
// each of 4 demo hosts, politeness off, 16 workers.
func BenchmarkEngineCaseB(b *testing.B) { benchCase(b, 4, 1, 256<<20) }

func benchCase(b *testing.B, hosts, files, size int) {
	srv, err := demo.Start(demo.FastConfig(hosts, files, size))
	require.NoError(b, err)
	b.Cleanup(func() { _ = srv.Close() })
	text := strings.Join(srv.URLs(), "\n")
	tun := engine.DefaultTunables()
	tun.RatePerMin, tun.Burst, tun.MaxInflight, tun.JitterMin, tun.JitterMax = 600000, 10000, 16, 0, 0
	ctx := context.Background()
	n := 0
	for b.Loop() {
		dir := b.TempDir()
		db, err := storage.Open(filepath.Join(dir, "heed.db"))
		require.NoError(b, err)
		eng, err := engine.New(ctx, db, engine.Options{Dir: filepath.Join(dir, "out"),
			Defaults: tun, Workers: 16, Version: "bench"})
		require.NoError(b, err)
		rep, err := eng.Add(ctx, text)
		require.NoError(b, err)
		require.Len(b, rep.Queued, len(srv.URLs()))
		require.NoError(b, eng.RunUntilIdle(ctx))
		counts, err := db.Counts(ctx)
		require.NoError(b, err)
		require.Equal(b, int64(len(rep.Queued)), counts.Done, "every file downloaded")
		require.NoError(b, eng.Close())
		require.NoError(b, db.Close())
		n += len(rep.Queued)
	}
	b.SetBytes(int64(hosts * files * size))
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "urls/s")
	b.ReportMetric(float64(srv.Conns())/float64(b.N), "conns/op")
}

// BenchmarkEngineManyHosts is case (c) in-process: 100,000 queued files of
// 1 KiB over 10,000 demo hosts (each on its own port of 127.0.0.1) with the
// DEFAULT politeness and 16 workers, run for 10 s per iteration. It reports
// requests dispatched per second; with -cpuprofile it shows what each
// dispatched request costs the engine (queueing the URLs is in the
// profile too, but not in requests/s) (the demo hosts' cost is in the same
// profile, under heed/engine/demo and net/http's server).
func BenchmarkEngineManyHosts(b *testing.B) {
	// 10,000 listeners and their connections need more than the usual
	// 1,024 open files: take the hard limit.
	var rl syscall.Rlimit
	require.NoError(b, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl))
	rl.Cur = rl.Max
	require.NoError(b, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl))
	cfg := demo.FastConfig(10000, 10, 1<<10)
	cfg.Addr = func(int) string { return "127.0.0.1:0" }
	srv, err := demo.Start(cfg)
	require.NoError(b, err)
	b.Cleanup(func() { _ = srv.Close() })
	text := strings.Join(srv.URLs(), "\n")
	var reqs int64
	var running time.Duration
	for b.Loop() {
		dir := b.TempDir()
		db, err := storage.Open(filepath.Join(dir, "heed.db"))
		require.NoError(b, err)
		eng, err := engine.New(context.Background(), db, engine.Options{Dir: filepath.Join(dir, "out"),
			Defaults: engine.DefaultTunables(), Workers: 16, Version: "bench"})
		require.NoError(b, err)
		_, err = eng.Add(context.Background(), text)
		require.NoError(b, err)
		before := srv.Requests()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		err = eng.RunUntilIdle(ctx)
		running += time.Since(start)
		cancel()
		require.ErrorIs(b, err, context.DeadlineExceeded)
		reqs += srv.Requests() - before
		require.NoError(b, eng.Close())
		require.NoError(b, db.Close())
	}
	b.ReportMetric(float64(reqs)/running.Seconds(), "requests/s")
}
