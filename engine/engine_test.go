package engine_test

// Integration tests of the Engine: real SQLite files, real HTTP over
// loopback (the demo hosts), no timing assertions — only what the server
// saw, where the bytes went, job states and history.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/engine/demo"
	"heed/storage"
)

// rig is an engine over a fresh database and download folder.
type rig struct {
	t      *testing.T
	dbPath string
	dir    string
	db     *storage.DB
	eng    *engine.Engine
}

// fast are politeness defaults relaxed enough for tests to run quickly,
// with short backoff and retry delays.
func fast() engine.Tunables {
	t := engine.DefaultTunables()
	t.RatePerMin = 60000
	t.Burst = 50
	t.MaxInflight = 4
	t.JitterMax = 0
	t.BackoffBase = 10 * time.Millisecond
	t.BackoffMax = 100 * time.Millisecond
	t.Retry.Base = 10 * time.Millisecond
	t.Retry.Max = 50 * time.Millisecond
	t.RecoveryTimeout = 50 * time.Millisecond
	t.FailureThreshold = 50
	return t
}

func newRig(t *testing.T, opt engine.Options) *rig {
	t.Helper()
	base := t.TempDir()
	r := &rig{t: t, dbPath: filepath.Join(base, "heed.db"), dir: filepath.Join(base, "downloads")}
	r.open(opt)
	return r
}

// open (re)opens the database and builds an engine on it.
func (r *rig) open(opt engine.Options) {
	r.t.Helper()
	db, err := storage.Open(r.dbPath)
	require.NoError(r.t, err)
	if opt.Dir == "" {
		opt.Dir = r.dir
	}
	if opt.Defaults.RatePerMin == 0 {
		opt.Defaults = fast()
	}
	opt.Version = "test"
	eng, err := engine.New(context.Background(), db, opt)
	require.NoError(r.t, err)
	r.db, r.eng = db, eng
	r.t.Cleanup(r.close)
}

func (r *rig) close() {
	if r.eng != nil {
		r.eng.Close()
		r.eng = nil
	}
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
}

func (r *rig) add(urls ...string) engine.AddReport {
	r.t.Helper()
	rep, err := r.eng.Add(context.Background(), strings.Join(urls, "\n"))
	require.NoError(r.t, err)
	return rep
}

// runIdle runs the engine until nothing is runnable, with a generous bound.
func (r *rig) runIdle() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(r.t, r.eng.RunUntilIdle(ctx))
}

func (r *rig) jobs() []engine.Job {
	r.t.Helper()
	jobs, err := r.db.Jobs(context.Background(), engine.JobQuery{})
	require.NoError(r.t, err)
	return jobs
}

// jobByURL returns the job of u.
func (r *rig) jobByURL(u string) (engine.Job, error) {
	for _, j := range r.jobs() {
		if j.URL == u {
			return j, nil
		}
	}
	return engine.Job{}, engine.ErrNotFound
}

func (r *rig) history(f engine.HistoryQuery) []engine.Attempt {
	r.t.Helper()
	h, err := r.db.History(context.Background(), f)
	require.NoError(r.t, err)
	return h
}

