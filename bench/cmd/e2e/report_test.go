package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"heed/bench"
)

// The goals of issue #28 are read from the medians of the same run: case (a)
// against curl, wget2 and aria2c, case (b) against the plain client that also
// hashes, and the old/new ratios of the Go benchmarks.
func TestGoals_Issue28FromTheMedians(t *testing.T) {
	sum := func(wall time.Duration) bench.Summary { return bench.Summary{Wall: wall, WallSync: wall} }
	gb := func(ns, allocs float64) bench.GoBench {
		return bench.GoBench{Name: "X-2", Metrics: []bench.Metric{{Value: ns, Unit: "ns/op"}, {Value: allocs, Unit: "allocs/op"}}}
	}
	r := report{NProc: 2, Cases: []caseResult{
		{Case: e2eCase{ID: "a"}, LoadBefore: "0.50 0.40 0.30", Tools: []toolResult{{Tool: "heed", Sum: sum(1500 * time.Millisecond)},
			{Tool: "curl", Sum: sum(time.Second)}, {Tool: "wget2", Sum: sum(1400 * time.Millisecond)}, {Tool: "aria2c", Sum: sum(9 * time.Second)}}},
		{Case: e2eCase{ID: "b"}, Tools: []toolResult{{Tool: "heed", Sum: sum(time.Second)},
			{Tool: "plain-go+sha256", Sum: sum(800 * time.Millisecond)}}},
	}, OldNew: &oldNewResult{OldCommit: "f856227", Load: []string{"1.00 1.00 1.00"}, Benches: []oldNewBench{
		{Pkg: "engine", Name: "BenchmarkDispatch", Old: []bench.GoBench{gb(700, 0), gb(690, 0), gb(710, 0)},
			New: []bench.GoBench{gb(750, 0), gb(760, 0), gb(740, 0)}},
		{Pkg: "storage", Name: "BenchmarkEnqueue", Old: []bench.GoBench{gb(500, 9)}, New: []bench.GoBench{gb(600, 9)}},
	}}}
	var b strings.Builder
	r.goals(&b)
	out := b.String()
	require.Contains(t, out, "| (a) at most 2.0× curl --parallel | 1.50× | yes | 0.50 0.40 0.30 |")
	require.Contains(t, out, "| (a) faster than wget2 | 1.07× | **no** |")
	require.Contains(t, out, "| (a) faster than aria2c | 0.17× | yes |")
	require.Contains(t, out, "| (b) at most 1.1× the plain client that also hashes (plain-go+sha256) | 1.25× | **no** |")
	require.Contains(t, out, "| BenchmarkDispatch with 0 allocations | 0 allocs/op (at most 0) | yes |")
	require.Contains(t, out, "| BenchmarkDispatch within 10 % of f856227's | 1.07× | yes |")
	require.Contains(t, out, "| BenchmarkEnqueue within 10 % of f856227's | 1.20× | **no** |")
}
