package engine_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// startsSeen is a Store that notes each job whose start was committed.
type startsSeen struct {
	engine.Store
	started sync.Map // URL → true, once StartJobs returned it active
}

func (s *startsSeen) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	j, err := s.Store.Start(ctx, id, part)
	if err == nil {
		s.started.Store(j.URL, true)
	}
	return j, err
}

// L1, J3: however an attempt's slot is taken again — by the run loop, or
// by the goroutine of the attempt that just freed it — no more requests
// are in flight than Workers allows, and no request is sent before its
// job's start is committed. Four hosts whose answers take a moment, so
// that requests overlap; 200 small files, Workers 3.
func TestEngine_L1_J3_SlotsTakenAgainWithinTheCapAfterTheStart(t *testing.T) {
	const workers = 3
	var (
		store     *startsSeen
		inflight  atomic.Int64
		most      atomic.Int64
		early     atomic.Int64 // requests whose job's start was not committed
		requested atomic.Int64
	)
	var urls []string
	for h := range 4 {
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requested.Add(1)
			if _, ok := store.started.Load(srv.URL + r.URL.Path); !ok {
				early.Add(1)
			}
			n := inflight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inflight.Add(-1) // before the body: once it is read, the slot is free
			io.WriteString(w, "body of "+r.URL.Path)
		}))
		t.Cleanup(srv.Close)
		for i := range 50 {
			urls = append(urls, fmt.Sprintf("%s/h%d-%02d.txt", srv.URL, h, i))
		}
	}
	base := t.TempDir()
	db, eng := engineOver(t, filepath.Join(base, "heed.db"), filepath.Join(base, "dl"),
		func(s engine.Store) engine.Store { store = &startsSeen{Store: s}; return store }, urls,
		func(o *engine.Options) { o.Workers = workers })
	require.NoError(t, eng.RunUntilIdle(context.Background()))

	assert.Equal(t, int64(len(urls)), requested.Load(), "each file fetched once")
	assert.Zero(t, early.Load(), "no request before its job's start was committed")
	assert.LessOrEqual(t, most.Load(), int64(workers), "never more requests in flight than Workers")
	assert.Equal(t, int64(workers), most.Load(), "the slots were all used")
	counts, err := db.Counts(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(len(urls)), counts.Done)
}

// pauseRacer pauses (and then resumes) each job at the moment the engine
// starts it, as a person clicking "pause" then "resume" on a job that is
// being dispatched would.
type pauseRacer struct {
	engine.Store
	eng     atomic.Pointer[engine.Engine]
	mu      sync.Mutex
	paused  map[int64]bool // pause changed the job
	started map[int64]bool // Start handed it out active
	tried   map[int64]bool
	wg      sync.WaitGroup
}

func (s *pauseRacer) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	e := s.eng.Load()
	s.mu.Lock()
	first := !s.tried[id]
	s.tried[id] = true
	s.mu.Unlock()
	if first { // once per job
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			changed, err := e.PauseJobs(context.Background(), []int64{id})
			if err != nil || len(changed) == 0 {
				return
			}
			s.mu.Lock()
			s.paused[id] = true
			s.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			e.ResumeJobs(context.Background(), []int64{id})
		}()
	}
	j, err := s.Store.Start(ctx, id, part)
	if err == nil {
		s.mu.Lock()
		s.started[j.ID] = true
		s.mu.Unlock()
	}
	return j, err
}

// J3: a job the person pauses at the moment the engine starts it either
// does not start or has its attempt stopped — its start is in the database
// either way — so that, resumed 20 ms later, it is never fetched twice at
// once, and every job ends done with no part or copy left. 60 jobs, each
// paused as it starts; answers take 150 ms.
func TestEngine_J3_PausedWhileItStartsFetchedOnceAtATime(t *testing.T) {
	var (
		mu        sync.Mutex
		inflight  = map[string]int{}
		overlaps  atomic.Int64
		requested atomic.Int64
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requested.Add(1)
		mu.Lock()
		inflight[r.URL.Path]++
		if inflight[r.URL.Path] > 1 {
			overlaps.Add(1)
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			inflight[r.URL.Path]--
			mu.Unlock()
		}()
		select {
		case <-time.After(150 * time.Millisecond):
		case <-r.Context().Done(): // a request the client gave up (a paused job) ends here
			return
		}
		io.WriteString(w, "body of "+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	var urls []string
	for i := range 60 {
		urls = append(urls, fmt.Sprintf("%s/f%02d.txt", srv.URL, i))
	}
	base := t.TempDir()
	racer := &pauseRacer{paused: map[int64]bool{}, started: map[int64]bool{}, tried: map[int64]bool{}}
	db, eng := engineOver(t, filepath.Join(base, "heed.db"), filepath.Join(base, "dl"),
		func(s engine.Store) engine.Store { racer.Store = s; return racer }, urls,
		func(o *engine.Options) { o.Workers = 16 })
	racer.eng.Store(eng)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- eng.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		counts, err := db.Counts(context.Background())
		require.NoError(t, err)
		if counts.Done == int64(len(urls)) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-ran
	racer.wg.Wait()

	jobs, err := db.Jobs(context.Background(), engine.JobQuery{Limit: 1000})
	require.NoError(t, err)
	notDone := 0
	for _, j := range jobs {
		if j.State != engine.JobDone {
			notDone++
			t.Logf("job %d %s: %s attempts %d err %q", j.ID, j.URL, j.State, j.Attempts, j.LastError)
		}
	}
	t.Logf("%d requests for %d URLs, %d overlapping requests for one URL", requested.Load(), len(urls), overlaps.Load())
	ents, err := os.ReadDir(filepath.Join(base, "dl"))
	require.NoError(t, err)
	var extra []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "f") || len(e.Name()) != len("f00.txt") {
			extra = append(extra, e.Name())
		}
	}
	assert.Zero(t, overlaps.Load(), "a job fetched twice at once")
	assert.Empty(t, extra, "no part, no copy left beside the 60 files")
	assert.Zero(t, notDone, "every job paused and resumed ends done")
}
