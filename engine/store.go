package engine

import (
	"context"
	"errors"
	"io"
	"time"
)

// Store is everything the engine keeps durable. The engine defines it and
// the storage package implements it (storage.EngineStore), so the engine
// never speaks SQL and can be tested with any Store.
//
// Job transitions (StartJobs, FinishJobs, MarkQueued, MarkFailed) must be
// on disk when they return: the engine acts on a transition only after it
// is (J3). RecordAttempt, SaveHost and AppendEvent may be batched
// (S5); Flush waits for them.
type Store interface {
	// Enqueue adds URLs that have no job yet and reports, in input order,
	// which were queued and which already had a job (J2). It returns after
	// commit (S2).
	Enqueue(ctx context.Context, jobs []NewJob) ([]Enqueued, error)
	// Requeue gives done, failed or cancelled jobs a fresh attempt budget (R5).
	Requeue(ctx context.Context, ids []int64) ([]int64, error)
	// JobIDsByURL returns the ids of the jobs of these URLs (unknown ones skipped).
	JobIDsByURL(ctx context.Context, urls []string) ([]int64, error)
	// ForEachQueued calls fn for every queued job, to fill the scheduler.
	ForEachQueued(ctx context.Context, fn func(id int64, host string, notBefore time.Time) error) error
	// Job returns one job.
	Job(ctx context.Context, id int64) (JobRecord, error)
	// StartJobs moves queued jobs to active, on disk when it returns,
	// counting the attempt each starts, and returns them as they now stand,
	// aligned with ids; a job no longer queued (paused or cancelled
	// meanwhile, or started already) has a zero ID. Every later transition
	// finds the job active. MarkQueued with Throttled gives the attempt back
	// (R3).
	StartJobs(ctx context.Context, ids []int64) ([]JobRecord, error)
	// FinishJobs records each attempt (S3) and marks each job done with its
	// final name, in one commit. The result is aligned with done: a job no
	// longer active gets an error wrapping ErrNotQueued, its attempt
	// recorded all the same and its complete part recorded for a resume. A
	// job marked done whose Completed has a Part or is Held is listed as
	// unnamed, in the same commit, until Named clears it.
	FinishJobs(ctx context.Context, done []Finished) ([]error, error)
	// Unnamed returns the downloads FinishJobs listed and Named has not
	// cleared: a crash came between the commit and the renaming.
	Unnamed(ctx context.Context) ([]Unnamed, error)
	// Interrupted returns the jobs a crash left active, queued again when
	// the database was opened after it (S2), until ClearInterrupted clears
	// them.
	Interrupted(ctx context.Context) ([]Interrupted, error)
	ClearInterrupted(ctx context.Context, ids []int64) error
	// Named clears downloads listed as unnamed once their parts have their
	// names (or could not get them); it may be batched like RecordAttempt.
	Named(ns []Named) error
	MarkQueued(ctx context.Context, id int64, r Requeued) error
	MarkFailed(ctx context.Context, id int64, reason string, status int) error
	// SaveResume records what is on disk of a download, for resume (F5).
	SaveResume(ctx context.Context, id int64, r Resume) error
	// NoteResume is SaveResume committed with the next batch: it returns at
	// once, and lands before any later transition of the job.
	NoteResume(id int64, r Resume) error
	// SetJobState applies pause (paused), resume (queued) or cancel
	// (cancelled) and returns the ids that changed.
	SetJobState(ctx context.Context, ids []int64, to JobState) ([]int64, error)

	// Reads for the window and the command line.
	Jobs(ctx context.Context, q JobQuery) ([]JobRecord, error)
	History(ctx context.Context, q HistoryQuery) ([]AttemptRecord, error)
	ExportHistoryCSV(ctx context.Context, w io.Writer, q HistoryQuery) error
	HostEvents(ctx context.Context, host string, limit int) ([]Event, error)
	CountsByHost(ctx context.Context) (map[string]map[JobState]int64, error)

	// Settings are small named values (the default tunables as JSON, UI
	// preferences); an unknown key gives "" and no error.
	Setting(ctx context.Context, key string) (string, error)
	SetSetting(ctx context.Context, key, value string) error

	RecordAttempt(a AttemptRecord) error
	SaveHost(s HostState) error
	AppendEvent(e Event) error
	LoadHosts(ctx context.Context) ([]HostState, error)
	Flush(ctx context.Context) error
}

