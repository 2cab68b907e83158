package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"heed/bench"
	"heed/engine/demo"
)

// e2eCase is one download comparison: Hosts demo hosts with Files files of
// Size bytes each.
type e2eCase struct {
	ID, Title          string
	Hosts, Files, Size int
	Runs               int
	ShaEvery           int // check the SHA-256 of every ShaEvery-th file
}

// toolResult is one tool's runs on one case.
type toolResult struct {
	Tool    string
	Version string
	Runs    []bench.Measure
	Sum     bench.Summary
}

// caseResult is one case, every tool.
type caseResult struct {
	Case    e2eCase
	Total   int // files
	Bytes   int64
	Sampled int // files checked by SHA-256 after each run
	Tools   []toolResult
	// LoadBefore and LoadAfter are the load average (1, 5, 15 min) before
	// the case's first run and after its last.
	LoadBefore, LoadAfter string
}

// runCase serves the case's files from an in-process demo server and runs
// every tool Runs times, the tools taking turns so that a noisy minute
// on the shared machine does not fall on one tool only. Each run gets a
// fresh, empty folder and is checked file by file; a run that did not
// download everything ends the benchmark with an error.
func runCase(ctx context.Context, o options, rn bench.Runner, c e2eCase, tools []bench.Tool) (caseResult, error) {
	srv, err := demo.Start(demo.FastConfig(c.Hosts, c.Files, c.Size))
	if err != nil {
		return caseResult{}, err
	}
	defer srv.Close()
	urls := srv.URLs()
	res := caseResult{Case: c, Total: len(urls), LoadBefore: loadavg()}
	want := make([]bench.Want, len(urls))
	for i, u := range urls {
		name, err := bench.FileName(u)
		if err != nil {
			return res, err
		}
		want[i] = bench.Want{Name: name}
		if c.ShaEvery > 0 && i%c.ShaEvery == 0 {
			want[i].SHA256, want[i].Size = srv.Expected(u)
			res.Sampled++
		} else {
			_, want[i].Size = srv.Expected(u)
		}
		res.Bytes += want[i].Size
	}
	root := filepath.Join(o.tmp, "case-"+c.ID)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return res, err
	}
	urlFile := filepath.Join(root, "urls.txt")
	if err := os.WriteFile(urlFile, []byte(strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
		return res, err
	}
	res.Tools = make([]toolResult, len(tools))
	for i, t := range tools {
		res.Tools[i].Tool = t.Name
	}
	for r := range c.Runs {
		for k := range tools {
			i := (k + r) % len(tools)
			t := tools[i]
			m, err := runOnce(rn, root, t, bench.Job{URLs: urls, URLFile: urlFile, Workers: 16}, want, r)
			if err != nil {
				return res, fmt.Errorf("%s run %d: %w", t.Name, r+1, err)
			}
			logf("  %-8s run %d: %v wall, %v cpu, machine %s idle, %.1f MiB max RSS, then %v sync", t.Name, r+1,
				m.Wall.Round(1e6), (m.User + m.Sys).Round(1e6), percent(m.Idle), float64(m.MaxRSS)/(1<<20), m.Sync.Round(1e6))
			res.Tools[i].Runs = append(res.Tools[i].Runs, m)
		}
	}
	for i := range res.Tools {
		res.Tools[i].Sum = bench.Summarize(res.Tools[i].Runs)
	}
	res.LoadAfter = loadavg()
	return res, ctx.Err()
}

// runOnce runs t once in fresh folders under root and verifies the result.
func runOnce(rn bench.Runner, root string, t bench.Tool, j bench.Job, want []bench.Want, r int) (bench.Measure, error) {
	base := filepath.Join(root, fmt.Sprintf("%s-%d", t.Name, r))
	j.Dir, j.Scratch = filepath.Join(base, "out"), filepath.Join(base, "scratch")
	for _, d := range []string{j.Dir, j.Scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return bench.Measure{}, err
		}
	}
	args, err := t.Args(j)
	if err != nil {
		return bench.Measure{}, err
	}
	cmd := exec.Command(t.Bin, args...)
	cmd.Dir = j.Scratch
	m, err := rn.Run(cmd)
	if err != nil {
		return m, err
	}
	// Flush what the tool left in the page cache, timed, so the next run
	// starts with nothing of this one still being written back.
	if m.Sync, err = bench.SyncDir(j.Dir); err != nil {
		return m, err
	}
	if err := bench.Verify(j.Dir, want); err != nil {
		return m, err
	}
	// The scratch folder is a file system made for the run, with a journal: a deletion costs the
	// next run's creates nothing (see make-bench.sh).
	return m, os.RemoveAll(base)
}
