package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"heed/engine/internal/testca"
)

// serveFile answers every request with content via http.ServeContent, which
// implements Range, If-Range and 416 like a real server.
func serveFile(t *testing.T, content string, etag string, hdr map[string]string) (*httptest.Server, *[]http.Header) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen []http.Header
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		http.ServeContent(w, r, "", time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), strings.NewReader(content))
	}))
	t.Cleanup(ts.Close)
	return ts, &seen
}

func TestFetch_F4_F7_N3_CompleteDownload(t *testing.T) {
	e := newEnv(t, nil)
	content := body(100_000)
	ts, seen := serveFile(t, content, `"v1"`, nil)
	var last int64
	res := e.doReq(context.Background(), Request{URL: mustURL(t, ts.URL+"/dir/file.bin"), Size: -1},
		func(n int64) { last = n })

	require.Equal(t, OK, res.Class, "%v", res.Err)
	assert.True(t, res.Done)
	assert.Equal(t, "file.bin", res.File)
	assert.Equal(t, "", res.Part)
	assert.Equal(t, int64(len(content)), res.Bytes)
	assert.Equal(t, int64(len(content)), res.Size)
	assert.Equal(t, int64(len(content)), last)
	assert.Equal(t, sha(content), res.SHA256)
	assert.Equal(t, `"v1"`, res.ETag)
	assert.Equal(t, 200, res.Status)
	assert.Equal(t, map[string]string{"file.bin": content}, e.files())
	require.Len(t, *seen, 1)
	assert.Equal(t, "Heed/0.1.0", (*seen)[0].Get("User-Agent"))
	assert.Equal(t, "identity", (*seen)[0].Get("Accept-Encoding"))
	assert.Empty(t, (*seen)[0].Get("Range"))
}

func TestFetch_N3_UserAgentSettable(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.UserAgent = "Heed/9 (+https://heed.example)" })
	ts, seen := serveFile(t, "x", "", nil)
	res := e.do(ts.URL+"/a", nil)
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, "Heed/9 (+https://heed.example)", (*seen)[0].Get("User-Agent"))
}

func TestFetch_A1_A6_HostileContentDisposition(t *testing.T) {
	cases := []struct {
		name, cd, want string
	}{
		{"A1 dotdot", `attachment; filename="../../.bashrc"`, "bashrc"},
		{"A2 rfc2231", `attachment; filename*=UTF-8''..%2F..%2Fx`, "x"},
		{"A3 backslashes", `attachment; filename="..\..\evil.exe"`, "evil.exe"},
		{"A4 absolute", `attachment; filename="/etc/passwd"`, "passwd"},
		{"A4 drive", `attachment; filename="C:\x.dll"`, "x.dll"},
		{"A4 stream", `attachment; filename="name:stream"`, "name_stream"},
		{"A5 reserved", `attachment; filename="CON.txt"`, "_CON.txt"},
		{"A5 dotdot only", `attachment; filename=".."`, "report.pdf"},
		{"A6 duplicate filename", `attachment; filename="a"; filename="b"`, "report.pdf"},
		{"A6 malformed", `attachment; filename="x`, "report.pdf"},
		{"symlinked subfolder name", `attachment; filename="sub/evil"`, "evil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			// A10: a symlinked subfolder pointing outside must not be used.
			require.NoError(t, os.Symlink(e.outside, filepath.Join(e.dl, "sub")))
			ts, _ := serveFile(t, "payload", "", map[string]string{"Content-Disposition": tc.cd})
			res := e.do(ts.URL+"/files/report.pdf", nil)
			require.Equal(t, OK, res.Class, "%v", res.Err)
			assert.Equal(t, tc.want, res.File)
			assert.Equal(t, map[string]string{tc.want: "payload", "sub": "->" + e.outside}, e.files())
		})
	}
}

func TestFetch_A7_RedirectChainNameFromUserURL(t *testing.T) {
	for _, evil := range []string{"/x/.bashrc", "/home/u/.ssh/authorized_keys"} {
		t.Run(evil, func(t *testing.T) {
			e := newEnv(t, nil)
			mux := http.NewServeMux()
			mux.HandleFunc("/start/tool.tar.gz", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, evil, http.StatusFound)
			})
			mux.HandleFunc(evil, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "data") })
			ts := httptest.NewServer(mux)
			defer ts.Close()

			user := mustURL(t, ts.URL+"/start/tool.tar.gz")
			r1 := e.doReq(context.Background(), Request{URL: user, UserURL: user, Size: -1}, nil)
			require.Equal(t, OK, r1.Class, "%v", r1.Err)
			require.NotNil(t, r1.Redirect)
			assert.Equal(t, ts.URL+evil, r1.Redirect.String())
			assert.Empty(t, e.files(), "a redirect body is never written")

			r2 := e.doReq(context.Background(), Request{URL: r1.Redirect, UserURL: user, Size: -1, Hop: 1}, nil)
			require.True(t, r2.Done, "%v", r2.Err)
			assert.Equal(t, "tool.tar.gz", r2.File)
			assert.Equal(t, map[string]string{"tool.tar.gz": "data"}, e.files())
		})
	}
}

func TestFetch_A8_N2_RedirectTargetsValidated(t *testing.T) {
	cases := []struct {
		name, loc string
		class     Class
		want      string // resolved target when allowed
	}{
		{"A8 file", "file:///etc/passwd", Refused, ""},
		{"A8 ftp", "ftp://ftp.example/x", Refused, ""},
		{"A8 data", "data:text/plain,hello", Refused, ""},
		{"A8 javascript", "javascript:alert(1)", Refused, ""},
		{"relative resolved", "../b/c.bin?q=1#frag", OK, "/b/c.bin?q=1"},
		{"absolute other host", "http://other.example/x", OK, "http://other.example/x"},
		{"upgrade allowed", "https://other.example/x", OK, "https://other.example/x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", tc.loc)
				w.WriteHeader(http.StatusMovedPermanently)
				io.WriteString(w, "<html>moved body that must not be saved</html>")
			}))
			defer ts.Close()
			res := e.do(ts.URL+"/a/start", nil)
			assert.Equal(t, tc.class, res.Class, "%v", res.Err)
			assert.Equal(t, 301, res.Status)
			assert.False(t, res.Done)
			if tc.class == OK {
				require.NotNil(t, res.Redirect)
				want := tc.want
				if strings.HasPrefix(want, "/") {
					want = ts.URL + want
				}
				assert.Equal(t, want, res.Redirect.String())
			} else {
				assert.Nil(t, res.Redirect)
				assert.False(t, res.Retryable)
				assert.Error(t, res.Err)
			}
			assert.Empty(t, e.files())
		})
	}
}

