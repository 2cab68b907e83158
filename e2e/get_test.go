package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine/demo"
)

// heed get over the demo hosts with politeness raised: exit 0, every file
// byte-exact (F4, F7), every host's requests within burst + rate·t over
// every window (G2), and every Retry-After honoured (G5).
func TestGet_DemoHostsPoliteAndByteExact(t *testing.T) {
	cfg := demo.Config{
		Hosts: []demo.HostSpec{
			{Name: "healthy", Behavior: demo.Healthy},
			{Name: "throttling", Behavior: demo.Throttling, RetryAfter: time.Second, ThrottleEvery: 3, DateEvery: 2},
			{Name: "flaky", Behavior: demo.Flaky, FailFraction: 0.3, RetryAfter: time.Second, RetryAfterFraction: 0.5},
			{Name: "dropping", Behavior: demo.Dropping, DropFraction: 0.3},
		},
		Files: 6, FileSize: 2 << 10, MaxFileSize: 96 << 10, Seed: 3,
	}
	srv, err := demo.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })

	tmp := t.TempDir()
	db, dir := filepath.Join(tmp, "heed.db"), filepath.Join(tmp, "dl")
	const ratePerMin, burst = 300.0, 2
	args := []string{"get", "--db", db, "--dir", dir, "--rate", fmt.Sprint(ratePerMin), "--burst", fmt.Sprint(burst),
		"--jitter", "0-0", "--backoff-base", "50ms", "--backoff-max", "200ms", "--retry-base", "50ms",
		"--retry-max", "200ms", "--max-attempts", "10"}
	res := heed(t, append(args, srv.URLs()...)...)
	require.Equal(t, 0, res.code, "stderr: %s\nstdout: %s", res.stderr, res.stdout)

	// Every file byte-exact, as the jobs say and as the disk says.
	js := jobs(t, db)
	require.Len(t, js, len(srv.URLs()))
	for _, j := range js {
		want, size := srv.Expected(j.URL)
		require.Equal(t, "done", j.State, "%s: %s", j.URL, j.LastError)
		assert.Equal(t, want, j.SHA256, j.URL)
		assert.Equal(t, size, j.Bytes, j.URL)
		assert.Equal(t, want, fileSHA(t, filepath.Join(dir, j.File)), "bytes on disk of %s", j.URL)
	}
	files := listDir(t, dir)
	assert.Len(t, files, len(srv.URLs()), "one file per URL, no part left: %v", files)

	// Politeness, per host, from history.
	byHost := map[string][]historyLine{}
	for _, h := range history(t, db) {
		byHost[h.Host] = append(byHost[h.Host], h)
	}
	require.Len(t, byHost, len(cfg.Hosts))
	throttles := 0
	for host, hs := range byHost {
		sort.Slice(hs, func(i, j int) bool { return hs[i].StartedAt.Before(hs[j].StartedAt) })
		// G2: over every window [s_i, s_j], at most burst + rate·t starts.
		// started_at is taken just after dispatch, after a database commit,
		// so windows get a little slack for that.
		const slack = 100 * time.Millisecond
		for i := range hs {
			for j := i + 1; j < len(hs); j++ {
				window := hs[j].StartedAt.Sub(hs[i].StartedAt)
				allowed := burst + ratePerMin/60*(window+slack).Seconds()
				if n := float64(j - i + 1); n > allowed {
					t.Errorf("%s: %v requests started within %v, rate allows %.2f", host, n, window, allowed)
				}
			}
		}
		// G5: after a throttle with Retry-After, the host's next request
		// starts no earlier than the throttled one's start + Retry-After.
		for i, h := range hs {
			if h.RetryAfterMS <= 0 {
				continue
			}
			throttles++
			assert.Contains(t, []int{429, 503}, h.Status)
			if i+1 < len(hs) {
				earliest := h.StartedAt.Add(time.Duration(h.RetryAfterMS) * time.Millisecond)
				assert.False(t, hs[i+1].StartedAt.Before(earliest),
					"%s: request at %s came before the Retry-After of the %d at %s (%d ms)",
					host, hs[i+1].StartedAt.Format(time.StampMicro), h.Status, h.StartedAt.Format(time.StampMicro), h.RetryAfterMS)
			}
		}
	}
	require.Positive(t, throttles, "the demo hosts sent Retry-After")
}

// Exit codes of SPEC §9: 2 for bad usage, 3 for an unusable database
// (never overwritten), 1 when a job fails.
func TestGet_ExitCodes(t *testing.T) {
	srv := newFileServer(t, map[string][]byte{"/ok.txt": []byte("fine")}, 1<<20, 0)
	t.Run("2 unknown flag", func(t *testing.T) {
		tmp := t.TempDir()
		res := heed(t, "get", "--db", filepath.Join(tmp, "heed.db"), "--dir", tmp, "--no-such-flag", srv.URL+"/ok.txt")
		assert.Equal(t, 2, res.code, res.stderr)
		assert.Contains(t, res.stderr, "no-such-flag")
		assert.NoFileExists(t, filepath.Join(tmp, "ok.txt"))
	})
	t.Run("2 invalid rate", func(t *testing.T) {
		tmp := t.TempDir()
		res := heed(t, "get", "--db", filepath.Join(tmp, "heed.db"), "--dir", tmp, "--rate", "0", srv.URL+"/ok.txt")
		assert.Equal(t, 2, res.code, res.stderr)
		assert.Contains(t, res.stderr, "rate")
		assert.NoFileExists(t, filepath.Join(tmp, "ok.txt"))
	})
	t.Run("3 not a database", func(t *testing.T) {
		tmp := t.TempDir()
		notDB := filepath.Join(tmp, "notes.txt")
		text := []byte("my notes, not a database\n" + string(make([]byte, 200)))
		require.NoError(t, os.WriteFile(notDB, text, 0o644))
		res := heed(t, "get", "--db", notDB, "--dir", filepath.Join(tmp, "dl"), srv.URL+"/ok.txt")
		assert.Equal(t, 3, res.code, res.stderr)
		assert.Contains(t, res.stderr, notDB, "the message names the file")
		got, err := os.ReadFile(notDB)
		require.NoError(t, err)
		assert.Equal(t, text, got, "never overwritten")
		assert.NoFileExists(t, filepath.Join(tmp, "dl", "ok.txt"))
	})
	t.Run("1 a job failed", func(t *testing.T) {
		tmp := t.TempDir()
		db := filepath.Join(tmp, "heed.db")
		res := heed(t, "get", "--db", db, "--dir", filepath.Join(tmp, "dl"), "--jitter", "0-0",
			srv.URL+"/ok.txt", srv.URL+"/missing.txt")
		assert.Equal(t, 1, res.code, res.stderr)
		states := map[string]jobLine{}
		for _, j := range jobs(t, db) {
			states[j.URL] = j
		}
		assert.Equal(t, "done", states[srv.URL+"/ok.txt"].State)
		missing := states[srv.URL+"/missing.txt"]
		assert.Equal(t, "failed", missing.State)
		assert.Contains(t, missing.LastError, "404")
		assert.Equal(t, 1, missing.Attempts, "a 404 is not retried")
		assert.Equal(t, map[string]int64{"ok.txt": 4}, listDir(t, filepath.Join(tmp, "dl")))
	})
}
