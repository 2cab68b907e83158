package bench_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/bench"
	"heed/engine/demo"
)

const goBenchOutput = `goos: linux
goarch: amd64
pkg: heed/engine
cpu: AMD EPYC
BenchmarkDispatch-2   	 1000000	      1052 ns/op	     120 B/op	       3 allocs/op
BenchmarkScale-2      	       1	2500000000 ns/op	   4.1e+05 jobs/s	 210.5 MB-rss
--- FAIL: BenchmarkBroken
BenchmarkBroken-2 FAIL
PASS
ok  	heed/engine	12.3s
pkg: heed/storage
BenchmarkEnqueue-2    	     100	  10000000 ns/op	  95000 rows/s	 800000 B/op	   20000 allocs/op
ok  	heed/storage	3.1s
`

func TestParseGoBench_KeepsNameAndEveryMetric(t *testing.T) {
	got, err := bench.ParseGoBench(strings.NewReader(goBenchOutput))
	require.NoError(t, err)
	require.Len(t, got, 3)
	tests := []struct {
		name       string
		i          int
		pkg, bench string
		iter       int64
		unit       string
		want       float64
	}{
		{"ns/op", 0, "heed/engine", "BenchmarkDispatch-2", 1000000, "ns/op", 1052},
		{"allocs/op", 0, "heed/engine", "BenchmarkDispatch-2", 1000000, "allocs/op", 3},
		{"custom metric with exponent", 1, "heed/engine", "BenchmarkScale-2", 1, "jobs/s", 4.1e5},
		{"custom metric with fraction", 1, "heed/engine", "BenchmarkScale-2", 1, "MB-rss", 210.5},
		{"second package", 2, "heed/storage", "BenchmarkEnqueue-2", 100, "rows/s", 95000},
		{"B/op after a custom metric", 2, "heed/storage", "BenchmarkEnqueue-2", 100, "B/op", 800000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := got[tt.i]
			assert.Equal(t, tt.pkg, g.Pkg)
			assert.Equal(t, tt.bench, g.Name)
			assert.Equal(t, tt.iter, g.Iter)
			v, ok := g.Get(tt.unit)
			assert.True(t, ok)
			assert.InDelta(t, tt.want, v, 1e-9)
		})
	}
	_, ok := got[0].Get("urls/s")
	assert.False(t, ok, "a metric the line does not have")
}

func TestParseGoBench_BadFigureIsAnError(t *testing.T) {
	_, err := bench.ParseGoBench(strings.NewReader("BenchmarkX-2 10 abc ns/op\n"))
	assert.ErrorContains(t, err, "line 1")
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"none", nil, 0},
		{"one", []float64{3}, 3},
		{"odd count, unsorted", []float64{5, 1, 3}, 3},
		{"even count takes the mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"an outlier does not move it", []float64{1, 2, 1000}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.in...)
			assert.Equal(t, tt.want, bench.Median(tt.in))
			assert.Equal(t, in, tt.in, "input left as it was")
		})
	}
}

func TestSummarize_MediansAndSpread(t *testing.T) {
	s := bench.Summarize([]bench.Measure{
		{Wall: 3 * time.Second, User: time.Second, Sys: time.Second, MaxRSS: 30, Sync: time.Second, Idle: 0.2},
		{Wall: time.Second, User: time.Second, MaxRSS: 10, Sync: 5 * time.Second, Idle: -1},
		{Wall: 2 * time.Second, User: 2 * time.Second, MaxRSS: 20, Idle: 0.4},
	})
	assert.InDelta(t, 0.3, s.Idle, 1e-9, "a run whose idle share is unknown is left out of its median")
	s.Idle = 0
	assert.Equal(t, bench.Summary{Runs: 3, Wall: 2 * time.Second, MinW: time.Second, MaxW: 3 * time.Second,
		CPU: 2 * time.Second, MaxRSS: 20, Sync: time.Second, WallSync: 4 * time.Second}, s)
	assert.Equal(t, -1.0, bench.Summarize([]bench.Measure{{Idle: -1}}).Idle, "unknown for every run")
}

func TestVerify_EveryFileSizeAndSampledHash(t *testing.T) {
	dir := t.TempDir()
	body := []byte("hello, heed")
	sum := sha256.Sum256(body)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.bin"), body, 0o644))
	good := bench.Want{Name: "a.bin", Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}
	tests := []struct {
		name    string
		want    []bench.Want
		wantErr string
	}{
		{"size and hash right", []bench.Want{good}, ""},
		{"size only", []bench.Want{{Name: "a.bin", Size: int64(len(body))}}, ""},
		{"missing file", []bench.Want{good, {Name: "b.bin", Size: 1}}, "1 of 2 files"},
		{"wrong size", []bench.Want{{Name: "a.bin", Size: 3}}, "want 3"},
		{"wrong bytes", []bench.Want{{Name: "a.bin", Size: int64(len(body)), SHA256: strings.Repeat("0", 64)}}, "sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := bench.Verify(dir, tt.want)
			if tt.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tt.wantErr)
			}
		})
	}
}

