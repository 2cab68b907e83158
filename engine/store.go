package engine

import (
	"context"
	"errors"
)

// Reader is what the window and the command line list: jobs, history, hosts
// and their timelines. Every method reads committed state and never blocks
// a writer; lists page by key, never by offset.
type Reader interface {
	Job(ctx context.Context, id int64) (Job, error)
	Jobs(ctx context.Context, q JobQuery) ([]Job, error)
	History(ctx context.Context, q HistoryQuery) ([]Attempt, error)
	// Hosts returns every host the store knows (a saved state, or jobs),
	// with its job counts, ordered by host key.
	Hosts(ctx context.Context) ([]HostState, error)
	// HostCounts returns the job counts of every host that has jobs, by
	// host key (a host without jobs may be left out): what Hosts reports,
	// without the politeness state, for a view that polls every second.
	HostCounts(ctx context.Context) (map[string]Counts, error)
	// HostEvents returns up to limit events of host, newest first (0 = all).
	HostEvents(ctx context.Context, host string, limit int) ([]Event, error)
	// Setting returns a small named value ("" and no error when unset).
	Setting(ctx context.Context, key string) (string, error)
	// Crawls returns every crawl with what it has done, oldest first.
	Crawls(ctx context.Context) ([]Crawl, error)
}

// Store is everything the engine keeps durable. The engine defines it and
// the storage package implements it, so the engine never speaks SQL.
//
// A method that returns an error is on disk when it returns nil: the engine
// acts on a transition only after it is (J3, S2). RecordAttempt, Note,
// Named, SaveHost and AppendEvent return at once and ride the next group
// commit (S5); Flush waits for them and reports their errors.
type Store interface {
	Reader

	// Enqueue adds the URLs that have no job yet (J2, by NewJob.Key) and
	// reports, in input order, what it did with each. A duplicate whose job
	// has ended and whose id is below againBelow is queued again with a
	// fresh budget (R5; 0: none is).
	Enqueue(ctx context.Context, jobs []NewJob, againBelow int64) ([]Enqueued, error)
	// SetState moves the jobs among ids that are in one of the states from
	// to state to, and returns those that changed. A job queued again from
	// an ended state gets a fresh attempt budget (R5).
	SetState(ctx context.Context, ids []int64, from []JobState, to JobState) ([]Changed, error)
	// NextJobs returns up to n queued jobs of host after cursor, in queue
	// order (not_before, id): the frontier's refill (Q1).
	NextJobs(ctx context.Context, host string, after Cursor, n int) ([]Queued, error)
	// Start moves a queued job to active and counts its attempt, recording
	// part as its partial file when it has none yet (J3: before the
	// request; F4: before the file exists). A job no longer queued gives
	// ErrNotQueued; a part another job has recorded, ErrPartTaken.
	Start(ctx context.Context, id int64, part string) (Job, error)
	// SetPart records another part for an active job, whose first choice
	// was taken on disk meanwhile.
	SetPart(ctx context.Context, id int64, part string) error
	// Finish records how an attempt leaves its job (see End), with the
	// links it found (W8), and reports what it did with each of those, in
	// order (ID 0: over the crawl's max pages). A job no longer active
	// (paused or cancelled meanwhile) keeps its state, and Finish says so
	// with ErrNotQueued; its resume state and history are recorded all the
	// same.
	Finish(ctx context.Context, end End) ([]Enqueued, error)
	// Rename records a done job's final name anew, before its part takes
	// it: the name chosen was taken meanwhile (F3).
	Rename(ctx context.Context, id int64, file string) error
	// Unnamed returns done jobs whose part has not taken its final name yet:
	// a crash came between their done commit and the rename.
	Unnamed(ctx context.Context) ([]Job, error)
	// Named records that a done job's part has its final name.
	Named(id int64) error
	// Note records, with the next commit, where a download's bytes go as
	// its body starts, so a crash resumes from there (F5, S2).
	Note(id int64, r Resume) error
	// RecordAttempt adds a history row with the next commit (redirect hops
	// and other exchanges that do not end an attempt).
	RecordAttempt(a Attempt) error

	// CreateCrawl stores a new crawl, running, with its seeds as its first
	// jobs (their CrawlID set to its id) in the same commit, and returns
	// its id and what it did with each seed, as Enqueue does.
	CreateCrawl(ctx context.Context, c Crawl, seeds []NewJob) (int64, []Enqueued, error)
	// SetCrawlState runs, pauses or cancels a crawl, its jobs with it, and
	// returns the jobs that changed.
	SetCrawlState(ctx context.Context, id int64, to CrawlState) ([]Changed, error)
	// Robots returns host's robots.txt as last fetched (ok false: never).
	Robots(ctx context.Context, host string) (RobotsFile, bool, error)
	// SaveRobots keeps a host's robots.txt, with the next commit.
	SaveRobots(r RobotsFile) error

	SaveHost(s HostState) error
	AppendEvent(e Event) error
	SetSetting(ctx context.Context, key, value string) error
	Flush(ctx context.Context) error
}

// Errors a Store returns, wrapped.
var (
	// ErrNotQueued: the job is not in a state that allows the transition
	// (paused or cancelled meanwhile).
	ErrNotQueued = errors.New("job is not queued")
	// ErrPartTaken: another job has recorded that part name.
	ErrPartTaken = errors.New("part name is taken by another job")
	// ErrNotFound: no such job.
	ErrNotFound = errors.New("not found")
	// ErrNotLeased: in a fleet (SPEC §12), the job's host is no longer
	// leased to this worker: another runs it, and this one changes nothing
	// of it.
	ErrNotLeased = errors.New("its host is run by another worker now")
)