func sha(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func startDemo(t *testing.T, cfg demo.Config) *demo.Server {
	t.Helper()
	srv, err := demo.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// Every file of every kind of demo host ends up done, byte-exact (F4, F7),
// with one history line per exchange (S3).
func TestEngine_DownloadsEveryDemoHostByteExact(t *testing.T) {
	cfg := demo.DefaultConfig()
	cfg.Files = 6
	cfg.MaxFileSize = 64 << 10
	for i := range cfg.Hosts {
		cfg.Hosts[i].RetryAfter = time.Second
		cfg.Hosts[i].Rate = 1 << 20
	}
	srv := startDemo(t, cfg)
	r := newRig(t, engine.Options{})
	rep := r.add(srv.URLs()...)
	require.Len(t, rep.Queued, len(srv.URLs()))
	r.runIdle()

	for _, j := range r.jobs() {
		require.Equal(t, engine.JobDone, j.State, "job %s: %s", j.URL, j.LastError)
		want, size := srv.Expected(j.URL)
		assert.Equal(t, want, j.SHA256, j.URL)
		assert.Equal(t, size, j.Bytes, j.URL)
		assert.Equal(t, want, sha(t, filepath.Join(r.dir, j.File)), "file bytes of %s", j.URL)
	}
	// S3: history has at least one ok line per job and every request the
	// demo hosts answered is in it.
	hist := r.history(engine.HistoryQuery{})
	ok := 0
	for _, a := range hist {
		if a.Outcome == "ok" {
			ok++
		}
	}
	assert.Equal(t, len(srv.URLs()), ok)
	files := func() int {
		n := 0
		for _, req := range srv.Log() {
			if strings.HasPrefix(req.Path, "/files/") {
				n++
			}
		}
		return n
	}
	// A demo host logs a request once its handler returns, which can be
	// just after Heed has read the last byte.
	require.Eventually(t, func() bool { return files() >= len(hist) }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, files(), len(hist), "one history line per request the hosts saw")
	// No .part is left behind.
	entries, err := os.ReadDir(r.dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasSuffix(e.Name(), ".part"), e.Name())
	}
}

// G5/R3/R4 through the whole engine: after a 429 with Retry-After, the host
// gets nothing before the announced wait, and the throttle uses no attempt.
func TestEngine_G5_RetryAfterHonoured(t *testing.T) {
	cfg := demo.Config{Files: 8, FileSize: 1024, Seed: 1, Hosts: []demo.HostSpec{
		{Name: "throttling", Behavior: demo.Throttling, RetryAfter: time.Second, ThrottleEvery: 3},
	}}
	srv := startDemo(t, cfg)
	tun := fast()
	tun.MaxInflight = 1
	tun.Retry.MaxAttempts = 1 // a throttle must not use it up (R3)
	r := newRig(t, engine.Options{Defaults: tun})
	r.add(srv.URLs()...)
	r.runIdle()

	for _, j := range r.jobs() {
		assert.Equal(t, engine.JobDone, j.State, j.LastError)
	}
	log := srv.Log()
	throttles := 0
	for i, req := range log {
		if req.Status != 429 {
			continue
		}
		throttles++
		if i+1 < len(log) {
			gap := log[i+1].Time.Sub(req.Time)
			assert.GreaterOrEqual(t, gap, time.Second, "request after a 429 came %s later", gap)
		}
	}
	require.Positive(t, throttles)
	hist := r.history(engine.HistoryQuery{Outcome: "throttled"})
	assert.Len(t, hist, throttles)
	for _, a := range hist {
		assert.Equal(t, int64(1000), a.RetryAfter.Milliseconds())
		assert.GreaterOrEqual(t, a.Level, 1)
	}
}

// G10 and S4 through storage: a host that said "come back tomorrow" is not
// asked again after a restart, and the wait survives it.
func TestEngine_G10_RestartKeepsRetryAfter(t *testing.T) {
	cfg := demo.Config{Files: 3, FileSize: 512, Seed: 2, Hosts: []demo.HostSpec{
		{Name: "throttling", Behavior: demo.Throttling, RetryAfter: 3 * time.Hour, ThrottleEvery: 1},
	}}
	srv := startDemo(t, cfg)
	r := newRig(t, engine.Options{})
	r.add(srv.URLs()[0])
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.eng.Run(ctx) }()
	require.Eventually(t, func() bool { return len(srv.Log()) == 1 }, 30*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		h, _ := r.eng.Core().HostSnapshot(hostOf(t, srv.URLs()[0]))
		return h.Level == 1
	}, 30*time.Second, 10*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	r.close()

	r.open(engine.Options{})
	host := hostOf(t, srv.URLs()[0])
	snap, ok := r.eng.Core().HostSnapshot(host)
	require.True(t, ok, "the host is restored")
	assert.Equal(t, 1, snap.Level)
	assert.Greater(t, time.Until(snap.Gate), 2*time.Hour, "gate after restart: %s", snap.Gate)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	r.eng.Run(ctx2)
	assert.Len(t, srv.Log(), 1, "a restart must not ask the host again before its Retry-After")
	jobs := r.jobs()
	require.Len(t, jobs, 1)
	assert.Equal(t, engine.JobQueued, jobs[0].State)
	assert.Equal(t, 1, jobs[0].Throttled)
}

// G5/G9: a Retry-After longer than max_retry_after pauses the host with the
// reason, and RunUntilIdle returns with the job still queued.
func TestEngine_G9_LongRetryAfterPausesHost(t *testing.T) {
	cfg := demo.Config{Files: 2, FileSize: 512, Seed: 3, Hosts: []demo.HostSpec{
		{Name: "throttling", Behavior: demo.Throttling, RetryAfter: 48 * time.Hour, ThrottleEvery: 1},
	}}
	srv := startDemo(t, cfg)
	var mu sync.Mutex
	var ends []engine.JobEnd
	r := newRig(t, engine.Options{OnJob: func(j engine.JobEnd) { mu.Lock(); ends = append(ends, j); mu.Unlock() }})
	r.add(srv.URLs()...)
	r.runIdle()
	host := hostOf(t, srv.URLs()[0])
	snap, ok := r.eng.Core().HostSnapshot(host)
	require.True(t, ok)
	assert.True(t, snap.Paused)
	mu.Lock()
	require.NotEmpty(t, ends)
	for _, j := range ends {
		assert.Equal(t, "throttled", j.Outcome)
		assert.True(t, j.Held, "the next try waits for the host's resume, not for a time")
	}
	mu.Unlock()
	assert.Contains(t, snap.PauseReason, "Retry-After")
	for _, j := range r.jobs() {
		assert.Equal(t, engine.JobQueued, j.State)
	}
	hosts, err := r.db.Hosts(context.Background())
	require.NoError(t, err)
	require.Len(t, hosts, 1)
	assert.True(t, hosts[0].Paused, "the pause is persisted")
}

