package bench_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/bench"
)

// A piece of `go tool pprof -traces` output, as it prints a CPU profile.
const traces = `File: bench.test
Type: cpu
Duration: 1.99s, Total samples = 3.35s (168.38%)
-----------+-------------------------------------------------------
      10ms   runtime.unlock2
             runtime.findRunnable
             runtime.schedule
             runtime.mcall
-----------+-------------------------------------------------------
      30ms   runtime.cgocall
             github.com/mattn/go-sqlite3._Cfunc__sqlite3_step_row_internal
             database/sql.(*Stmt).ExecContext
             heed/storage.(*DB).runTx
             heed/storage.(*DB).writer
-----------+-------------------------------------------------------
      20ms   internal/runtime/syscall/linux.Syscall6
             syscall.write
             net/http.(*persistConn).writeLoop
-----------+-------------------------------------------------------
      10ms   runtime.cgocall
             heed/storage.(*DB).StartJobs
             heed/engine.(*Engine).next
             heed/engine.(*Engine).work
-----------+-------------------------------------------------------
      20ms   internal/runtime/syscall/linux.Syscall6
             net.(*conn).Read
             bufio.(*Reader).Read
             net/http.(*bodyEOFSignal).Read
             heed/engine/fetch.(*attempt).stream
-----------+-------------------------------------------------------
      10ms   runtime.memmove
             net/http.(*bodyEOFSignal).Read
             heed/bench.plainOne
-----------+-------------------------------------------------------
      40ms   internal/runtime/syscall/linux.Syscall6
             syscall.openat
             os.(*Root).OpenFile
             heed/engine/fetch.(*attempt).create
             heed/engine.(*Engine).attempt
-----------+-------------------------------------------------------
     1.5s   internal/runtime/syscall/linux.Syscall6
             net.(*netFD).Write
             net/http.(*conn).serve
-----------+-------------------------------------------------------
      10ms   runtime.memmove
             strings.Join (inline)
             some/other.Func
`

func TestComponentCPU_EachSampleToTheFirstComponentOnItsStack(t *testing.T) {
	got, err := bench.ComponentCPU(traces, bench.Components)
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Duration{
		"Go scheduler":                           10 * time.Millisecond,
		"database (storage, SQLite)":             40 * time.Millisecond, // StartJobs under the engine is the database's
		"HTTP client":                            50 * time.Millisecond, // a body read under the downloader, too
		"files: create, write, hash, sync, name": 40 * time.Millisecond,
		"demo hosts (the server side)":           1500 * time.Millisecond,
		bench.Other:                              10 * time.Millisecond,
	}, got)
}

func TestTracesDuration_FromTheHeader(t *testing.T) {
	d, err := bench.TracesDuration(traces)
	require.NoError(t, err)
	assert.Equal(t, 1990*time.Millisecond, d)
	_, err = bench.TracesDuration("Type: cpu\n")
	assert.Error(t, err)
}

func TestComponentCPU_RejectsWhatIsNotTraces(t *testing.T) {
	_, err := bench.ComponentCPU("File: bench.test\nType: cpu\n", bench.Components)
	assert.ErrorContains(t, err, "no samples")
	_, err = bench.ComponentCPU("-----------+----\n  runtime.memmove\n", bench.Components)
	assert.ErrorContains(t, err, "runtime.memmove")
}

// In the frontier's child, a refill's SQLite time is the refills', any other
// storage call's the database's, and the core's own work the core's.
func TestComponentCPU_FrontierParts(t *testing.T) {
	const tr = `Duration: 1s, Total samples = 100ms (10%)
-----------+-------------------------------------------------------
      30ms   runtime.cgocall
             github.com/mattn/go-sqlite3._Cfunc__sqlite3_step_row_internal
             database/sql.(*Rows).Next
             heed/storage.(*DB).NextJobs
             heed/engine.(*Engine).refill
-----------+-------------------------------------------------------
      20ms   runtime.cgocall
             database/sql.(*Stmt).ExecContext
             heed/storage.(*DB).Start
             heed/engine.(*Engine).start
-----------+-------------------------------------------------------
      10ms   heed/engine.(*Core).Refilled
             heed/engine.(*Engine).refill
-----------+-------------------------------------------------------
      15ms   heed/engine.(*Core).Next
             heed/engine.(*Engine).run
-----------+-------------------------------------------------------
      25ms   internal/runtime/syscall/linux.Syscall6
             os.(*File).Sync
             heed/engine/fetch.(*attempt).complete
             heed/engine.(*Engine).attempt
`
	got, err := bench.ComponentCPU(tr, bench.FrontierComponents)
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Duration{
		bench.RefillPart: 30 * time.Millisecond,
		bench.SQLitePart: 20 * time.Millisecond,
		bench.CorePart:   25 * time.Millisecond,
		bench.FetchPart:  25 * time.Millisecond,
	}, got)
}
