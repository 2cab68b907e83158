package engine_test

// RELIABILITY A–E through the whole engine: every line of
// /work/shared/RELIABILITY.md sections A–E (1–30) is fed to engine.New over
// a real SQLite database, over real loopback HTTP (httptest, or raw
// listeners where the bytes themselves must be malformed), with eng.Add and
// eng.RunUntilIdle (or Run where a host is told to wait for hours). Each
// test asserts where the bytes went (the download folder, and a folder
// beside it that must stay untouched), the job's final state and last
// error in storage, and what history says (outcome, status, Retry-After,
// backoff level, breaker state). No timing assertions beyond "it timed out"
// and "it did not".

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/engine/fetch"
	"heed/engine/internal/testca"
)

// ---- rig ----

const outsideSentinel = "do-not-touch"

// relRig is an engine over a fresh database, with short fetch timeouts, a
// large fake free space and, beside the download folder, an "outside"
// folder that must never change (promise 1).
type relRig struct {
	*rig
	opt     engine.Options
	base    string
	outside string
}

func newRel(t *testing.T, opt engine.Options) *relRig {
	t.Helper()
	fc := &opt.Fetch
	for _, d := range []*time.Duration{&fc.ConnectTimeout, &fc.TLSHandshakeTimeout, &fc.ResponseHeaderTimeout, &fc.IdleTimeout} {
		if *d == 0 {
			*d = 3 * time.Second
		}
	}
	if fc.FreeSpace == nil {
		fc.FreeSpace = func() (int64, error) { return 1 << 40, nil }
	}
	if opt.Seed == 0 {
		opt.Seed = 7
	}
	r := &relRig{rig: newRig(t, opt), opt: opt}
	r.base = filepath.Dir(r.dir)
	r.outside = filepath.Join(r.base, "outside")
	require.NoError(t, os.Mkdir(r.outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r.outside, "target.txt"), []byte(outsideSentinel), 0o644))
	t.Cleanup(r.assertConfined)
	return r
}

// reopen closes the engine and database and opens them again (a restart).
func (r *relRig) reopen() {
	r.t.Helper()
	r.close()
	r.open(r.opt)
}

// assertConfined holds promise 1: the outside folder is as it was, and
// nothing new appeared beside the download folder but the database files.
func (r *relRig) assertConfined() {
	t := r.t
	assert.Equal(t, map[string]string{"target.txt": outsideSentinel}, listDir(t, r.outside),
		"the folder beside the download folder changed")
	ents, err := os.ReadDir(r.base)
	require.NoError(t, err)
	for _, e := range ents {
		n := e.Name()
		assert.True(t, n == "downloads" || n == "outside" || strings.HasPrefix(n, "heed.db"),
			"unexpected entry %q beside the download folder", n)
	}
}

// files lists the download folder: regular files map to their content,
// symlinks to "->target", folders to "<dir>".
func (r *relRig) files() map[string]string { return listDir(r.t, r.dir) }

// plant writes a file into the download folder before the run.
func (r *relRig) plant(name, content string) {
	r.t.Helper()
	require.NoError(r.t, os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o644))
}

// run runs the engine until nothing is runnable; a hang fails the test
// quickly rather than after minutes.
func (r *relRig) run() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(r.t, r.eng.RunUntilIdle(ctx), "RunUntilIdle did not return")
}

// runUntil runs the engine (Run, not RunUntilIdle) until cond holds, then
// stops it as a person closing Heed would.
func (r *relRig) runUntil(cond func() bool) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.eng.Run(ctx) }()
	ok := assert.Eventually(r.t, cond, 20*time.Second, 5*time.Millisecond)
	cancel()
	require.ErrorIs(r.t, <-done, context.Canceled)
	require.True(r.t, ok, "condition never held")
}

// job returns the only job.
func (r *relRig) job() engine.Job {
	r.t.Helper()
	jobs := r.jobs()
	require.Len(r.t, jobs, 1)
	return jobs[0]
}

// hist returns every attempt, oldest first.
func (r *relRig) hist() []engine.Attempt {
	r.t.Helper()
	h := r.history(engine.HistoryQuery{})
	slices.Reverse(h)
	return h
}

// hostHist returns the attempts to host, oldest first.
func (r *relRig) hostHist(host string) []engine.Attempt {
	r.t.Helper()
	h := r.history(engine.HistoryQuery{Host: host})
	slices.Reverse(h)
	return h
}

// outcomes renders history as "outcome status" lines, oldest first.
func outcomes(h []engine.Attempt) []string {
	out := make([]string, len(h))
	for i, a := range h {
		out[i] = fmt.Sprintf("%s %d", a.Outcome, a.Status)
	}
	return out
}

func listDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string]string{}
	for _, de := range ents {
		p := filepath.Join(dir, de.Name())
		fi, err := os.Lstat(p)
		require.NoError(t, err)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[de.Name()] = "->" + target
		case fi.IsDir():
			out[de.Name()] = "<dir>"
		default:
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			out[de.Name()] = string(b)
		}
	}
	return out
}

func hexSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// pattern makes n bytes of recognisable content.
func pattern(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return string(b)
}

// ---- servers ----

// seen is a request as a test server saw it.
type seen struct {
	Path, Range, IfRange string
}

// server is an httptest server whose handler also gets the request's
// index (0 for the first) and which records what it saw.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
	n    atomic.Int32
}

func newServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, seen{Path: r.URL.Path, Range: r.Header.Get("Range"), IfRange: r.Header.Get("If-Range")})
		s.mu.Unlock()
		h(w, r, int(s.n.Add(1))-1)
	}))
	s.Server.Config.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(s.Close)
	return s
}

func (s *server) seen() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// serveContent answers like a real file server: Range, If-Range and 416
// (http.ServeContent), with the given validators.
func serveContent(w http.ResponseWriter, r *http.Request, content, etag string, modtime time.Time) {
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	http.ServeContent(w, r, "", modtime, strings.NewReader(content))
}

var modtime = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// cut hijacks the connection, sends raw bytes and closes it; with reset
// the close is a TCP RST.
func cut(w http.ResponseWriter, raw string, reset bool) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	buf.WriteString(raw)
	buf.Flush()
	if reset {
		time.Sleep(20 * time.Millisecond) // let the bytes leave before the RST
		conn.(*net.TCPConn).SetLinger(0)
	}
	conn.Close()
}

// rawServer serves each accepted connection with handle after reading the
// request head, so a test can send exactly the bytes it wants.
func rawServer(t *testing.T, handle func(conn net.Conn, req *http.Request, n int)) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		count atomic.Int32
	)
	done := make(chan struct{})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				stop := make(chan struct{})
				defer close(stop)
				go func() {
					select {
					case <-done:
						conn.Close()
					case <-stop:
					}
				}()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				handle(conn, req, int(count.Add(1))-1)
			})
		}
	})
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
	})
	return "http://" + ln.Addr().String(), &count
}

// blockUntilClosed waits until the peer closes the connection.
func blockUntilClosed(conn net.Conn) {
	buf := make([]byte, 512)
	for {
		if _, err := conn.Read(buf); err != nil {
			return
		}
	}
}

