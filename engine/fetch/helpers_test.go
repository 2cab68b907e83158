package fetch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// env is a download folder "dl" beside an "outside" folder that must never
// change, with a Fetcher on dl.
type env struct {
	t       *testing.T
	dl      string
	outside string
	f       *Fetcher

	mu    sync.Mutex
	parts map[string]bool // part names handed out, as the engine reserves them for their attempts
}

const outsideSentinel = "do-not-touch"

// newEnv builds the folders and a Fetcher with short timeouts and a large
// fake free space; mod may adjust the config.
func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	parent := t.TempDir()
	e := &env{t: t, dl: filepath.Join(parent, "dl"), outside: filepath.Join(parent, "outside")}
	require.NoError(t, os.Mkdir(e.dl, 0o755))
	require.NoError(t, os.Mkdir(e.outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(e.outside, "target.txt"), []byte(outsideSentinel), 0o644))
	cfg := Config{
		Dir:                   e.dl,
		Version:               "0.1.0",
		ConnectTimeout:        5 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: 5 * time.Second,
		IdleTimeout:           5 * time.Second,
		FreeSpace:             func() (int64, error) { return 1 << 40, nil },
	}
	if mod != nil {
		mod(&cfg)
	}
	f, err := New(cfg)
	require.NoError(t, err)
	e.f = f
	t.Cleanup(func() {
		f.Close()
		e.assertOutsideUntouched()
	})
	return e
}

// got is what an exchange did, with the final name the engine gives a
// complete download (Rename after FreeName, once it is recorded).
type got struct {
	Result
	File string
}

// doReq runs one exchange as the engine does: with a part name chosen
// before the request when the job has none, and a complete download given
// its final name.
func (e *env) doReq(ctx context.Context, req Request, progress func(int64)) got {
	e.t.Helper()
	if req.Part == "" && req.URL != nil {
		user := req.UserURL
		if user == nil {
			user = req.URL
		}
		e.mu.Lock()
		if e.parts == nil {
			e.parts = map[string]bool{}
		}
		req.Part = e.f.PartFor(user, func(n string) bool { return e.parts[n] })
		e.parts[req.Part] = true
		e.mu.Unlock()
	}
	return e.finish(e.f.Do(ctx, req, progress))
}

// finish gives a complete download its final name, as the engine does.
func (e *env) finish(res Result) got {
	e.t.Helper()
	if !res.Done {
		return got{Result: res}
	}
	for {
		final, err := e.f.FreeName(res.Name, nil)
		require.NoError(e.t, err)
		err = e.f.Rename(res.Part, final)
		if errors.Is(err, fs.ErrExist) {
			continue // taken since it was chosen
		}
		require.NoError(e.t, err)
		res.Part = ""
		return got{Result: res, File: final}
	}
}

// do runs one exchange with a fresh-job request for rawURL.
func (e *env) do(rawURL string, mod func(*Request)) got {
	e.t.Helper()
	u := mustURL(e.t, rawURL)
	req := Request{URL: u, UserURL: u, Size: -1}
	if mod != nil {
		mod(&req)
	}
	return e.doReq(context.Background(), req, nil)
}

// files lists dl: regular files map to their content, symlinks to "->target".
func (e *env) files() map[string]string {
	e.t.Helper()
	return listDir(e.t, e.dl)
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

func (e *env) write(name, content string) {
	e.t.Helper()
	require.NoError(e.t, os.WriteFile(filepath.Join(e.dl, name), []byte(content), 0o644))
}

// assertOutsideUntouched holds promise 1: nothing lands outside dl.
func (e *env) assertOutsideUntouched() {
	e.t.Helper()
	assert.Equal(e.t, map[string]string{"target.txt": outsideSentinel}, listDir(e.t, e.outside),
		"the folder beside the download folder changed")
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// body makes n bytes of recognisable content.
func body(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return string(b)
}

// rawServer serves each accepted connection with handle after reading the
// request head, so tests can send exactly the bytes they want. It returns
// the base URL and a function reporting the requests seen.
func rawServer(t *testing.T, handle func(conn net.Conn, req *http.Request, n int)) (string, func() []*http.Request) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu   sync.Mutex
		reqs []*http.Request
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				go func() { <-done; conn.Close() }()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				mu.Lock()
				reqs = append(reqs, req)
				mu.Unlock()
				handle(conn, req, n)
			}()
		}
	}()
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
	})
	return "http://" + ln.Addr().String(), func() []*http.Request {
		mu.Lock()
		defer mu.Unlock()
		return append([]*http.Request(nil), reqs...)
	}
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

func hostOf(t testing.TB, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Host
}

type (
	tlsCert   = tls.Certificate
	tlsConfig = tls.Config
)

// quietLog silences the server's TLS handshake complaints.
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