// R5: a job that used its attempts fails with the last error; Retry (the
// window's Retry button, `heed get --again`) queues it again with a fresh
// budget, and RetryURLs does the same by URL.
func TestEngine_R5_RetryGivesAFreshBudget(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "body of "+r.URL.Path)
	}))
	defer srv.Close()
	tun := fast()
	tun.Retry = engine.RetryPolicy{MaxAttempts: 2, Strategy: engine.Fixed}
	r := newRig(t, engine.Options{Defaults: tun})
	r.add(srv.URL+"/a.txt", srv.URL+"/b.txt")
	r.runIdle()
	jobs := r.jobs()
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		require.Equal(t, engine.JobFailed, j.State)
		assert.Equal(t, 2, j.Attempts, "failed after max_attempts")
		assert.Contains(t, j.LastError, "HTTP 500")
	}

	// Still failing: a retried job gets max_attempts again, not one more.
	ids, err := r.eng.RetryJobs(context.Background(), []int64{jobs[0].ID})
	require.NoError(t, err)
	require.Equal(t, []int64{jobs[0].ID}, ids)
	r.runIdle()
	assert.Len(t, r.history(engine.HistoryQuery{Host: jobs[0].Host}), 6, "2 + 2 attempts for a, 2 for b")
	j, err := r.db.Job(context.Background(), jobs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, engine.JobFailed, j.State)
	assert.Equal(t, 2, j.Attempts)

	fail.Store(false)
	_, err = r.eng.RetryJobs(context.Background(), []int64{jobs[0].ID})
	require.NoError(t, err)
	rep, err := r.eng.AddFrom(context.Background(), strings.NewReader(srv.URL+"/b.txt"), engine.AddOptions{Again: true})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Again, "heed get --again queues an ended job again")
	r.runIdle()
	for _, j := range r.jobs() {
		assert.Equal(t, engine.JobDone, j.State, j.URL)
		assert.Equal(t, 1, j.Attempts, "%s: the budget starts over", j.URL)
		got, err := os.ReadFile(filepath.Join(r.dir, j.File))
		require.NoError(t, err)
		assert.Equal(t, "body of /"+j.File, string(got))
	}
}

// F1, S2: downloading into the database's own folder, a server cannot name
// its file after the database or after a file SQLite keeps beside it: a
// "-journal" there would be played into the database at its next open.
func TestEngine_F1_DownloadsNeverTakeTheDatabasesNames(t *testing.T) {
	names := []string{"heed.db", "heed.db-journal", "heed.db-wal", "heed.db-shm", "Heed.DB-Journal"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Disposition", `attachment; filename="`+strings.TrimPrefix(r.URL.Path, "/")+`"`)
		io.WriteString(w, "not a journal")
	}))
	defer srv.Close()
	base := t.TempDir()
	r := &rig{t: t, dbPath: filepath.Join(base, "heed.db"), dir: base}
	r.open(engine.Options{})
	for _, n := range names {
		r.add(srv.URL + "/" + n)
	}
	r.runIdle()
	r.close()
	r.open(engine.Options{Dir: base}) // a journal here would be played now
	jobs := r.jobs()
	require.Len(t, jobs, len(names))
	for _, j := range jobs {
		assert.Equal(t, engine.JobDone, j.State, j.URL)
		assert.NotContains(t, names, j.File, "%s took a name of the database", j.URL)
		got, err := os.ReadFile(filepath.Join(base, j.File))
		require.NoError(t, err)
		assert.Equal(t, "not a journal", string(got))
	}
	_, err := os.Lstat(filepath.Join(base, "heed.db-journal"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// J1: every rejected line is reported with its line number, host checks
// included, in the order of the text.
func TestEngine_J1_RejectsNameTheirLines(t *testing.T) {
	r := newRig(t, engine.Options{})
	rep := r.add("http://a.example/1", "ftp://b.example/2", "http://127.0.0.2:99999/x", "https://xn--/y", "nope")
	assert.Len(t, rep.Queued, 1)
	var lines []int
	for _, rj := range rep.Rejected {
		lines = append(lines, rj.Line)
	}
	assert.Equal(t, []int{2, 3, 4, 5}, lines)
}

// G9, N2: RunUntilIdle (heed get) ends when what is left waits for a paused
// host, also when it waits in the middle of an attempt, at a redirect to
// that host. The job stays queued, and says why.
func TestEngine_G9_RedirectToPausedHostEndsTheRun(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "moved here")
	}))
	defer target.Close()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/file.bin", http.StatusFound)
	}))
	defer origin.Close()
	var mu sync.Mutex
	var ends []engine.JobEnd
	r := newRig(t, engine.Options{OnJob: func(j engine.JobEnd) { mu.Lock(); ends = append(ends, j); mu.Unlock() }})
	r.eng.Core().PauseHost(hostOf(t, target.URL), "by hand")
	r.add(origin.URL+"/file.bin", origin.URL+"/other.bin")
	r.runIdle()

	for _, j := range r.jobs() {
		assert.Equal(t, engine.JobQueued, j.State, j.URL)
		assert.Contains(t, j.LastError, "is paused", "it says why it waits, not \"interrupted\"")
	}
	mu.Lock()
	got := slices.Clone(ends)
	mu.Unlock()
	require.Len(t, got, 2)
	for _, j := range got {
		assert.Equal(t, "canceled", j.Outcome)
		assert.Contains(t, j.Err, "is paused")
	}
	r.eng.Core().ResumeHost(hostOf(t, target.URL))
	r.runIdle()
	for _, j := range r.jobs() {
		assert.Equal(t, engine.JobDone, j.State, j.URL)
	}
}

