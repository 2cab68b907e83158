package fetch

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With Defer, Do returns once the whole body is in the part, and the file
// gets its final name only in FinishParts (F4). A small body waits in a file
// with no name instead: nothing is in the folder until FinishParts.
func TestFetch_F4_DeferLeavesThePartForFinishParts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		waiting map[string]string // the folder before FinishParts
	}{
		{"part", partSized(body(5000)), map[string]string{"file.bin.part": partSized(body(5000))}},
		{"held", body(5000), map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			ts, _ := serveFile(t, tc.content, `"v1"`, nil)
			res := e.do(ts.URL+"/file.bin", func(r *Request) { r.Defer = true })
			require.Equal(t, OK, res.Class, "%v", res.Err)
			require.NotNil(t, res.Pending)
			assert.Equal(t, tc.name == "held", res.Held())
			assert.False(t, res.Done, "not final yet")
			assert.Equal(t, int64(len(tc.content)), res.Bytes)
			assert.Equal(t, sha(tc.content), res.SHA256)
			assert.Equal(t, tc.waiting, e.files(), "the whole body is written, and no final name exists yet (F4)")

			e.f.FinishParts([]*Result{&res})
			require.Equal(t, OK, res.Class, "%v", res.Err)
			assert.True(t, res.Done)
			assert.Nil(t, res.Pending)
			assert.Equal(t, "file.bin", res.File)
			assert.Empty(t, res.Part)
			assert.Equal(t, map[string]string{"file.bin": tc.content}, e.files())
		})
	}
}

// An incomplete body leaves nothing pending.
func TestFetch_F4_DeferNothingPendingForATruncatedBody(t *testing.T) {
	e := newEnv(t, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("short"))
	}))
	t.Cleanup(ts.Close)
	res := e.do(ts.URL+"/f", func(r *Request) { r.Defer = true })
	assert.Equal(t, Truncated, res.Class)
	assert.Nil(t, res.Pending)
}

// Many parts finished in one call each get their own final name and bytes,
// the same name included (F3, F4).
func TestFetch_F3_F4_FinishPartsBatch(t *testing.T) {
	e := newEnv(t, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat(r.URL.RawQuery, 10)))
	}))
	t.Cleanup(ts.Close)
	const n = 40
	// Two downloads per name: the second of each pair becomes "name (1)".
	results := e.doAll(n, func(i int) string { return fmt.Sprintf("%s/f%02d?%d", ts.URL, i/2, i) },
		func(r *Request) { r.Defer = true })
	rs := make([]*Result, n)
	for i := range results {
		require.Equal(t, OK, results[i].Class, "%v", results[i].Err)
		rs[i] = &results[i]
	}
	e.f.FinishParts(rs)
	got := e.files()
	assert.Len(t, got, n)
	for i, r := range results {
		require.True(t, r.Done, "%v", r.Err)
		assert.Equal(t, strings.Repeat(fmt.Sprint(i), 10), got[r.File], "file %s", r.File)
	}
	for k := range n / 2 {
		assert.Contains(t, got, fmt.Sprintf("f%02d", k))
		assert.Contains(t, got, fmt.Sprintf("f%02d (1)", k))
	}
}

// Downloads that finish on their own at the same time all land (F3, F4).
func TestFetch_F4_ConcurrentFinishesAllLand(t *testing.T) {
	e := newEnv(t, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat(r.URL.Path, 100)))
	}))
	t.Cleanup(ts.Close)
	const n = 64
	results := e.doAll(n, func(i int) string { return fmt.Sprintf("%s/f%02d", ts.URL, i) }, nil)
	want := map[string]string{}
	for i, res := range results {
		require.Equal(t, OK, res.Class, "%v", res.Err)
		name := fmt.Sprintf("f%02d", i)
		assert.Equal(t, name, res.File)
		want[name] = strings.Repeat("/"+name, 100)
	}
	assert.Equal(t, want, e.files())
}