func TestFetch_N2_HTTPSDowngrade(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprint("allow=", allow), func(t *testing.T) {
			ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://plain.example/file", http.StatusFound)
			}))
			defer ts.Close()
			e := newEnv(t, func(c *Config) { c.Transport = ts.Client().Transport; c.AllowDowngrade = allow })
			res := e.do(ts.URL+"/file", nil)
			if allow {
				assert.Equal(t, OK, res.Class)
				require.NotNil(t, res.Redirect)
				assert.Equal(t, "http://plain.example/file", res.Redirect.String())
			} else {
				assert.Equal(t, Refused, res.Class)
				assert.False(t, res.Retryable)
				assert.Nil(t, res.Redirect)
			}
			assert.Empty(t, e.files())
		})
	}
}

func TestFetch_E30_RedirectLoopStopsAfterTenHops(t *testing.T) {
	e := newEnv(t, nil)
	var hits atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
	}))
	defer ts.Close()
	user := mustURL(t, ts.URL+"/loop")
	req := Request{URL: user, UserURL: user, Size: -1}
	var res got
	for range 20 {
		res = e.doReq(context.Background(), req, nil)
		if res.Redirect == nil {
			break
		}
		req.URL, req.Hop = res.Redirect, req.Hop+1
	}
	assert.Equal(t, Redirects, res.Class)
	assert.False(t, res.Retryable)
	assert.Equal(t, MaxHops, req.Hop)
	assert.Equal(t, int32(MaxHops+1), hits.Load(), "the original request plus ten followed hops")
	assert.Empty(t, e.files())

	// A hop count already past the limit is refused without a request.
	res = e.do(ts.URL+"/loop", func(r *Request) { r.Hop = MaxHops + 1 })
	assert.Equal(t, Redirects, res.Class)
	assert.Equal(t, int32(MaxHops+1), hits.Load())
}

func TestFetch_A9_F3_NeverOverwrite(t *testing.T) {
	e := newEnv(t, nil)
	e.write("a.txt", "mine")
	e.write("a (1).txt", "mine too")
	ts, _ := serveFile(t, "new", "", nil)
	res := e.do(ts.URL+"/a.txt", nil)
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, "a (2).txt", res.File)
	assert.Equal(t, map[string]string{"a.txt": "mine", "a (1).txt": "mine too", "a (2).txt": "new"}, e.files())
}

func TestFetch_F3_FinalNameTakenDuringDownload(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			e := newEnv(t, nil)
			half := make(chan struct{})
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if held {
					w.Header().Set("Content-Length", "6")
				} // else no length is announced: the body has a part from its first byte
				io.WriteString(w, "abc")
				w.(http.Flusher).Flush()
				<-half
				// Another program creates the final name while we download.
				e.write("a.txt", "theirs")
				io.WriteString(w, "def")
			}))
			defer ts.Close()
			once := sync.OnceFunc(func() { close(half) })
			res := e.doReq(context.Background(), Request{URL: mustURL(t, ts.URL+"/a.txt"), Size: -1}, func(n int64) {
				if n >= 3 {
					once()
				}
			})
			require.True(t, res.Done, "%v", res.Err)
			assert.Equal(t, "a (1).txt", res.File)
			assert.Equal(t, map[string]string{"a.txt": "theirs", "a (1).txt": "abcdef"}, e.files())
		})
	}
}

func TestFetch_A10_SymlinkPlantedAtNameOrPart(t *testing.T) {
	cases := []struct {
		name  string
		plant string // link name in dl
		to    string // "outside" target or "dangling"
		want  string // final name
		held  string // final name of a small body, which never has a part name
	}{
		{"at name to outside file", "a.txt", "outside", "a (1).txt", "a (1).txt"},
		{"at name dangling", "a.txt", "dangling", "a (1).txt", "a (1).txt"},
		{"at part to outside file", "a.txt.part", "outside", "a (1).txt", "a.txt"},
		{"at part dangling", "a.txt.part", "dangling", "a (1).txt", "a.txt"},
	}
	for _, tc := range cases {
		for _, content := range []string{("payload"), "payload"} {
			want := tc.want
			if content == "payload" {
				want = tc.held
			}
			t.Run(fmt.Sprintf("%s/%d bytes", tc.name, len(content)), func(t *testing.T) {
				e := newEnv(t, nil)
				target := filepath.Join(e.outside, "target.txt")
				if tc.to == "dangling" {
					target = filepath.Join(e.outside, "new.txt")
				}
				require.NoError(t, os.Symlink(target, filepath.Join(e.dl, tc.plant)))
				ts, _ := serveFile(t, content, "", nil)
				res := e.do(ts.URL+"/a.txt", nil)
				require.True(t, res.Done, "%v", res.Err)
				assert.Equal(t, want, res.File)
				assert.Equal(t, map[string]string{tc.plant: "->" + target, want: content}, e.files())
				e.assertOutsideUntouched()
			})
		}
	}
}