// cappedRangeServer serves content, with a strong ETag, the way servers that
// cap their ranges do: a request without Range gets the first cut bytes and
// then a dropped connection (a part to resume from), and each Range request
// at most step bytes in a valid 206. It returns the server's base URL.
func cappedRangeServer(t *testing.T, content string, cut, step int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		var from int
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &from); err != nil {
			w.Header().Set("Content-Length", fmt.Sprint(len(content)))
			io.WriteString(w, content[:cut])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		to := min(from+step, len(content)) - 1
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, len(content)))
		w.Header().Set("Content-Length", fmt.Sprint(to-from+1))
		w.WriteHeader(http.StatusPartialContent)
		io.WriteString(w, content[from:to+1])
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// F5, R2, B1: a server that answers each Range with less than the rest (a
// valid 206 capped in size) is asked for the rest within the same attempt,
// each request paced by the host's governor: no attempt is used up and no
// failure counted against the host's breaker.
func TestEngine_F5_ShortRangesCompleteInOneAttempt(t *testing.T) {
	content := strings.Repeat("0123456789abcdef", 1250) // 20,000 bytes
	base := cappedRangeServer(t, content, 5000, 1000)
	tun := fast()
	tun.Retry = engine.RetryPolicy{MaxAttempts: 3, Strategy: engine.Fixed}
	tun.FailureThreshold = 2
	r := newRig(t, engine.Options{Defaults: tun})
	r.add(base + "/big.bin")
	r.runIdle()

	jobs := r.jobs()
	require.Len(t, jobs, 1)
	j := jobs[0]
	require.Equal(t, engine.JobDone, j.State, j.LastError)
	assert.Equal(t, 2, j.Attempts, "the cut first response, then one attempt of many ranges")
	got, err := os.ReadFile(filepath.Join(r.dir, j.File))
	require.NoError(t, err)
	assert.Equal(t, content, string(got))
	sum := sha256.Sum256([]byte(content))
	assert.Equal(t, hex.EncodeToString(sum[:]), j.SHA256)
	outcomes := map[string]int{}
	var received int64
	for _, a := range r.history(engine.HistoryQuery{}) {
		outcomes[a.Outcome]++
		received += a.Bytes
	}
	assert.EqualValues(t, len(content), received, "S3: each attempt records the bytes it received, which add up to the file")
	assert.GreaterOrEqual(t, outcomes["partial"], 14, "a request per range short of the end: %v", outcomes)
	delete(outcomes, "partial")
	assert.Equal(t, map[string]int{"retry": 1, "ok": 1}, outcomes, "the cut response, and the last range")
	snap, ok := r.eng.Core().HostSnapshot(j.Host)
	require.True(t, ok)
	assert.Equal(t, engine.Closed, snap.Breaker, "short ranges are no failures")
}

// L2, U7: the global limits change live, are checked first, and are saved
// for the next start of the window (Options.SavedLimits).
func TestEngine_L2_LimitsSetLiveAndSaved(t *testing.T) {
	r := newRig(t, engine.Options{})
	assert.Equal(t, engine.Limits{}, r.eng.Limits(), "no caps unless set")
	for _, bad := range []engine.Limits{{RatePerSec: -1}, {RatePerSec: math.NaN()}, {RatePerSec: 2e6}, {BytesPerSec: -5}} {
		assert.Error(t, r.eng.SetLimits(context.Background(), bad), "%+v", bad)
	}
	assert.Equal(t, engine.Limits{}, r.eng.Limits(), "a refused limit changes nothing")

	want := engine.Limits{RatePerSec: 2.5, BytesPerSec: 64 << 10}
	require.NoError(t, r.eng.SetLimits(context.Background(), want))
	assert.Equal(t, want, r.eng.Limits())
	st := r.eng.Core().Stats()
	assert.Equal(t, 2.5, st.GlobalRatePerSec)
	assert.EqualValues(t, 64<<10, r.eng.Bandwidth())

	r.close()
	r.open(engine.Options{SavedLimits: true})
	assert.Equal(t, want, r.eng.Limits(), "the window starts with the saved limits")
	r.close()
	r.open(engine.Options{GlobalRatePerSec: 7})
	assert.Equal(t, engine.Limits{RatePerSec: 7}, r.eng.Limits(), "the command line's own")
}

