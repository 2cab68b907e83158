package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage"
)

// run calls Main in-process and returns the exit code, stdout and stderr.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Version: "9.9.9"}, args)
	return code, out.String(), errb.String()
}

func TestMain_UsageErrorsExit2(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	cases := []struct {
		name string
		args []string
		msg  string
	}{
		{"unknown command", []string{"fetch"}, `unknown command "fetch"`},
		{"unknown flag", []string{"get", "--db", db, "--frobnicate"}, "unknown flag: --frobnicate"},
		{"rate zero is not a rate", []string{"get", "--db", db, "--rate", "0"}, "--rate: 0 is out of range"},
		{"errors name the flag", []string{"get", "--db", db, "--breaker-threshold", "0"}, "--breaker-threshold: 0 is out of range"},
		{"retry attempts name the flag", []string{"get", "--db", db, "--max-attempts", "0"}, "--max-attempts: 0 is out of range"},
		{"burst far out of bounds", []string{"get", "--db", db, "--burst", "1e20"}, "--burst: 1e+20 is out of range"},
		{"duration without a unit", []string{"get", "--db", db, "--backoff-base", "5"}, `"5" has no unit: write it as 5s or 5ms`},
		{"not a duration", []string{"get", "--db", db, "--retry-base", "soon"}, `"soon" is not a duration`},
		{"burst out of bounds", []string{"get", "--db", db, "--burst", "20000"}, "burst"},
		{"burst not whole", []string{"get", "--db", db, "--burst", "1.5"}, "--burst: 1.5 is not a whole number"},
		{"bad jitter", []string{"get", "--db", db, "--jitter", "250ms"}, "MIN-MAX"},
		{"bad strategy", []string{"get", "--db", db, "--retry", "sometimes"}, "--retry"},
		{"add without URLs", []string{"add", "--db", db}, "no URLs given"},
		{"bad job state", []string{"jobs", "--db", db, "--state", "sleeping"}, `"sleeping" is not a job state`},
		{"history json and csv", []string{"history", "--db", db, "--json", "--csv"}, "choose one"},
		{"host without a name", []string{"host", "--db", db}, "exactly one HOST"},
		{"host pause and resume", []string{"host", "--db", db, "example.com", "--pause", "--resume"}, "make no sense"},
		{"only rejected URLs", []string{"add", "--db", db, "ftp://example.com/x"}, "rejected"},
		{"user agent with a line break", []string{"get", "--db", db, "--user-agent", "Bad\r\nX-Injected: 1", "http://127.0.0.1:9/a"}, "--user-agent"},
		{"host trip and reset", []string{"host", "--db", db, "example.com", "--trip", "--reset"}, "one of --trip, --reset and --probe"},
		{"host defaults and a tunable", []string{"host", "--db", db, "example.com", "--follow-defaults", "--rate", "5"}, "--follow-defaults"},
		{"bad history outcome", []string{"history", "--db", db, "--outcome", "bogus"}, `"bogus" is not an outcome`},
		{"history with an argument", []string{"history", "--db", db, "example.com"}, `"example.com" is one too many`},
		{"jobs with an argument", []string{"jobs", "--db", db, "queued"}, "takes no arguments"},
		{"argument that is a comment", []string{"add", "--db", db, "# not a URL"}, `"# not a URL" is not a URL`},
		{"argument with a line break", []string{"add", "--db", db, "http://example.com/a\nhttp://example.com/b"}, "line break"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, "", tc.args...)
			assert.Equal(t, ExitUsage, code, stderr)
			assert.Contains(t, stderr, tc.msg)
		})
	}
}

