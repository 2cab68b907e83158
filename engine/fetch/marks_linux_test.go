package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// xattrsIn reports whether dir's file system keeps user extended
// attributes (most do; some overlay and network file systems do not).
func xattrsIn(t *testing.T, dir string) bool {
	t.Helper()
	probe := filepath.Join(dir, ".probe")
	require.NoError(t, os.WriteFile(probe, nil, 0o644))
	defer os.Remove(probe)
	err := unix.Setxattr(probe, markAttr, []byte("x"), 0)
	if errors.Is(err, unix.ENOTSUP) {
		return false
	}
	require.NoError(t, err)
	return true
}

func mark(t *testing.T, path, value string) {
	t.Helper()
	require.NoError(t, unix.Lsetxattr(path, markAttr, []byte(value), 0))
}

// S2: a part created for a job is marked with the owner (Heed's database)
// and the job, and OwnedParts finds exactly the owner's parts: regular files
// with a part name marked by it — not another owner's, not unmarked ones,
// not a file a symlink points at, not a folder, not a file that is not a part,
// and not a part once it has its final name.
func TestFetch_S2_PartsMarkedForTheirJob(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Owner = "db1" })
	ts, _ := serveFile(t, partSized("the body"), `"v1"`, nil)
	res := e.do(ts.URL+"/ours.bin", func(r *Request) { r.Job, r.Defer = 7, true })
	require.NotNil(t, res.Pending, res.Err)
	unmarked := e.do(ts.URL+"/nojob.bin", func(r *Request) { r.Defer = true })
	require.NotNil(t, unmarked.Pending, unmarked.Err)

	if !xattrsIn(t, e.dl) {
		// Where marks cannot be kept, parts are created all the same and
		// none is ever taken for the owner's.
		owned, err := e.f.OwnedParts()
		require.NoError(t, err)
		assert.Empty(t, owned)
		e.f.FinishParts([]*Result{&res, &unmarked})
		assert.True(t, res.Done, res.Err)
		return
	}
	e.write("foreign.bin.part", "another database's")
	mark(t, filepath.Join(e.dl, "foreign.bin.part"), "db2/7")
	e.write("plain.bin.part", "nobody's mark")
	e.write("notapart.bin", "marked, but no part")
	mark(t, filepath.Join(e.dl, "notapart.bin"), "db1/3")
	require.NoError(t, os.Mkdir(filepath.Join(e.dl, "folder.part"), 0o755))
	mark(t, filepath.Join(e.dl, "folder.part"), "db1/4")
	mark(t, filepath.Join(e.outside, "target.txt"), "db1/5")
	require.NoError(t, os.Symlink(filepath.Join(e.outside, "target.txt"), filepath.Join(e.dl, "link.bin.part")))
	e.write("bad.bin.part", "a mark that names no job")
	mark(t, filepath.Join(e.dl, "bad.bin.part"), "db1/x")

	owned, err := e.f.OwnedParts()
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"ours.bin.part": 7}, owned)

	other := newEnv(t, nil) // no owner: nothing is anybody's
	owned, err = other.f.OwnedParts()
	require.NoError(t, err)
	assert.Empty(t, owned)

	e.f.FinishParts([]*Result{&res, &unmarked})
	require.True(t, res.Done, res.Err)
	owned, err = e.f.OwnedParts()
	require.NoError(t, err)
	assert.Empty(t, owned, "named, it is no part any more")

	// A finished file may be named "x.part" (F2): it loses its mark with
	// its part name, and is never taken for a part.
	clip := e.do(ts.URL+"/clip.part", func(r *Request) { r.Job, r.Defer = 8, true })
	require.NotNil(t, clip.Pending, clip.Err)
	owned, err = e.f.OwnedParts()
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"clip.part.part": 8}, owned)
	e.f.FinishParts([]*Result{&clip})
	require.True(t, clip.Done, clip.Err)
	require.Equal(t, "clip.part", clip.File)
	owned, err = e.f.OwnedParts()
	require.NoError(t, err)
	assert.Empty(t, owned, "a finished file named like a part is nobody's part")
}