// U7: Pause all is remembered for the next start of the window, as the
// person left it; the command line starts as it always did.
func TestEngine_U7_PauseAllRemembered(t *testing.T) {
	r := newRig(t, engine.Options{})
	require.NoError(t, r.eng.SetPausedAll(context.Background(), true))
	assert.True(t, r.eng.Core().Stats().PausedAll)
	r.close()
	r.open(engine.Options{SavedLimits: true})
	assert.True(t, r.eng.Core().Stats().PausedAll, "the window opens with everything paused")
	r.close()
	r.open(engine.Options{})
	assert.False(t, r.eng.Core().Stats().PausedAll, "heed get does not read the window's state")
	r.close()
	r.open(engine.Options{SavedLimits: true})
	require.NoError(t, r.eng.SetPausedAll(context.Background(), false))
	r.close()
	r.open(engine.Options{SavedLimits: true})
	assert.False(t, r.eng.Core().Stats().PausedAll, "resumed, and remembered so")
}

// G2, G10: a host's pacing outlives the run through the database: `heed
// get` run once per URL at 60 requests a minute, burst 1, sends the second
// request a second after the first, not at once with a fresh bucket.
func TestEngine_G2_NextRunKeepsTheHostsRate(t *testing.T) {
	srv, arrivals := stampServer(t)
	tun := fast()
	tun.RatePerMin, tun.Burst, tun.MaxInflight = 60, 1, 1
	r := newRig(t, engine.Options{Defaults: tun})
	for i, u := range []string{srv.URL + "/1", srv.URL + "/2"} {
		if i > 0 {
			r.close()
			r.open(engine.Options{Defaults: tun})
		}
		r.add(u)
		r.runIdle()
	}
	seen := arrivals()
	require.Len(t, seen, 2)
	// Not a timing claim: a bucket restored full would send it within milliseconds.
	assert.GreaterOrEqual(t, seen[1].Sub(seen[0]), 900*time.Millisecond, "a token a second, across runs")
}

// F5, R2: a server that dribbles its file in tiny ranges gets at most 1,000
// requests an attempt; then the attempt ends as a cut body does, its part
// kept and its budget used, and the next attempt goes on from the part.
func TestEngine_F5_DribblingRangesCostAttempts(t *testing.T) {
	content := strings.Repeat("0123456789", 1500) // 15,000 bytes in pieces of 10
	base := cappedRangeServer(t, content, 10, 10)
	tun := fast()
	tun.Retry = engine.RetryPolicy{MaxAttempts: 5, Strategy: engine.Fixed}
	r := newRig(t, engine.Options{Defaults: tun})
	r.add(base + "/slow.bin")
	r.runIdle()
	jobs := r.jobs()
	require.Len(t, jobs, 1)
	require.Equal(t, engine.JobDone, jobs[0].State, jobs[0].LastError)
	assert.Equal(t, 3, jobs[0].Attempts, "the cut response, 1,000 pieces, then the last 499")
	got, err := os.ReadFile(filepath.Join(r.dir, jobs[0].File))
	require.NoError(t, err)
	assert.Equal(t, content, string(got))
}

// J2: pasting the same URLs twice queues them once.
func TestEngine_J2_DuplicatesReported(t *testing.T) {
	r := newRig(t, engine.Options{})
	rep := r.add("http://127.0.0.1:1/a", "http://127.0.0.1:1/b", "ftp://x/y", "http://127.0.0.1:1/a")
	assert.Len(t, rep.Queued, 2)
	assert.Equal(t, []string{"http://127.0.0.1:1/a"}, rep.Duplicates)
	require.Len(t, rep.Rejected, 1)
	assert.Equal(t, "ftp://x/y", rep.Rejected[0].Text)
	rep = r.add("http://127.0.0.1:1/b")
	assert.Empty(t, rep.Queued)
	assert.Len(t, rep.Duplicates, 1)
	// Spellings of one URL are one job: host case, the default port, a fragment.
	rep = r.add("http://Files.Example/c.bin")
	require.Len(t, rep.Queued, 1)
	rep = r.add("HTTP://files.example:80/c.bin", "http://FILES.example/c.bin#part2")
	assert.Empty(t, rep.Queued)
	assert.Equal(t, []string{"http://files.example/c.bin", "http://files.example/c.bin"}, rep.Duplicates)
}