// A command that only lists does not create the database a mistyped --db
// names: it says there is none, exit 3.
func TestMain_ListingAMissingDatabaseExit3(t *testing.T) {
	dir := t.TempDir()
	for _, cmd := range []string{"jobs", "hosts", "history", "crawls"} {
		path := filepath.Join(dir, "typo", "heed.db")
		code, out, stderr := run(t, "", cmd, "--db", path)
		assert.Equal(t, ExitUnusable, code, cmd)
		assert.Contains(t, stderr, "no database at "+path, cmd)
		assert.Empty(t, out, cmd)
		assert.NoDirExists(t, filepath.Join(dir, "typo"), cmd)
	}
}

// While another Heed runs on the database (a heed get, the window), jobs,
// hosts and history list what it has committed; changing it is still
// refused (S6).
func TestMain_ListingBesideARunningHeed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "", "add", "--db", path, "http://example.com/a", "http://example.com/b")
	require.Equal(t, ExitOK, code, stderr)
	holder, err := storage.Open(path)
	require.NoError(t, err)
	defer holder.Close()

	code, out, stderr := run(t, "", "jobs", "--db", path, "--json")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, 2, strings.Count(out, "\n"))
	assert.Contains(t, stderr, "another Heed is running on "+path)
	for _, args := range [][]string{{"hosts"}, {"history", "--csv"}, {"jobs", "--state", "queued"}, {"crawls", "--json"}} {
		code, _, stderr := run(t, "", append(args, "--db", path)...)
		assert.Equal(t, ExitOK, code, "%v: %s", args, stderr)
	}
	code, _, stderr = run(t, "", "add", "--db", path, "http://example.com/c")
	assert.Equal(t, ExitUnusable, code)
	assert.Contains(t, stderr, "in use by another Heed")
	code, _, stderr = run(t, "", "host", "--db", path, "example.com", "--pause")
	assert.Equal(t, ExitUnusable, code)
	assert.Contains(t, stderr, "in use by another Heed")
}

// RELIABILITY 36: a lock another program holds on the database (the sqlite3
// shell in a transaction) is said to be that, not another Heed: listing
// still works, changing it is refused with exit 3.
func TestMain_DatabaseLockedByAnotherProgram(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "", "add", "--db", path, "http://example.com/a")
	require.Equal(t, ExitOK, code, stderr)
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=1000")
	require.NoError(t, err)
	defer raw.Close()
	tx, err := raw.Begin()
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.Exec("INSERT INTO settings (key, value) VALUES ('held', 'by sqlite3')")
	require.NoError(t, err)

	code, out, stderr := run(t, "", "jobs", "--db", path)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "http://example.com/a")
	assert.Contains(t, stderr, "another program holds a lock on "+path)
	assert.NotContains(t, stderr, "Heed is running")

	code, _, stderr = run(t, "", "add", "--db", path, "http://example.com/b")
	assert.Equal(t, ExitUnusable, code)
	assert.Contains(t, stderr, path)
	assert.Contains(t, stderr, "locked by another program (not Heed)")
	assert.NotContains(t, stderr, "another Heed")
}

// B6: heed hosts gives an open breaker's probe time only when it knows the
// recovery timeout (the host's own); for a host that follows the defaults,
// which the running Heed sets, it says how long the breaker has been open.
func TestMain_HostsBreakerCountdownOnlyWhenKnown(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "", "host", "--db", db, "d.example", "--trip")
	require.Equal(t, ExitOK, code, stderr)
	code, _, stderr = run(t, "", "host", "--db", db, "own.example", "--trip", "--rate", "12000", "--breaker-timeout", "10m")
	require.Equal(t, ExitOK, code, stderr)
	code, out, stderr := run(t, "", "hosts", "--db", db)
	require.Equal(t, ExitOK, code, stderr)
	assert.Regexp(t, `d\.example\s+breaker open\s+0\s+open for \d+s\s+open\s+default`, out)
	assert.Regexp(t, `own\.example\s+breaker open\s+0\s+probe in (9m5\d|10m0)s\s+open\s+12000/min`, out)
	code, out, stderr = run(t, "", "hosts", "--db", db, "--json")
	require.Equal(t, ExitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	assert.NotContains(t, lines[0], "breaker_half_open_at", "d.example: not known here")
	assert.Contains(t, lines[0], "breaker_opened_at")
	assert.Contains(t, lines[1], "breaker_half_open_at")
}

