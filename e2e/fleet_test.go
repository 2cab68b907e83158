package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/storage/postgres/pgtest"
)

// fleetHost is a loopback host that records each request's arrival and end,
// and how many it had in flight at once.
type fleetHost struct {
	*httptest.Server
	mu       sync.Mutex
	arrivals []time.Time
	inflight int
	maxIn    int
	complete map[string]int // bodies sent whole, by path
}

func newFleetHost(t *testing.T) *fleetHost {
	h := &fleetHost{complete: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.arrivals = append(h.arrivals, time.Now())
		h.inflight++
		h.maxIn = max(h.maxIn, h.inflight)
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.inflight--
			h.mu.Unlock()
		}()
		body := strings.Repeat(r.URL.Path+"\n", 200)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		time.Sleep(20 * time.Millisecond)
		if _, err := fmt.Fprint(w, body); err == nil {
			h.mu.Lock()
			h.complete[r.URL.Path]++
			h.mu.Unlock()
		}
	}))
	t.Cleanup(h.Close)
	return h
}

// fleetSetUp queues 40 files on each of six loopback hosts in a fresh
// PostgreSQL database and returns its URL and the hosts.
func fleetSetUp(t *testing.T) (string, []*fleetHost) {
	t.Helper()
	dsn := pgtest.Shared(t).DB(t)
	hosts := make([]*fleetHost, 6)
	var urls []string
	for i := range hosts {
		hosts[i] = newFleetHost(t)
		for j := range 40 {
			urls = append(urls, fmt.Sprintf("%s/h%d/file%02d.txt", hosts[i].URL, i, j))
		}
	}
	list := filepath.Join(t.TempDir(), "urls.txt")
	require.NoError(t, os.WriteFile(list, []byte(strings.Join(urls, "\n")), 0o644))
	r := heed(t, "add", "--db", dsn, "-i", list)
	require.Equal(t, 0, r.code, r.stderr)
	return dsn, hosts
}

// interval is the spacing --rate 120 --burst 1 allows: no span of k+1
// requests to a host shorter than k intervals (G2). slack is how much later
// than its token a request may arrive: between the two, the job's start is
// committed (J3), which on a loaded test machine can take a few hundred
// milliseconds, so one request may come that much late and the next on
// time. A second governor on one host would halve the spacing, which any
// span of three or more requests shows far past the slack.
const (
	interval = 500 * time.Millisecond
	slack    = 500 * time.Millisecond
)

// assertPaced checks that no span of k requests to h was shorter than the
// rate allows, that h never had two in flight, and returns its arrivals.
func assertPaced(t *testing.T, h *fleetHost) []time.Time {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	a := append([]time.Time(nil), h.arrivals...)
	sort.Slice(a, func(i, j int) bool { return a[i].Before(a[j]) })
	bad := 0
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			if a[j].Sub(a[i]) < time.Duration(j-i)*interval-slack {
				bad++
			}
		}
	}
	assert.Zero(t, bad, "%s: spans of requests closer than --rate 120 --burst 1 allows", h.URL)
	assert.Equal(t, 1, h.maxIn, "%s: never two requests in flight", h.URL)
	return a
}

// workersOf returns, by worker name, the jobs the database says each did.
func workersOf(t *testing.T, dsn string) map[string]int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT worker, count(*) FROM jobs WHERE state = 'done' GROUP BY worker`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var w string
		var n int
		require.NoError(t, rows.Scan(&w, &n))
		out[w] = n
	}
	return out
}

// M2, M5: three heed worker processes share six hosts of 40 files: across
// the workers no host ever gets two requests closer than its rate allows or
// two at once, every file is completed exactly once, and the work is
// spread over the workers.
func TestFleet_M2_ThreeWorkersOneGovernorPerHost(t *testing.T) {
	dsn, hosts := fleetSetUp(t)
	var runs []*running
	for i := range 3 {
		runs = append(runs, start(t, "worker", "--db", dsn, "--dir", filepath.Join(t.TempDir(), "dl"), "--until-idle",
			"--name", fmt.Sprintf("w%d", i), "--rate", "120", "--burst", "1", "--jitter", "0-0", "-q"))
	}
	for i, r := range runs {
		require.Equal(t, 0, r.wait(t), "worker %d: %s", i, r.err.String())
	}
	for _, h := range hosts {
		assertPaced(t, h)
		h.mu.Lock()
		assert.Len(t, h.complete, 40)
		for p, n := range h.complete {
			assert.Equal(t, 1, n, "%s completed once", p)
		}
		h.mu.Unlock()
	}
	by := workersOf(t, dsn)
	total := 0
	for w, n := range by {
		total += n
		t.Logf("worker %s did %d files", w, n)
	}
	assert.Equal(t, 240, total)
	assert.GreaterOrEqual(t, len(by), 2, "the work spread over the workers: %v", by)
	r := heed(t, "workers", "--db", dsn, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 3, strings.Count(r.stdout, `"name"`))
}

// M3: a worker killed with kill -9 mid-run loses its hosts when their
// leases expire; the others take them over with their persisted state and
// finish: every file completed exactly once (a file the dead worker had in
// flight is fetched again from the start, never completed twice), no host
// served again before the lease's expiry, and none ever faster than its
// rate.
func TestFleet_M3_AWorkerKilledMidRun(t *testing.T) {
	dsn, hosts := fleetSetUp(t)
	const lease = 4 * time.Second
	args := func(i int) []string {
		return []string{"worker", "--db", dsn, "--dir", filepath.Join(t.TempDir(), "dl"), "--until-idle",
			"--name", fmt.Sprintf("w%d", i), "--rate", "120", "--burst", "1", "--jitter", "0-0", "-q",
			"--lease", lease.String()}
	}
	victim := start(t, args(0)...)
	waitFor(t, "the first worker to hold hosts", 30*time.Second, func() bool { return len(owned(t, dsn, "w0")) > 0 })
	others := []*running{start(t, args(1)...), start(t, args(2)...)}
	time.Sleep(3 * time.Second)
	held := owned(t, dsn, "w0")
	require.NotEmpty(t, held, "the victim holds hosts when it dies")
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	victim.wait(t)
	for i, r := range others {
		require.Equal(t, 0, r.wait(t), "worker %d: %s", i+1, r.err.String())
	}
	for _, h := range hosts {
		a := assertPaced(t, h)
		h.mu.Lock()
		assert.Len(t, h.complete, 40, h.URL) // each sent whole at least once; the victim's last ones twice
		h.mu.Unlock()
		if held[h.Listener.Addr().String()] {
			// Served again only once its lease had expired.
			for _, at := range a {
				if at.After(killed) {
					assert.GreaterOrEqual(t, at.Sub(killed), lease-time.Second, "%s served again before its lease expired", h.URL)
					break
				}
			}
		}
	}
	by := workersOf(t, dsn)
	total := 0
	for _, n := range by {
		total += n
	}
	assert.Equal(t, 240, total, "every file done once: %v", by)
	js := jobs(t, dsn)
	assert.Len(t, js, 240, "one job per file")
	done := map[string]bool{}
	for _, j := range js {
		assert.Equal(t, "done", j.State, j.URL)
		assert.False(t, done[j.URL], "%s done twice", j.URL)
		done[j.URL] = true
	}
}

// owned returns the hosts worker name leases now.
func owned(t *testing.T, dsn, name string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT host FROM hosts WHERE lease_owner LIKE $1 || '/%' AND lease_until > now()`, name)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var h string
		require.NoError(t, rows.Scan(&h))
		out[h] = true
	}
	return out
}