func TestFetch_A10_ResumePartIsLinkRefused(t *testing.T) {
	cases := []struct {
		name  string
		setup func(e *env)
		part  string
	}{
		{"symlink to outside", func(e *env) {
			require.NoError(t, os.Symlink(filepath.Join(e.outside, "target.txt"), filepath.Join(e.dl, "a.txt.part")))
		}, "a.txt.part"},
		{"symlink inside folder", func(e *env) {
			e.write("precious.txt", "keep")
			require.NoError(t, os.Symlink("precious.txt", filepath.Join(e.dl, "a.txt.part")))
		}, "a.txt.part"},
		{"hard link", func(e *env) {
			e.write("precious.txt", "keep")
			require.NoError(t, os.Link(filepath.Join(e.dl, "precious.txt"), filepath.Join(e.dl, "a.txt.part")))
		}, "a.txt.part"},
		{"part name with path", func(e *env) {
			require.NoError(t, os.Symlink(e.outside, filepath.Join(e.dl, "sub")))
		}, "sub/target.txt.part"},
		{"part name dotdot", func(e *env) {}, "../outside/target.txt.part"},
		{"part name without suffix", func(e *env) { e.write("precious.txt", "keep") }, "precious.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			tc.setup(e)
			before := e.files()
			var hits atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				io.WriteString(w, "payload")
			}))
			defer ts.Close()
			res := e.do(ts.URL+"/a.txt", func(r *Request) { r.Part = tc.part; r.ETag = `"x"` })
			assert.Equal(t, Confinement, res.Class, "%v", res.Err)
			assert.False(t, res.Retryable)
			assert.False(t, res.Done)
			assert.Equal(t, int32(0), hits.Load(), "refused before any request")
			assert.Equal(t, before, e.files())
		})
	}
}

func TestFetch_B11_ContentLengthOverLimitFailsBeforeWriting(t *testing.T) {
	cases := []struct {
		name  string
		mod   func(*Config)
		class Class
	}{
		{"over free space", nil, Disk},
		{"over size cap", func(c *Config) { c.MaxSize = 1 << 20; c.FreeSpace = nil }, SizeLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.mod)
			base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 10000000000000\r\n\r\nAAAA")
				blockUntilClosed(conn)
			})
			res := e.do(base+"/huge.iso", nil)
			assert.Equal(t, tc.class, res.Class, "%v", res.Err)
			assert.False(t, res.Retryable)
			assert.Equal(t, "", res.Part)
			assert.Empty(t, e.files(), "not even a part file")
		})
	}
}

func TestFetch_F8_FreeSpaceCountsTheRestartedPart(t *testing.T) {
	cases := []struct {
		name   string
		length int
		class  Class
		files  func(content string) map[string]string
	}{
		{"fits once the old part is dropped", 1700, OK, func(c string) map[string]string { return map[string]string{"f.bin": c} }},
		{"does not fit", 1900, Disk, func(string) map[string]string { return map[string]string{"f.bin.part": body(800)} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.FreeSpace = func() (int64, error) { return 1000, nil } })
			content := strings.ToUpper(body(tc.length))
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, content) // 200: Range ignored, the part restarts
			}))
			defer ts.Close()
			e.writePart("f.bin.part", body(800))
			res := e.do(ts.URL+"/f.bin", func(r *Request) { r.Part = "f.bin.part"; r.ETag = `"v"` })
			assert.Equal(t, tc.class, res.Class, "%v", res.Err)
			assert.Equal(t, tc.files(content), e.files())
		})
	}
}

func TestFetch_F8_ResumeNeedsOnlyTheRest(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.FreeSpace = func() (int64, error) { return 1000, nil } })
	content := body(1800)
	ts, _ := serveFile(t, content, `"v"`, nil)
	e.writePart("f.bin.part", content[:1000])
	res := e.do(ts.URL+"/f.bin", func(r *Request) { r.Part = "f.bin.part"; r.ETag = `"v"` })
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, map[string]string{"f.bin": content}, e.files())
}

// endless serves a chunked body that never ends.
func endless(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("z"), 8192)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestFetch_B12_EndlessBodyCutAtSizeCap(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxSize = 100_000 })
	res := e.do(endless(t).URL+"/stream", nil)
	assert.Equal(t, SizeLimit, res.Class, "%v", res.Err)
	assert.False(t, res.Retryable)
	assert.False(t, res.Done)
	assert.Equal(t, "", res.Part)
	assert.Empty(t, e.files(), "the useless part is removed, no final file")
}

func TestFetch_B12_EndlessBodyCutByFreeSpace(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.FreeSpace = func() (int64, error) { return 64 << 10, nil } })
	res := e.do(endless(t).URL+"/stream", nil)
	assert.Equal(t, Disk, res.Class, "%v", res.Err)
	assert.False(t, res.Done)
	assert.Equal(t, "stream.part", res.Part)
	files := e.files()
	assert.Equal(t, []string{"stream.part"}, names(files), "no final file")
	assert.LessOrEqual(t, len(files["stream.part"]), 64<<10)
	assert.Equal(t, int64(len(files["stream.part"])), res.Bytes)
}

func TestFetch_B13_F6_GzipBytesSavedAsSent(t *testing.T) {
	var wire bytes.Buffer
	zw := gzip.NewWriter(&wire)
	io.WriteString(zw, strings.Repeat("tar archive contents ", 500))
	require.NoError(t, zw.Close())
	e := newEnv(t, nil)
	ts, _ := serveFile(t, wire.String(), "", map[string]string{"Content-Encoding": "gzip", "Content-Type": "application/x-tar"})
	res := e.do(ts.URL+"/src.tar.gz", nil)
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, map[string]string{"src.tar.gz": wire.String()}, e.files())
	assert.Equal(t, sha(wire.String()), res.SHA256)
}