// add queues only: a --dir given to it is not remembered, and it says so.
func TestMain_AddSaysDirIsForGet(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := run(t, "", "add", "--db", filepath.Join(dir, "h.db"), "--dir", filepath.Join(dir, "target"), "http://example.com/a")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "add only queues; the folder is chosen when they download: heed get --dir "+filepath.Join(dir, "target"))
	code, _, stderr = run(t, "", "add", "--db", filepath.Join(dir, "h.db"), "http://example.com/b")
	require.Equal(t, ExitOK, code, stderr)
	assert.NotContains(t, stderr, "add only queues")
}

// --host of jobs and history names a host as heed host does: any spelling
// of it, or a URL on it.
func TestMain_HostFilterTakesAnySpellingOfTheHost(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "", "add", "--db", db, "http://example.com/a", "http://other.example/b")
	require.Equal(t, ExitOK, code, stderr)
	for _, h := range []string{"example.com", "EXAMPLE.com:80", "http://Example.COM/some/file", "example.com:443"} {
		code, out, stderr := run(t, "", "jobs", "--db", db, "--json", "--host", h)
		require.Equal(t, ExitOK, code, stderr)
		assert.Equal(t, 1, strings.Count(out, "\n"), h)
		assert.Contains(t, out, `"url":"http://example.com/a"`, h)
		code, _, stderr = run(t, "", "history", "--db", db, "--host", h)
		require.Equal(t, ExitOK, code, stderr)
	}
	code, _, stderr = run(t, "", "jobs", "--db", db, "--host", "bad host!")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "--host")
}

// RELIABILITY F36: a file that is not a database is refused with a message
// naming it, exit 3, and left untouched.
func TestMain_NotADatabaseExit3(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(path, []byte("my notes, not a database"), 0o644))
	code, _, stderr := run(t, "", "jobs", "--db", path)
	assert.Equal(t, ExitUnusable, code)
	assert.Contains(t, stderr, path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "my notes, not a database", string(b))
}

// J1, J2 from the command line: add reads arguments and standard input,
// reports duplicates and rejects, and jobs --json lists what was queued.
func TestMain_AddThenJobsJSON(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "http://example.com/b\nhttp://example.com/a\n", "add", "--db", db, "http://example.com/a", "-")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "queued 2, duplicates 1")

	code, out, stderr := run(t, "", "jobs", "--db", db, "--json")
	require.Equal(t, ExitOK, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	var j map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &j))
	for _, k := range []string{"id", "url", "host", "state", "file", "bytes", "sha256", "attempts", "throttled", "last_error"} {
		assert.Contains(t, j, k)
	}
	assert.Equal(t, "http://example.com/a", j["url"])
	assert.Equal(t, "queued", j["state"])
	assert.Equal(t, "example.com", j["host"])
}

// J1: an argument is one URL, a space in it part of its path, as for curl
// and wget; in a list (-i or standard input), spaces separate URLs and a
// line starting with # is a comment.
func TestMain_ArgumentIsOneURL(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "# my list\nhttp://example.com/c http://example.com/d\n", "add", "--db", db,
		"http://example.com/my report.pdf", "-")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "queued 3, duplicates 0 (queued again 0), rejected 0")
	code, out, stderr := run(t, "", "jobs", "--db", db, "--json")
	require.Equal(t, ExitOK, code, stderr)
	var urls []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var j struct{ URL string }
		require.NoError(t, json.Unmarshal([]byte(l), &j))
		urls = append(urls, j.URL)
	}
	assert.Equal(t, []string{"http://example.com/my%20report.pdf", "http://example.com/c", "http://example.com/d"}, urls)
}

