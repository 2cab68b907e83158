package storetest

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// Opener opens the store under test: a fresh empty one per call of New (each test gets its own),
// and the same one again after Close by reopen (for persistence tests).
type Opener struct {
	// New opens a fresh, empty store for test t, and returns it with reopen, which opens that same
	// store again once the suite has closed it, as the next start of Heed would: whatever was
	// acknowledged is there, and jobs left active are queued again (S2). Both fail t themselves
	// when they cannot open it. The suite closes every store they return, once, with Close.
	New func(t *testing.T) (s engine.Store, reopen func() engine.Store)
	// Close closes a store New or reopen returned (the store types' Close(); e.g.
	// func(s engine.Store) error { return s.(io.Closer).Close() }). It commits every write queued
	// before it and reports the errors of background writes no Flush reported (S5), and leaves job
	// states as they are: a close with jobs active stands in for a crash.
	Close func(engine.Store) error
	// TextOnly says the store keeps strings as text that cannot hold a NUL byte or bytes that are
	// not UTF-8 (PostgreSQL's text): it refuses such a string with an error and stores nothing of
	// that call, and keeps every other string byte for byte. Heed's engine never hands a store one
	// (its URLs are parsed and written out escaped); SQLite keeps them too.
	TextOnly bool
}

// test is one contract test: its name, after the rule it holds, and its body.
type test struct {
	name string
	run  func(t *testing.T, o Opener)
}

// suite is every contract test, in the order Run runs them.
var suite = [][]test{enqueueTests, jobTests, hostTests, historyTests, crawlTests}

// Run runs every contract test on the store o opens, each as a subtest named after the rules it
// holds (Enqueue_J2_DuplicateInEveryState, Hosts_S4_G10_B6_HostStateRoundTripAcrossReopen …),
// each on a fresh store of its own.
func Run(t *testing.T, o Opener) {
	require.NotNil(t, o.New, "Opener.New")
	require.NotNil(t, o.Close, "Opener.Close")
	for _, group := range suite {
		for _, c := range group {
			t.Run(c.name, func(t *testing.T) { c.run(t, o) })
		}
	}
}

// store is the store a test works on, and how to open it again. It closes itself when the test
// ends.
type store struct {
	engine.Store
	t      *testing.T
	o      Opener
	reopen func() engine.Store
}

// open opens a fresh store for t.
func open(t *testing.T, o Opener) *store {
	t.Helper()
	s, reopen := o.New(t)
	require.NotNil(t, s, "Opener.New returned no store")
	st := &store{Store: s, t: t, o: o, reopen: reopen}
	t.Cleanup(func() {
		if st.Store != nil {
			o.Close(st.Store) // what a test left queued or failed is not its result
		}
	})
	return st
}

// Reopen closes the store, which must succeed, and opens it again.
func (s *store) Reopen() {
	s.t.Helper()
	require.NoError(s.t, s.Close(), "Close")
	s.Store = s.reopen()
	require.NotNil(s.t, s.Store, "reopen returned no store")
}

// Close closes the store for good and returns what Close said.
func (s *store) Close() error {
	s.t.Helper()
	require.NotNil(s.t, s.Store, "the store is closed already")
	err := s.o.Close(s.Store)
	s.Store = nil
	return err
}

var bg = context.Background()

// Enqueue's againBelow: no ended duplicate is queued again, or every one is.
const (
	noAgain  int64 = 0
	allAgain int64 = math.MaxInt64
)

// The states engine commands move jobs from (engine/commands.go).
var (
	pausable  = []engine.JobState{engine.JobQueued, engine.JobActive}
	resumable = []engine.JobState{engine.JobPaused}
	retryable = []engine.JobState{engine.JobDone, engine.JobFailed, engine.JobCancelled, engine.JobSkipped}
	stoppable = []engine.JobState{engine.JobQueued, engine.JobActive, engine.JobPaused}
)