// J1, J2: a long paste is parsed and stored in parts, and a URL given twice
// is one job whichever part each falls in: the second is a duplicate in the
// state the first was reported in (queued), even when a run downloaded the
// first before the second was stored — it is not fetched twice. A line
// rejected after the first part keeps its number in the whole paste.
func TestEngine_J2_RepeatAcrossPartsIsOneJob(t *testing.T) {
	var mu sync.Mutex
	served := map[string]int{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		served[req.URL.Path]++
		mu.Unlock()
		w.Write([]byte("x"))
	}))
	t.Cleanup(ts.Close)
	const firstPart = 256 // the URLs AddFrom stores first, before it reads on
	n := firstPart + 50
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/f%d.txt", ts.URL, i)
	}
	urls = append(urls, urls[0], urls[firstPart+1])                       // one from each part, given again
	lines := slices.Insert(slices.Clone(urls), firstPart+20, "ftp://x/y") // parsed after the first part is stored

	r := newRig(t, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	added := r.eng.Adding()
	ran := make(chan error, 1)
	go func() { ran <- r.eng.RunUntilIdle(ctx) }()
	rep, err := r.eng.Add(ctx, "\ufeff"+strings.Join(lines, "\n"))
	require.NoError(t, err)
	added()
	require.NoError(t, <-ran)
	require.Len(t, rep.Rejected, 1)
	assert.Equal(t, firstPart+21, rep.Rejected[0].Line, "lines counted on across the parts")

	assert.Len(t, rep.Queued, n)
	assert.Equal(t, []string{urls[0], urls[firstPart+1]}, rep.Duplicates)
	assert.Equal(t, []engine.JobState{engine.JobQueued, engine.JobQueued}, rep.DuplicateStates)
	assert.Len(t, r.jobs(), n)
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, served, n)
	for p, k := range served {
		assert.Equal(t, 1, k, "%s fetched once", p)
	}
}

// RunUntilIdle does not end for want of work while URLs are on their way
// (Adding): heed get starts its run before its URLs are stored.
func TestEngine_AddingHoldsRunUntilIdle(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("x")) }))
	t.Cleanup(ts.Close)
	r := newRig(t, engine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	added := r.eng.Adding()
	ran := make(chan error, 1)
	go func() { ran <- r.eng.RunUntilIdle(ctx) }()
	select {
	case err := <-ran:
		t.Fatalf("RunUntilIdle ended while URLs were on their way: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	r.add(ts.URL + "/late.txt")
	added()
	added() // a second call changes nothing
	require.NoError(t, <-ran)
	jobs := r.jobs()
	require.Len(t, jobs, 1)
	assert.Equal(t, engine.JobDone, jobs[0].State, jobs[0].LastError)
}

func hostOf(t *testing.T, u string) string {
	t.Helper()
	h, err := engine.HostKey(u)
	require.NoError(t, err)
	return h
}

// S2/F5: a large download's part file is recorded the moment its body
// starts, so a crash in the middle resumes from it; stopping the engine
// requeues the job with the part kept, and the next run resumes with a
// Range request and finishes byte-exact.
func TestEngine_F5_PartRecordedAtStartAndResumed(t *testing.T) {
	r, srv, u, stop := runOneSlowFile(t, 3<<19, 512<<10, 4)
	require.Eventually(t, func() bool {
		a := r.eng.Active()
		return len(a) == 1 && a[0].Bytes > 64<<10 && a[0].Size == 3<<19
	}, 30*time.Second, 10*time.Millisecond)
	j, err := r.jobByURL(u)
	require.NoError(t, err)
	assert.Equal(t, engine.JobActive, j.State)
	assert.NotEmpty(t, j.Part, "the part is recorded while the download runs")
	assert.Equal(t, int64(3<<19), j.Size)
	stop()

	j, err = r.jobByURL(u)
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State, "stopping requeues the job")
	require.NotEmpty(t, j.Part)
	fi, err := os.Stat(filepath.Join(r.dir, j.Part))
	require.NoError(t, err)
	assert.Equal(t, j.Bytes, fi.Size(), "recorded bytes match the part on disk")
	require.Positive(t, fi.Size())
	assertResumedFrom(t, r, srv, u, fi.Size())
}

// F5/S2 for a small body: one that is still arriving after partRecordDelay
// has its part recorded too, and is resumed from it.
func TestEngine_F5_SmallSlowBodyPartRecordedAndResumed(t *testing.T) {
	r, srv, u, stop := runOneSlowFile(t, 48<<10, 16<<10, 6)
	require.Eventually(t, func() bool {
		j, err := r.jobByURL(u)
		return err == nil && j.State == engine.JobActive && j.Part != ""
	}, 30*time.Second, 10*time.Millisecond, "the part of a slow small body is recorded while it arrives")
	require.Eventually(t, func() bool {
		a := r.eng.Active()
		return len(a) == 1 && a[0].Bytes >= 8<<10
	}, 30*time.Second, 10*time.Millisecond)
	stop()
	j, err := r.jobByURL(u)
	require.NoError(t, err)
	require.Equal(t, engine.JobQueued, j.State)
	require.Positive(t, j.Bytes)
	assertResumedFrom(t, r, srv, u, j.Bytes)
}

// runOneSlowFile serves one file of size bytes at rate bytes/s and runs an
// engine on it until stop, which stops the engine and waits for it.
func runOneSlowFile(t *testing.T, size, rate int, seed int64) (r *rig, srv *demo.Server, u string, stop func()) {
	t.Helper()
	srv = startDemo(t, demo.Config{Files: 1, FileSize: size, Seed: seed, Hosts: []demo.HostSpec{
		{Name: "slow", Behavior: demo.Slow, Rate: rate},
	}})
	r = newRig(t, engine.Options{})
	u = srv.URLs()[0]
	r.add(u)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.eng.Run(ctx) }()
	return r, srv, u, func() {
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
	}
}