// G9, B5, U3 from the command line: heed host pauses, retunes and trips a
// host, and the change is stored with its events.
func TestMain_HostEditsArePersisted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "", "host", "--db", db, "Example.COM:80", "--pause", "--rate", "6", "--burst", "2", "--trip")
	require.Equal(t, ExitOK, code, stderr)

	code, out, stderr := run(t, "", "hosts", "--db", db, "--json")
	require.Equal(t, ExitOK, code, stderr)
	var h hostLine
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &h))
	assert.Equal(t, "example.com", h.Host)
	assert.True(t, h.Paused)
	assert.Equal(t, "open", h.Breaker)
	require.True(t, h.Own)
	assert.Equal(t, 6.0, h.Tunables.RatePerMin)
	assert.Equal(t, 2, h.Tunables.Burst)
	assert.Equal(t, engine.DefaultTunables().MaxInflight, h.Tunables.MaxInflight, "flags not given keep their value")
	// B6: an open breaker says since when, and when a probe may go.
	require.NotNil(t, h.OpenedAt)
	require.NotNil(t, h.HalfOpenAt)
	assert.Equal(t, h.Tunables.RecoveryTimeout, h.HalfOpenAt.Sub(*h.OpenedAt))
	code, out, stderr = run(t, "", "hosts", "--db", db)
	require.Equal(t, ExitOK, code, stderr)
	assert.Regexp(t, `example\.com\s+paused \(paused from the command line\)\s+0\s+probe in \d+s\s+open\s+6/min, burst 2, \d+ at once`, out)

	// heed host --json prints the same shape as a line of heed hosts --json,
	// with the tunables in effect.
	code, out, _ = run(t, "", "host", "--db", db, "example.com", "--resume", "--reset", "--json")
	require.Equal(t, ExitOK, code)
	var st hostLine
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	assert.False(t, st.Paused)
	assert.Equal(t, "closed", st.Breaker)
	assert.Nil(t, st.HalfOpenAt)
	require.NotNil(t, st.Effective)
	assert.Equal(t, 6.0, st.Effective.RatePerMin, "retuning survives")
	assert.NotNil(t, st.Jobs)

	// A URL names its host (its scheme's default port left out), not a host called "http".
	for _, arg := range []string{"http://Example.com/some/file.bin", "https://example.com:8443/x", "http://[::1]:80/"} {
		want, err := engine.HostKey(arg)
		require.NoError(t, err)
		code, out, stderr = run(t, "", "host", "--db", db, arg, "--json")
		require.Equal(t, ExitOK, code, stderr)
		require.NoError(t, json.Unmarshal([]byte(out), &st))
		assert.Equal(t, want, st.Host, arg)
	}
}

func TestJitterFlag(t *testing.T) {
	cases := []struct {
		in       string
		min, max time.Duration
		bad      bool
	}{
		{"0-250ms", 0, 250 * time.Millisecond, false},
		{"100ms-1s", 100 * time.Millisecond, time.Second, false},
		{"0-0", 0, 0, false},
		{"100-250ms", 100 * time.Millisecond, 250 * time.Millisecond, false}, // MIN takes MAX's unit
		{"1-2.5s", time.Second, 2500 * time.Millisecond, false},
		{"500-1m30s", 0, 0, true}, // 500 what? not 500s > 1m30s, silently
		{"90s-1m30s", 90 * time.Second, 90 * time.Second, false},
		{"250ms", 0, 0, true},
		{"a-b", 0, 0, true},
		{"-1s-2s", 0, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			var j jitterValue
			err := j.Set(tc.in)
			if tc.bad {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.min, j.min)
			assert.Equal(t, tc.max, j.max)
		})
	}
}

