package storage

import (
	"strings"
	"sync"
)

// StartJobs hands each job over as its row stands. Reading that row was most of what a start
// cost: at 20,000 small downloads, 0.37 s of CPU out of 0.47 s, since every commit empties the
// read pool's page cache. A job Enqueue has just created needs no read: its row is what Enqueue wrote. So
// the jobs Enqueue created are kept, as written, until they start (up to maxFresh of them), and
// StartJobs takes a kept job instead of reading its row.
//
// A kept job's row must still be the one Enqueue wrote, and queued. A queued job's row changes
// only when it starts, when the person pauses or cancels it, and when progress is saved for it:
// StartJob, SetJobState and saveProgress forget the job in the transaction that changes it (the
// pause under startMu, as for the start log), and StartJobs takes the job out as it starts it.
// Every other write to the jobs table applies to jobs that are not queued, or that started
// before, which are never kept. A job created by a transaction that rolls back is not kept: what
// a transaction created is kept once it committed (see wtx.created), and a start waits for that
// under startMu, so that none reads the new row as queued and starts it before it is kept.
type freshJobs struct {
	mu   sync.Mutex
	jobs map[int64]freshJob
}

// freshJob is a row as Enqueue writes it: everything else has its default.
type freshJob struct {
	url, host          string
	notBefore, created int64 // unix nanoseconds, as stored
}

// maxFresh is the most jobs kept: about 130 bytes each besides their URLs and hosts. The jobs queued past it
// start with a read of their rows, as before.
const maxFresh = 1 << 16

// keep adds the jobs a committed transaction created, while there is room.
func (f *freshJobs) keep(created map[int64]freshJob) {
	if len(created) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.jobs == nil {
		f.jobs = make(map[int64]freshJob, min(len(created), maxFresh))
	}
	for id, j := range created {
		if len(f.jobs) >= maxFresh {
			return
		}
		f.jobs[id] = j
	}
}

// take returns the kept job id as its row reads, queued, and forgets it.
func (f *freshJobs) take(id int64) (Job, bool) {
	f.mu.Lock()
	j, ok := f.jobs[id]
	if ok {
		delete(f.jobs, id)
		if len(f.jobs) == 0 {
			f.jobs = nil // a map does not shrink: the next paste makes a new one
		}
	}
	f.mu.Unlock()
	if !ok {
		return Job{}, false
	}
	return Job{ID: id, URL: j.url, Host: j.host, State: StateQueued, NotBefore: fromNanos(j.notBefore),
		CreatedAt: fromNanos(j.created), UpdatedAt: fromNanos(j.created), Size: -1}, true
}

// forget drops job id, whose row is changing.
func (f *freshJobs) forget(id int64) {
	f.mu.Lock()
	delete(f.jobs, id)
	f.mu.Unlock()
}

// len is how many jobs are kept, for tests.
func (f *freshJobs) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.jobs)
}

// created records a job the open transaction created, to be kept once it commits.
// A transaction that creates more than maxFresh keeps the first ones.
func (w *wtx) created(id int64, j freshJob) {
	if w.fresh == nil {
		w.fresh = map[int64]freshJob{}
	}
	if len(w.fresh) < maxFresh {
		// Copies: the caller's strings may be cut from a whole paste, which one kept job would
		// otherwise keep in memory.
		j.url, j.host = strings.Clone(j.url), strings.Clone(j.host)
		w.fresh[id] = j
	}
}

// forget drops job id from the kept jobs: the open transaction changes its row.
func (w *wtx) forget(id int64) {
	delete(w.fresh, id)
	w.db.fresh.forget(id)
}