// A part that cannot be made durable never gets its final name (F4): its
// download fails with a disk error and the part stays, while the other
// parts of the same batch land. A small body held in a file with no name
// is dropped instead: nothing of it is ever in the folder.
func TestFetch_F4_UnsyncedPartKeepsItsPartName(t *testing.T) {
	for _, held := range []bool{false, true} {
		e := newEnv(t, nil)
		content := func(path string) string {
			if held {
				return "body of " + path
			}
			return partSized("body of " + path)
		}
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(content(r.URL.Path)))
		}))
		t.Cleanup(ts.Close)
		for _, n := range []int{1, 2} { // alone (fsync) and in a batch (syncfs, then close)
			t.Run(fmt.Sprintf("held=%v/%d", held, n), func(t *testing.T) {
				results := make([]Result, n)
				rs := make([]*Result, n)
				for i := range results {
					results[i] = e.do(fmt.Sprintf("%s/n%d-%d", ts.URL, n, i), func(r *Request) { r.Defer = true })
					require.NotNil(t, results[i].Pending, "%v", results[i].Err)
					require.Equal(t, held, results[i].Held())
					rs[i] = &results[i]
				}
				require.NoError(t, results[0].Pending.file.Close()) // its sync and close will fail
				e.f.FinishParts(rs)

				assert.Equal(t, Disk, results[0].Class)
				assert.False(t, results[0].Done)
				assert.Nil(t, results[0].Pending)
				got := e.files()
				bad := fmt.Sprintf("n%d-0", n)
				assert.NotContains(t, got, bad, "no final name without a sync")
				if held {
					assert.NotContains(t, got, bad+".part", "a held body never had a name")
				} else {
					assert.Equal(t, content("/"+bad), got[bad+".part"], "the part is kept")
				}
				for _, r := range results[1:] {
					require.True(t, r.Done, "%v", r.Err)
					assert.Contains(t, got, r.File)
				}
			})
		}
	}
}

// doAll runs n downloads at once, download i from url(i), and returns their
// results in order.
func (e *env) doAll(n int, url func(i int) string, mod func(*Request)) []Result {
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i] = e.do(url(i), mod) })
	}
	wg.Wait()
	return results
}

// SyncParts picks each part a final name that is free, without taking it,
// and the names it picks together are distinct: "a.txt" is taken, so the
// part "a.txt.part" is to become "a (1).txt", and the part "a (1).txt.part"
// "a (2).txt" (F3). NameParts then takes them, moving on to the next free
// name when one was taken in between.
func TestFetch_F3_F4_SyncPartsPicksDistinctNamesNamePartsTakesThem(t *testing.T) {
	e := newEnv(t, nil)
	e.write("a.txt", "older")
	e.writePart("a (1).txt.part", "") // another download, still arriving
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush() // no length announced: each body has a part from the start
		w.Write([]byte("body " + r.URL.RawQuery))
	}))
	t.Cleanup(ts.Close)
	first := e.do(ts.URL+"/a.txt?1", func(r *Request) { r.Defer = true })
	require.NoError(t, os.Remove(filepath.Join(e.dl, "a (1).txt.part")))
	second := e.do(ts.URL+"/a%20(1).txt?2", func(r *Request) { r.Defer = true })
	third := e.do(ts.URL+"/b.txt?3", func(r *Request) { r.Defer = true })
	require.Equal(t, "a.txt.part", first.Part)
	require.Equal(t, "a (1).txt.part", second.Part)
	rs := []*Result{&first, &second, &third}

	e.f.SyncParts(rs)
	for _, r := range rs {
		require.Equal(t, OK, r.Class, "%v", r.Err)
		require.NotNil(t, r.Pending)
		assert.False(t, r.Done)
	}
	assert.Equal(t, "a (1).txt", first.File)
	assert.Equal(t, "a (2).txt", second.File, "not the name picked for the first part")
	assert.Equal(t, "b.txt", third.File)
	assert.Equal(t, map[string]string{"a.txt": "older", "a.txt.part": "body 1", "a (1).txt.part": "body 2",
		"b.txt.part": "body 3"}, e.files(), "no final name is taken yet")

	e.write("b.txt", "came in between") // someone took a picked name
	e.f.NameParts(rs)
	for _, r := range rs {
		require.True(t, r.Done, "%v", r.Err)
		assert.Nil(t, r.Pending)
		assert.Empty(t, r.Part)
	}
	assert.Equal(t, "a (1).txt", first.File)
	assert.Equal(t, "a (2).txt", second.File)
	assert.Equal(t, "b (1).txt", third.File, "the next free name; what came in between is kept")
	assert.Equal(t, map[string]string{"a.txt": "older", "a (1).txt": "body 1", "a (2).txt": "body 2",
		"b.txt": "came in between", "b (1).txt": "body 3"}, e.files())
}