// newJobs are urls on host as Enqueue takes them, each URL its own key.
func newJobs(host string, urls ...string) []engine.NewJob {
	jobs := make([]engine.NewJob, len(urls))
	for i, u := range urls {
		jobs[i] = engine.NewJob{URL: u, Key: u, Host: host}
	}
	return jobs
}

// enqueueURLs enqueues urls on host and returns their ids; each must be new.
func enqueueURLs(t testing.TB, s engine.Store, host string, urls ...string) []int64 {
	t.Helper()
	res, err := s.Enqueue(bg, newJobs(host, urls...), noAgain)
	require.NoError(t, err)
	require.Len(t, res, len(urls))
	ids := make([]int64, len(urls))
	for i, it := range res {
		require.False(t, it.Duplicate, "%s is new", urls[i])
		require.NotZero(t, it.ID, "%s has an id", urls[i])
		ids[i] = it.ID
	}
	return ids
}

// jobIn puts a new job of a.example into state st through the public transitions.
func jobIn(t testing.TB, s engine.Store, url string, st engine.JobState) int64 {
	t.Helper()
	return jobOfHostIn(t, s, "a.example", url, st)
}

// jobOfHostIn is jobIn for a job of host. Active, done and failed jobs went through Start (one
// attempt, no part); a done job's file is "f", its SHA-256 "aa".
func jobOfHostIn(t testing.TB, s engine.Store, host, url string, st engine.JobState) int64 {
	t.Helper()
	id := enqueueURLs(t, s, host, url)[0]
	switch st {
	case engine.JobQueued:
		return id
	case engine.JobPaused, engine.JobCancelled, engine.JobSkipped:
		changed, err := s.SetState(bg, []int64{id}, []engine.JobState{engine.JobQueued}, st)
		require.NoError(t, err)
		require.Len(t, changed, 1)
		return id
	}
	_, err := s.Start(bg, id, "")
	require.NoError(t, err)
	switch st {
	case engine.JobDone:
		require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobDone, File: "f", SHA256: "aa",
			Status: 200, Resume: engine.Resume{Bytes: 1, Size: 1}}))
	case engine.JobFailed:
		require.NoError(t, finish(s, bg, engine.End{JobID: id, State: engine.JobFailed, Error: "gone", Status: 410,
			Resume: engine.Resume{Size: -1}}))
	}
	return id
}

// finish is s.Finish for the tests that look only at its error.
func finish(s engine.Store, ctx context.Context, end engine.End) error {
	_, err := s.Finish(ctx, end)
	return err
}

// row is a history row of job id as the engine hands it to Finish.
func row(id int64, outcome string, status int) *engine.Attempt {
	return &engine.Attempt{JobID: id, URL: "https://a.example/x", Host: "a.example", Attempt: 1,
		StartedAt: time.Unix(1_800_000_000, 0), Duration: time.Millisecond, Status: status, Outcome: outcome, Bytes: 3}
}

func resumeOf(j engine.Job) engine.Resume {
	return engine.Resume{Part: j.Part, Bytes: j.Bytes, Size: j.Size, ETag: j.ETag, LastModified: j.LastModified, Name: j.Name}
}

// eachJob calls fn for every job, a page at a time.
func eachJob(t testing.TB, s engine.Reader, fn func(engine.Job)) {
	t.Helper()
	var after int64
	for {
		js, err := s.Jobs(bg, engine.JobQuery{AfterID: after, Limit: 1000})
		require.NoError(t, err)
		for _, j := range js {
			fn(j)
		}
		if len(js) < 1000 {
			return
		}
		after = js[len(js)-1].ID
	}
}