// S2, F5: a small body is held in a file with no name, which nothing can
// take for a part; when its attempt ends before the body is whole, what came
// takes a part name, marked for its job, to be resumed like any part.
func TestFetch_S2_F5_HeldBodyCutShortBecomesAMarkedPart(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Owner = "db1" })
	whole := body(1000)
	base, _ := rawServer(t, func(conn net.Conn, req *http.Request, _ int) {
		if req.URL.Path == "/cut.bin" {
			fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nETag: \"v1\"\r\n\r\n%s", len(whole), whole[:400])
			return // the connection closes: the body is cut at 400 bytes
		}
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(whole), whole)
	})
	held := e.do(base+"/held.bin", func(r *Request) { r.Job, r.Defer = 6, true })
	require.True(t, held.Held(), "a small body waits in a file with no name: %v", held.Err)
	assert.Empty(t, held.Part)
	assert.Empty(t, e.files(), "nothing in the folder has a name yet")
	owned, err := e.f.OwnedParts()
	require.NoError(t, err)
	assert.Empty(t, owned)

	cut := e.do(base+"/cut.bin", func(r *Request) { r.Job, r.Defer = 7, true })
	require.Equal(t, Truncated, cut.Class, "%v", cut.Err)
	assert.Nil(t, cut.Pending)
	assert.Equal(t, "cut.bin.part", cut.Part, "what came is kept for the resume (F5)")
	assert.Equal(t, int64(400), cut.Bytes)
	assert.Equal(t, map[string]string{"cut.bin.part": whole[:400]}, e.files())
	if xattrsIn(t, e.dl) {
		owned, err = e.f.OwnedParts()
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"cut.bin.part": 7}, owned, "marked before it had its name")
	}

	e.f.FinishParts([]*Result{&held})
	require.True(t, held.Done, "%v", held.Err)
	assert.Equal(t, "held.bin", held.File)
	assert.Equal(t, map[string]string{"cut.bin.part": whole[:400], "held.bin": whole}, e.files())
}

// S2, F5: a small body still arriving after holdFor takes its part name,
// marked for its job, and is reported started with it, so that a crash from
// then on leaves it to resume; it is finished as any part.
func TestFetch_S2_F5_SlowHeldBodyTakesItsPartName(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Owner = "db1" })
	whole := body(1000)
	rest := make(chan struct{})
	base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
		fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(whole), whole[:400])
		<-rest
		io.WriteString(conn, whole[400:])
	})
	var (
		mu      sync.Mutex
		started []string
	)
	done := make(chan Result, 1)
	go func() {
		done <- e.f.Do(context.Background(), Request{URL: mustURL(t, base+"/slow.bin"), Size: -1, Job: 9, Defer: true,
			Started: func(r Result) {
				mu.Lock()
				started = append(started, r.Part)
				mu.Unlock()
			}}, nil)
	}()
	require.Eventually(t, func() bool {
		_, ok := e.files()["slow.bin.part"]
		return ok
	}, 10*time.Second, time.Millisecond, "the part has its name while the body arrives")
	if xattrsIn(t, e.dl) {
		owned, err := e.f.OwnedParts()
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"slow.bin.part": 9}, owned)
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(started) == 2
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"", "slow.bin.part"}, started, "reported with no part, then with its part")
	close(rest)
	res := <-done
	require.Equal(t, OK, res.Class, "%v", res.Err)
	assert.False(t, res.Held(), "a part now")
	assert.Equal(t, "slow.bin.part", res.Part)
	e.f.FinishParts([]*Result{&res})
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, map[string]string{"slow.bin": whole}, e.files())
}

// S2: a part that a crash left complete but unnamed gets its name at the
// next start, and a name like a part's without its mark.
func TestFetch_S2_LeftoverNamedWithoutItsMark(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Owner = "db1" })
	if !xattrsIn(t, e.dl) {
		return // nothing is marked here
	}
	const body = "a finished download"
	e.writePart("done.part.part", body)
	mark(t, filepath.Join(e.dl, "done.part.part"), "db1/3")
	got, err := e.f.NameLeftover("done.part.part", "done.part", int64(len(body)), sha(body))
	require.NoError(t, err)
	require.Equal(t, "done.part", got)
	owned, err := e.f.OwnedParts()
	require.NoError(t, err)
	assert.Empty(t, owned, "a finished file named like a part is nobody's part")
}