// assertResumedFrom runs the engine until idle and checks that u was
// finished byte-exact by one more request that resumed at byte from.
func assertResumedFrom(t *testing.T, r *rig, srv *demo.Server, u string, from int64) {
	t.Helper()
	r.runIdle()
	j, err := r.jobByURL(u)
	require.NoError(t, err)
	require.Equal(t, engine.JobDone, j.State, j.LastError)
	want, _ := srv.Expected(u)
	assert.Equal(t, want, sha(t, filepath.Join(r.dir, j.File)))
	// The demo host logs a request once its handler returns, which can be
	// just after Heed has read the last byte.
	require.Eventually(t, func() bool { return len(srv.Log()) >= 2 }, 30*time.Second, 10*time.Millisecond)
	log := srv.Log()
	require.Len(t, log, 2)
	assert.Equal(t, fmt.Sprintf("bytes=%d-", from), log[1].Range, "the second request resumes from the part")
}

// G10/S4: while the engine runs, a host's routine changes (its last
// status after a success) reach the database within moments, without a
// restart or a host event to push them.
// G9, S4: what the person does to a host (pause, retune) is written to the
// database while the engine has nothing to do, not at its next dispatch, so
// that a crash then does not forget it.
func TestEngine_G9_PersonsPauseStoredWhileIdle(t *testing.T) {
	srv := startDemo(t, demo.Config{Files: 1, FileSize: 256, Seed: 5, Hosts: []demo.HostSpec{{Name: "ok"}}})
	r := newRig(t, engine.Options{})
	r.add(srv.URLs()...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.eng.Run(ctx) }()
	defer func() { cancel(); <-done }()
	stored := func(host string) (engine.HostState, bool) {
		hosts, err := r.db.Hosts(context.Background())
		require.NoError(t, err)
		for _, h := range hosts {
			if h.Host == host {
				return h, true
			}
		}
		return engine.HostState{}, false
	}
	require.Eventually(t, func() bool {
		h, ok := stored(hostOf(t, srv.URLs()[0]))
		return ok && h.LastStatus == 200
	}, 10*time.Second, 20*time.Millisecond)
	time.Sleep(time.Second) // the queue is empty: the run loop is left waiting for work

	const other = "other.example"
	require.NoError(t, r.eng.PauseHost(context.Background(), other, "by hand"))
	h, ok := stored(other)
	assert.True(t, ok && h.Paused && h.PauseReason == "by hand", "the pause is stored when the command returns")

	tun := engine.DefaultTunables()
	tun.Burst = 9
	require.NoError(t, r.eng.SetHostTunables(context.Background(), other, tun))
	h, _ = stored(other)
	require.NotNil(t, h.Tunables, "the retune is stored when the command returns")
	assert.Equal(t, 9, h.Tunables.Burst)
	events, err := r.db.HostEvents(context.Background(), other, 0)
	require.NoError(t, err)
	assert.Len(t, events, 2, "and so are their events")
}

func TestEngine_G10_RoutineHostStateWrittenWhileRunning(t *testing.T) {
	srv := startDemo(t, demo.Config{Files: 1, FileSize: 256, Seed: 5, Hosts: []demo.HostSpec{{Name: "ok"}}})
	r := newRig(t, engine.Options{})
	r.add(srv.URLs()...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.eng.Run(ctx) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool {
		hosts, err := r.db.Hosts(context.Background())
		return err == nil && len(hosts) == 1 && hosts[0].LastStatus == 200
	}, 10*time.Second, 20*time.Millisecond, "the host's last status is stored while the engine runs")
}

