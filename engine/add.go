package engine

import (
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"sync"

	"heed/engine/fetch"
)

// AddReport says what Add did with a list of URLs (U4, J1, J2).
type AddReport struct {
	Queued     []int64 // the new jobs, in input order
	Duplicates []string
	// DuplicateStates is the state of the job of each of Duplicates, as it
	// was when the URL was added (an ended one queued again with Again is
	// reported as it was, and counted in Again).
	DuplicateStates []JobState
	Again           int // ended duplicates queued again (AddOptions.Again)
	Rejected        []fetch.Reject
}

// merge adds b to r.
func (r *AddReport) merge(b AddReport) {
	r.Queued = append(r.Queued, b.Queued...)
	r.Duplicates = append(r.Duplicates, b.Duplicates...)
	r.DuplicateStates = append(r.DuplicateStates, b.DuplicateStates...)
	r.Again += b.Again
	r.Rejected = append(r.Rejected, b.Rejected...)
}

// AddOptions change what AddFrom does.
type AddOptions struct {
	// Again queues a URL whose job has ended again, with a fresh attempt
	// budget (R5; heed get --again).
	Again bool
	// Batch, when set, is told what each stored part of the list did, as
	// it is stored; AddFrom then returns no lists, only their lengths'
	// worth in Batch's calls (a list of millions is never held at once).
	Batch func(AddReport)
}

// Add parses text (URLs separated by whitespace or lines), queues the new
// ones (each after its commit, S2) and reports duplicates and rejected
// lines.
func (e *Engine) Add(ctx context.Context, text string) (AddReport, error) {
	return e.AddFrom(ctx, strings.NewReader(text), AddOptions{})
}

// addFirstPart and addMaxPart bound the parts AddFrom stores a list in:
// the first is small, so that downloads start a moment after a long list
// starts, and the last are big, for few commits.
const (
	addFirstPart = 256
	addMaxPart   = 65536
)

// AddFrom reads a list of URLs from r as it comes (J1, G43) and queues it
// in parts, the first of addFirstPart URLs and each next one four times as
// long: each part's jobs go to the core once it is committed, so a running
// engine downloads while the rest is read and stored. A URL given twice is
// one job; the second is reported as a duplicate. If reading or storing a
// part fails, the report holds what the parts before it did, with the
// error.
func (e *Engine) AddFrom(ctx context.Context, r io.Reader, opt AddOptions) (AddReport, error) {
	defer e.Adding()()
	var rep AddReport
	lr := fetch.NewListReader(r)
	var first int64 // the first job this list created: a later repeat of it is one the list queued
	for n := addFirstPart; ; n = min(4*n, addMaxPart) {
		urls, rejects, rerr := lr.Next(n)
		part, err := e.addPart(ctx, urls, opt.Again, &first)
		part.Rejected = rejects
		if opt.Batch != nil {
			opt.Batch(part)
		} else {
			rep.merge(part)
		}
		if err != nil {
			return rep, err
		}
		if errors.Is(rerr, io.EOF) {
			return rep, nil
		}
		if rerr != nil {
			return rep, rerr
		}
	}
}

// addPart stores one part of a list and hands its new jobs to the core.
func (e *Engine) addPart(ctx context.Context, urls []fetch.Parsed, again bool, first *int64) (AddReport, error) {
	var rep AddReport
	if len(urls) == 0 {
		return rep, nil
	}
	jobs := make([]NewJob, 0, len(urls))
	place := make(map[string]int, len(urls)) // a URL given twice in the part: its first place
	of := make([]int, len(urls))
	for i, p := range urls {
		u := p.URL.String()
		k, seen := place[u]
		if !seen {
			k = len(jobs)
			place[u] = k
			// ParseURLList gave the URL its host key as its host.
			jobs = append(jobs, NewJob{URL: u, Key: u, Host: p.URL.Host})
		}
		of[i] = k
	}
	// With again, jobs that had ended before the list are queued again;
	// a job the list itself queued is not, however soon it was done.
	var againBelow int64
	if again {
		againBelow = math.MaxInt64
		if *first > 0 {
			againBelow = *first
		}
	}
	got, err := e.store.Enqueue(ctx, jobs, againBelow)
	if err != nil {
		return rep, err
	}
	told := make([]bool, len(got))
	for _, k := range of {
		switch it := got[k]; {
		case told[k], it.Duplicate && *first > 0 && it.ID >= *first:
			// Given again in the list: the job its first place queued
			// (new ids follow the largest, so it is one of this list's).
			rep.Duplicates = append(rep.Duplicates, fetch.Redact(jobs[k].URL))
			rep.DuplicateStates = append(rep.DuplicateStates, JobQueued)
		case it.Duplicate:
			rep.Duplicates = append(rep.Duplicates, fetch.Redact(jobs[k].URL))
			rep.DuplicateStates = append(rep.DuplicateStates, it.State)
			if it.Again {
				rep.Again++
				e.core.Add(it.ID, jobs[k].Host, it.NotBefore)
			}
		default:
			if *first == 0 {
				*first = it.ID
			}
			rep.Queued = append(rep.Queued, it.ID)
			e.core.Add(it.ID, jobs[k].Host, it.NotBefore)
		}
		told[k] = true
	}
	return rep, nil
}

// Adding tells RunUntilIdle that URLs are on their way: until the function
// it returns is called, it does not return for want of work. AddFrom holds
// it while it stores a list; heed get holds it from before its run starts
// until its URLs are added, so that the run starts on the first of them.
func (e *Engine) Adding() (done func()) {
	e.adding.Add(1)
	var once sync.Once
	return func() {
		once.Do(func() {
			e.adding.Add(-1)
			e.core.signal() // the run loop looks again: it may be idle now
		})
	}
}