// Small bodies held in files with no name are picked distinct free names
// together, and each takes its name with one link, moving on to the next
// free name when one was taken in between — a symlink included, never
// followed (F3, F4, A10).
func TestFetch_F3_F4_HeldBodiesTakeFreeNames(t *testing.T) {
	e := newEnv(t, nil)
	e.write("a.txt", "older")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("body " + r.URL.RawQuery))
	}))
	t.Cleanup(ts.Close)
	rs := make([]*Result, 3)
	for i, u := range []string{"/a.txt?1", "/a.txt?2", "/b.txt?3"} {
		res := e.do(ts.URL+u, func(r *Request) { r.Defer = true })
		require.True(t, res.Held(), "%v", res.Err)
		rs[i] = &res
	}
	assert.Equal(t, map[string]string{"a.txt": "older"}, e.files(), "held bodies have no names")

	e.f.SyncParts(rs)
	assert.Equal(t, "a (1).txt", rs[0].File)
	assert.Equal(t, "a (2).txt", rs[1].File, "not the name picked for the first")
	assert.Equal(t, "b.txt", rs[2].File)
	assert.Equal(t, map[string]string{"a.txt": "older"}, e.files(), "no final name is taken yet")

	require.NoError(t, os.Symlink(filepath.Join(e.outside, "target.txt"), filepath.Join(e.dl, "b.txt")))
	e.f.NameParts(rs)
	for _, r := range rs {
		require.True(t, r.Done, "%v", r.Err)
		assert.Nil(t, r.Pending)
		assert.Empty(t, r.Part)
	}
	assert.Equal(t, "b (1).txt", rs[2].File, "the next free name; the link planted in between is left alone")
	assert.Equal(t, map[string]string{"a.txt": "older", "a (1).txt": "body 1", "a (2).txt": "body 2",
		"b.txt": "->" + filepath.Join(e.outside, "target.txt"), "b (1).txt": "body 3"}, e.files())
	e.assertOutsideUntouched()
}

// NameLeftover names a complete part a crash left unnamed — only if it holds
// exactly the bytes recorded — and leaves alone a part that is not there, not
// the recorded bytes (another download's since), or not a file of its own
// (F1, F3, A10). A part gone since took its name before the crash: it finds
// that name, the recorded one or a later one; a part left linked to its name
// (file systems without renameat2) gives up its part name. An empty file at
// the name is never replaced. When neither the part nor its name is there,
// it says so.
func TestFetch_S2_NameLeftover(t *testing.T) {
	e := newEnv(t, nil)
	const body = "the complete body"
	e.writePart("ours.bin.part", body)
	e.writePart("taken.bin.part", body)
	e.write("taken.bin", "a file that came in between")
	e.writePart("other.bin.part", "another download's bytes")
	e.writePart("short.bin.part", body[:5])
	require.NoError(t, os.Symlink(filepath.Join(e.outside, "target.txt"), filepath.Join(e.dl, "link.bin.part")))

	name := func(part, file string) string {
		t.Helper()
		got, err := e.f.NameLeftover(part, file, int64(len(body)), sha(body))
		require.NoError(t, err, part)
		return got
	}
	assert.Equal(t, "ours.bin", name("ours.bin.part", "ours.bin"))
	assert.Equal(t, "taken (1).bin", name("taken.bin.part", "taken.bin"))
	e.write("named.bin", body)
	assert.Equal(t, "named.bin", name("named.bin.part", "named.bin"), "no part: named before the crash")
	e.write("moved.bin", "same size: other.")
	e.write("moved (1).bin", "another download of a moved")
	e.write("moved (2).bin", body)
	assert.Equal(t, "moved (2).bin", name("moved.bin.part", "moved.bin"),
		"no part, and its name taken in between: found under the name it took")
	e.write("gone.bin", "not ours")
	assert.Empty(t, name("gone.bin.part", "gone.bin"), "no part, and nowhere under its names")
	e.writePart("linked.bin.part", body)
	require.NoError(t, os.Link(filepath.Join(e.dl, "linked.bin.part"), filepath.Join(e.dl, "linked.bin")))
	assert.Equal(t, "linked.bin", name("linked.bin.part", "linked.bin"), "named by a link: the part name goes")
	e.writePart("lk.bin.part", body)
	e.write("lk.bin", "someone else's, same size")
	require.NoError(t, os.Link(filepath.Join(e.dl, "lk.bin.part"), filepath.Join(e.dl, "lk (1).bin")))
	assert.Equal(t, "lk (1).bin", name("lk.bin.part", "lk.bin"), "linked to a later name: the part name goes")
	e.writePart("held.bin.part", body)
	e.write("held.bin", "") // a placeholder left by a crash, or anybody's empty file: kept (F3)
	assert.Equal(t, "held (1).bin", name("held.bin.part", "held.bin"))
	_, err := e.f.NameLeftover("elsewhere.bin.part", "elsewhere.bin", int64(len(body)), sha(body))
	assert.ErrorIs(t, err, fs.ErrNotExist, "neither the part nor the name: in another folder")
	assert.Empty(t, name("other.bin.part", "other.bin"), "same size, other bytes")
	e.writePart("reused.bin.part", "another download's start")
	e.write("reused.bin", body)
	assert.Equal(t, "reused.bin", name("reused.bin.part", "reused.bin"),
		"named before the crash, its part name taken since by another download")
	assert.Empty(t, name("short.bin.part", "short.bin"), "other size")
	assert.Empty(t, name("link.bin.part", "link.bin"), "a symlink is not a part")
	for _, bad := range [][2]string{{"../x.part", "x"}, {"ours.bin", "y"}, {"z.part", "../z"}, {"z.part", "a/z"}} {
		_, err := e.f.NameLeftover(bad[0], bad[1], int64(len(body)), sha(body))
		assert.ErrorIs(t, err, errConfined, "%q → %q", bad[0], bad[1])
	}
	assert.Equal(t, map[string]string{"ours.bin": body, "named.bin": body, "taken.bin": "a file that came in between",
		"taken (1).bin": body, "moved.bin": "same size: other.", "moved (1).bin": "another download of a moved",
		"moved (2).bin": body, "gone.bin": "not ours", "linked.bin": body, "lk.bin": "someone else's, same size",
		"lk (1).bin": body, "held.bin": "", "held (1).bin": body, "other.bin.part": "another download's bytes", "short.bin.part": body[:5],
		"reused.bin": body, "reused.bin.part": "another download's start",
		"link.bin.part": "->" + filepath.Join(e.outside, "target.txt")}, e.files())
}