// ---- A. The download folder is a jail ----

// A01–A06 and A10 (symlinked subfolder): hostile Content-Disposition names
// end as one safe name inside the folder; a symlinked subfolder "sub"
// pointing outside is never written through.
func TestReliability_A01_A06_HostileNames(t *testing.T) {
	cases := []struct {
		name, cd, path, want string
	}{
		{"A01 dotdot", `attachment; filename="../../.bashrc"`, "/files/report.pdf", "bashrc"},
		{"A02 rfc2231 encoded slashes", `attachment; filename*=UTF-8''..%2F..%2Fx`, "/files/report.pdf", "x"},
		{"A03 backslashes", `attachment; filename="..\..\evil.exe"`, "/files/report.pdf", "evil.exe"},
		{"A04 absolute", `attachment; filename="/etc/passwd"`, "/files/report.pdf", "passwd"},
		{"A04 drive", `attachment; filename="C:\x.dll"`, "/files/report.pdf", "x.dll"},
		{"A04 drive relative", `attachment; filename="f:foo"`, "/files/report.pdf", "foo"},
		{"A04 stream", `attachment; filename="name:stream"`, "/files/report.pdf", "name_stream"},
		{"A05 NUL", `attachment; filename*=UTF-8''a%00b.txt`, "/files/report.pdf", "a_b.txt"},
		{"A05 control", `attachment; filename*=UTF-8''a%0D%0Ab.txt`, "/files/report.pdf", "a__b.txt"},
		{"A05 dot", `attachment; filename="."`, "/files/report.pdf", "report.pdf"},
		{"A05 dotdot", `attachment; filename=".."`, "/files/report.pdf", "report.pdf"},
		{"A05 trailing dots and spaces", `attachment; filename="file.txt. . "`, "/files/report.pdf", "file.txt"},
		{"A05 CON", `attachment; filename="CON"`, "/files/report.pdf", "_CON"},
		{"A05 NUL device", `attachment; filename="NUL.tar.gz"`, "/files/report.pdf", "_NUL.tar.gz"},
		{"A05 COM1", `attachment; filename="COM1"`, "/files/report.pdf", "_COM1"},
		{"A05 URL dotdot", "", "/files/%2E%2E", "index.html"},
		{"A05 URL device", "", "/files/com1.txt", "_com1.txt"},
		{"A06 two filename params", `attachment; filename="a.txt"; filename="b.txt"`, "/files/report.pdf", "report.pdf"},
		{"A06 malformed", `attachment; filename="unterminated`, "/files/report.pdf", "report.pdf"},
		{"A10 symlinked subfolder", `attachment; filename="sub/evil"`, "/files/report.pdf", "evil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRel(t, engine.Options{})
			require.NoError(t, os.Symlink(r.outside, filepath.Join(r.dir, "sub")))
			srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
				if tc.cd != "" {
					w.Header().Set("Content-Disposition", tc.cd)
				}
				io.WriteString(w, "payload")
			})
			rep := r.add(srv.URL + tc.path)
			require.Len(t, rep.Queued, 1, "%+v", rep.Rejected)
			r.run()

			assert.Equal(t, map[string]string{tc.want: "payload", "sub": "->" + r.outside}, r.files())
			j := r.job()
			assert.Equal(t, engine.JobDone, j.State, j.LastError)
			assert.Equal(t, tc.want, j.File)
			assert.Equal(t, hexSHA("payload"), j.SHA256)
			assert.Empty(t, j.LastError)
			h := r.hist()
			assert.Equal(t, []string{"ok 200"}, outcomes(h))
			assert.Equal(t, "closed", h[0].Breaker.String())
			assert.Zero(t, h[0].Level)
		})
	}
}

// A07: a redirect chain ending in .bashrc or authorized_keys saves under
// the name of the URL the person gave.
func TestReliability_A07_RedirectNameFromUserURL(t *testing.T) {
	for _, evil := range []string{"/x/.bashrc", "/home/u/.ssh/authorized_keys"} {
		t.Run(evil, func(t *testing.T) {
			r := newRel(t, engine.Options{})
			srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
				switch req.URL.Path {
				case "/start/tool.tar.gz":
					http.Redirect(w, req, "/hop", http.StatusFound)
				case "/hop":
					http.Redirect(w, req, evil, http.StatusMovedPermanently)
				default:
					io.WriteString(w, "data")
				}
			})
			r.add(srv.URL + "/start/tool.tar.gz")
			r.run()

			assert.Equal(t, map[string]string{"tool.tar.gz": "data"}, r.files())
			j := r.job()
			assert.Equal(t, engine.JobDone, j.State, j.LastError)
			assert.Equal(t, "tool.tar.gz", j.File)
			h := r.hist()
			assert.Equal(t, []string{"redirect 302", "redirect 301", "ok 200"}, outcomes(h))
			assert.Equal(t, srv.URL+evil, h[2].URL, "the last hop is recorded with its own URL")
			assert.Equal(t, []string{"/start/tool.tar.gz", "/hop", evil}, paths(srv.seen()))
		})
	}
}

func paths(s []seen) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.Path
	}
	return out
}

// A08: a redirect to file://, ftp:// or data: is refused and the job fails
// with the reason; nothing is written.
func TestReliability_A08_RedirectToOtherSchemeRefused(t *testing.T) {
	for _, loc := range []string{"file:///etc/passwd", "ftp://ftp.example/x", "data:text/plain,hello"} {
		t.Run(loc, func(t *testing.T) {
			r := newRel(t, engine.Options{})
			srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
				w.Header().Set("Location", loc)
				w.WriteHeader(http.StatusMovedPermanently)
				io.WriteString(w, "<html>moved body that must not be saved</html>")
			})
			r.add(srv.URL + "/a/start.bin")
			r.run()

			assert.Empty(t, r.files())
			j := r.job()
			assert.Equal(t, engine.JobFailed, j.State)
			assert.Contains(t, j.LastError, "refused")
			assert.Equal(t, 1, j.Attempts, "not retried")
			h := r.hist()
			require.Equal(t, []string{"failed 301"}, outcomes(h))
			assert.Contains(t, h[0].Error, "only http and https")
			assert.Len(t, srv.seen(), 1)
		})
	}
}

// A09: an existing file is never overwritten: the download becomes
// "name (1).ext", and a second existing copy pushes it to "(2)".
func TestReliability_A09_NeverOverwrite(t *testing.T) {
	r := newRel(t, engine.Options{})
	r.plant("a.txt", "mine")
	r.plant("a (1).txt", "mine too")
	r.plant("src.tar.gz", "my archive")
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) { io.WriteString(w, "new "+req.URL.Path) })
	r.add(srv.URL+"/a.txt", srv.URL+"/src.tar.gz")
	r.run()

	assert.Equal(t, map[string]string{"a.txt": "mine", "a (1).txt": "mine too", "a (2).txt": "new /a.txt",
		"src.tar.gz": "my archive", "src (1).tar.gz": "new /src.tar.gz"}, r.files())
	files := map[string]string{}
	for _, j := range r.jobs() {
		assert.Equal(t, engine.JobDone, j.State, j.LastError)
		files[j.URL] = j.File
	}
	assert.Equal(t, map[string]string{srv.URL + "/a.txt": "a (2).txt", srv.URL + "/src.tar.gz": "src (1).tar.gz"}, files)
	assert.Equal(t, []string{"ok 200", "ok 200"}, outcomes(r.hist()))
}

