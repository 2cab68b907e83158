package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// politeSite is a loopback host that records when each request came and
// how many were in flight at once.
type politeSite struct {
	*httptest.Server
	mu       sync.Mutex
	starts   []time.Time
	inflight int
	maxIn    int
	served   map[string]int
}

func newPoliteSite(t *testing.T) *politeSite {
	s := &politeSite{served: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.starts = append(s.starts, time.Now())
		s.inflight++
		s.maxIn = max(s.maxIn, s.inflight)
		s.served[r.URL.Path]++
		s.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		fmt.Fprintf(w, "file %s", r.URL.Path)
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

// slack is how much later than its dispatch a request's recorded start may
// be: between the two, the job's start is committed (J3), which on a busy
// machine under the race detector has taken up to about 90 ms on PostgreSQL
// (the token is taken at dispatch, so a late start brings its request closer
// to the next one). A second worker running the same host would double its
// rate: every span of three requests or more would fall short by far more.
const slack = 150 * time.Millisecond

// M2: two workers on one database share its hosts; each host is run by one
// of them at a time, so its pace is as on one machine: never two requests
// in flight, never two closer than its rate allows, every file done once.
func TestFleet_M2_TwoWorkersOneGovernorPerHost(t *testing.T) {
	ctx := context.Background()
	sites := make([]*politeSite, 4)
	var urls []string
	for i := range sites {
		sites[i] = newPoliteSite(t)
		for j := range 10 {
			urls = append(urls, fmt.Sprintf("%s/f%d-%d.bin", sites[i].URL, i, j))
		}
	}
	dsn := ""
	{
		db, d := open(t)
		dsn = d
		db.Close()
	}
	tun := engine.DefaultTunables()
	tun.RatePerMin, tun.Burst, tun.MaxInflight, tun.JitterMax = 600, 1, 1, 0 // one every 100 ms
	var engines []*engine.Engine
	for i := range 2 {
		db, err := Open(ctx, dsn, WithWorker(fmt.Sprintf("w%d", i)), WithLease(3*time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		e, err := engine.New(ctx, db, engine.Options{Dir: filepath.Join(t.TempDir(), "dl"), Defaults: tun, Workers: 8})
		require.NoError(t, err)
		t.Cleanup(func() { e.Close() })
		engines = append(engines, e)
	}
	_, err := engines[0].Add(ctx, strings.Join(urls, "\n"))
	require.NoError(t, err)
	run, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(engines))
	for i, e := range engines {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = e.RunUntilIdle(run) }()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	db, err := Open(ctx, dsn)
	require.NoError(t, err)
	defer db.Close()
	hist, err := db.History(ctx, engine.HistoryQuery{})
	require.NoError(t, err)
	byHost := map[string][]time.Time{}
	for _, a := range hist {
		byHost[a.Host] = append(byHost[a.Host], a.StartedAt)
	}
	require.Len(t, byHost, len(sites))
	for host, starts := range byHost {
		// As the workers sent them (one machine, one clock): the rate's
		// spacing (G2: no span of k requests shorter than k−1 intervals),
		// whichever worker sent each, give or take the few milliseconds
		// between a dispatch and its request's start.
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
		for i := range starts {
			for j := i + 1; j < len(starts); j++ {
				want := time.Duration(j-i)*100*time.Millisecond - slack
				assert.GreaterOrEqual(t, starts[j].Sub(starts[i]), want, "%s, requests %d to %d", host, i, j)
			}
		}
	}
	for _, s := range sites {
		s.mu.Lock()
		assert.Equal(t, 1, s.maxIn, "never two in flight on one host")
		for p, n := range s.served {
			assert.Equal(t, 1, n, "%s served once", p)
		}
		assert.Len(t, s.served, 10)
		s.mu.Unlock()
	}
	c, err := db.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(40), c.Done)
	var workers int
	require.NoError(t, db.pool.QueryRow(ctx, `SELECT count(DISTINCT worker) FROM jobs`).Scan(&workers))
	assert.Equal(t, 2, workers, "the work spread over both")
}

// slowEnds is a worker's database whose ends take delay to record, and
// which counts the starts it refused because this worker did not lease
// the job's host.
type slowEnds struct {
	*DB
	delay   time.Duration
	refused atomic.Int64
	taken   atomic.Int64 // starts refused because another job holds the part's name
}

func (s *slowEnds) Start(ctx context.Context, id int64, part string) (engine.Job, error) {
	job, err := s.DB.Start(ctx, id, part)
	if errors.Is(err, engine.ErrNotLeased) {
		s.refused.Add(1)
	}
	if errors.Is(err, engine.ErrPartTaken) {
		s.taken.Add(1)
	}
	return job, err
}

func (s *slowEnds) Finish(ctx context.Context, end engine.End) ([]engine.Enqueued, error) {
	time.Sleep(s.delay)
	return s.DB.Finish(ctx, end)
}

// runWorker runs one worker over db until nothing is left, on urls added
// through it, and returns its database.
func runWorker(t *testing.T, db *DB, delay time.Duration, urls []string) *slowEnds {
	ctx := context.Background()
	s := &slowEnds{DB: db, delay: delay}
	tun := engine.DefaultTunables()
	tun.RatePerMin, tun.Burst, tun.MaxInflight, tun.JitterMax = 600, 1, 1, 0
	e, err := engine.New(ctx, s, engine.Options{Dir: filepath.Join(t.TempDir(), "dl"), Defaults: tun, Workers: 8})
	require.NoError(t, err)
	defer e.Close()
	_, err = e.Add(ctx, strings.Join(urls, "\n"))
	require.NoError(t, err)
	run, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, e.RunUntilIdle(run))
	return s
}

// M2: a host's lease is given back only once the end of its last attempt
// is recorded. That end is fenced by the lease: given back between the
// response and the end, the end would be refused, the job left active,
// and the next claim of the host would queue it again and fetch it twice.
func TestFleet_M2_AHostIsGivenBackOnlyAfterItsLastEnd(t *testing.T) {
	db, _ := open(t, WithWorker("w"), WithLease(3*time.Second))
	var sites []*politeSite
	var urls []string
	for i := range 2 {
		s := newPoliteSite(t)
		sites = append(sites, s)
		urls = append(urls, fmt.Sprintf("%s/only-%d.bin", s.URL, i))
	}
	// Longer than a few turns of the claim loop (a quarter second each),
	// which gives back the hosts with nothing queued or in flight.
	runWorker(t, db, 800*time.Millisecond, urls)
	for _, s := range sites {
		s.mu.Lock()
		for p, n := range s.served {
			assert.Equal(t, 1, n, "%s served once", p)
		}
		s.mu.Unlock()
	}
	c, err := db.Counts(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(2), c.Done)
}

// M2: a worker runs only the hosts it leases, even those of the URLs added
// through it: their jobs wait for the claim, and no start of one is
// refused for want of its lease.
func TestFleet_M2_AddedJobsWaitForTheirHostsLease(t *testing.T) {
	db, _ := open(t, WithWorker("w"), WithLease(3*time.Second))
	var urls []string
	sites := make([]*politeSite, 4)
	for i := range sites {
		sites[i] = newPoliteSite(t)
		for j := range 5 {
			urls = append(urls, fmt.Sprintf("%s/f%d-%d.bin", sites[i].URL, i, j))
		}
	}
	s := runWorker(t, db, 0, urls)
	assert.Zero(t, s.refused.Load(), "starts refused: their host was not leased")
	c, err := db.Counts(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(20), c.Done)
}

// M2, F4: a fleet worker names its parts with the job's id from the first
// try. Each worker has its own folder, yet every part is recorded in the
// one database: a name another worker's job holds (every host has its
// index.html) would refuse the start, one more round trip for nothing.
func TestFleet_M2_PartsOfTwoWorkersNeverCollide(t *testing.T) {
	ctx := context.Background()
	other, dsn := open(t, WithWorker("o"), WithLease(3*time.Second))
	got, err := other.Enqueue(ctx, []engine.NewJob{{URL: "http://elsewhere.example/same.bin",
		Key: "http://elsewhere.example/same.bin", Host: "elsewhere.example"}}, 0)
	require.NoError(t, err)
	_, _, err = other.Claim(ctx, 64)
	require.NoError(t, err)
	_, err = other.Start(ctx, got[0].ID, "same.bin.part")
	require.NoError(t, err)
	_, err = other.SetState(ctx, []int64{got[0].ID}, []engine.JobState{engine.JobActive}, engine.JobPaused)
	require.NoError(t, err)

	db, err := Open(ctx, dsn, WithWorker("w"), WithLease(3*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	site := newPoliteSite(t)
	s := runWorker(t, db, 0, []string{site.URL + "/same.bin"})
	assert.Zero(t, s.taken.Load(), "starts refused: another worker's job holds the part's name")
	c, err := db.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), c.Done)
}