func TestFetch_B14_ShortBodyIsTruncatedAndKept(t *testing.T) {
	e := newEnv(t, nil)
	base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nETag: \"s1\"\r\n\r\n"+body(40))
	})
	res := e.do(base+"/f.bin", nil)
	assert.Equal(t, Truncated, res.Class, "%v", res.Err)
	assert.True(t, res.Retryable)
	assert.False(t, res.Done)
	assert.Equal(t, "f.bin.part", res.Part)
	assert.Equal(t, int64(40), res.Bytes)
	assert.Equal(t, int64(100), res.Size)
	assert.Equal(t, `"s1"`, res.ETag)
	assert.Equal(t, map[string]string{"f.bin.part": body(40)}, e.files())
}

func TestFetch_B15_MalformedFramingIsTransportError(t *testing.T) {
	cases := []struct {
		name, resp string
	}{
		{"two different Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello"},
		{"negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nhello"},
		{"20-digit Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nhello"},
		{"negative chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n"},
		{"garbage status line", "HTTP/1.1 2OO OK\r\n\r\n"},
		{"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\nhello\r\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
				io.WriteString(conn, tc.resp)
			})
			res := e.do(base+"/f.bin", nil)
			assert.Equal(t, Transport, res.Class, "%v", res.Err)
			assert.True(t, res.Retryable)
			assert.False(t, res.Done)
			assert.NotContains(t, res.Err.Error(), `Get "`, "the reason, without Go's wrapping of the request")
			for name, content := range e.files() {
				assert.True(t, strings.HasSuffix(name, ".part"), "no final file, got %q", name)
				assert.Empty(t, content, "no body byte of a malformed response is kept")
			}
		})
	}
}

// writePart plants a part file from a previous attempt.
func (e *env) writePart(name, content string) {
	e.t.Helper()
	e.write(name, content)
}

func TestFetch_F5_ResumeWithStrongETag(t *testing.T) {
	e := newEnv(t, nil)
	content := body(50_000)
	ts, seen := serveFile(t, content, `"v1"`, nil)
	e.writePart("f.bin.part", content[:20_000])
	var first int64 = -1
	res := e.doReq(context.Background(), Request{
		URL: mustURL(t, ts.URL+"/f.bin"), Part: "f.bin.part", ETag: `"v1"`,
		LastModified: "Wed, 01 May 2024 12:00:00 GMT", Size: int64(len(content)),
	}, func(n int64) {
		if first < 0 {
			first = n
		}
	})
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, 206, res.Status)
	assert.Equal(t, "f.bin", res.File)
	assert.Equal(t, sha(content), res.SHA256, "hash covers the resumed prefix too")
	assert.EqualValues(t, len(content)-20_000, res.Received, "what this request wrote")
	assert.Greater(t, first, int64(20_000), "progress counts resumed bytes")
	assert.Equal(t, map[string]string{"f.bin": content}, e.files())
	require.Len(t, *seen, 1)
	assert.Equal(t, "bytes=20000-", (*seen)[0].Get("Range"))
	assert.Equal(t, `"v1"`, (*seen)[0].Get("If-Range"))
}

func TestFetch_C17_RangeIgnoredRestartsFromZero(t *testing.T) {
	e := newEnv(t, nil)
	content := body(10_000)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, content) // ignores Range, answers 200
	}))
	defer ts.Close()
	e.writePart("f.bin.part", "XXXXXXXXXX")
	res := e.do(ts.URL+"/f.bin", func(r *Request) { r.Part = "f.bin.part"; r.ETag = `"v1"` })
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, 200, res.Status)
	assert.Equal(t, map[string]string{"f.bin": content}, e.files(), "never appended to the old part")
	assert.Equal(t, sha(content), res.SHA256)
}

func TestFetch_C18_MismatchedContentRangeRejected(t *testing.T) {
	content := body(1000)
	cases := []struct {
		name   string
		cr     string
		length int
		size   int64
	}{
		{"start differs", "bytes 500-999/1000", 500, 1000},
		{"total changed", "bytes 400-1199/1200", 800, 1000},
		{"total unknown", "bytes 400-999/*", 600, -1},
		{"garbage", "bytes x-y/z", 600, 1000},
		{"length disagrees", "bytes 400-999/1000", 10, 1000},
		{"end beyond total", "bytes 400-1000/1000", 601, 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			var n atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					w.Header().Set("Content-Range", tc.cr)
					w.Header().Set("Content-Length", strconv.Itoa(tc.length))
					w.WriteHeader(http.StatusPartialContent)
					io.WriteString(w, strings.Repeat("#", tc.length))
					return
				}
				assert.Empty(t, r.Header.Get("Range"), "the retry starts from zero")
				io.WriteString(w, content)
			}))
			defer ts.Close()
			e.writePart("f.bin.part", content[:400])
			res := e.do(ts.URL+"/f.bin", func(r *Request) { r.Part = "f.bin.part"; r.ETag = `"v1"`; r.Size = tc.size })
			assert.Equal(t, ResumeRejected, res.Class, "%v", res.Err)
			assert.True(t, res.Retryable)
			assert.Equal(t, "f.bin.part", res.Part)
			assert.Equal(t, int64(0), res.Bytes)
			assert.Equal(t, map[string]string{"f.bin.part": ""}, e.files(), "nothing appended at the wrong offset")

			// The engine retries with the returned state.
			res = e.do(ts.URL+"/f.bin", func(r *Request) {
				r.Part, r.ETag, r.LastModified, r.Size = res.Part, res.ETag, res.LastModified, res.Size
			})
			require.True(t, res.Done, "%v", res.Err)
			assert.Equal(t, map[string]string{"f.bin": content}, e.files())
		})
	}
}

func TestFetch_C19_RemoteChangedGivesFreshFile(t *testing.T) {
	e := newEnv(t, nil)
	v2 := strings.ToUpper(body(5000))
	ts, seen := serveFile(t, v2, `"v2"`, nil)
	e.writePart("f.bin.part", body(5000)[:3000])
	res := e.do(ts.URL+"/f.bin", func(r *Request) { r.Part = "f.bin.part"; r.ETag = `"v1"`; r.Size = 5000 })
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, 200, res.Status, "If-Range no longer matches")
	assert.Equal(t, `"v1"`, (*seen)[0].Get("If-Range"))
	assert.Equal(t, map[string]string{"f.bin": v2}, e.files(), "nothing spliced")
	assert.Equal(t, `"v2"`, res.ETag)
	assert.Equal(t, sha(v2), res.SHA256)
}

