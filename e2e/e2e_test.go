package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"heed/storage/postgres/pgtest"
)

// heedBin is the heed binary built by TestMain, or the one named by the
// HEED_E2E_BIN environment variable.
var heedBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "heed-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if bin := os.Getenv("HEED_E2E_BIN"); bin != "" { // a heed binary built elsewhere
		heedBin = bin
		code := m.Run()
		pgtest.Stop()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	heedBin = filepath.Join(dir, "heed")
	build := exec.Command("go", "build", "-tags", "migrated_fynedo", "-o", heedBin, "heed")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building heed:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	pgtest.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is how one heed run ended.
type result struct {
	code           int
	stdout, stderr string
}

// heed runs the binary to its end (at most a minute) and returns its exit
// code and output.
func heed(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, heedBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	default:
		t.Fatalf("running heed %v: %v", args, err)
	}
	require.NoError(t, ctx.Err(), "heed %v did not finish: %s", args, res.stderr)
	return res
}

// running is a heed process started in the background.
type running struct {
	cmd      *exec.Cmd
	out, err syncBuffer
	done     chan struct{}
	code     int
}

func start(t *testing.T, args ...string) *running {
	t.Helper()
	r := &running{cmd: exec.Command(heedBin, args...), done: make(chan struct{})}
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.err
	require.NoError(t, r.cmd.Start())
	go func() {
		r.cmd.Wait()
		r.code = r.cmd.ProcessState.ExitCode() // -1 when killed by a signal
		close(r.done)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// wait waits for the process to end and returns its exit code.
func (r *running) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(30 * time.Second):
		t.Fatalf("heed did not exit; stderr: %s", r.err.String())
		return 0
	}
}

// syncBuffer is a bytes.Buffer safe for the process's writer goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// jobLine and historyLine are the JSON lines of heed jobs and heed history.
type jobLine struct {
	ID        int64  `json:"id"`
	URL       string `json:"url"`
	Host      string `json:"host"`
	State     string `json:"state"`
	File      string `json:"file"`
	Bytes     int64  `json:"bytes"`
	SHA256    string `json:"sha256"`
	Attempts  int    `json:"attempts"`
	Throttled int    `json:"throttled"`
	LastError string `json:"last_error"`
}

type historyLine struct {
	JobID        int64     `json:"job_id"`
	URL          string    `json:"url"`
	Host         string    `json:"host"`
	Attempt      int       `json:"attempt"`
	StartedAt    time.Time `json:"started_at"`
	Status       int       `json:"status"`
	Outcome      string    `json:"outcome"`
	Bytes        int64     `json:"bytes"`
	Error        string    `json:"error"`
	RetryAfterMS int64     `json:"retry_after_ms"`
	BackoffLevel int       `json:"backoff_level"`
	BreakerState string    `json:"breaker_state"`
}

// jsonLines decodes one JSON object per line.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var res []T
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var v T
		require.NoError(t, json.Unmarshal([]byte(l), &v), "line %q", l)
		res = append(res, v)
	}
	return res
}

func jobs(t *testing.T, db string) []jobLine {
	t.Helper()
	r := heed(t, "jobs", "--json", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	return jsonLines[jobLine](t, r.stdout)
}

func history(t *testing.T, db string) []historyLine {
	t.Helper()
	r := heed(t, "history", "--json", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	return jsonLines[historyLine](t, r.stdout)
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return hexSHA(b)
}

func hexSHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// listDir maps each file of dir to its size.
func listDir(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	out := map[string]int64{}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // gone meanwhile (a part renamed)
		}
		out[e.Name()] = fi.Size()
	}
	return out
}

// ---- a slow file server with Range support ----

// seen is one request a fileServer received.
type seen struct{ Path, Range string }

// fileServer serves fixed, deterministic files with Range and If-Range
// (http.ServeContent) and a strong ETag, trickling the body at chunk bytes
// per delay so a test can interrupt downloads midway.
type fileServer struct {
	*httptest.Server
	files map[string][]byte
	mu    sync.Mutex
	log   []seen
}

func newFileServer(t *testing.T, files map[string][]byte, chunk int, delay time.Duration) *fileServer {
	t.Helper()
	s := &fileServer{files: files}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, seen{Path: r.URL.Path, Range: r.Header.Get("Range")})
		s.mu.Unlock()
		data, ok := s.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", `"`+hexSHA(data)[:16]+`"`)
		modtime := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
		http.ServeContent(w, r, "", modtime, &slowReader{r: bytes.NewReader(data), chunk: chunk, delay: delay, ctx: r.Context()})
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *fileServer) seen() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// slowReader pauses for delay after every chunk bytes read (whatever
// the sizes the server's copy loop asks for), so a body flows at about
// chunk/delay bytes per second.
type slowReader struct {
	r     *bytes.Reader
	chunk int
	delay time.Duration
	ctx   context.Context
	since int // bytes read since the last pause
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.since >= s.chunk {
		s.since = 0
		select {
		case <-time.After(s.delay):
		case <-s.ctx.Done():
			return 0, s.ctx.Err()
		}
	}
	if len(p) > s.chunk-s.since {
		p = p[:s.chunk-s.since]
	}
	n, err := s.r.Read(p)
	s.since += n
	return n, err
}

func (s *slowReader) Seek(off int64, whence int) (int64, error) { return s.r.Seek(off, whence) }

// content makes n deterministic pseudo-random bytes.
func content(seed uint64, n int) []byte {
	b := make([]byte, n)
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 'h', 'e', 'e', 'd'})
	rng.Read(b)
	return b
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A C locale with a character set (C.UTF-8, the default of many servers and
// containers) is not a language: heed started under it, for a script or a
// server, prints nothing about its locale, for every command.
func TestHeed_CLocaleSaysNothing(t *testing.T) {
	for _, env := range [][]string{
		{"LANG=C.UTF-8"},
		{"LC_ALL=C.UTF-8", "LANG=en_US.UTF-8"},
		{"LC_MESSAGES=POSIX.UTF-8"},
		{"LANG=C"},
	} {
		t.Run(strings.Join(env, " "), func(t *testing.T) {
			cmd := exec.Command(heedBin, "version")
			for _, kv := range os.Environ() {
				switch k, _, _ := strings.Cut(kv, "="); k {
				case "LANG", "LC_ALL", "LC_MESSAGES", "LANGUAGE":
				default:
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, env...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			require.NoError(t, cmd.Run(), errb.String())
			require.Empty(t, errb.String())
			require.Contains(t, out.String(), "heed")
		})
	}
}