// stalledFinish holds every Finish until release is closed, as a disk far
// slower than the network would.
type stalledFinish struct {
	engine.Store
	entered chan struct{} // closed at the first Finish
	once    sync.Once
	release chan struct{}
}

func (s *stalledFinish) Finish(ctx context.Context, end engine.End) ([]engine.Enqueued, error) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	return s.Store.Finish(ctx, end)
}

// S5: while downloads cannot finish (the database or the disk is slow),
// they wait only up to a bound beside those in flight (each holds its part
// open): no new request is sent past it, and all go on when they can.
func TestEngine_S5_FinishingDownloadsBounded(t *testing.T) {
	const workers, files = 2, 120
	bound := 2*workers + 64
	srv := startDemo(t, demo.FastConfig(1, files, 1<<10))
	base := t.TempDir()
	store := &stalledFinish{entered: make(chan struct{}), release: make(chan struct{})}
	db, eng := engineOver(t, filepath.Join(base, "heed.db"), filepath.Join(base, "dl"),
		func(s engine.Store) engine.Store { store.Store = s; return store }, srv.URLs(),
		func(o *engine.Options) { o.Workers = workers })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- eng.RunUntilIdle(ctx) }()

	<-store.entered
	require.Eventually(t, func() bool { return srv.Requests() >= int64(bound) }, 30*time.Second, 5*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // time for any request past the bound to be sent
	assert.Equal(t, int64(bound), srv.Requests(), "no request past the bound of finishing downloads")

	close(store.release)
	require.NoError(t, <-ran)
	counts, err := db.Counts(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(files), counts.Done)
}

// stampServer answers every request "ok" and returns when each arrived.
func stampServer(t *testing.T) (*httptest.Server, func() []time.Time) {
	var mu sync.Mutex
	var seen []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, time.Now())
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, func() []time.Time { mu.Lock(); defer mu.Unlock(); return slices.Clone(seen) }
}

// crashedBeforeSaving is a Store that loses what a run writes of its hosts
// and of having stopped, as a kill -9 between two writes of host states does.
type crashedBeforeSaving struct{ engine.Store }

func (crashedBeforeSaving) SaveHost(engine.HostState) error { return nil }

func (c crashedBeforeSaving) SetSetting(ctx context.Context, key, value string) error {
	if key == "running" && value == "false" {
		return nil
	}
	return c.Store.SetSetting(ctx, key, value)
}

// G2, G10: after a run that stopped without writing its hosts' buckets (a
// crash within a write interval), the next run does not start them full:
// the requests the lost writes would have counted must not come again as a
// fresh burst.
func TestEngine_G2_NoFreshBurstAfterACrash(t *testing.T) {
	srv, arrivals := stampServer(t)
	count := func() int { return len(arrivals()) }
	tun := fast()
	tun.RatePerMin, tun.Burst, tun.MaxInflight = 60, 3, 3
	base := t.TempDir()
	dbPath, dir := filepath.Join(base, "heed.db"), filepath.Join(base, "dl")
	urls := make([]string, 6)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/%d", srv.URL, i)
	}

	db, err := storage.Open(dbPath)
	require.NoError(t, err)
	eng, err := engine.New(context.Background(), crashedBeforeSaving{db},
		engine.Options{Dir: dir, Defaults: tun, Version: "test"})
	require.NoError(t, err)
	_, err = eng.Add(context.Background(), strings.Join(urls, "\n"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	require.Eventually(t, func() bool { return count() == 3 }, 10*time.Second, time.Millisecond, "the burst")
	cancel()
	<-done
	require.NoError(t, eng.Close())
	require.NoError(t, db.Close())

	// A run stopped before the host's next token (nothing sent), then another: the empty
	// bucket was written by the first, so the second does not start full either.
	for _, early := range []bool{true, false} {
		db, err = storage.Open(dbPath)
		require.NoError(t, err)
		eng, err = engine.New(context.Background(), db, engine.Options{Dir: dir, Defaults: tun, Version: "test"})
		require.NoError(t, err)
		ctx, cancel = context.WithCancel(context.Background())
		go func() { done <- eng.Run(ctx) }()
		if early {
			time.Sleep(100 * time.Millisecond)
			require.Equal(t, 3, count(), "no request before the host's next token")
		} else {
			require.Eventually(t, func() bool { return count() >= 4 }, 10*time.Second, time.Millisecond)
		}
		cancel()
		<-done
		require.NoError(t, eng.Close())
		if early {
			require.NoError(t, db.Close())
		}
	}
	defer db.Close()
	seen := arrivals()
	// Not a timing claim: a bucket restored full would send three more within milliseconds.
	assert.GreaterOrEqual(t, seen[3].Sub(seen[2]), 900*time.Millisecond, "a token a second, across the crash")
	v, err := db.Setting(context.Background(), "running")
	require.NoError(t, err)
	assert.Equal(t, "false", v, "a run that stopped cleanly says so")
}