// ErrNotQueued is what a Store returns (wrapped) when a job is not in the
// state a transition expects: paused or cancelled meanwhile.
var ErrNotQueued = errors.New("job is not queued")

// Interrupted is a job a crash left active, with the download folder of
// the run it cut off ("" when unknown; see runFolderKey).
type Interrupted struct {
	JobID  int64
	Folder string
}

// JobState is a job's state (J3).
type JobState string

// The job states of J3.
const (
	JobQueued    JobState = "queued"
	JobActive    JobState = "active"
	JobPaused    JobState = "paused"
	JobDone      JobState = "done"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
)

// NewJob is a URL to queue, with its host key.
type NewJob struct {
	URL  string
	Host string
}

// Enqueued says what Enqueue did with one URL.
type Enqueued struct {
	ID        int64
	Duplicate bool     // the URL already had a job, left as it was
	State     JobState // the job's state
}

// JobRecord is a job as stored.
type JobRecord struct {
	ID         int64
	URL        string
	Host       string
	State      JobState
	NotBefore  time.Time // queued: not started before this
	UpdatedAt  time.Time
	Attempts   int // attempts started, throttled ones included
	Throttled  int // throttle responses (R3: they use no attempt)
	Resume     Resume
	File       string // done: the final name in the download folder
	SHA256     string // done: hex digest (F7)
	LastError  string
	LastStatus int
}

// JobQuery selects jobs, ordered by id. Zero fields do not filter.
type JobQuery struct {
	State   JobState
	Host    string
	AfterID int64 // keyset paging: only jobs with a larger id
	Limit   int   // 0 = no limit
}

// HistoryQuery selects attempts, newest first. Zero fields do not filter.
type HistoryQuery struct {
	Host     string
	Outcome  string
	BeforeID int64 // keyset paging: only attempts with a smaller id
	Limit    int   // 0 = no limit
}

// Resume is the partial download a job has on disk (F5).
type Resume struct {
	Part         string // partial file name in the download folder, "" if none
	Bytes        int64
	Size         int64 // expected total, -1 unknown
	ETag         string
	LastModified string
}

// Requeued is why and until when an active job goes back to the queue.
type Requeued struct {
	NotBefore time.Time
	Err       string
	Status    int
	Throttled bool // a throttle response: counted apart from attempts (R3)
	Resume    Resume
}

// Completed describes a finished download.
type Completed struct {
	File   string // final name in the download folder
	Bytes  int64
	SHA256 string
	Status int
	// Part is the complete part that is to take the name File; Size,
	// ETag and LastModified are its resume state, recorded instead if the
	// job is no longer active (see FinishJobs).
	Part         string
	Size         int64
	ETag         string
	LastModified string
	// Held says the download is in a file with no name instead of a part
	// (fetch.Result.Held): listed as unnamed all the same, with no part.
	Held bool
}

// Unnamed is a download recorded done whose part may not have its final
// name yet.
type Unnamed struct {
	JobID  int64
	Part   string // the complete part; "" for a download held in a file with no name
	File   string // the final name recorded for it
	Bytes  int64
	SHA256 string
}

// Named says how a download listed as unnamed got its final name.
type Named struct {
	JobID int64
	// File, if set, is the name the part took instead of the one recorded,
	// which was taken meanwhile.
	File string
	// Err, if set, is why the part got no name: the job fails with this
	// reason, its part kept for a later resume.
	Err string
	// Lost, with Err, says the download was found nowhere: the job fails
	// and keeps no part (its part name may hold another download's bytes).
	Lost bool
	// Again says a held download (Completed.Held) went with a crash before
	// it had its name: the job is queued again.
	Again bool
}

// Finished is one download complete on disk: its attempt and its file.
type Finished struct {
	Attempt AttemptRecord
	Done    Completed
}

// AttemptRecord is one line of history (S3).
type AttemptRecord struct {
	ID         int64 // set by the store
	JobID      int64
	URL        string // the URL requested: a redirect hop's target for hops
	Host       string
	Attempt    int
	StartedAt  time.Time
	Duration   time.Duration
	Status     int
	Outcome    string // ok, retry, throttled, failed, redirect, canceled
	Bytes      int64
	Err        string
	RetryAfter time.Duration
	Level      int
	Breaker    BreakerState
}