// A10: a symlink planted at the name or at name.part (pointing outside, or
// dangling) is never written through: the part takes the next free part
// name, the file the next free name.
func TestReliability_A10_SymlinkPlanted(t *testing.T) {
	cases := []struct{ name, plant, to, want string }{
		{"at name to outside file", "a.txt", "outside", "a (1).txt"},
		{"at name dangling", "a.txt", "dangling", "a (1).txt"},
		{"at part to outside file", "a.txt.part", "outside", "a.txt"},
		{"at part dangling", "a.txt.part", "dangling", "a.txt"},
	}
	for _, tc := range cases {
		for _, payload := range []string{"payload", strings.Repeat("payload ", 10<<10)} {
			want := tc.want
			t.Run(fmt.Sprintf("%s/%d bytes", tc.name, len(payload)), func(t *testing.T) {
				r := newRel(t, engine.Options{})
				target := filepath.Join(r.outside, "target.txt")
				if tc.to == "dangling" {
					target = filepath.Join(r.outside, "new.txt") // must never be created
				}
				require.NoError(t, os.Symlink(target, filepath.Join(r.dir, tc.plant)))
				srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) { io.WriteString(w, payload) })
				r.add(srv.URL + "/a.txt")
				r.run()

				assert.Equal(t, map[string]string{tc.plant: "->" + target, want: payload}, r.files())
				j := r.job()
				assert.Equal(t, engine.JobDone, j.State, j.LastError)
				assert.Equal(t, want, j.File)
				assert.Equal(t, []string{"ok 200"}, outcomes(r.hist()))
				assert.NoFileExists(t, filepath.Join(r.outside, "new.txt"))
			})
		}
	}
}

// ---- B. Size, framing, encoding ----

// B11: a Content-Length of 10 TB is refused before any byte is written,
// by the free space or by the size cap; the job fails with the reason.
func TestReliability_B11_HugeContentLengthRefused(t *testing.T) {
	cases := []struct {
		name   string
		opt    engine.Options
		reason string
	}{
		{"over free space", engine.Options{}, "free"},
		{"over size cap", engine.Options{MaxSize: 1 << 20}, "size cap"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRel(t, tc.opt)
			base, count := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 10000000000000\r\n\r\nAAAA")
				blockUntilClosed(conn)
			})
			r.add(base + "/huge.iso")
			r.run()

			assert.Empty(t, r.files(), "not even a part file")
			j := r.job()
			assert.Equal(t, engine.JobFailed, j.State)
			assert.Contains(t, j.LastError, tc.reason)
			assert.Empty(t, j.Part)
			h := r.hist()
			require.Equal(t, []string{"failed 200"}, outcomes(h))
			assert.Zero(t, h[0].Bytes)
			assert.Equal(t, int32(1), count.Load(), "not retried")
		})
	}
}

// B12: an endless chunked body is cut at the size cap (no file left) or
// by the free space (part kept, no final file); the job fails with the
// reason, and is not retried.
func TestReliability_B12_EndlessBodyCut(t *testing.T) {
	cases := []struct {
		name   string
		opt    engine.Options
		reason string
		part   bool
	}{
		{"size cap", engine.Options{MaxSize: 100_000}, "size cap", false},
		{"free space", engine.Options{Fetch: fetchFree(64 << 10)}, "free space", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRel(t, tc.opt)
			srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
				chunk := bytes.Repeat([]byte("z"), 8192)
				for req.Context().Err() == nil {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			})
			r.add(srv.URL + "/stream")
			r.run()

			files := r.files()
			j := r.job()
			assert.Equal(t, engine.JobFailed, j.State)
			assert.Contains(t, j.LastError, tc.reason)
			if tc.part {
				require.Equal(t, []string{"stream.part"}, keys(files), "no final file")
				assert.LessOrEqual(t, len(files["stream.part"]), 64<<10)
				assert.Equal(t, "stream.part", j.Part)
			} else {
				assert.Empty(t, files, "the useless part is removed")
			}
			assert.Equal(t, []string{"failed 200"}, outcomes(r.hist()))
			assert.Len(t, srv.seen(), 1, "not retried")
		})
	}
}

func fetchFree(n int64) (c fetch.Config) {
	c.FreeSpace = func() (int64, error) { return n, nil }
	return c
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// B13: Content-Encoding: gzip on a .tar.gz is saved as sent.
func TestReliability_B13_GzipSavedAsSent(t *testing.T) {
	var wire bytes.Buffer
	zw := gzip.NewWriter(&wire)
	io.WriteString(zw, strings.Repeat("tar archive contents ", 500))
	require.NoError(t, zw.Close())
	r := newRel(t, engine.Options{})
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "application/x-tar")
		serveContent(w, req, wire.String(), `"g1"`, modtime)
	})
	r.add(srv.URL + "/src.tar.gz")
	r.run()

	assert.Equal(t, map[string]string{"src.tar.gz": wire.String()}, r.files())
	j := r.job()
	assert.Equal(t, engine.JobDone, j.State, j.LastError)
	assert.Equal(t, hexSHA(wire.String()), j.SHA256)
	assert.Equal(t, int64(wire.Len()), j.Bytes)
	assert.Equal(t, []string{"ok 200"}, outcomes(r.hist()))
}

// B14: a body shorter than its Content-Length is a retryable failure: the
// part is kept and the job is never marked done on it. When the server
// later serves the rest, the job resumes from the part; when it never
// does, the job fails with the part kept.
func TestReliability_B14_ShortBody(t *testing.T) {
	content := pattern(100)
	t.Run("resumed", func(t *testing.T) {
		r := newRel(t, engine.Options{})
		srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
			if n == 0 {
				cut(w, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nETag: \"s1\"\r\n\r\n"+content[:40], false)
				return
			}
			serveContent(w, req, content, `"s1"`, modtime)
		})
		r.add(srv.URL + "/f.bin")
		r.run()

		assert.Equal(t, map[string]string{"f.bin": content}, r.files())
		j := r.job()
		assert.Equal(t, engine.JobDone, j.State, j.LastError)
		assert.Equal(t, hexSHA(content), j.SHA256)
		h := r.hist()
		assert.Equal(t, []string{"retry 200", "ok 206"}, outcomes(h))
		assert.Contains(t, h[0].Error, "unexpected EOF")
		assert.Equal(t, int64(40), h[0].Bytes)
		assert.Equal(t, "bytes=40-", srv.seen()[1].Range)
	})
	t.Run("never complete", func(t *testing.T) {
		tun := fast()
		tun.Retry.MaxAttempts = 2
		r := newRel(t, engine.Options{Defaults: tun})
		srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
			cut(w, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nETag: \"s1\"\r\n\r\n"+content[:40], false)
		})
		r.add(srv.URL + "/f.bin")
		r.run()

		assert.Equal(t, map[string]string{"f.bin.part": content[:40]}, r.files(), "part kept, no final file")
		j := r.job()
		assert.Equal(t, engine.JobFailed, j.State)
		assert.Contains(t, j.LastError, "gave up after 2 attempts")
		assert.Equal(t, "f.bin.part", j.Part)
		assert.Equal(t, int64(40), j.Bytes)
		assert.Empty(t, j.File)
		assert.Equal(t, []string{"retry 200", "failed 200"}, outcomes(r.hist()))
	})
}