func TestFetch_C20_416WithMatchingTotalCompletes(t *testing.T) {
	e := newEnv(t, nil)
	content := body(3000)
	ts, seen := serveFile(t, content, `"v1"`, nil) // ServeContent answers 416 "bytes */3000"
	e.writePart("f.bin.part", content)
	res := e.do(ts.URL+"/f.bin", func(r *Request) { r.Part = "f.bin.part"; r.ETag = `"v1"`; r.Size = 3000 })
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, 416, res.Status)
	assert.Equal(t, "bytes=3000-", (*seen)[0].Get("Range"))
	assert.Equal(t, map[string]string{"f.bin": content}, e.files(), "the error page is not appended")
	assert.Equal(t, sha(content), res.SHA256)
}

func TestFetch_C20_416WithOtherTotalRestarts(t *testing.T) {
	e := newEnv(t, nil)
	base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
		io.WriteString(conn, "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */2000\r\nContent-Length: 9\r\n\r\nerror!!!!")
	})
	e.writePart("f.bin.part", body(3000))
	res := e.do(base+"/f.bin", func(r *Request) { r.Part = "f.bin.part"; r.ETag = `"v1"` })
	assert.Equal(t, ResumeRejected, res.Class, "%v", res.Err)
	assert.True(t, res.Retryable)
	assert.Equal(t, map[string]string{"f.bin.part": ""}, e.files())
}

func TestFetch_C21_WeakETagNeverInIfRange(t *testing.T) {
	const lm = "Wed, 01 May 2024 12:00:00 GMT"
	cases := []struct {
		name, etag, lm string
		wantIfRange    string
		wantRange      bool
	}{
		{"weak etag with last-modified", `W/"x"`, lm, lm, true},
		{"weak etag alone restarts", `W/"x"`, "", "", false},
		{"strong etag preferred", `"s"`, lm, `"s"`, true},
		{"no validator restarts", "", "", "", false},
		{"unparsable last-modified restarts", "", "yesterday", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			content := body(2000)
			ts, seen := serveFile(t, content, "", nil)
			e.writePart("f.bin.part", content[:500])
			res := e.do(ts.URL+"/f.bin", func(r *Request) { r.Part = "f.bin.part"; r.ETag = tc.etag; r.LastModified = tc.lm })
			require.True(t, res.Done, "%v", res.Err)
			assert.Equal(t, map[string]string{"f.bin": content}, e.files())
			require.Len(t, *seen, 1)
			assert.Equal(t, tc.wantIfRange, (*seen)[0].Get("If-Range"))
			assert.Equal(t, tc.wantRange, (*seen)[0].Get("Range") != "")
		})
	}
}

func TestFetch_R2_HTTPErrorStatusWritesNothing(t *testing.T) {
	cases := []struct {
		code       int
		retryAfter string
		retryable  bool
	}{
		{404, "", false},
		{403, "", false},
		{410, "", false},
		{408, "", true},
		{429, "7", true},
		{500, "", true},
		{503, "120", true},
		{300, "", false},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.code), func(t *testing.T) {
			e := newEnv(t, nil)
			e.writePart("f.bin.part", "kept")
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.retryAfter != "" {
					w.Header().Set("Retry-After", tc.retryAfter)
				}
				w.WriteHeader(tc.code)
				io.WriteString(w, "<html>error page</html>")
			}))
			defer ts.Close()
			res := e.do(ts.URL+"/f.bin", func(r *Request) { r.Part = "f.bin.part"; r.ETag = `"v"` })
			assert.Equal(t, HTTPStatus, res.Class)
			assert.Equal(t, tc.code, res.Status)
			assert.Equal(t, tc.retryable, res.Retryable)
			assert.Equal(t, tc.retryAfter, res.RetryAfter)
			assert.Equal(t, "f.bin.part", res.Part)
			assert.Equal(t, int64(4), res.Bytes)
			assert.Equal(t, map[string]string{"f.bin.part": "kept"}, e.files(), "no error page saved")
		})
	}
}

func TestFetch_R2_ErrorStatusOnFreshJobCreatesNoFile(t *testing.T) {
	e := newEnv(t, nil)
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	res := e.do(ts.URL+"/missing.zip", nil)
	assert.Equal(t, HTTPStatus, res.Class)
	assert.Equal(t, "", res.Part)
	assert.Empty(t, e.files())
}

func TestFetch_A8_RequestSchemeRefused(t *testing.T) {
	e := newEnv(t, nil)
	for _, raw := range []string{"file:///etc/passwd", "ftp://h/x", "data:,x", "http:///nohost"} {
		res := e.do(raw, nil)
		assert.Equal(t, Refused, res.Class, raw)
		assert.False(t, res.Retryable, raw)
	}
	res := e.doReq(context.Background(), Request{}, nil)
	assert.Equal(t, Refused, res.Class)
	assert.Empty(t, e.files())
}

func TestFetch_E26_NoHeadersTimesOut(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ResponseHeaderTimeout = 200 * time.Millisecond })
	base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) { blockUntilClosed(conn) })
	res := e.do(base+"/f.bin", nil)
	assert.Equal(t, Timeout, res.Class, "%v", res.Err)
	assert.True(t, res.Retryable)
	assert.Empty(t, e.files())
}

