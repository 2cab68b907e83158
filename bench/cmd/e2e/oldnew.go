package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"heed/bench"
)

// oldNewBench is one Go benchmark run in both trees, round after round.
type oldNewBench struct {
	Pkg, Name string // "engine", "BenchmarkDispatch"
	Note      string // what it measures
	Old, New  []bench.GoBench
	// OldTop and NewTop are `go tool pprof -top -cum` of one more run of
	// each, with a CPU profile, for the benchmarks that have profile set.
	OldTop, NewTop string
}

// oldNewResult is the old/new comparison: this tree's BenchmarkDispatch
// and BenchmarkEnqueue (and the 10-host variant laid into both trees) set
// beside an older tree's, measured in turns in one run.
type oldNewResult struct {
	OldTree, OldCommit, NewCommit string
	Rounds                        int
	Load                          []string // load average before each round
	Benches                       []oldNewBench
	Missing                       []string // benchmarks one tree could not run, and why
}

// oldNewPlan lists what is compared: package, benchmark, -test.benchtime, and
// the overlay file (testdata/…_{old,new}_test.go.txt) that adds it where the
// trees do not have it.
var oldNewPlan = []struct {
	pkg, name, benchtime, overlay, note string
	profile                             bool
}{
	{"engine", "BenchmarkDispatch", "1s", "",
		"pick + acquire + observe (+ re-queue) of one request among 10,000 hosts, default tunables (per op)", false},
	{"storage", "BenchmarkEnqueue", "4x", "",
		"100,000 new URLs over 1,000 interleaved hosts in one Enqueue (per op)", true},
	{"storage", "BenchmarkEnqueue10Hosts", "4x", "enqueue10",
		"the same over 10 hosts: the locality of a paste from a few sites (per op)", false},
}