// B15: malformed framing (two Content-Lengths, -1, 20 digits, a negative
// or overflowing chunk size) is a connection error: retried, then failed
// with the reason; no final file and no body byte kept.
func TestReliability_B15_MalformedFraming(t *testing.T) {
	cases := []struct{ name, resp string }{
		{"two different Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello"},
		{"Content-Length -1", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nhello"},
		{"20-digit Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nhello"},
		{"negative chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n"},
		{"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\nhello\r\n"},
		// A05 arriving raw: HTTP allows no control byte but tab in a header, and net/http
		// refuses the whole response; percent-encoded (filename*=) the name is rewritten.
		{"raw NUL in Content-Disposition", "HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"a\x00b.txt\"\r\nContent-Length: 5\r\n\r\nhello"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tun := fast()
			tun.Retry.MaxAttempts = 2
			r := newRel(t, engine.Options{Defaults: tun})
			base, count := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) { io.WriteString(conn, tc.resp) })
			r.add(base + "/f.bin")
			r.run()

			assert.Empty(t, r.files(), "no final file, and no empty part left behind by the failed job")
			j := r.job()
			assert.Equal(t, engine.JobFailed, j.State)
			assert.Contains(t, j.LastError, "gave up after 2 attempts")
			assert.Empty(t, j.Part)
			h := r.hist()
			require.Len(t, h, 2)
			assert.Equal(t, "retry", h[0].Outcome)
			assert.Equal(t, "failed", h[1].Outcome)
			for _, a := range h {
				assert.NotEmpty(t, a.Error)
				assert.Equal(t, "closed", a.Breaker.String())
			}
			assert.Equal(t, int32(2), count.Load())
		})
	}
}

// B16: a CR (or another control character) inside a pasted URL rejects
// that URL at input with the reason; nothing is queued or requested for it.
func TestReliability_B16_ControlCharsInPastedURL(t *testing.T) {
	r := newRel(t, engine.Options{})
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) { io.WriteString(w, "ok") })
	rep := r.add(srv.URL+"/a\rInjected:x", srv.URL+"/b\x00c", srv.URL+"/good.txt")
	require.Len(t, rep.Rejected, 2)
	assert.Contains(t, rep.Rejected[0].Reason, "carriage return")
	assert.Contains(t, rep.Rejected[1].Reason, "control character")
	assert.Len(t, rep.Queued, 1)
	r.run()

	assert.Equal(t, map[string]string{"good.txt": "ok"}, r.files())
	j := r.job()
	assert.Equal(t, srv.URL+"/good.txt", j.URL)
	assert.Equal(t, engine.JobDone, j.State)
	assert.Equal(t, []string{"/good.txt"}, paths(srv.seen()))
	assert.Equal(t, []string{"ok 200"}, outcomes(r.hist()))
}

// ---- C. Resume ----

// cutAt answers with the first n bytes of content under a 200 that
// announces all of it, then closes the connection.
func cutAt(w http.ResponseWriter, content string, n int, hdr string) {
	cut(w, fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s", len(content), hdr, content[:n]), false)
}

// C17: a server that ignores Range and answers 200 while a part exists
// restarts the file from zero; nothing is appended.
func TestReliability_C17_RangeIgnoredRestarts(t *testing.T) {
	content := pattern(1000)
	r := newRel(t, engine.Options{})
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		if n == 0 {
			cutAt(w, content, 300, "ETag: \"v1\"\r\n")
			return
		}
		io.WriteString(w, content) // 200, Range ignored
	})
	r.add(srv.URL + "/f.bin")
	r.run()

	assert.Equal(t, map[string]string{"f.bin": content}, r.files(), "never appended to the old part")
	j := r.job()
	assert.Equal(t, engine.JobDone, j.State, j.LastError)
	assert.Equal(t, hexSHA(content), j.SHA256)
	assert.Equal(t, int64(1000), j.Bytes)
	assert.Equal(t, []string{"retry 200", "ok 200"}, outcomes(r.hist()))
	assert.Equal(t, "bytes=300-", srv.seen()[1].Range, "the retry did ask to resume")
}

// C17, U5: while a download that started over arrives, its speed is
// measured from where its body began (0), not from the 300 bytes of the
// part it replaced: (Bytes − StartBytes) never goes negative.
func TestReliability_C17_RestartMeasuredFromZero(t *testing.T) {
	content := pattern(200_000)
	r := newRel(t, engine.Options{})
	var seen []engine.Active
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		if n == 0 {
			cutAt(w, content, 300, "ETag: \"v1\"\r\n")
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(content)))
		io.WriteString(w, content[:100_000]) // 200, Range ignored
		w.(http.Flusher).Flush()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if a := r.eng.Active(); len(a) == 1 && a[0].Bytes > 1000 { // the new body, not the old part's 300
				seen = a
				break
			}
		}
		io.WriteString(w, content[100_000:])
	})
	r.add(srv.URL + "/f.bin")
	r.run()

	require.Len(t, seen, 1, "the download was seen while it arrived")
	assert.Zero(t, seen[0].StartBytes, "measured from the new start, not the old part's 300 bytes")
	assert.GreaterOrEqual(t, seen[0].Bytes-seen[0].StartBytes, int64(0))
	assert.Equal(t, map[string]string{"f.bin": content}, r.files())
	assert.Equal(t, "bytes=300-", srv.seen()[1].Range, "the retry did ask to resume")
}

// C18: a 206 whose Content-Range start differs from the part, or whose
// total changed, is rejected: the part is emptied and the same attempt
// asks again from zero.
func TestReliability_C18_MismatchedContentRange(t *testing.T) {
	content := pattern(1000)
	cases := []struct{ name, cr string }{
		{"start differs", "bytes 500-999/1000"},
		{"total changed", "bytes 400-1199/1200"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRel(t, engine.Options{})
			srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
				switch n {
				case 0:
					cutAt(w, content, 400, "ETag: \"v1\"\r\n")
				case 1:
					var s, e int
					fmt.Sscanf(tc.cr, "bytes %d-%d/", &s, &e)
					w.Header().Set("Content-Range", tc.cr)
					w.Header().Set("Content-Length", strconv.Itoa(e-s+1))
					w.WriteHeader(http.StatusPartialContent)
					io.WriteString(w, strings.Repeat("#", e-s+1))
				default:
					serveContent(w, req, content, `"v1"`, modtime)
				}
			})
			r.add(srv.URL + "/f.bin")
			r.run()

			assert.Equal(t, map[string]string{"f.bin": content}, r.files(), "nothing spliced at the wrong offset")
			j := r.job()
			assert.Equal(t, engine.JobDone, j.State, j.LastError)
			assert.Equal(t, hexSHA(content), j.SHA256)
			h := r.hist()
			assert.Equal(t, []string{"retry 200", "restart 206", "ok 200"}, outcomes(h))
			assert.Contains(t, h[1].Error, "resume rejected")
			s := srv.seen()
			require.Len(t, s, 3)
			assert.Equal(t, "bytes=400-", s[1].Range)
			assert.Empty(t, s[2].Range, "asked again from zero")
		})
	}
}

