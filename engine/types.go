package engine

import (
	"fmt"
	"time"
)

// JobState is a job's state (J3).
type JobState string

// The job states of J3, and skipped (W6): a crawled URL that robots.txt or a
// trap rule keeps from being fetched.
const (
	JobQueued    JobState = "queued"
	JobActive    JobState = "active"
	JobPaused    JobState = "paused"
	JobDone      JobState = "done"
	JobFailed    JobState = "failed"
	JobCancelled JobState = "cancelled"
	JobSkipped   JobState = "skipped"
)

// JobStates lists every state, in the order a person reads a job's life.
var JobStates = []JobState{JobQueued, JobActive, JobPaused, JobDone, JobFailed, JobCancelled, JobSkipped}

// Valid reports whether s is one of JobStates.
func (s JobState) Valid() bool {
	for _, v := range JobStates {
		if s == v {
			return true
		}
	}
	return false
}

// Ended reports whether a job in state s is over until someone queues it
// again (R5, J2).
func (s JobState) Ended() bool {
	return s == JobDone || s == JobFailed || s == JobCancelled || s == JobSkipped
}

// Job is one URL to download, as stored.
type Job struct {
	ID        int64
	URL       string // as given (user info included: see Redact)
	Host      string // host key (SPEC §1)
	State     JobState
	NotBefore time.Time // queued: not started before this (R4)
	CreatedAt time.Time
	UpdatedAt time.Time
	Attempts  int // attempts that count against max_attempts (R3, R5)
	Throttled int // throttle responses (R3: they use no attempt)

	// Resume state (F5): the partial file in the download folder ("" when
	// none), the bytes in it, the expected total (-1 unknown) and the
	// validators it was fetched with. A done job keeps its part until the
	// part has taken its final name (see Store.Unnamed).
	Part         string
	Bytes        int64
	Size         int64
	ETag         string
	LastModified string
	// Name is the name the server gave the file (F2, Content-Disposition),
	// kept for a resume whose response names none.
	Name string

	File       string // done: the final name in the download folder
	SHA256     string // done: hex digest (F7)
	LastError  string // failed, skipped, retried: why
	LastStatus int

	// Crawl (W10): the crawl that found the URL (0 for none), its depth
	// from a seed, the page that linked to it ("" for a seed), and whether
	// it is a page or a sitemap to read (W7).
	CrawlID int64
	Depth   int
	FoundOn string
	Kind    JobKind
}

// JobKind says what a crawl does with a fetched job's body.
type JobKind string

const (
	KindPage    JobKind = ""        // a file; an HTML page's links are followed
	KindSitemap JobKind = "sitemap" // a sitemap or sitemap index, read for URLs (W7)
)

// Resume is what is on disk of a download (F5).
type Resume struct {
	Part         string
	Bytes        int64
	Size         int64 // expected total, -1 unknown
	ETag         string
	LastModified string
	Name         string // the name the server gave it (see Job.Name)
}

// NewJob is a URL to queue.
type NewJob struct {
	URL  string // as it is fetched
	Key  string // de-duplication key (J2, W3)
	Host string // host key
	// Crawl fields (W10); zero for a URL a person gave.
	CrawlID int64
	Depth   int
	FoundOn string
	Kind    JobKind
	// Skip, when set, stores the job as skipped with this reason (W6).
	Skip string
}

// Enqueued says what Enqueue did with one URL.
type Enqueued struct {
	ID        int64
	Duplicate bool      // the URL already had a job
	State     JobState  // the job's state now
	NotBefore time.Time // queued: its not-before
	Again     bool      // a duplicate that had ended was queued again (Enqueue's again)
}

// Changed is a job a command moved from one state to another.
type Changed struct {
	ID        int64
	Host      string
	From, To  JobState
	NotBefore time.Time
}

// Attempt is one line of history (S3): one HTTP exchange of a job.
type Attempt struct {
	ID         int64 // set by the store
	JobID      int64
	URL        string // the URL requested: a redirect hop's target for hops
	Host       string
	Attempt    int // the job's attempt number; throttled tries count apart (Throttled)
	Throttled  int // how many throttle responses the job had before this one
	StartedAt  time.Time
	Duration   time.Duration
	Status     int
	Outcome    string // see Outcomes
	Bytes      int64
	Error      string
	RetryAfter time.Duration
	Level      int
	Breaker    BreakerState
}

