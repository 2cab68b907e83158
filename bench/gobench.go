package bench

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Metric is one "value unit" pair of a benchmark line, such as 1234 ns/op,
// 12 allocs/op or 8.1e+04 urls/s.
type Metric struct {
	Value float64
	Unit  string
}

// GoBench is one result line of `go test -bench` output.
type GoBench struct {
	Pkg     string   // import path, from the "pkg:" line above it
	Name    string   // "BenchmarkScale-2"
	Iter    int64    // iterations run
	Metrics []Metric // in the order printed, ns/op first
}

// Get returns the value of the metric with the given unit and whether the
// line had it.
func (g GoBench) Get(unit string) (float64, bool) {
	for _, m := range g.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// ParseGoBench reads `go test -bench` output (several packages in a row, as
// `go test ./a/... ./b/...` prints it) and returns every result line. Lines
// that are not results — headers, PASS, ok, log output — are skipped. A
// result line whose figures do not parse is an error naming the line.
func ParseGoBench(r io.Reader) ([]GoBench, error) {
	var out []GoBench
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		iter, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue // "BenchmarkX --- FAIL" and log lines that start alike
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("bench: line %d: odd number of fields in %q", n, line)
		}
		g := GoBench{Pkg: pkg, Name: f[0], Iter: iter}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("bench: line %d: %q is not a number", n, f[i])
			}
			g.Metrics = append(g.Metrics, Metric{Value: v, Unit: f[i+1]})
		}
		out = append(out, g)
	}
	return out, sc.Err()
}

// GoBenchFailures returns each failure `go test -bench` printed: the
// "--- FAIL: Name" line with the indented lines that follow it (the
// test's log), and any "panic:" line.
func GoBenchFailures(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	cur := -1
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "--- FAIL: "), strings.HasPrefix(line, "panic: "),
			strings.HasPrefix(line, "FAIL") && strings.HasSuffix(line, "failed]"): // [build failed], [setup failed]
			out = append(out, strings.TrimSpace(line))
			cur = len(out) - 1
		case cur >= 0 && (strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")):
			out[cur] += " " + strings.TrimSpace(line)
		default:
			cur = -1
		}
	}
	return out, sc.Err()
}