// jobIDs returns the ids of jobs.
func jobIDs(js []engine.Job) []int64 {
	var out []int64
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// one is one job in state st, as Counts.
func one(t testing.TB, st engine.JobState) engine.Counts {
	t.Helper()
	switch st {
	case engine.JobQueued:
		return engine.Counts{Queued: 1}
	case engine.JobActive:
		return engine.Counts{Active: 1}
	case engine.JobPaused:
		return engine.Counts{Paused: 1}
	case engine.JobDone:
		return engine.Counts{Done: 1}
	case engine.JobFailed:
		return engine.Counts{Failed: 1}
	case engine.JobCancelled:
		return engine.Counts{Cancelled: 1}
	case engine.JobSkipped:
		return engine.Counts{Skipped: 1}
	}
	assert.Fail(t, "a job in no state", "state %q", st)
	return engine.Counts{}
}

// jobCounts counts every host's jobs by state, as Jobs lists them: what the counts Hosts reports
// must come to.
func jobCounts(t testing.TB, s engine.Reader) map[string]engine.Counts {
	t.Helper()
	out := map[string]engine.Counts{}
	eachJob(t, s, func(j engine.Job) {
		c := out[j.Host]
		c.Add(one(t, j.State))
		out[j.Host] = c
	})
	return out
}

// hostCounts returns the counts Hosts reports, by host, leaving out hosts without jobs, and
// checks that HostCounts reports the same.
func hostCounts(t testing.TB, s engine.Reader) map[string]engine.Counts {
	t.Helper()
	hs, err := s.Hosts(bg)
	require.NoError(t, err)
	out := map[string]engine.Counts{}
	for _, h := range hs {
		if h.Counts != (engine.Counts{}) {
			out[h.Host] = h.Counts
		}
	}
	polled, err := s.HostCounts(bg)
	require.NoError(t, err)
	for host, c := range polled {
		if c == (engine.Counts{}) {
			delete(polled, host)
		}
	}
	assert.Equal(t, out, polled, "HostCounts reports what Hosts does")
	return out
}

// totalCounts sums the counts of every host.
func totalCounts(t testing.TB, s engine.Reader) engine.Counts {
	t.Helper()
	var sum engine.Counts
	for _, c := range hostCounts(t, s) {
		sum.Add(c)
	}
	return sum
}

// assertCounts checks that Hosts counts every host's jobs as listing them does (U1).
func assertCounts(t testing.TB, s engine.Reader, msgAndArgs ...any) bool {
	t.Helper()
	return assert.Equal(t, jobCounts(t, s), hostCounts(t, s), msgAndArgs...)
}

// assertBetween checks that got, a time the store stamped during a call, is within the call:
// at or after from, taken before it, and at or before to, taken after it.
func assertBetween(t testing.TB, from, to, got time.Time, msgAndArgs ...any) bool {
	t.Helper()
	if got.Before(from) || got.After(to) {
		return assert.Fail(t, fmt.Sprintf("%v is not within the call, [%v, %v]", got, from, to), msgAndArgs...)
	}
	return true
}

// equal is assert.Equal with every time.Time in want and got compared as the instant it is: a
// store may hand back times in another location or without a monotonic reading.
func equal(t testing.TB, want, got any, msgAndArgs ...any) bool {
	t.Helper()
	return assert.Equal(t, canon(want), canon(got), msgAndArgs...)
}

var timeType = reflect.TypeFor[time.Time]()

// canon returns a copy of v with every time.Time in it, in fields, slices and behind pointers,
// as time.Unix(0, nanoseconds) (or the zero time).
func canon(v any) any {
	if v == nil {
		return nil
	}
	return canonValue(reflect.ValueOf(v)).Interface()
}

func canonValue(v reflect.Value) reflect.Value {
	if v.Type() == timeType {
		tm := v.Interface().(time.Time)
		if tm.IsZero() {
			return reflect.ValueOf(time.Time{})
		}
		return reflect.ValueOf(time.Unix(0, tm.UnixNano()))
	}
	switch v.Kind() {
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if f := out.Field(i); f.CanSet() {
				f.Set(canonValue(v.Field(i)))
			}
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(canonValue(v.Elem()))
		return p
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(canonValue(v.Index(i)))
		}
		return out
	}
	return v
}

// nanos is t as a Cursor holds it: unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
