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
             heed/engine/fetch.(*h1Body).Read
             heed/engine/fetch.(*attempt).stream
-----------+-------------------------------------------------------
      10ms   runtime.memmove
             net/http.(*bodyEOFSignal).Read
             heed/bench.plainOne
-----------+-------------------------------------------------------
      40ms   internal/runtime/syscall/linux.Syscall6
             golang.org/x/sys/unix.openat
             heed/engine/fetch.openUnnamed
             heed/engine/fetch.(*attempt).hold
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
	got, err := bench.ComponentCPU(traces)
	require.NoError(t, err)
	assert.Equal(t, map[string]time.Duration{
		"Go scheduler":                           10 * time.Millisecond,
		"database (storage, SQLite)":             40 * time.Millisecond, // StartJobs under the engine is the database's
		"HTTP client":                            50 * time.Millisecond, // a body read, Heed's or the plain client's, too
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
	_, err := bench.ComponentCPU("File: bench.test\nType: cpu\n")
	assert.ErrorContains(t, err, "no samples")
	_, err = bench.ComponentCPU("-----------+----\n  runtime.memmove\n")
	assert.ErrorContains(t, err, "runtime.memmove")
}