func TestPlainGet_DownloadsEveryFileByteExact(t *testing.T) {
	srv, err := demo.Start(demo.FastConfig(3, 7, 3000))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	dir := t.TempDir()
	require.NoError(t, bench.PlainGet(context.Background(), srv.URLs(), dir, 4))
	assert.NoError(t, bench.Verify(dir, everyFile(t, srv)))
	assert.Equal(t, int64(21), srv.Requests())
}

// everyFile is every file of srv as a run must leave it: name, size and SHA-256.
func everyFile(t *testing.T, srv *demo.Server) []bench.Want {
	var want []bench.Want
	for _, u := range srv.URLs() {
		name, err := bench.FileName(u)
		require.NoError(t, err)
		sum, size := srv.Expected(u)
		want = append(want, bench.Want{Name: name, Size: size, SHA256: sum})
	}
	return want
}

func TestPlainGetSHA256_HashesEveryFileAsItIsWritten(t *testing.T) {
	srv, err := demo.Start(demo.FastConfig(2, 5, 70_000))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	dir := t.TempDir()
	var mu sync.Mutex
	got := map[string]string{}
	require.NoError(t, bench.PlainGetSHA256(context.Background(), srv.URLs(), dir, 3, func(name, sum string) {
		mu.Lock()
		defer mu.Unlock()
		got[name] = sum
	}))
	want := map[string]string{}
	for _, u := range srv.URLs() {
		name, err := bench.FileName(u)
		require.NoError(t, err)
		want[name], _ = srv.Expected(u)
	}
	assert.Equal(t, want, got)
	require.NoError(t, bench.PlainGetSHA256(context.Background(), srv.URLs(), t.TempDir(), 3, nil), "nil drops the sums")
}

func TestPlainGetDefault_SameFilesOnTheDefaultClientsConnections(t *testing.T) {
	// One host, 8 workers: the tuned client keeps its 8 connections to it
	// open, the default client 2, so it opens new ones through the run.
	count := func(get func(context.Context, []string, string, int) error) int64 {
		srv, err := demo.Start(demo.FastConfig(1, 400, 1000))
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		dir := t.TempDir()
		require.NoError(t, get(context.Background(), srv.URLs(), dir, 8))
		require.NoError(t, bench.Verify(dir, everyFile(t, srv)))
		require.Equal(t, int64(400), srv.Requests())
		return srv.Conns()
	}
	tuned, dflt := count(bench.PlainGet), count(bench.PlainGetDefault)
	t.Logf("connections: tuned %d, default %d", tuned, dflt)
	assert.Greater(t, dflt, 4*tuned, "the default client keeps 2 idle connections a host and opens the rest again")
}

func TestSyncDir_FlushesTheFolder(t *testing.T) {
	_, err := bench.SyncDir(t.TempDir())
	assert.NoError(t, err)
	_, err = bench.SyncDir(filepath.Join(t.TempDir(), "missing"))
	assert.Error(t, err)
}

func TestPlainGet_StatusOtherThan200IsAnError(t *testing.T) {
	srv, err := demo.Start(demo.FastConfig(1, 1, 10))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	missing := srv.Hosts()[0].BaseURL + "/files/nothing.bin"
	err = bench.PlainGet(context.Background(), []string{missing}, t.TempDir(), 2)
	assert.ErrorContains(t, err, "404")
}