// C19: the remote file changed (If-Range no longer matches, 200): a fresh
// file with the new bytes; nothing of the old part is spliced in.
func TestReliability_C19_RemoteChanged(t *testing.T) {
	v1, v2 := pattern(5000), strings.ToUpper(pattern(5000))
	r := newRel(t, engine.Options{})
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		if n == 0 {
			cutAt(w, v1, 3000, "ETag: \"v1\"\r\n")
			return
		}
		serveContent(w, req, v2, `"v2"`, modtime)
	})
	r.add(srv.URL + "/f.bin")
	r.run()

	assert.Equal(t, map[string]string{"f.bin": v2}, r.files())
	j := r.job()
	assert.Equal(t, engine.JobDone, j.State, j.LastError)
	assert.Equal(t, hexSHA(v2), j.SHA256)
	assert.Equal(t, []string{"retry 200", "ok 200"}, outcomes(r.hist()))
	s := srv.seen()
	require.Len(t, s, 2)
	assert.Equal(t, `"v1"`, s[1].IfRange)
}

// C20: a 416 "bytes */N" with N equal to the part's size completes the
// download; the error page is not appended.
func TestReliability_C20_416Completes(t *testing.T) {
	content := pattern(1000)
	r := newRel(t, engine.Options{})
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		if n == 0 {
			// Every byte, but chunked and cut before the last chunk: the
			// client cannot know the body was complete.
			cut(w, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nETag: \"v1\"\r\n\r\n3e8\r\n"+content+"\r\n", false)
			return
		}
		serveContent(w, req, content, `"v1"`, modtime) // answers 416 bytes */1000
	})
	r.add(srv.URL + "/f.bin")
	r.run()

	assert.Equal(t, map[string]string{"f.bin": content}, r.files(), "the error page is not appended")
	j := r.job()
	assert.Equal(t, engine.JobDone, j.State, j.LastError)
	assert.Equal(t, hexSHA(content), j.SHA256)
	assert.Equal(t, []string{"retry 200", "ok 416"}, outcomes(r.hist()))
	assert.Equal(t, "bytes=1000-", srv.seen()[1].Range)
}

// C21: a weak ETag is never sent in If-Range: Last-Modified is used when
// there is one, else the download restarts from zero.
func TestReliability_C21_WeakETag(t *testing.T) {
	const lm = "Wed, 01 May 2024 12:00:00 GMT"
	content := pattern(1000)
	cases := []struct {
		name, hdr, ifRange, rng string
		last                    string
	}{
		{"weak etag alone restarts", "ETag: W/\"x\"\r\n", "", "", "ok 200"},
		{"weak etag with last-modified", "ETag: W/\"x\"\r\nLast-Modified: " + lm + "\r\n", lm, "bytes=500-", "ok 206"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRel(t, engine.Options{})
			srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
				if n == 0 {
					cutAt(w, content, 500, tc.hdr)
					return
				}
				serveContent(w, req, content, `W/"x"`, modtime)
			})
			r.add(srv.URL + "/f.bin")
			r.run()

			assert.Equal(t, map[string]string{"f.bin": content}, r.files())
			j := r.job()
			assert.Equal(t, engine.JobDone, j.State, j.LastError)
			assert.Equal(t, hexSHA(content), j.SHA256)
			assert.Equal(t, []string{"retry 200", tc.last}, outcomes(r.hist()))
			s := srv.seen()
			require.Len(t, s, 2)
			assert.Equal(t, tc.ifRange, s[1].IfRange)
			assert.Equal(t, tc.rng, s[1].Range)
		})
	}
}

// ---- D. Politeness input ----

// D22: malformed Retry-After values are ignored as if absent (the wait is
// the host's own backoff only, history records no Retry-After); a huge
// value saturates, never becoming a negative wait: it exceeds
// max_retry_after and pauses the host with the reason.
func TestReliability_D22_RetryAfterParsing(t *testing.T) {
	ignored := []string{"-5", "abc", "1.5", "+3", "1 2", "7\t7", "Wed, 01 May 2030 12:00:00 PST", "Thu, 31 Feb 2030 12:00:00 GMT"}
	for _, v := range ignored {
		t.Run("ignored "+strconv.Quote(v), func(t *testing.T) {
			r := newRel(t, engine.Options{})
			srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
				if n == 0 {
					w.Header().Set("Retry-After", v)
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				io.WriteString(w, "ok")
			})
			r.add(srv.URL + "/f.txt")
			r.run()

			assert.Equal(t, map[string]string{"f.txt": "ok"}, r.files())
			j := r.job()
			assert.Equal(t, engine.JobDone, j.State, j.LastError)
			assert.Equal(t, 1, j.Throttled)
			h := r.hist()
			require.Equal(t, []string{"throttled 429", "ok 200"}, outcomes(h))
			assert.Zero(t, h[0].RetryAfter, "ignored as if absent")
			assert.Equal(t, 1, h[0].Level, "the host's own backoff applies")
			assert.Equal(t, "closed", h[0].Breaker.String())
			evs, err := r.db.HostEvents(context.Background(), hostOf(t, srv.URL), 0)
			require.NoError(t, err)
			for _, e := range evs {
				assert.NotContains(t, e.Detail, "Retry-After", "event %s: %s", e.Kind, e.Detail)
			}
		})
	}
	t.Run("stray outer spaces accepted", func(t *testing.T) {
		r := newRel(t, engine.Options{})
		base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, n int) {
			if n == 0 {
				io.WriteString(conn, "HTTP/1.1 429 Too Many Requests\r\nRetry-After:   1  \r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				return
			}
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
		})
		r.add(base + "/f.txt")
		r.run()
		j := r.job()
		assert.Equal(t, engine.JobDone, j.State, j.LastError)
		h := r.hist()
		require.Equal(t, []string{"throttled 429", "ok 200"}, outcomes(h))
		assert.Equal(t, time.Second, h[0].RetryAfter)
		assert.GreaterOrEqual(t, h[1].StartedAt.Sub(h[0].StartedAt), time.Second, "Retry-After honoured")
	})
	t.Run("huge saturates and pauses", func(t *testing.T) {
		r := newRel(t, engine.Options{})
		srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
			w.Header().Set("Retry-After", "9999999999999")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		r.add(srv.URL + "/f.txt")
		r.run() // returns: the only queued job is held by a paused host

		assert.Empty(t, r.files())
		j := r.job()
		assert.Equal(t, engine.JobQueued, j.State)
		assert.Equal(t, 1, j.Throttled)
		h := r.hist()
		require.Equal(t, []string{"throttled 429"}, outcomes(h))
		assert.Greater(t, h[0].RetryAfter, 24*time.Hour, "saturated, never negative")
		snap, ok := r.eng.Core().HostSnapshot(hostOf(t, srv.URL))
		require.True(t, ok)
		assert.True(t, snap.Paused)
		assert.Equal(t, "Retry-After of more than 100 years exceeds max_retry_after 24h0m0s", snap.PauseReason)
		assert.GreaterOrEqual(t, snap.GateIn, time.Duration(0))
		assert.Len(t, srv.seen(), 1)
	})
}