// Only the politeness flags a person gave change anything; the rest keep
// the base value, and an inverted jitter is clamped as the SPEC says.
func TestTunableFlags_OnlyGivenFlagsApply(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	tf := registerTunables(fs, true)
	require.NoError(t, fs.Parse([]string{"--max-attempts", "9", "--jitter", "300ms-100ms", "--retry", "linear", "--no-retry-jitter"}))
	base := engine.DefaultTunables()
	got, err := tf.apply(base)
	require.NoError(t, err)
	assert.Equal(t, 9, got.Retry.MaxAttempts)
	assert.Equal(t, engine.Linear, got.Retry.Strategy)
	assert.False(t, got.Retry.Jitter)
	assert.Equal(t, 300*time.Millisecond, got.JitterMin)
	assert.Equal(t, 300*time.Millisecond, got.JitterMax, "max clamped up to min")
	assert.Equal(t, base.RatePerMin, got.RatePerMin)
	assert.Equal(t, base.Burst, got.Burst)

	// --max-retry-after takes a duration, and a bare number as seconds.
	for _, v := range []string{"1h", "3600", "60m"} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		tf := registerTunables(fs, true)
		require.NoError(t, fs.Parse([]string{"--max-retry-after", v}), v)
		got, err := tf.apply(base)
		require.NoError(t, err, v)
		assert.Equal(t, time.Hour, got.MaxRetryAfter, v)
	}
}

// Each finished download is reported on standard output (buffered when it
// is not a terminal, and all written by exit); -q leaves only the summary.
func TestGet_ReportsEachDownloadUnlessQuiet(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello " + r.URL.Path))
	}))
	t.Cleanup(ts.Close)
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%v", quiet), func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"get", "--db", filepath.Join(dir, "h.db"), "--dir", filepath.Join(dir, "dl"),
				"--rate", "6000", "--jitter", "0-0", ts.URL + "/a.txt", ts.URL + "/b.txt"}
			if quiet {
				args = append(args, "-q")
			}
			code, stdout, stderr := run(t, "", args...)
			require.Equal(t, ExitOK, code, stderr)
			assert.Contains(t, stderr, "this run: 2 done")
			if quiet {
				assert.Empty(t, stdout)
			} else {
				assert.Equal(t, 2, strings.Count(stdout, "done     "), stdout)
				assert.Contains(t, stdout, "/a.txt → a.txt")
			}
			got, err := os.ReadFile(filepath.Join(dir, "dl", "b.txt"))
			require.NoError(t, err)
			assert.Equal(t, "hello /b.txt", string(got))
		})
	}
}

// R3: throttle responses are counted apart from retries, and both are shown
// in the summary.
func TestGet_SummaryCountsThrottlesApartFromRetries(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		n := seen[r.URL.Path]
		mu.Unlock()
		switch {
		case r.URL.Path == "/busy.txt" && n <= 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		case r.URL.Path == "/flaky.txt" && n == 1:
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.Write([]byte("hello"))
		}
	}))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	code, _, stderr := run(t, "", "get", "-q", "--db", filepath.Join(dir, "h.db"), "--dir", filepath.Join(dir, "dl"),
		"--rate", "6000", "--jitter", "0-0", "--backoff-base", "10ms", "--retry-base", "10ms", "--no-retry-jitter",
		ts.URL+"/busy.txt", ts.URL+"/flaky.txt")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "this run: 2 done (10 B), 0 failed, 1 retry, 2 throttled in ")
}

// J2, R5: a URL given again whose job already ended is not fetched again unless --again, and
// get says so, with the flag; a failed one keeps the exit status at 1.
func TestGet_EndedJobsGivenAgainSaySo(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing.txt" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("hello"))
	}))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	get := func(urls ...string) (int, string) {
		args := append([]string{"get", "--db", filepath.Join(dir, "h.db"), "--dir", filepath.Join(dir, "dl"),
			"--rate", "6000", "--jitter", "0-0"}, urls...)
		code, _, stderr := run(t, "", args...)
		return code, stderr
	}
	code, stderr := get(ts.URL+"/ok.txt", ts.URL+"/missing.txt")
	require.Equal(t, ExitFailed, code, stderr)

	code, stderr = get(ts.URL + "/ok.txt")
	assert.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "already downloaded, not fetched again (--again fetches it): "+ts.URL+"/ok.txt")

	code, stderr = get(ts.URL + "/missing.txt")
	assert.Equal(t, ExitFailed, code, "what was asked for is still failed: %s", stderr)
	assert.Contains(t, stderr, "already failed, not fetched again (--again fetches it): "+ts.URL+"/missing.txt")

	code, stderr = get("--again", ts.URL+"/ok.txt")
	assert.Equal(t, ExitOK, code, stderr)
	assert.NotContains(t, stderr, "not fetched again")
	assert.Contains(t, stderr, "queued again 1")
}