func TestFetch_E27_IdleBodyTimesOutAndKeepsPart(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
	base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nLast-Modified: Wed, 01 May 2024 12:00:00 GMT\r\n\r\nabc")
		blockUntilClosed(conn)
	})
	res := e.do(base+"/f.bin", nil)
	assert.Equal(t, Timeout, res.Class, "%v", res.Err)
	assert.ErrorIs(t, res.Err, errIdle)
	assert.True(t, res.Retryable)
	assert.Equal(t, "f.bin.part", res.Part)
	assert.Equal(t, int64(3), res.Bytes)
	assert.Equal(t, "Wed, 01 May 2024 12:00:00 GMT", res.LastModified)
	assert.Equal(t, map[string]string{"f.bin.part": "abc"}, e.files())
}

func TestFetch_E28_CertificateErrorsAreTLSAndFinal(t *testing.T) {
	ca := testca.New(t)
	now := time.Now()
	loop := []net.IP{net.ParseIP("127.0.0.1")}
	cases := []struct {
		name    string
		cert    func() []tlsCert
		trustCA bool
	}{
		{"self-signed", func() []tlsCert { return nil }, false},
		{"expired", func() []tlsCert {
			return []tlsCert{ca.Leaf(t, nil, loop, now.Add(-72*time.Hour), now.Add(-24*time.Hour))}
		}, true},
		{"wrong host", func() []tlsCert {
			return []tlsCert{ca.Leaf(t, []string{"other.example"}, nil, now.Add(-time.Hour), now.Add(time.Hour))}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				io.WriteString(w, "secret")
			}))
			ts.Config.ErrorLog = quietLog()
			if certs := tc.cert(); certs != nil {
				ts.TLS = &tlsConfig{Certificates: certs}
			}
			ts.StartTLS()
			defer ts.Close()
			e := newEnv(t, func(c *Config) {
				if tc.trustCA {
					c.Transport = &http.Transport{TLSClientConfig: &tlsConfig{RootCAs: ca.Pool}}
				}
			})
			res := e.do(ts.URL+"/f.bin", nil)
			assert.Equal(t, TLS, res.Class, "%v", res.Err)
			assert.False(t, res.Retryable)
			assert.Equal(t, int32(0), hits.Load())
			assert.Empty(t, e.files())
		})
	}
	t.Run("trusted certificate works", func(t *testing.T) {
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
		ts.TLS = &tlsConfig{Certificates: []tlsCert{ca.Leaf(t, nil, loop, now.Add(-time.Hour), now.Add(time.Hour))}}
		ts.StartTLS()
		defer ts.Close()
		e := newEnv(t, func(c *Config) { c.Transport = &http.Transport{TLSClientConfig: &tlsConfig{RootCAs: ca.Pool}} })
		res := e.do(ts.URL+"/f.bin", nil)
		require.True(t, res.Done, "%v", res.Err)
		assert.Equal(t, map[string]string{"f.bin": "ok"}, e.files())
	})
}

func TestFetch_E29_ResetMidBodyResumes(t *testing.T) {
	e := newEnv(t, nil)
	content := body(1000)
	base, reqs := rawServer(t, func(conn net.Conn, r *http.Request, n int) {
		if n == 0 {
			fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: \"e1\"\r\n\r\n%s", content[:300])
			time.Sleep(20 * time.Millisecond) // let the bytes leave before the reset
			conn.(*net.TCPConn).SetLinger(0)  // close with RST
			return
		}
		if r.Header.Get("Range") != "bytes=300-" || r.Header.Get("If-Range") != `"e1"` {
			io.WriteString(conn, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			return
		}
		fmt.Fprintf(conn, "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 300-999/1000\r\nContent-Length: 700\r\nETag: \"e1\"\r\n\r\n%s", content[300:])
	})
	res := e.do(base+"/f.bin", nil)
	t.Logf("first attempt: %s: %v", res.Class, res.Err)
	require.Contains(t, []Class{Transport, Truncated}, res.Class, "%v", res.Err)
	assert.True(t, res.Retryable)
	assert.Equal(t, "f.bin.part", res.Part)
	assert.Equal(t, int64(300), res.Bytes)
	assert.Equal(t, map[string]string{"f.bin.part": content[:300]}, e.files())

	res = e.do(base+"/f.bin", func(r *Request) {
		r.Part, r.ETag, r.LastModified, r.Size = res.Part, res.ETag, res.LastModified, res.Size
	})
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, 206, res.Status)
	assert.Equal(t, map[string]string{"f.bin": content}, e.files())
	assert.Equal(t, sha(content), res.SHA256)
	assert.Len(t, reqs(), 2)
}

func TestFetch_Canceled_KeepsPart(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc")
		blockUntilClosed(conn)
	})
	res := e.doReq(ctx, Request{URL: mustURL(t, base+"/f.bin"), Size: -1}, func(n int64) {
		if n == 3 {
			cancel()
		}
	})
	assert.Equal(t, Canceled, res.Class, "%v", res.Err)
	assert.False(t, res.Retryable)
	assert.Equal(t, map[string]string{"f.bin.part": "abc"}, e.files())
}

func TestFetch_F3_ConcurrentSameNameNeverClobber(t *testing.T) {
	e := newEnv(t, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "copy "+r.URL.Query().Get("i"))
	}))
	defer ts.Close()
	const n = 8
	var wg sync.WaitGroup
	results := make([]got, n)
	for i := range n {
		wg.Go(func() {
			results[i] = e.do(fmt.Sprintf("%s/same.txt?i=%d", ts.URL, i), nil)
		})
	}
	wg.Wait()
	files := e.files()
	assert.Len(t, files, n)
	seen := map[string]bool{}
	for i, r := range results {
		require.True(t, r.Done, "%v", r.Err)
		assert.False(t, seen[r.File], "two jobs got %q", r.File)
		seen[r.File] = true
		assert.Equal(t, fmt.Sprintf("copy %d", i), files[r.File])
	}
}