// F3: the " (n)" sequence goes on past ten thousand copies, and a name's search goes on from
// where its last one stopped: the next download of the same name takes the next number.
func TestFetch_F3_ManyCopiesOfOneName(t *testing.T) {
	e := newEnv(t, nil)
	e.write("same.bin", "0")
	for k := 1; k <= 10_000; k++ {
		e.write(fmt.Sprintf("same (%d).bin", k), "0")
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("new " + r.URL.RawQuery))
	}))
	t.Cleanup(ts.Close)
	for i, want := range []string{"same (10001).bin", "same (10002).bin", "same (10003).bin"} {
		res := e.do(fmt.Sprintf("%s/same.bin?%d", ts.URL, i), nil)
		require.True(t, res.Done, "%v", res.Err)
		assert.Equal(t, want, res.File)
	}
	// A name freed meanwhile is not gone back for: any free name will do (F3).
	require.NoError(t, os.Remove(filepath.Join(e.dl, "same (5).bin")))
	res := e.do(ts.URL+"/same.bin?again", nil)
	require.True(t, res.Done, "%v", res.Err)
	assert.Equal(t, "same (10004).bin", res.File)
}

// A failed job leaves no empty part, but a part that holds bytes stays for
// a resume, whatever the failed attempt reported; a name that is not a part
// is refused (F1).
func TestRemoveEmptyPart_OnlyAnEmptyPart(t *testing.T) {
	e := newEnv(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(e.dl, "empty.bin.part"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(e.dl, "some.bin.part"), []byte("500 bytes of an earlier attempt"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(e.dl, "kept.bin"), nil, 0o644))

	gone, err := e.f.RemoveEmptyPart("empty.bin.part")
	require.NoError(t, err)
	assert.True(t, gone)
	gone, err = e.f.RemoveEmptyPart("some.bin.part")
	require.NoError(t, err)
	assert.False(t, gone, "a part with bytes is kept")
	gone, err = e.f.RemoveEmptyPart("missing.bin.part")
	require.NoError(t, err)
	assert.False(t, gone)
	_, err = e.f.RemoveEmptyPart("kept.bin")
	assert.ErrorIs(t, err, errConfined)
	assert.Equal(t, map[string]string{"some.bin.part": "500 bytes of an earlier attempt", "kept.bin": ""}, e.files())
}
