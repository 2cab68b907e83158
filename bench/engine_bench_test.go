package bench_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
func BenchmarkEngineCaseA(b *testing.B) {
	srv, err := demo.Start(demo.FastConfig(50, 400, 1<<10))
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
		eng, err := engine.New(ctx, storage.EngineStore(db), engine.Options{Dir: filepath.Join(dir, "out"),
			Defaults: tun, Workers: 16, Version: "bench"})
		require.NoError(b, err)
		rep, err := eng.Add(ctx, text)
		require.NoError(b, err)
		require.Len(b, rep.Queued, len(srv.URLs()))
		require.NoError(b, eng.RunUntilIdle(ctx))
		counts, err := db.CountsByState(ctx)
		require.NoError(b, err)
		require.Equal(b, int64(len(rep.Queued)), counts[storage.StateDone], "every file downloaded")
		require.NoError(b, eng.Close())
		require.NoError(b, db.Close())
		n += len(rep.Queued)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "urls/s")
}
