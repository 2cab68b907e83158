package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"heed/bench"
)

// The bound on case (b) is computed from the figures of the same run: the
// fastest peer's busy CPU time plus the hash of every byte, over the CPUs.
func TestHashBound_FromTheFastestPeerAndTheHashRate(t *testing.T) {
	sum := func(wall time.Duration, idle float64) bench.Summary { return bench.Summary{Wall: wall, Idle: idle} }
	r := report{
		NProc: 2,
		Cases: []caseResult{{Case: e2eCase{ID: "b"}, Bytes: 1 << 30, Tools: []toolResult{
			{Tool: "heed", Sum: sum(1200*time.Millisecond, 0.05)},
			{Tool: "plain-go", Sum: sum(500*time.Millisecond, 0)}, // a reference, not a peer
			{Tool: "curl", Sum: sum(time.Second, 0.3)},
			{Tool: "wget2", Sum: sum(600*time.Millisecond, 0.02)},
		}}},
		GoBench: []bench.GoBench{{Pkg: "heed/engine/fetch", Name: "BenchmarkSHA256_256KiBPieces-2",
			Metrics: []bench.Metric{{Value: 147585, Unit: "ns/op"}, {Value: 1776, Unit: "MB/s"}}}},
	}
	var b strings.Builder
	r.hashBound(&b)
	out := b.String()
	// wget2: 0.6 s × 2 CPUs × 98 % = 1.18 s; the hash: 1073741824 B / 1776 MB/s = 0.60 s;
	// (1.18 + 0.60) / 2 = 0.89 s = 1.48× 0.6 s.
	require.Contains(t, out, "wget2's runs kept the machine 98 % busy for 0.60 s: 1.18 s of CPU time")
	require.Contains(t, out, "1024.0 MiB (F7), which at the 1776 MB/s")
	require.Contains(t, out, "is 0.60 s of CPU time more")
	require.Contains(t, out, "(1.18 s + 0.60 s) / 2 =\n0.89 s, 1.48× wget2's wall time")

	r.GoBench = nil // no hash rate measured: no bound rather than a made-up one
	b.Reset()
	r.hashBound(&b)
	require.Empty(t, b.String())
}

// Both plain clients are references, never the fastest peer; the goal against the plain client is
// shown for each, and the issue's own ratio of its plain client to curl is set beside theirs.
func TestGoals_BothPlainClientsAndTheIssuesRatio(t *testing.T) {
	sum := func(wall time.Duration) bench.Summary { return bench.Summary{Wall: wall, WallSync: wall} }
	tools := func(heed, curl, tuned, dflt time.Duration) []toolResult {
		return []toolResult{{Tool: "heed", Sum: sum(heed)}, {Tool: "curl", Sum: sum(curl)},
			{Tool: "plain-go", Sum: sum(tuned)}, {Tool: "plain-go/default", Sum: sum(dflt)}}
	}
	r := report{NProc: 2, Cases: []caseResult{
		{Case: e2eCase{ID: "a"}, Tools: tools(1500*time.Millisecond, time.Second, 1200*time.Millisecond, 2*time.Second)},
		{Case: e2eCase{ID: "a5k"}, Tools: tools(400*time.Millisecond, 300*time.Millisecond, 330*time.Millisecond, 660*time.Millisecond)},
		{Case: e2eCase{ID: "b"}, Tools: tools(time.Second, 800*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond)},
	}}
	var b strings.Builder
	r.goals(&b)
	out := b.String()
	require.Contains(t, out, "| (a) faster than the plain Go client (plain-go: 16 idle connections a host) | 1.25× | **no** |")
	require.Contains(t, out, "| (a) faster than the plain Go client on http.DefaultClient (plain-go/default) | 0.75× | yes |")
	require.Contains(t, out, "| (b) within 1.1× of the fastest peer (curl) | 1.25× | **no** |")
	require.Contains(t, out, "the plain client 2.2× curl. In case (a5k) of this run, plain-go/default took\n2.20× curl's wall time and plain-go 1.10×.")
}