func TestNew_N1_DefaultTransport(t *testing.T) {
	f, err := New(Config{Dir: t.TempDir()})
	require.NoError(t, err)
	defer f.Close()
	require.NotNil(t, f.owned)
	tr := f.owned
	assert.True(t, tr.DisableCompression, "F6")
	assert.Equal(t, DefaultTLSHandshakeTimeout, tr.TLSHandshakeTimeout)
	assert.Equal(t, DefaultResponseHeaderTimeout, tr.ResponseHeaderTimeout)
	assert.Equal(t, DefaultIdleTimeout, f.idle)
	assert.Equal(t, 1, tr.MaxIdleConnsPerHost, "idle connections per host: one request in flight per host")
	assert.True(t, tr.ForceAttemptHTTP2)
	assert.NotNil(t, tr.Proxy, "proxies from the environment")
	assert.Zero(t, f.client.Timeout, "no total timeout")
	assert.True(t, f.fresh.Transport.(*http.Transport).DisableKeepAlives, "a request sent again goes on a fresh connection")
	assert.Equal(t, []string{"Heed/dev"}, f.ua)

	_, err = New(Config{})
	assert.Error(t, err)
	_, err = New(Config{Dir: t.TempDir(), UserAgent: "Bad\r\nX-Injected: 1"})
	assert.ErrorContains(t, err, "User-Agent", "N3: a User-Agent that is no header value is refused at once")
	missing := filepath.Join(t.TempDir(), "new", "downloads")
	f2, err := New(Config{Dir: missing})
	require.NoError(t, err, "the folder is created")
	f2.Close()
	assert.DirExists(t, missing)
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o644))
	_, err = New(Config{Dir: notDir})
	assert.Error(t, err)
}

func TestClass_String(t *testing.T) {
	assert.Equal(t, "ok", OK.String())
	assert.Equal(t, "resume-rejected", ResumeRejected.String())
	assert.Equal(t, "class(99)", Class(99).String())
}

func BenchmarkFetch_Download32MiB(b *testing.B) {
	content := strings.Repeat(body(1<<20), 32)
	benchDownload(b, "big.bin", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(content))
	}))
	b.SetBytes(int64(len(content)))
}

// benchDownload downloads name from serve over loopback, into a fresh part
// each time, reporting what each download allocates.
func benchDownload(b *testing.B, name string, serve http.Handler) {
	ts := httptest.NewServer(serve)
	defer ts.Close()
	dir := b.TempDir()
	f, err := New(Config{Dir: dir})
	require.NoError(b, err)
	defer f.Close()
	u := mustURL(b, ts.URL+"/"+name)
	b.ReportAllocs()
	for b.Loop() {
		res := f.Do(context.Background(), Request{URL: u, Part: name + ".part", Size: -1}, nil)
		if !res.Done {
			b.Fatal(res.Err)
		}
		os.Remove(filepath.Join(dir, res.Part))
	}
}

// L2: a bandwidth limiter whose cap was lifted (rate.Inf, as the engine
// keeps it when no cap is set) must not slice the body into its burst: a
// 1 MiB body is written in buffer-sized pieces, not byte by byte.
func TestFetch_L2_LiftedCapDoesNotSliceWrites(t *testing.T) {
	content := body(1 << 20)
	srv, _ := serveFile(t, content, `"v1"`, nil)
	e := newEnv(t, func(c *Config) { c.Bandwidth = rate.NewLimiter(rate.Inf, 1) })
	u := mustURL(t, srv.URL+"/big.bin")
	writes := 0
	res := e.doReq(context.Background(), Request{URL: u, UserURL: u, Size: -1}, func(int64) { writes++ })
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, sha(content), res.SHA256)
	assert.Less(t, writes, 1024, "a 1 MiB body took %d writes", writes)
}

// The SHA-256 every completed file gets (F7), in the 256 KiB pieces a large
// body is read in: the CPU a gigabyte costs Heed that a downloader which
// does not hash does not pay (case (b) of make bench).
func BenchmarkSHA256_256KiBPieces(b *testing.B) {
	buf := make([]byte, 256<<10)
	b.SetBytes(int64(len(buf)))
	h := sha256.New()
	for b.Loop() {
		h.Write(buf)
	}
	h.Sum(nil)
}

// F1: names the folder keeps for Heed's database (Config.Keep) are never taken by a download,
// whatever the server calls its file and in whatever case: a file named like the database's
// rollback journal would be played into the database at its next open. A kept file in another
// folder keeps no name here.
func TestFetch_F1_KeptNamesNeverTaken(t *testing.T) {
	cases := []struct{ cd, want, content string }{
		{"heed.db-journal", "heed (1).db-journal", "payload"},
		{"HEED.DB-JOURNAL", "HEED (1).DB-JOURNAL", "payload"},
		{"heed.db", "heed (1).db", "payload"},
		{"heed.db-wal", "heed (1).db-wal", "payload"},
		{"notes.part", "notes (1).part", "payload"},
		{"notes", "notes", "payload"},
		{"other.db-journal", "other.db-journal", "payload"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d bytes", tc.cd, len(tc.content)), func(t *testing.T) {
			e := newEnv(t, func(c *Config) {
				dl := c.Dir
				outside := filepath.Join(filepath.Dir(dl), "outside")
				c.Keep = []string{filepath.Join(dl, "heed.db"), filepath.Join(dl, "heed.db-journal"),
					filepath.Join(dl, "heed.db-wal"), filepath.Join(dl, "notes.part"),
					filepath.Join(outside, "other.db-journal")}
			})
			ts, _ := serveFile(t, tc.content, "", map[string]string{"Content-Disposition": `attachment; filename="` + tc.cd + `"`})
			res := e.do(ts.URL+"/files/x", nil)
			require.Equal(t, OK, res.Class, "%v", res.Err)
			assert.Equal(t, tc.want, res.File)
			assert.Equal(t, map[string]string{tc.want: tc.content}, e.files())
		})
	}
}