func TestTools_SameFilesSameConcurrency(t *testing.T) {
	urls := []string{"http://127.0.0.2:80/files/fast0-00000.bin", "http://127.0.0.3:80/files/fast1-00000.bin"}
	tests := []struct {
		tool bench.Tool
		want []string // arguments that must be there
	}{
		{bench.Heed("heed"), []string{"get", "--workers 16", "--max-inflight 16", "--jitter 0-0", "-i URLS", "--dir OUT"}},
		{bench.HeedOld("old/heed"), []string{"get", "--workers 16", "--max-inflight 16", "--jitter 0-0", "-i URLS", "--dir OUT"}},
		{bench.Curl(), []string{"--parallel", "--parallel-max 16", "--output-dir OUT", "--fail"}},
		{bench.Wget2(), []string{"--max-threads=16", "-i URLS", "-P OUT"}},
		{bench.Aria2(), []string{"-j 16", "-i URLS", "-d OUT", "--split=1", "--auto-file-renaming=false"}},
		{bench.Plain("self"), []string{"plain", "-j 16", "-i URLS", "-P OUT"}},
		{bench.PlainSHA256("self"), []string{"plain", "-sha256", "-j 16", "-i URLS", "-P OUT"}},
		{bench.PlainDefault("self"), []string{"plain", "-default", "-j 16", "-i URLS", "-P OUT"}},
	}
	for _, tt := range tests {
		t.Run(tt.tool.Name, func(t *testing.T) {
			scratch := t.TempDir()
			args, err := tt.tool.Args(bench.Job{URLs: urls, URLFile: "URLS", Dir: "OUT", Scratch: scratch, Workers: 16})
			require.NoError(t, err)
			line := " " + strings.Join(args, " ") + " "
			for _, w := range tt.want {
				assert.Contains(t, line, " "+w+" ")
			}
		})
	}
	t.Run("curl config names every file", func(t *testing.T) {
		scratch := t.TempDir()
		_, err := bench.Curl().Args(bench.Job{URLs: urls, Scratch: scratch, Workers: 16})
		require.NoError(t, err)
		cfg, err := os.ReadFile(filepath.Join(scratch, "curl.cfg"))
		require.NoError(t, err)
		assert.Equal(t, "url = \""+urls[0]+"\"\noutput = \"fast0-00000.bin\"\n"+
			"url = \""+urls[1]+"\"\noutput = \"fast1-00000.bin\"\n", string(cfg))
	})
}

func TestRunChild_MeasuresAndReportsFailure(t *testing.T) {
	m, err := bench.RunChild(exec.Command("sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"))
	require.NoError(t, err)
	assert.Positive(t, m.Wall)
	assert.Positive(t, m.User+m.Sys, "CPU time from rusage")
	assert.Positive(t, m.MaxRSS, "peak RSS from rusage")

	_, err = bench.RunChild(exec.Command("sh", "-c", "echo broken >&2; exit 3"))
	assert.ErrorContains(t, err, "broken")
}

func TestChild_InterruptIsACleanStop(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		wantErr bool
	}{
		{"killed by SIGINT", "sleep 30", false},
		{"exits 130 on SIGINT, like heed", "trap 'exit 130' INT; while :; do sleep 0.01; done", false},
		{"exited with a failure before", "exit 2", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := bench.StartChild(exec.Command("sh", "-c", tt.script))
			require.NoError(t, err)
			if tt.wantErr {
				<-ch.Exited()
			}
			_, err = ch.Interrupt()
			if tt.wantErr {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// TestRunner_WrapperKeepsTheParentsPeakOutOfTheChilds holds the reason the
// rusage wrapper exists: measured directly, a child's max RSS is at least
// its Go parent's; measured through the wrapper, it is the child's own.
func TestRunner_WrapperKeepsTheParentsPeakOutOfTheChilds(t *testing.T) {
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "rusage")
	build := exec.Command("go", "build", "-o", wrapper, "./cmd/rusage")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	ballast := make([]byte, 256<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1 // each page resident, not just reserved
	}
	direct, err := bench.RunChild(exec.Command("true"))
	require.NoError(t, err)
	wrapped, err := bench.Runner{Wrapper: wrapper, Dir: dir}.Run(exec.Command("true"))
	require.NoError(t, err)
	runtime.KeepAlive(ballast)

	assert.GreaterOrEqual(t, direct.MaxRSS, int64(200<<20), "direct: the parent's peak shows through")
	assert.Less(t, wrapped.MaxRSS, int64(64<<20), "wrapped: the child's own peak")
	assert.Positive(t, wrapped.Wall)

	_, err = bench.Runner{Wrapper: wrapper, Dir: dir}.Run(exec.Command("sh", "-c", "echo broken >&2; exit 3"))
	assert.ErrorContains(t, err, "broken", "a failing child is an error through the wrapper too")

	ch, err := bench.Runner{Wrapper: wrapper, Dir: dir}.Start(exec.Command("sleep", "30"))
	require.NoError(t, err)
	m, err := ch.Interrupt()
	assert.NoError(t, err, "SIGINT is passed on and is a clean stop")
	assert.Less(t, m.Wall, 20*time.Second, "the child stopped on SIGINT rather than running out its 30 s")
}

func TestGoBenchFailures_EachWithItsLog(t *testing.T) {
	got, err := bench.GoBenchFailures(strings.NewReader("BenchmarkA-2 10 5 ns/op\n--- FAIL: BenchmarkOpenLarge/Hosts\n    bench_test.go:198: 0 hosts listed\nBenchmarkB-2 1 2 ns/op\n--- FAIL: BenchmarkOpenLarge\n    bench_test.go:154: built\nFAIL\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"--- FAIL: BenchmarkOpenLarge/Hosts bench_test.go:198: 0 hosts listed",
		"--- FAIL: BenchmarkOpenLarge bench_test.go:154: built"}, got)
}
