//go:build unix

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
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
	"heed/storage"
)

// runningHeed holds the SQLite database at path with an engine over it and
// takes hand-offs, as the window does; focus is its window's "bring
// forward".
func runningHeed(t *testing.T, path string, focus func()) (*storage.DB, *Handoff) {
	t.Helper()
	db, err := storage.Open(path)
	require.NoError(t, err)
	eng, err := engine.New(context.Background(), db, engine.Options{Dir: t.TempDir(), Version: "9.9.9"})
	require.NoError(t, err)
	h, err := ServeHandoff(path, eng, focus)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close(); eng.Close(); db.Close() })
	return db, h
}

// urlsOf lists the URLs of the jobs in db, in id order.
func urlsOf(t *testing.T, db engine.Reader) []string {
	t.Helper()
	var urls []string
	require.NoError(t, engine.EachJob(context.Background(), db, engine.JobQuery{}, func(j engine.Job) error {
		urls = append(urls, j.URL)
		return nil
	}))
	return urls
}

// Issue 33, one instance: heed add while another Heed holds the database
// hands its URLs over the socket; that Heed queues them, and add prints its
// report and exits 0 instead of 3.
func TestHandoff_Issue33_AddWhileAnotherHeedRunsQueuesIntoIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, _ := runningHeed(t, path, nil)

	code, _, stderr := run(t, "", "add", "--db", path, "http://example.com/a", "http://example.com/b")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "queued 2, duplicates 0 (queued again 0), rejected 0")
	assert.Contains(t, stderr, "Heed is running on "+path)

	code, _, stderr = run(t, "http://example.com/b\nftp://example.com/x\nhttp://example.com/c\n", "add", "--db", path, "-")
	assert.Equal(t, ExitFailed, code, "a rejected line exits 1, as heed add's own does: %s", stderr)
	assert.Contains(t, stderr, "queued 1, duplicates 1 (queued again 0), rejected 1")
	assert.Contains(t, stderr, `rejected "ftp://example.com/x" (line 2)`)

	assert.Equal(t, []string{"http://example.com/a", "http://example.com/b", "http://example.com/c"}, urlsOf(t, db),
		"each URL is one job, in the running Heed's database")
}

// Issue 33 with two commands on a real run: heed add while heed get
// downloads hands its URL to the get, which downloads it too; the job is in
// the database once, and the socket is gone once get ends.
func TestHandoff_Issue33_AddWhileGetRunsIsDownloadedByIt(t *testing.T) {
	first := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			once.Do(func() { close(first) })
			<-release
		}
		w.Write([]byte("hello"))
	}))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	got := make(chan int, 1)
	var gotErr bytes.Buffer
	go func() {
		var out bytes.Buffer
		got <- Main(context.Background(), Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &gotErr, Version: "9.9.9"},
			[]string{"get", "--db", path, "--dir", filepath.Join(dir, "dl"), "--jitter", "0-0", ts.URL + "/slow"})
	}()
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("heed get did not start")
	}

	code, _, stderr := run(t, "", "add", "--db", path, ts.URL+"/later.txt", ts.URL+"/slow")
	assert.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "queued 1, duplicates 1")
	close(release)
	select {
	case code = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("heed get did not end")
	}
	require.Equal(t, ExitOK, code, gotErr.String())
	assert.FileExists(t, filepath.Join(dir, "dl", "later.txt"), "the run downloaded what was handed to it")
	assert.NoFileExists(t, SocketPath(path), "the socket is removed as Heed ends")

	code, out, stderr := run(t, "", "jobs", "--db", path, "--json")
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, 2, strings.Count(out, "\n"), out)
	assert.Equal(t, 2, strings.Count(out, `"state":"done"`), out)
}