// D23: a Retry-After date in the past means 0; the host's own backoff
// still applies, and grows with each throttle.
func TestReliability_D23_PastDateMeansZero(t *testing.T) {
	r := newRel(t, engine.Options{})
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		if n < 2 {
			w.Header().Set("Retry-After", "Wed, 01 May 2024 12:00:00 GMT")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "ok")
	})
	r.add(srv.URL + "/f.txt")
	r.run()

	assert.Equal(t, map[string]string{"f.txt": "ok"}, r.files())
	j := r.job()
	assert.Equal(t, engine.JobDone, j.State, j.LastError)
	assert.Equal(t, 2, j.Throttled)
	h := r.hist()
	require.Equal(t, []string{"throttled 429", "throttled 429", "ok 200"}, outcomes(h))
	assert.Zero(t, h[0].RetryAfter)
	assert.Zero(t, h[1].RetryAfter)
	assert.Equal(t, []int{1, 2}, []int{h[0].Level, h[1].Level}, "backoff grows regardless")
	evs, err := r.db.HostEvents(context.Background(), hostOf(t, srv.URL), 0)
	require.NoError(t, err)
	throttles := 0
	for _, e := range evs {
		if e.Kind == engine.EventThrottle {
			throttles++
			assert.Contains(t, e.Detail, "Retry-After 0s")
		}
	}
	assert.Equal(t, 2, throttles)
}

// D24: a storm of 429 with Retry-After: 0 raises the level per G5 (one per
// response to a request sent after the last raise) and per G6 (one per
// burst of concurrent requests), opens the breaker at failure_threshold
// (B1), and leaves another host alone.
func TestReliability_D24_ThrottleStorm(t *testing.T) {
	t.Run("level grows, breaker opens, other host unaffected", func(t *testing.T) {
		tun := fast()
		tun.MaxInflight = 1
		tun.BackoffBase = time.Millisecond
		tun.BackoffMax = 4 * time.Millisecond
		tun.FailureThreshold = 3
		tun.RecoveryTimeout = 20 * time.Millisecond
		r := newRel(t, engine.Options{Defaults: tun})
		const storm = 6
		stormy := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
			if n < storm {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			io.WriteString(w, "finally")
		})
		calm := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) { io.WriteString(w, "calm "+req.URL.Path) })
		r.add(stormy.URL + "/s.txt")
		for i := range 5 {
			r.add(fmt.Sprintf("%s/c%d.txt", calm.URL, i))
		}
		r.run()

		for _, j := range r.jobs() {
			assert.Equal(t, engine.JobDone, j.State, "%s: %s", j.URL, j.LastError)
		}
		files := r.files()
		assert.Equal(t, "finally", files["s.txt"])
		assert.Len(t, files, 6)

		h := r.hostHist(hostOf(t, stormy.URL))
		require.Len(t, h, storm+1)
		var levels []int
		var breaker []string
		for _, a := range h[:storm] {
			assert.Equal(t, "throttled", a.Outcome)
			assert.Equal(t, 429, a.Status)
			assert.Zero(t, a.RetryAfter)
			levels = append(levels, a.Level)
			breaker = append(breaker, a.Breaker.String())
		}
		assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, levels, "G5: each throttle raises the level")
		assert.Equal(t, []string{"closed", "closed", "open", "open", "open", "open"}, breaker,
			"B1: open at the 3rd consecutive failure; each half-open probe that fails opens it again")
		assert.Equal(t, "ok", h[storm].Outcome)
		assert.Equal(t, "closed", h[storm].Breaker.String(), "the successful probe closes it")
		assert.Len(t, stormy.seen(), storm+1)

		ch := r.hostHist(hostOf(t, calm.URL))
		require.Len(t, ch, 5)
		for _, a := range ch {
			assert.Equal(t, "ok", a.Outcome)
			assert.Zero(t, a.Level)
			assert.Equal(t, "closed", a.Breaker.String())
		}
		snap, ok := r.eng.Core().HostSnapshot(hostOf(t, calm.URL))
		require.True(t, ok)
		assert.Zero(t, snap.Level)
		assert.Zero(t, snap.Failures)
	})
	t.Run("G6 one burst one level", func(t *testing.T) {
		tun := fast()
		tun.MaxInflight = 4
		tun.BackoffBase = time.Millisecond
		tun.BackoffMax = 4 * time.Millisecond
		r := newRel(t, engine.Options{Defaults: tun})
		const burst = 4
		arrived := make(chan struct{})
		var once sync.Once
		srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
			if n < burst {
				if n == burst-1 {
					once.Do(func() { close(arrived) })
				}
				select { // hold the first requests until all are in flight
				case <-arrived:
				case <-time.After(5 * time.Second):
				}
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			io.WriteString(w, "ok")
		})
		for i := range burst {
			r.add(fmt.Sprintf("%s/f%d.txt", srv.URL, i))
		}
		r.run()

		for _, j := range r.jobs() {
			assert.Equal(t, engine.JobDone, j.State, j.LastError)
			assert.Equal(t, 1, j.Throttled)
		}
		h := r.hist()
		require.Len(t, h, 2*burst)
		for _, a := range h {
			if a.Outcome == "throttled" {
				assert.Equal(t, 1, a.Level, "G6: one burst raises the level once")
			}
		}
		assert.Len(t, r.files(), burst)
	})
}