// Outcomes are the outcomes history records for an attempt (S3): how it
// ended ("ok", "retry", "throttled", "failed", "canceled"), why the same
// attempt went on with another request ("redirect"; "partial": the server
// sent part of the rest; "restart": it refused the resume; "resent": it
// dropped a kept-alive connection without answering, G40), or a robots.txt
// fetch (W4).
var Outcomes = []string{"ok", "retry", "throttled", "failed", "redirect", "partial", "restart", "resent", "canceled", "robots"}

// End is how an attempt leaves its job, written in one transaction with the
// attempt's last history row (J3, S3, W8).
type End struct {
	JobID   int64
	State   JobState // done, queued (retry or interrupted), failed; paused or cancelled keep what the person set
	Attempt *Attempt // the last exchange, nil when nothing was sent
	// NotBefore is a queued job's earliest next try (R4).
	NotBefore time.Time
	// GiveBack returns the attempt Start counted: a throttle response (R3),
	// or an attempt Heed cut off itself (stop, G42).
	GiveBack  bool
	Throttled bool
	Resume    Resume
	File      string // done
	SHA256    string // done
	Error     string
	Status    int
	// Found are the links a crawled page led to, queued in the same
	// transaction (W8), and OutOfScope the links it counted instead.
	Found      []NewJob
	OutOfScope int64
}

// Cursor is a place in a host's queue, which is ordered by (not_before, id).
type Cursor struct {
	NotBefore int64 // unix nanoseconds, 0 = none
	ID        int64
}

// Less orders cursors as the queue is ordered.
func (c Cursor) Less(d Cursor) bool {
	if c.NotBefore != d.NotBefore {
		return c.NotBefore < d.NotBefore
	}
	return c.ID < d.ID
}

// Queued is a queued job as the frontier sees it: its place in its host's
// queue.
type Queued struct {
	ID        int64
	NotBefore time.Time
}

// Counts are a host's jobs by state (U1), kept by the store with every
// transition.
type Counts struct {
	Queued, Active, Paused, Done, Failed, Cancelled, Skipped int64
}

// Of returns the count of state s.
func (c Counts) Of(s JobState) int64 {
	switch s {
	case JobQueued:
		return c.Queued
	case JobActive:
		return c.Active
	case JobPaused:
		return c.Paused
	case JobDone:
		return c.Done
	case JobFailed:
		return c.Failed
	case JobCancelled:
		return c.Cancelled
	case JobSkipped:
		return c.Skipped
	}
	return 0
}

// Add adds d to c.
func (c *Counts) Add(d Counts) {
	c.Queued += d.Queued
	c.Active += d.Active
	c.Paused += d.Paused
	c.Done += d.Done
	c.Failed += d.Failed
	c.Cancelled += d.Cancelled
	c.Skipped += d.Skipped
}

// JobQuery selects jobs, ordered by id. Zero fields do not filter; paging
// is by key (AfterID or BeforeID), never by offset.
type JobQuery struct {
	State    JobState
	Host     string
	AfterID  int64 // only jobs with a larger id, oldest first
	BeforeID int64 // only jobs with a smaller id, newest first (Newest)
	Newest   bool  // newest first
	Limit    int   // 0 = no limit
}

// HistoryQuery selects attempts, newest first. Zero fields do not filter.
type HistoryQuery struct {
	Host     string
	Outcome  string
	JobID    int64
	BeforeID int64 // keyset paging: only attempts with a smaller id
	Limit    int   // 0 = no limit
}

// plural is "1 attempt", "2 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// CrawlState says whether a crawl's jobs run.
type CrawlState string

const (
	CrawlRunning   CrawlState = "running"
	CrawlPaused    CrawlState = "paused"
	CrawlCancelled CrawlState = "cancelled"
)

// Crawl is a crawl as stored (W1, W10): its seeds and rules, its state,
// and what it has done.
type Crawl struct {
	ID       int64
	Seeds    []string
	Scope    string // host, domain or prefix
	Depth    int    // links from a seed; 0 = seeds only
	MaxPages int    // jobs it may create; 0 = no limit
	Include  []string
	Exclude  []string
	Robots   bool // obey robots.txt (W4)
	State    CrawlState
	Created  time.Time

	// What it has done: its jobs by state, the jobs it created, the links
	// it found out of scope or excluded, the bytes of its done pages.
	Counts     Counts
	Pages      int64
	OutOfScope int64
	Bytes      int64
}

// RobotsFile is a host's robots.txt as Heed last fetched it (W4): the
// status, the body (at most robots.MaxSize bytes), or the error of a fetch
// that got no answer.
type RobotsFile struct {
	Host    string
	Fetched time.Time
	Status  int
	Body    []byte
	Error   string
}
