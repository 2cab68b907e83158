// Package bench measures Heed against the tools people use instead of it —
// curl --parallel, wget2, aria2c and a plain Go net/http loop — on the
// loopback demo hosts of heed/engine/demo, measures its frontier over
// databases of millions of queued jobs, and writes BENCHMARKS.md from the
// figures it measured (issues #7, #28, #30).
//
// It is a module of its own (heed/bench), so that Heed's `go test ./...`
// and `go vet ./...` do not build it. The package holds the pieces the
// driver in bench/cmd/e2e puts together:
//
//   - ParseGoBench reads the output of `go test -bench` into GoBench rows;
//   - PlainGet is the floor: N goroutines, one shared http.Client, each body
//     written to a file; PlainGetSHA256 also hashes each body, as Heed must;
//   - Verify checks that every expected file arrived with the right size
//     (and, where a SHA-256 is given, the right bytes);
//   - RunChild runs one tool as a child process and returns its wall time,
//     CPU time and peak resident memory from the kernel's rusage;
//   - Median and Summarize turn repeated runs into the figures the report
//     shows;
//   - ComponentCPU charges a CPU profile's samples to the parts of a
//     download (Components) or of the frontier (FrontierComponents);
//   - BuildFixture and Fixture make databases of many queued jobs fast,
//     with plain SQL, for the frontier benchmark.
//
// `make bench` runs it all (bench/make-bench.sh); nothing in the report is
// typed by hand.
package bench