// J2, R5: with --again, a URL a list gives twice is fetched once. Downloads
// start while the list is being stored, so its first line's download may be
// done by the time the list is; its second line is still the job the first
// queued, not one that had ended, and is not queued again.
func TestGet_AgainFetchesARepeatedURLOnce(t *testing.T) {
	var mu sync.Mutex
	served := map[string]int{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served[r.URL.Path]++
		mu.Unlock()
		w.Write([]byte("hello"))
	}))
	t.Cleanup(ts.Close)
	var list strings.Builder
	for i := range 6000 {
		fmt.Fprintf(&list, "%s/f%d.txt\n", ts.URL, i)
	}
	fmt.Fprintf(&list, "%s/f0.txt\n", ts.URL)
	dir := t.TempDir()
	code, _, stderr := run(t, list.String(), "get", "-q", "--again", "--db", filepath.Join(dir, "h.db"),
		"--dir", filepath.Join(dir, "dl"), "--rate", "600000", "--burst", "1000", "--max-inflight", "16",
		"--jitter", "0-0", "-i", "-")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "queued 6000, duplicates 1 (queued again 0)")
	assert.Contains(t, stderr, "this run: 6000 done")
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, served, 6000)
	assert.Equal(t, 1, served["/f0.txt"])
}

// G9, N2: get ends, exit 1, when a download waits at a redirect to a host the person paused,
// and says which; no partial file is claimed where none was written.
func TestGet_RedirectToPausedHostExits1(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("moved"))
	}))
	t.Cleanup(target.Close)
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/f.bin", http.StatusFound)
	}))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	code, _, stderr := run(t, "", "host", "--db", db, target.URL, "--pause")
	require.Equal(t, ExitOK, code, stderr)

	done := make(chan struct{})
	var stdout string
	go func() {
		defer close(done)
		code, stdout, stderr = run(t, "", "get", "--db", db, "--dir", filepath.Join(dir, "dl"),
			"--rate", "6000", "--jitter", "0-0", origin.URL+"/f.bin")
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("get still waits for the paused host after a minute")
	}
	assert.Equal(t, ExitFailed, code, stderr)
	assert.Contains(t, stdout, "stopped  "+origin.URL+"/f.bin: redirected to "+target.URL+"/f.bin")
	assert.Contains(t, stdout, "is paused")
	assert.NotContains(t, stdout, "partial file kept")
	assert.Contains(t, stderr, "held by paused hosts")
}

// §9, RELIABILITY 35: a download folder Heed cannot create files in is unusable (exit 3),
// found before any download starts, so that no job fails for it: queued jobs stay queued.
func TestGet_UnwritableFolderExits3(t *testing.T) {
	folder := filepath.Join(t.TempDir(), "ro")
	require.NoError(t, os.Mkdir(folder, 0o555))
	if os.Geteuid() == 0 { // root writes through file modes: take a folder no one can create files in
		folder = "/proc"
	}
	db := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "", "add", "--db", db, "http://127.0.0.1:9/a.bin")
	require.Equal(t, ExitOK, code, stderr)
	code, _, stderr = run(t, "", "get", "--db", db, "--dir", folder)
	assert.Equal(t, ExitUnusable, code, stderr)
	assert.Contains(t, stderr, "download folder "+folder+": cannot create files there")

	code, out, stderr := run(t, "", "jobs", "--db", db, "--json")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, `"state":"queued"`, "the job waits for a run with a usable folder")
}

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("no space left on device") }