// F3, A10, S2: a marked part is created unnamed, marked, then linked under
// the first free candidate: a taken name, a symlink or a dangling symlink
// is skipped, never written through, and the part is a file of its own,
// marked from the start. The part is linked straight from its descriptor
// where the system allows it, else through /proc/self/fd: both are run, and
// a refusal of the first turns to the second for good.
func TestFetch_S2_MarkedPartTakesTheFirstFreeName(t *testing.T) {
	for _, how := range []string{"from the descriptor", "through /proc", "refused, then through /proc"} {
		t.Run(how, func(t *testing.T) {
			was, direct := noEmptyPathLink.Load(), linkDirect
			t.Cleanup(func() { noEmptyPathLink.Store(was); linkDirect = direct })
			noEmptyPathLink.Store(how == "through /proc")
			directs := 0
			linkDirect = func(fd int, dir *os.File, name string) error {
				directs++
				if how == "refused, then through /proc" {
					return unix.ENOENT // as Linux before 6.10 without CAP_DAC_READ_SEARCH
				}
				return direct(fd, dir, name)
			}
			markedPartTakesTheFirstFreeName(t)
			switch how {
			case "from the descriptor":
				if canLinkFromDescriptor(t) {
					assert.False(t, noEmptyPathLink.Load(), "linked from its descriptor, not through /proc")
					assert.Equal(t, 4, directs, "three names taken, the fourth free")
				}
			case "through /proc":
				assert.Zero(t, directs)
			default:
				assert.True(t, noEmptyPathLink.Load(), "a refusal is remembered")
				assert.Equal(t, 1, directs, "asked once, then through /proc")
			}
		})
	}
}

// markedPartsPossible reports whether dir takes unnamed files (O_TMPFILE)
// with extended attributes, and /proc/self/fd is there to link them by.
func markedPartsPossible(t *testing.T, dir string) bool {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return false
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Fsetxattr(fd, markAttr, []byte("probe"), 0) == nil
}

// canLinkFromDescriptor reports whether this system lets linkat(2) take a
// descriptor (AT_EMPTY_PATH) here: with CAP_DAC_READ_SEARCH on every Linux,
// without it from Linux 6.10.
func canLinkFromDescriptor(t *testing.T) bool {
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			require.NoError(t, err)
			if caps&(1<<unix.CAP_DAC_READ_SEARCH) != 0 {
				return true
			}
		}
	}
	var u unix.Utsname
	require.NoError(t, unix.Uname(&u))
	var major, minor int
	_, _ = fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	return major > 6 || major == 6 && minor >= 10
}

func markedPartTakesTheFirstFreeName(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Owner = "db1" })
	e.write("a.bin.part", "taken")
	require.NoError(t, os.Symlink(filepath.Join(e.outside, "target.txt"), filepath.Join(e.dl, "a (1).bin.part")))
	require.NoError(t, os.Symlink(filepath.Join(e.outside, "missing"), filepath.Join(e.dl, "a (2).bin.part")))
	file, part, err := createMarkedPart(e.f.dir, "db1/9", func(yield func(string) bool) {
		candidates("a.bin", func(c string) bool { return yield(c + partSuffix) })
	})
	if errors.Is(err, errNoMark) {
		require.False(t, markedPartsPossible(t, e.dl), "marked parts refused where they can be made")
		t.Log("no O_TMPFILE, extended attributes or /proc here: parts are created, then marked")
		return
	}
	require.NoError(t, err)
	defer file.Close()
	assert.Equal(t, "a (3).bin.part", part)
	_, err = file.WriteString("ours")
	require.NoError(t, err)
	st, err := os.Lstat(filepath.Join(e.dl, part))
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular())
	assert.Equal(t, uint64(1), linkCount(st), "a file of its own")
	if xattrsIn(t, e.dl) {
		owned, err := e.f.OwnedParts()
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"a (3).bin.part": 9}, owned)
	}
	assert.Equal(t, map[string]string{"a.bin.part": "taken", "a (3).bin.part": "ours",
		"a (1).bin.part": "->" + filepath.Join(e.outside, "target.txt"),
		"a (2).bin.part": "->" + filepath.Join(e.outside, "missing")}, e.files())
	assert.NoFileExists(t, filepath.Join(e.outside, "missing"), "the dangling symlink was not followed")
}