// R2, A8: a redirect whose Location net/http cannot parse is refused at once with the reason,
// as one Heed refuses itself, not retried as a broken connection.
func TestFetch_R2_UnparsableLocationRefused(t *testing.T) {
	for _, loc := range []string{"http://[::1", "http://a b/%zz"} {
		t.Run(loc, func(t *testing.T) {
			e := newEnv(t, nil)
			base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
				io.WriteString(conn, "HTTP/1.1 302 Found\r\nLocation: "+loc+"\r\nContent-Length: 0\r\n\r\n")
			})
			res := e.do(base+"/file.bin", nil)
			assert.Equal(t, Refused, res.Class, "%v", res.Err)
			assert.False(t, res.Retryable, "not retried")
			require.Error(t, res.Err)
			assert.Contains(t, res.Err.Error(), "unparsable Location")
			assert.Empty(t, e.files())
		})
	}
}

// cappedRanges serves content answering each Range request with at most step bytes (a valid
// 206 that stops short of the end, as servers capping range sizes do), and counts requests.
func cappedRanges(t *testing.T, content string, step int) (*httptest.Server, *atomic.Int64) {
	var requests atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("ETag", `"v1"`)
		rg := r.Header.Get("Range")
		from, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		require.NoError(t, err)
		to := min(from+step, len(content)) - 1
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to, len(content)))
		w.Header().Set("Content-Length", strconv.Itoa(to-from+1))
		w.WriteHeader(http.StatusPartialContent)
		io.WriteString(w, content[from:to+1])
	}))
	t.Cleanup(ts.Close)
	return ts, &requests
}

// F5: a valid 206 that stops short of the end keeps what it sent and asks for the rest
// (MoreRanges, with the hash state handed on), instead of failing as a truncated body.
func TestFetch_F5_ShortRangeAsksForTheRest(t *testing.T) {
	e := newEnv(t, nil)
	content := body(20_000)
	ts, requests := cappedRanges(t, content, 1000)
	e.writePart("f.bin.part", content[:2000])
	req := Request{URL: mustURL(t, ts.URL+"/f.bin"), Part: "f.bin.part", ETag: `"v1"`, Size: int64(len(content))}
	var res got
	for i := range 30 {
		res = e.doReq(context.Background(), req, nil)
		if res.Class != MoreRanges {
			break
		}
		require.True(t, res.Retryable)
		require.NotNil(t, res.Digest)
		assert.Equal(t, int64(3000+1000*i), res.Bytes)
		assert.Equal(t, "f.bin.part", res.Part, "the part is kept")
		req.Part, req.ETag, req.Size, req.Digest = res.Part, res.ETag, res.Size, res.Digest
	}
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, sha(content), res.SHA256, "the hash covers every range")
	assert.Equal(t, map[string]string{"f.bin": content}, e.files())
	assert.EqualValues(t, 18, requests.Load(), "one request per missing range")
}

// A crawl of more hosts than 1,024 (the transport's cap before) keeps every host's connection
// between two of its requests: visiting 1,100 loopback hosts twice opens 1,100 connections, not
// one more for each host whose idle connection was closed to make room for another's. Under a
// limit on open files too low for that (each host takes a listener and two ends of a connection),
// as many hosts as the limit allows.
func TestNew_N1_KeepsEachHostsConnectionAcrossThousandsOfHosts(t *testing.T) {
	hosts := 1100
	if lim := openFileLimit(); lim > 0 {
		hosts = min(hosts, maxIdle(lim), lim/4)
	}
	var opened atomic.Int64
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				opened.Add(1)
			}
		},
	}
	defer srv.Close()
	urls := make([]string, hosts)
	for i := range urls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go func() { _ = srv.Serve(l) }()
		urls[i] = "http://" + l.Addr().String() + "/"
	}
	tr := NewTransport(Config{IdlePerHost: 1})
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for round := range 2 {
		for _, u := range urls {
			res, err := client.Get(u)
			require.NoError(t, err)
			_, err = io.Copy(io.Discard, res.Body)
			require.NoError(t, err)
			require.NoError(t, res.Body.Close())
		}
		assert.Equal(t, int64(hosts), opened.Load(), "connections opened after round %d", round+1)
	}
}

func TestMaxIdle_BoundedByTheOpenFileLimit(t *testing.T) {
	assert.Equal(t, 4096, maxIdle(0), "no limit known")
	assert.Equal(t, 4096, maxIdle(1<<20))
	assert.Equal(t, 256, maxIdle(1024), "a quarter of the open files")
	assert.Equal(t, 16, maxIdle(20))
}

// A crawl's page: a body of a few KiB, the most common download there is. Its
// B/op is what each one costs the garbage collector, the demo server's share
// (in this process) included.
func BenchmarkFetch_Page4KiB(b *testing.B) {
	benchDownload(b, "p.html", chunkedPage(body(4400)))
}

// chunkedPage serves content with no length: longer than the server's first
// buffer, it goes out chunked.
func chunkedPage(content string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, content) })
}

// A body of unknown length (chunked, as most dynamic pages come) is read in
// 256 KiB pieces; the buffer is kept for the next body, not made anew for
// each: a crawl of small chunked pages allocated 256 KiB a page, 30 times
// what the rest of a download costs.
func TestFetch_SmallBodiesReuseTheReadBuffer(t *testing.T) {
	ts := httptest.NewServer(chunkedPage(body(4400)))
	defer ts.Close()
	e := newEnv(t, nil)
	u := mustURL(t, ts.URL+"/p.html")
	fetch := func() {
		res := e.f.Do(context.Background(), Request{URL: u, Part: "p.html.part", Size: -1}, nil)
		require.True(t, res.Done, "%v", res.Err)
		require.NoError(t, os.Remove(filepath.Join(e.dl, res.Part)))
	}
	fetch() // the connection and the first buffer
	const n = 50
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		fetch()
	}
	runtime.ReadMemStats(&after)
	perFetch := (after.TotalAlloc - before.TotalAlloc) / n
	// Half the buffer: the race detector has the pool drop a share of what is put in it.
	assert.Less(t, perFetch, uint64(128<<10), "a 4.4 KiB page allocated %d bytes", perFetch)
}