// Issue 33: a second window on the same database hands its URLs to the
// running one, asks its window forward and exits 0; it opens none itself.
func TestHandoff_Issue33_SecondWindowBringsTheFirstForward(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	var focused atomic.Int32
	db, _ := runningHeed(t, path, func() { focused.Add(1) })
	var out, errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Version: "9.9.9",
		Window: func(context.Context, WindowOptions) int {
			t.Error("a second window opened")
			return ExitFailed
		}}
	code := Main(context.Background(), env, []string{"--db", path, "https://example.com/x.iso"})
	assert.Equal(t, ExitOK, code, errb.String())
	assert.EqualValues(t, 1, focused.Load())
	assert.Contains(t, errb.String(), "its window is brought forward")
	assert.Equal(t, []string{"https://example.com/x.iso"}, urlsOf(t, db))

	errb.Reset()
	code = Main(context.Background(), env, []string{"--db", path})
	assert.Equal(t, ExitOK, code, errb.String())
	assert.EqualValues(t, 2, focused.Load(), "heed alone brings it forward too")
}

// Issue 33: a socket left by a crash (nobody answers on it) neither stops
// heed add, which then queues by itself, nor the next Heed, which replaces
// it.
func TestHandoff_Issue33_StaleSocketIsReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	ln, err := net.Listen("unix", SocketPath(path))
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // as after kill -9
	require.FileExists(t, SocketPath(path))

	code, _, stderr := run(t, "", "add", "--db", path, "http://example.com/a")
	require.Equal(t, ExitOK, code, stderr)
	assert.NotContains(t, stderr, "Heed is running")

	db, _ := runningHeed(t, path, nil)
	code, _, stderr = run(t, "", "add", "--db", path, "http://example.com/b")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "Heed is running on "+path)
	assert.Equal(t, []string{"http://example.com/a", "http://example.com/b"}, urlsOf(t, db))
}

// Issue 33: the socket is its owner's only (0600); one others may open is
// not trusted, and heed add is refused as before (exit 3) instead of
// handing URLs to whoever listens there. Something that is not a socket
// at its place is left alone.
func TestHandoff_Issue33_OnlyAnOwnerOnlySocketIsTrusted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	runningHeed(t, path, nil)
	st, err := os.Lstat(SocketPath(path))
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeSocket)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	require.NoError(t, os.Chmod(SocketPath(path), 0o666))
	code, _, stderr := run(t, "", "add", "--db", path, "http://example.com/a")
	assert.Equal(t, ExitUnusable, code, stderr)
	assert.Contains(t, stderr, "others may open")
	assert.Contains(t, stderr, "in use by another Heed")

	other := filepath.Join(t.TempDir(), "o.db")
	require.NoError(t, os.WriteFile(SocketPath(other), []byte("mine"), 0o600))
	_, err = ServeHandoff(other, nil, nil)
	assert.ErrorContains(t, err, "something else is there")
	b, err := os.ReadFile(SocketPath(other))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))
}

// Issue 33: a request over the size limit is refused by the running Heed
// without reading it whole.
func TestHandoff_Issue33_OversizedRequestIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, _ := runningHeed(t, path, nil)
	c, err := net.Dial("unix", SocketPath(path))
	require.NoError(t, err)
	defer c.Close()
	go func() {
		big := bytes.Repeat([]byte("x"), 1<<20)
		for i := 0; i <= maxHandoff>>20; i++ {
			if _, err := c.Write(big); err != nil {
				return
			}
		}
	}()
	var a handoffAnswer
	require.NoError(t, json.NewDecoder(c).Decode(&a))
	assert.Equal(t, ExitUsage, a.Code)
	assert.Contains(t, a.Report, "too long")
	assert.Empty(t, urlsOf(t, db))
}

// Issue 33: heed import while another Heed holds the database hands the
// file's URLs to it, as heed add does.
func TestImport_Issue33_WhileAnotherHeedRunsQueuesIntoIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db, _ := runningHeed(t, path, nil)
	code, _, stderr := run(t, `{"url":"http://example.com/a"}`+"\n", "import", "--db", path, "-")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "queued 1, duplicates 0")
	assert.Equal(t, []string{"http://example.com/a"}, urlsOf(t, db))
}