// D25: a 503 with Retry-After: 86400 makes the host wait a day: the
// snapshot shows the gate, a restart keeps it and asks nothing; over
// max_retry_after the host pauses with the reason instead, persisted.
func TestReliability_D25_RetryAfterADay(t *testing.T) {
	t.Run("host waits and a restart keeps it", func(t *testing.T) {
		r := newRel(t, engine.Options{})
		srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
			w.Header().Set("Retry-After", "86400")
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		host := hostOf(t, srv.URL)
		r.add(srv.URL + "/f.txt")
		r.runUntil(func() bool {
			s, _ := r.eng.Core().HostSnapshot(host)
			return s.Level == 1
		})
		snap, ok := r.eng.Core().HostSnapshot(host)
		require.True(t, ok)
		assert.Greater(t, snap.GateIn, 23*time.Hour, "the host shows the wait")
		assert.False(t, snap.Paused)

		r.reopen()
		snap, ok = r.eng.Core().HostSnapshot(host)
		require.True(t, ok, "the host is restored")
		assert.Greater(t, snap.GateIn, 23*time.Hour, "a restart keeps the wait")
		assert.Equal(t, 1, snap.Level)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, r.eng.Run(ctx), context.DeadlineExceeded)
		assert.Len(t, srv.seen(), 1, "nothing asked again after the restart")

		assert.Empty(t, r.files())
		j := r.job()
		assert.Equal(t, engine.JobQueued, j.State)
		assert.Equal(t, 1, j.Throttled)
		assert.Contains(t, j.LastError, "503")
		assert.Greater(t, time.Until(j.NotBefore), 23*time.Hour)
		h := r.hist()
		require.Equal(t, []string{"throttled 503"}, outcomes(h))
		assert.Equal(t, 24*time.Hour, h[0].RetryAfter)
		assert.Equal(t, 1, h[0].Level)
	})
	t.Run("over max_retry_after pauses", func(t *testing.T) {
		tun := fast()
		tun.MaxRetryAfter = time.Hour
		r := newRel(t, engine.Options{Defaults: tun})
		srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
			w.Header().Set("Retry-After", "86400")
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		host := hostOf(t, srv.URL)
		r.add(srv.URL+"/a.txt", srv.URL+"/b.txt")
		r.run()

		snap, ok := r.eng.Core().HostSnapshot(host)
		require.True(t, ok)
		assert.True(t, snap.Paused)
		assert.Contains(t, snap.PauseReason, "Retry-After 24h0m0s exceeds max_retry_after 1h0m0s")
		for _, j := range r.jobs() {
			assert.Equal(t, engine.JobQueued, j.State, "pausing never loses a job")
		}
		h := r.hist()
		require.NotEmpty(t, h)
		for _, a := range h {
			assert.Equal(t, "throttled", a.Outcome)
			assert.Equal(t, 24*time.Hour, a.RetryAfter)
		}
		r.reopen()
		snap, _ = r.eng.Core().HostSnapshot(host)
		assert.True(t, snap.Paused, "the pause survives a restart")
		assert.Contains(t, snap.PauseReason, "max_retry_after")
		assert.Empty(t, r.files())
	})
}

// ---- E. Hostile timing and transport ----

// E26: a server that accepts and never sends headers hits the header
// timeout; the attempt is retried and counted by the breaker.
func TestReliability_E26_NoHeadersTimesOut(t *testing.T) {
	tun := fast()
	tun.Retry.MaxAttempts = 3
	tun.FailureThreshold = 2
	tun.RecoveryTimeout = 10 * time.Millisecond
	r := newRel(t, engine.Options{Defaults: tun, Fetch: fetch.Config{ResponseHeaderTimeout: 150 * time.Millisecond}})
	base, count := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) { blockUntilClosed(conn) })
	r.add(base + "/f.bin")
	r.run()

	assert.Empty(t, r.files())
	j := r.job()
	assert.Equal(t, engine.JobFailed, j.State)
	assert.Contains(t, j.LastError, "gave up after 3 attempts")
	assert.Contains(t, j.LastError, "timeout")
	h := r.hist()
	require.Equal(t, []string{"retry 0", "retry 0", "failed 0"}, outcomes(h))
	var breaker []string
	for _, a := range h {
		assert.Contains(t, a.Error, "timeout")
		breaker = append(breaker, a.Breaker.String())
	}
	assert.Equal(t, []string{"closed", "open", "open"}, breaker, "timeouts count as breaker failures")
	assert.Equal(t, int32(3), count.Load())
}

// E27: a body trickling bytes within the idle timeout is never killed, however
// long it takes; once the bytes stop, the idle timeout kills the attempt,
// the part is kept and the retry resumes from it.
func TestReliability_E27_TrickleAndIdle(t *testing.T) {
	const idle = 300 * time.Millisecond
	content := pattern(24)
	t.Run("slow but steady is never killed", func(t *testing.T) {
		r := newRel(t, engine.Options{Fetch: fetch.Config{IdleTimeout: idle}})
		srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
			w.Header().Set("Content-Length", strconv.Itoa(len(content)))
			for i := range len(content) { // 24 bytes over ~1.2 s: four idle timeouts long
				io.WriteString(w, content[i:i+1])
				w.(http.Flusher).Flush()
				time.Sleep(idle / 6)
			}
		})
		r.add(srv.URL + "/slow.bin")
		r.run()

		assert.Equal(t, map[string]string{"slow.bin": content}, r.files())
		j := r.job()
		assert.Equal(t, engine.JobDone, j.State, j.LastError)
		h := r.hist()
		require.Equal(t, []string{"ok 200"}, outcomes(h), "not killed")
		assert.Greater(t, h[0].Duration, idle, "the download lasted longer than the idle timeout")
	})
	t.Run("stalled body killed by the idle timeout and resumed", func(t *testing.T) {
		r := newRel(t, engine.Options{Fetch: fetch.Config{IdleTimeout: idle}})
		srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
			if n == 0 {
				w.Header().Set("Content-Length", strconv.Itoa(len(content)))
				w.Header().Set("ETag", `"t1"`)
				io.WriteString(w, content[:3])
				w.(http.Flusher).Flush()
				<-req.Context().Done() // then nothing more
				return
			}
			serveContent(w, req, content, `"t1"`, modtime)
		})
		r.add(srv.URL + "/f.bin")
		r.run()

		assert.Equal(t, map[string]string{"f.bin": content}, r.files())
		j := r.job()
		assert.Equal(t, engine.JobDone, j.State, j.LastError)
		h := r.hist()
		require.Equal(t, []string{"retry 200", "ok 206"}, outcomes(h))
		assert.Contains(t, h[0].Error, "idle timeout")
		assert.Equal(t, int64(3), h[0].Bytes)
		assert.Equal(t, "bytes=3-", srv.seen()[1].Range)
	})
}

// E28: a self-signed, expired or wrong-host certificate fails the job at
// once, not retried, without a request reaching the handler and without
// counting against the host's breaker.
func TestReliability_E28_BadCertificates(t *testing.T) {
	ca := testca.New(t)
	now := time.Now()
	loop := []net.IP{net.ParseIP("127.0.0.1")}
	cases := []struct {
		name    string
		cert    func() []tls.Certificate
		trustCA bool
	}{
		{"self-signed", func() []tls.Certificate { return nil }, false},
		{"expired", func() []tls.Certificate {
			return []tls.Certificate{ca.Leaf(t, nil, loop, now.Add(-72*time.Hour), now.Add(-24*time.Hour))}
		}, true},
		{"wrong host", func() []tls.Certificate {
			return []tls.Certificate{ca.Leaf(t, []string{"other.example"}, nil, now.Add(-time.Hour), now.Add(time.Hour))}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				io.WriteString(w, "secret")
			}))
			ts.Config.ErrorLog = log.New(io.Discard, "", 0)
			if certs := tc.cert(); certs != nil {
				ts.TLS = &tls.Config{Certificates: certs}
			}
			ts.StartTLS()
			t.Cleanup(ts.Close)
			var fc fetch.Config
			if tc.trustCA {
				fc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}
			}
			r := newRel(t, engine.Options{Fetch: fc})
			r.add(ts.URL + "/f.bin")
			r.run()

			assert.Empty(t, r.files())
			j := r.job()
			assert.Equal(t, engine.JobFailed, j.State)
			assert.Contains(t, j.LastError, "certificate")
			assert.Equal(t, 1, j.Attempts, "not retried")
			h := r.hist()
			require.Equal(t, []string{"failed 0"}, outcomes(h))
			assert.Equal(t, "closed", h[0].Breaker.String())
			assert.Zero(t, h[0].Level)
			assert.Equal(t, int32(0), hits.Load())
			snap, _ := r.eng.Core().HostSnapshot(hostOf(t, ts.URL))
			assert.Zero(t, snap.Failures, "a certificate error is not the host's failure")
		})
	}
}

