package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Q1, S2, RELIABILITY 31/32: heed get killed with SIGKILL again and again
// while hosts' windows are being refilled from the database (thousands of
// queued jobs, a window of a few each) loses and duplicates nothing: after
// the last run every URL is one job, done, its file exact, and the
// database passes integrity_check.
func TestFrontier_Q1_RefillsSurviveKill9(t *testing.T) {
	const perHost = 1200
	files := map[string][]byte{}
	var urls []string
	for h := range 3 {
		hf := map[string][]byte{}
		for i := range perHost {
			hf[fmt.Sprintf("/h%d/f%04d.bin", h, i)] = content(uint64(1000*h+i), 600)
		}
		srv := newFileServer(t, hf, 300, 2*time.Millisecond)
		for p, b := range hf {
			files[p] = b
			urls = append(urls, srv.URL+p)
		}
	}
	tmp := t.TempDir()
	db, dir, list := filepath.Join(tmp, "heed.db"), filepath.Join(tmp, "dl"), filepath.Join(tmp, "urls.txt")
	require.NoError(t, os.WriteFile(list, []byte(strings.Join(urls, "\n")), 0o644))
	// Two in flight per host: a window of ten, refilled some 360 times.
	args := []string{"get", "-q", "--db", db, "--dir", dir, "--rate", "600000", "--burst", "10000",
		"--max-inflight", "2", "--workers", "6", "--jitter", "0-0", "-i", list}
	for _, at := range []int{400, 1500, 2600} {
		run := start(t, args...)
		waitFor(t, fmt.Sprintf("%d files done", at), time.Minute, func() bool { return doneJobs(t, db) >= at })
		require.NoError(t, run.cmd.Process.Signal(syscall.SIGKILL))
		run.wait(t)
	}
	res := heed(t, args...)
	require.Equal(t, 0, res.code, "stderr: %s", res.stderr)

	js := jobs(t, db)
	require.Len(t, js, len(files), "one job per URL: none lost, none twice")
	byURL := map[string]int{}
	for _, j := range js {
		byURL[j.URL]++
		assert.Equal(t, "done", j.State, j.URL)
		u, err := url.Parse(j.URL)
		require.NoError(t, err)
		assert.Equal(t, hexSHA(files[u.Path]), fileSHA(t, filepath.Join(dir, j.File)), "%s is byte-exact", j.URL)
	}
	assert.Len(t, byURL, len(files))
	got := listDir(t, dir)
	parts := 0
	for n := range got {
		if strings.HasSuffix(n, ".part") {
			parts++
		}
	}
	assert.Zero(t, parts, "no part left")
	assert.Len(t, got, len(files), "one file per job")

	raw := readOnly(t, db)
	defer raw.Close()
	var ok string
	require.NoError(t, raw.QueryRow(`PRAGMA integrity_check`).Scan(&ok))
	assert.Equal(t, "ok", ok)
	var queued, done int64
	require.NoError(t, raw.QueryRow(`SELECT sum(queued), sum(done) FROM hosts`).Scan(&queued, &done))
	assert.Equal(t, int64(0), queued, "the hosts' counts agree with the jobs")
	assert.Equal(t, int64(len(files)), done)
}