// compareOld builds the engine and storage test binaries of both trees and
// runs each benchmark of oldNewPlan in both, alternating which goes first,
// o.oldRounds times, on the scratch folder's file system (TMPDIR).
func compareOld(ctx context.Context, o options) (*oldNewResult, error) {
	oldTree, err := filepath.Abs(o.old)
	if err != nil {
		return nil, err
	}
	newTree, err := filepath.Abs(o.repo)
	if err != nil {
		return nil, err
	}
	res := &oldNewResult{OldTree: oldTree, OldCommit: commitOf(oldTree), NewCommit: o.commit, Rounds: o.oldRounds}
	if res.NewCommit == "" {
		res.NewCommit = commitOf(newTree)
	}
	dir := filepath.Join(o.tmp, "oldnew")
	gotmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(gotmp, 0o755); err != nil {
		return nil, err
	}
	testdata := filepath.Join(newTree, "bench", "cmd", "e2e", "testdata")
	type binKey struct{ tree, pkg, overlay string }
	bins := map[binKey]string{}
	build := func(tree, which, pkg, overlay string) (string, error) {
		k := binKey{tree, pkg, overlay}
		if b, ok := bins[k]; ok {
			return b, nil
		}
		bin := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.test", which, pkg, overlay))
		args := []string{"test", "-c", "-o", bin}
		if overlay != "" {
			ov := map[string]map[string]string{"Replace": {
				filepath.Join(tree, pkg, "zz_"+overlay+"_bench_test.go"): filepath.Join(testdata, overlay+"_"+which+"_test.go.txt"),
			}}
			b, _ := json.Marshal(ov)
			f := filepath.Join(dir, which+"-"+overlay+"-overlay.json")
			if err := os.WriteFile(f, b, 0o644); err != nil {
				return "", err
			}
			args = append(args, "-overlay", f)
		}
		cmd := exec.Command("go", append(args, "./"+pkg)...)
		cmd.Dir = tree
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		logf("old/new: building %s %s test binary%s", which, pkg, map[bool]string{true: " with " + overlay, false: ""}[overlay != ""])
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("go test -c ./%s in %s: %v: %s", pkg, tree, err, bytes.TrimSpace(out.Bytes()))
		}
		bins[k] = bin
		return bin, nil
	}
	type prepared struct {
		bench    oldNewBench
		old, new string
		time     string
		profile  bool
	}
	var plan []*prepared
	for _, p := range oldNewPlan {
		ob, oerr := build(oldTree, "old", p.pkg, p.overlay)
		nb, nerr := build(newTree, "new", p.pkg, p.overlay)
		if oerr != nil || nerr != nil {
			res.Missing = append(res.Missing, fmt.Sprintf("%s/%s: %v", p.pkg, p.name, firstErr(oerr, nerr)))
			continue
		}
		plan = append(plan, &prepared{bench: oldNewBench{Pkg: p.pkg, Name: p.name, Note: p.note}, old: ob, new: nb,
			time: p.benchtime, profile: p.profile})
	}
	runOne := func(bin, pkgDir, name, benchtime string, extra ...string) (bench.GoBench, error) {
		cmd := exec.CommandContext(ctx, bin, append([]string{"-test.run", "^$", "-test.bench", "^" + name + "$", "-test.benchmem",
			"-test.benchtime", benchtime, "-test.count", "1"}, extra...)...)
		cmd.Dir = pkgDir
		cmd.Env = append(os.Environ(), "TMPDIR="+gotmp)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return bench.GoBench{}, fmt.Errorf("%s %s: %v: %s", bin, name, err, bytes.TrimSpace(out))
		}
		gb, err := bench.ParseGoBench(bytes.NewReader(out))
		if err != nil {
			return bench.GoBench{}, err
		}
		for _, g := range gb {
			if base, _, _ := strings.Cut(g.Name, "-"); base == name {
				return g, nil
			}
		}
		return bench.GoBench{}, fmt.Errorf("%s printed no result for %s: %s", bin, name, bytes.TrimSpace(out))
	}
	for r := range o.oldRounds {
		res.Load = append(res.Load, loadavg())
		for _, p := range plan {
			order := []bool{r%2 == 0, r%2 != 0} // true: old first
			for _, old := range order {
				bin, tree := p.new, newTree
				if old {
					bin, tree = p.old, oldTree
				}
				g, err := runOne(bin, filepath.Join(tree, p.bench.Pkg), p.bench.Name, p.time)
				if err != nil {
					return nil, err
				}
				ns, _ := g.Get("ns/op")
				logf("old/new round %d: %s %s %s: %.0f ns/op", r+1, map[bool]string{true: "old", false: "new"}[old],
					p.bench.Pkg, p.bench.Name, ns)
				if old {
					p.bench.Old = append(p.bench.Old, g)
				} else {
					p.bench.New = append(p.bench.New, g)
				}
			}
		}
	}
	for _, p := range plan {
		if p.profile {
			for _, side := range []struct {
				bin, tree string
				dst       *string
			}{{p.old, oldTree, &p.bench.OldTop}, {p.new, newTree, &p.bench.NewTop}} {
				prof := filepath.Join(dir, "profile.cpu")
				if _, err := runOne(side.bin, filepath.Join(side.tree, p.bench.Pkg), p.bench.Name, p.time,
					"-test.cpuprofile", prof); err != nil {
					return nil, err
				}
				top, err := pprofOut("-top", "-cum", "-nodecount", "25", side.bin, prof)
				if err != nil {
					return nil, err
				}
				*side.dst = top
			}
		}
		res.Benches = append(res.Benches, p.bench)
	}
	return res, os.RemoveAll(dir)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// commitOf is the short commit a tree has checked out, with "+changes"
// when its work tree differs from it; "unknown" without git.
func commitOf(tree string) string {
	out, err := exec.Command("git", "-C", tree, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	// --no-optional-locks: a look that never writes the index.
	if exec.Command("git", "--no-optional-locks", "-C", tree, "diff", "--quiet", "HEAD", "--").Run() != nil {
		c += " + uncommitted changes"
	}
	return c
}

// median of a metric over runs.
func medianMetric(gs []bench.GoBench, unit string) (med, lo, hi float64) {
	var xs []float64
	for i, g := range gs {
		v, _ := g.Get(unit)
		xs = append(xs, v)
		if i == 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return bench.Median(xs), lo, hi
}