// E29: a connection reset mid-body is retried and resumed from the bytes
// already on disk.
func TestReliability_E29_ResetMidBodyResumes(t *testing.T) {
	content := pattern(1000)
	r := newRel(t, engine.Options{})
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		if n == 0 {
			cut(w, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"e1\"\r\n\r\n"+content[:300], true)
			return
		}
		serveContent(w, req, content, `"e1"`, modtime)
	})
	r.add(srv.URL + "/f.bin")
	r.run()

	assert.Equal(t, map[string]string{"f.bin": content}, r.files())
	j := r.job()
	assert.Equal(t, engine.JobDone, j.State, j.LastError)
	assert.Equal(t, hexSHA(content), j.SHA256)
	assert.Equal(t, 2, j.Attempts)
	h := r.hist()
	require.Equal(t, []string{"retry 200", "ok 206"}, outcomes(h))
	assert.Equal(t, int64(300), h[0].Bytes)
	assert.NotEmpty(t, h[0].Error)
	s := srv.seen()
	require.Len(t, s, 2)
	assert.Equal(t, "bytes=300-", s[1].Range)
	assert.Equal(t, `"e1"`, s[1].IfRange)
}

// E30: a redirect loop stops after 10 hops and fails the job.
func TestReliability_E30_RedirectLoop(t *testing.T) {
	r := newRel(t, engine.Options{})
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		http.Redirect(w, req, fmt.Sprintf("/loop%d", n%2), http.StatusTemporaryRedirect)
	})
	r.add(srv.URL + "/start")
	r.run()

	assert.Empty(t, r.files())
	j := r.job()
	assert.Equal(t, engine.JobFailed, j.State)
	assert.Contains(t, j.LastError, "10 redirects")
	h := r.hist()
	require.Len(t, h, fetch.MaxHops+1)
	for _, a := range h[:fetch.MaxHops] {
		assert.Equal(t, "redirect", a.Outcome)
	}
	assert.Equal(t, "failed", h[fetch.MaxHops].Outcome)
	assert.Equal(t, 307, h[fetch.MaxHops].Status)
	assert.Len(t, srv.seen(), fetch.MaxHops+1, "the original request plus ten followed hops")
}

// L3, N2: jobs whose redirects lead to a host that must wait (here its
// Retry-After) never hold the slots other hosts need: while many wait for
// it, a retry on a third host still goes when it is due. Each such job
// waits for that host within its one attempt, holding no connection and no
// file, and is done once the host takes requests again.
func TestReliability_L3_RedirectsToAWaitingHostBlockNoOther(t *testing.T) {
	tun := fast()
	tun.Retry.Jitter = false
	tun.Retry.Base, tun.Retry.Max = 200*time.Millisecond, 200*time.Millisecond
	r := newRel(t, engine.Options{Defaults: tun, Workers: 4}) // the attempts a run holds at once: 2·4 + 64

	var gateEnds atomic.Int64 // when b's Retry-After ends, unix nanoseconds
	b := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		if n == 0 {
			gateEnds.Store(time.Now().Add(3 * time.Second).UnixNano())
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "from b "+req.URL.Path)
	})
	a := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
		http.Redirect(w, req, b.URL+"/files/"+path.Base(req.URL.Path), http.StatusFound)
	})
	var cDone atomic.Int64 // when c answered its retry
	c := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		if n == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		cDone.Store(time.Now().UnixNano())
		io.WriteString(w, "from c")
	})
	urls := []string{c.URL + "/c.txt"}
	for i := range 120 { // more than a run holds attempts at once
		urls = append(urls, fmt.Sprintf("%s/r/%03d.txt", a.URL, i))
	}
	r.add(urls...)
	r.run()

	require.NotZero(t, cDone.Load(), "c's retry went")
	assert.Less(t, cDone.Load(), gateEnds.Load(), "c's retry waited for b's Retry-After, a host it has nothing to do with")
	files := r.files()
	assert.Equal(t, "from c", files["c.txt"])
	for _, j := range r.jobs() {
		assert.Equal(t, engine.JobDone, j.State, "%s: %s", j.URL, j.LastError)
		if strings.HasPrefix(j.URL, a.URL) {
			assert.Equal(t, "from b /files/"+path.Base(j.URL), files[path.Base(j.URL)])
			assert.Equal(t, 1, j.Attempts, "%s: one attempt, which waited for b", j.URL)
		}
	}
	assert.Len(t, b.seen(), 121, "b's 429, then each file once")
}

// A10, F5: an attempt that fails before it could open its part (here the
// part has a second link, which Heed refuses to write through) reports no
// bytes; the part's bytes are kept all the same, for a resume — only an
// empty part of a failed job is removed.
func TestReliability_A10_PartWithBytesKeptWhenItCannotBeOpened(t *testing.T) {
	content := pattern(100 << 10)
	tun := fast()
	tun.Retry.MaxAttempts = 1
	r := newRel(t, engine.Options{Defaults: tun})
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		if n == 0 {
			cut(w, "HTTP/1.1 200 OK\r\nContent-Length: 102400\r\nETag: \"s1\"\r\n\r\n"+content[:70<<10], false)
			return
		}
		serveContent(w, req, content, `"s1"`, modtime)
	})
	r.add(srv.URL + "/f.bin")
	r.run()
	j := r.job()
	require.Equal(t, engine.JobFailed, j.State)
	require.Equal(t, "f.bin.part", j.Part)
	require.Equal(t, content[:70<<10], r.files()["f.bin.part"], "the cut body's part is kept")

	require.NoError(t, os.Link(filepath.Join(r.dir, "f.bin.part"), filepath.Join(r.dir, "linked")))
	_, err := r.eng.RetryJobs(context.Background(), []int64{j.ID})
	require.NoError(t, err)
	r.run()

	j = r.job()
	assert.Equal(t, engine.JobFailed, j.State)
	assert.Contains(t, j.LastError, "linked elsewhere")
	assert.Equal(t, content[:70<<10], r.files()["f.bin.part"], "its bytes are kept")
	assert.Equal(t, "f.bin.part", j.Part)
}