// Output that could not be written (a full disk, a closed pipe) fails the
// command with exit 1 and says so, whatever the format.
func TestMain_OutputWriteErrorExit1(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	code, _, stderr := run(t, "", "add", "--db", db, "http://example.com/a")
	require.Equal(t, ExitOK, code, stderr)
	for _, args := range [][]string{{"jobs", "--db", db}, {"jobs", "--json", "--db", db}, {"hosts", "--db", db},
		{"history", "--csv", "--db", db}, {"version"}, {"help"}} {
		var errb bytes.Buffer
		env := Env{Stdin: strings.NewReader(""), Stdout: fullWriter{}, Stderr: &errb, Version: "9.9.9"}
		code := Main(context.Background(), env, args)
		assert.Equal(t, ExitFailed, code, "%v: %s", args, errb.String())
		assert.Contains(t, errb.String(), "writing the output: no space left on device", args)
	}
}

// When nothing runs, get says which host may go first and what it waits
// for, so that a host backing off for minutes does not look hung.
func TestWhyWaiting_NamesTheFirstHostAndItsReason(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hosts := []engine.HostSnapshot{
		{Host: "idle.example", At: at, Waiting: engine.WaitEmpty},
		{Host: "later.example", At: at, Waiting: engine.WaitGate, Level: 2, NextDue: at.Add(40 * time.Second)},
		{Host: "soon.example", At: at, Waiting: engine.WaitBreaker, HalfOpenIn: 25 * time.Second, NextDue: at.Add(25 * time.Second)},
		{Host: "held.example", At: at, Waiting: engine.WaitPaused, PauseReason: "paused from the command line"},
	}
	assert.Equal(t, "soon.example: breaker open, probe in 25s (3 hosts wait)", whyWaiting(hosts))
	assert.Equal(t, "later.example: backing off (level 2, next request in 40s)", whyWaiting(hosts[:2]))
	assert.Equal(t, "held.example: paused: paused from the command line", whyWaiting(hosts[3:]))
	assert.Empty(t, whyWaiting(hosts[:1]), "nothing queued: nothing to say")
	assert.Empty(t, whyWaiting([]engine.HostSnapshot{{Host: "go.example", Waiting: engine.WaitReady}}))
}

// §9 (SIGINT stops cleanly, exit 130): Ctrl-C while a long list is still
// being stored, after downloads began (they start once its first part is):
// what was downloaded is reported on stdout, and get ends as interrupted
// (130, with the summary), as a Ctrl-C during the downloads does.
func TestGet_InterruptWhileAddingReportsWhatWasDownloaded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	n := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		if n == 100 {
			time.AfterFunc(100*time.Millisecond, cancel) // some done, the list still being stored
		}
		mu.Unlock()
		w.Write([]byte("hello"))
	}))
	t.Cleanup(ts.Close)
	var list strings.Builder
	for i := range 400000 {
		fmt.Fprintf(&list, "%s/f%d.txt\n", ts.URL, i)
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := Main(ctx, Env{Stdin: strings.NewReader(list.String()), Stdout: &out, Stderr: &errb, Version: "9.9.9"},
		[]string{"get", "--db", filepath.Join(dir, "h.db"), "--dir", filepath.Join(dir, "dl"), "--rate", "600000",
			"--burst", "1000", "--max-inflight", "16", "--jitter", "0-0", "-i", "-"})
	files, err := filepath.Glob(filepath.Join(dir, "dl", "f*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "downloads started before the list was stored")
	assert.Equal(t, len(files), strings.Count("\n"+out.String(), "\ndone "),
		"every download done is reported on stdout; stderr: %s", errb.String())
	assert.Equal(t, ExitInterrupt, code, errb.String())
	assert.Contains(t, errb.String(), "this run: ")
}
