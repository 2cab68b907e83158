package e2e

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowFiles are two small files and three large ones (large enough for
// Heed to record their part file when their body starts), served at up to
// 4 MiB/s per download.
func slowFiles() map[string][]byte {
	return map[string][]byte{
		"/small0.txt": content(1, 1500),
		"/small1.txt": content(2, 2500),
		"/big0.bin":   content(3, 2<<20),
		"/big1.bin":   content(4, 2<<20+123),
		"/big2.bin":   content(5, 3<<20),
	}
}

var bigFiles = []string{"big0.bin", "big1.bin", "big2.bin"}

// partsHaveBytes reports whether each big file's .part holds at least min
// bytes, and the small files are complete.
func partsHaveBytes(t *testing.T, dir string, small []string, min int64) func() bool {
	return func() bool {
		files := listDir(t, dir)
		for _, s := range small {
			if _, ok := files[s]; !ok {
				return false
			}
		}
		for _, b := range bigFiles {
			if files[b+".part"] < min {
				return false
			}
		}
		return true
	}
}

// readOnly opens the database at path for reading while Heed runs (WAL
// readers do not disturb the writer).
func readOnly(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	require.NoError(t, err)
	return raw
}

// recordedParts counts the active jobs whose part the database at path
// records, read while Heed runs (WAL readers do not disturb the writer).
func recordedParts(t *testing.T, path string) int {
	t.Helper()
	raw := readOnly(t, path)
	defer raw.Close()
	var n int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM jobs WHERE state = 'active' AND part <> ''`).Scan(&n))
	return n
}

// assertExact checks that dir holds exactly the served files, byte for
// byte, and nothing else (no part left).
func assertExact(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	want := map[string]int64{}
	for p, b := range files {
		want[strings.TrimPrefix(p, "/")] = int64(len(b))
	}
	assert.Equal(t, want, listDir(t, dir))
	for p, b := range files {
		assert.Equal(t, hexSHA(b), fileSHA(t, filepath.Join(dir, strings.TrimPrefix(p, "/"))), p)
	}
}

// RELIABILITY F32, S2: heed get killed with SIGKILL mid-download; the same
// command run again exits 0, resumes each large file from its .part with a
// Range request, and fetches nothing that was already done a second time.
func TestGet_Kill9ResumesFromPart(t *testing.T) {
	files := slowFiles()
	srv := newFileServer(t, files, 32<<10, 8*time.Millisecond)
	tmp := t.TempDir()
	db, dir := filepath.Join(tmp, "heed.db"), filepath.Join(tmp, "dl")
	args := []string{"get", "--db", db, "--dir", dir, "--rate", "6000", "--burst", "10", "--max-inflight", "5",
		"--jitter", "0-0"}
	for _, p := range []string{"/small0.txt", "/small1.txt", "/big0.bin", "/big1.bin", "/big2.bin"} {
		args = append(args, srv.URL+p)
	}

	first := start(t, args...)
	waitFor(t, "small files done and parts with bytes", 20*time.Second,
		partsHaveBytes(t, dir, []string{"small0.txt", "small1.txt"}, 256<<10))
	// Heed records a part a moment after its body starts (a body that
	// lands at once needs no record); the kill comes after that.
	waitFor(t, "parts recorded", 20*time.Second, func() bool { return recordedParts(t, db) == len(bigFiles) })
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	first.wait(t)
	require.True(t, first.cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled(), "killed, not exited")
	killedAt := len(srv.seen())
	onDisk := listDir(t, dir)
	for _, b := range bigFiles {
		require.Positive(t, onDisk[b+".part"], "%s.part has bytes after the kill", b)
		require.NotContains(t, onDisk, b, "not complete before the kill")
	}

	res := heed(t, args...)
	require.Equal(t, 0, res.code, "stderr: %s\nstdout: %s", res.stderr, res.stdout)
	assertExact(t, dir, files)

	all := srv.seen()
	after := all[killedAt:]
	for _, b := range bigFiles {
		var ranges []string
		for _, s := range after {
			if s.Path == "/"+b {
				ranges = append(ranges, s.Range)
			}
		}
		require.NotEmpty(t, ranges, "%s fetched again", b)
		assert.True(t, strings.HasPrefix(ranges[0], "bytes=") && ranges[0] != "bytes=0-",
			"%s resumed from its part, not restarted: Range %q", b, ranges[0])
	}
	for _, s := range []string{"/small0.txt", "/small1.txt"} {
		n := 0
		for _, x := range all {
			if x.Path == s {
				n++
			}
		}
		assert.Equal(t, 1, n, "%s was done before the kill and must not be fetched twice", s)
	}
	for _, j := range jobs(t, db) {
		assert.Equal(t, "done", j.State, j.URL)
		assert.Equal(t, hexSHA(files[strings.TrimPrefix(j.URL, srv.URL)]), j.SHA256, j.URL)
	}
}

// SPEC §9, S6: SIGINT stops heed get cleanly (exit 130) with the parts
// kept and the jobs queued; a second heed on the same database meanwhile
// is refused with exit 3 without harming the first; a re-run completes the
// downloads from their parts.
func TestGet_SIGINTKeepsPartsAndRequeues(t *testing.T) {
	files := map[string][]byte{"/big0.bin": content(6, 2<<20), "/big1.bin": content(7, 2<<20+77)}
	srv := newFileServer(t, files, 16<<10, 16*time.Millisecond)
	tmp := t.TempDir()
	db, dir := filepath.Join(tmp, "heed.db"), filepath.Join(tmp, "dl")
	args := []string{"get", "--db", db, "--dir", dir, "--max-inflight", "2", "--jitter", "0-0",
		srv.URL + "/big0.bin", srv.URL + "/big1.bin"}

	first := start(t, args...)
	waitFor(t, "parts with bytes", 20*time.Second, func() bool {
		f := listDir(t, dir)
		return f["big0.bin.part"] >= 128<<10 && f["big1.bin.part"] >= 128<<10
	})

	second := heed(t, "get", "--db", db, "--dir", filepath.Join(tmp, "other"), srv.URL+"/big0.bin")
	assert.Equal(t, 3, second.code, second.stderr)
	assert.Contains(t, second.stderr, db, "the message names the database")
	assert.Contains(t, second.stderr, "in use")
	assert.NoDirExists(t, filepath.Join(tmp, "other"))

	require.NoError(t, first.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 130, first.wait(t), "stderr: %s", first.err.String())
	onDisk := listDir(t, dir)
	assert.Len(t, onDisk, 2, "only the two parts: %v", onDisk)
	for p := range files {
		assert.Positive(t, onDisk[strings.TrimPrefix(p, "/")+".part"], "%s.part kept", p)
	}
	js := jobs(t, db)
	require.Len(t, js, 2)
	for _, j := range js {
		assert.Equal(t, "queued", j.State, j.URL)
	}
	before := len(srv.seen())

	res := heed(t, args...)
	require.Equal(t, 0, res.code, "stderr: %s\nstdout: %s", res.stderr, res.stdout)
	assertExact(t, dir, files)
	after := srv.seen()[before:]
	require.Len(t, after, 2)
	for _, s := range after {
		assert.True(t, strings.HasPrefix(s.Range, "bytes=") && s.Range != "bytes=0-",
			"%s resumed from its part: Range %q", s.Path, s.Range)
	}
}

// RELIABILITY F32 for a file under a megabyte: after SIGKILL the re-run
// resumes it from its own .part and saves it under its own name — no
// "name (1).ext" beside an orphaned "name.ext.part".
func TestGet_Kill9SmallFileKeepsItsName(t *testing.T) {
	files := map[string][]byte{"/mid.bin": content(9, 300<<10)}
	srv := newFileServer(t, files, 8<<10, 20*time.Millisecond)
	tmp := t.TempDir()
	db, dir := filepath.Join(tmp, "heed.db"), filepath.Join(tmp, "dl")
	args := []string{"get", "--db", db, "--dir", dir, "--jitter", "0-0", srv.URL + "/mid.bin"}

	first := start(t, args...)
	waitFor(t, "a part with bytes", 20*time.Second, func() bool { return listDir(t, dir)["mid.bin.part"] >= 32<<10 })
	waitFor(t, "the part recorded", 20*time.Second, func() bool { return recordedParts(t, db) == 1 })
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	first.wait(t)
	before := len(srv.seen())

	res := heed(t, args...)
	require.Equal(t, 0, res.code, "stderr: %s\nstdout: %s", res.stderr, res.stdout)
	assertExact(t, dir, files)
	after := srv.seen()[before:]
	require.Len(t, after, 1)
	assert.True(t, strings.HasPrefix(after[0].Range, "bytes=") && after[0].Range != "bytes=0-",
		"resumed from its part: Range %q", after[0].Range)
	js := jobs(t, db)
	require.Len(t, js, 1)
	assert.Equal(t, "mid.bin", js[0].File)
}

// RELIABILITY F32, S2, F4: heed get killed with SIGKILL while small
// downloads are in flight or finishing, then run again. Every part the kill
// leaves is one the database records (its name is recorded before the file
// exists), so none is orphaned; the next run resumes or names each, and
// every file is saved once under its own name, with no "name (1)" and no
// part left.
func TestGet_Kill9ManySmallFilesKeepTheirNames(t *testing.T) {
	for _, tc := range []struct {
		n, size, killAt int
		pause           time.Duration // after the first 512 bytes of each body
	}{
		{2000, 1 << 10, 300, 4 * time.Millisecond},
		{2000, 8 << 10, 300, 4 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%d bytes", tc.size), func(t *testing.T) {
			files := map[string][]byte{}
			for i := range tc.n {
				files[fmt.Sprintf("/f%04d.bin", i)] = content(uint64(100+i), tc.size)
			}
			srv := newFileServer(t, files, 512, tc.pause)
			var urls []string
			for p := range files {
				urls = append(urls, srv.URL+p)
			}
			tmp := t.TempDir()
			db, dir, list := filepath.Join(tmp, "heed.db"), filepath.Join(tmp, "dl"), filepath.Join(tmp, "urls.txt")
			require.NoError(t, os.WriteFile(list, []byte(strings.Join(urls, "\n")), 0o644))
			args := []string{"get", "-q", "--db", db, "--dir", dir, "--rate", "600000", "--burst", "10000",
				"--max-inflight", "16", "--workers", "16", "--jitter", "0-0", "-i", list}

			first := start(t, args...)
			waitFor(t, fmt.Sprintf("%d files done", tc.killAt), 30*time.Second, func() bool { return doneJobs(t, db) >= tc.killAt })
			require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
			first.wait(t)
			recorded := partNames(t, db)
			parts, orphans := 0, 0
			for name := range listDir(t, dir) {
				if strings.HasSuffix(name, ".part") {
					parts++
					if !recorded[name] {
						orphans++
					}
				}
			}
			t.Logf("the kill left %d parts", parts)
			require.Zero(t, orphans, "every part the kill left is recorded")

			res := heed(t, args...)
			require.Equal(t, 0, res.code, "stderr: %s\nstdout: %s", res.stderr, res.stdout)
			var extra []string
			for name := range listDir(t, dir) {
				if _, ok := files["/"+name]; !ok {
					extra = append(extra, name)
				}
			}
			slices.Sort(extra)
			require.Empty(t, extra, "no copy, no part left")
			assertExact(t, dir, files)
		})
	}
}

// partNames returns every part name the database at path records: for a
// resume, or for a finished download's name.
func partNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw := readOnly(t, path)
	defer raw.Close()
	rows, err := raw.Query(`SELECT part FROM jobs WHERE part <> ''`)
	require.NoError(t, err)
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var p string
		require.NoError(t, rows.Scan(&p))
		names[p] = true
	}
	require.NoError(t, rows.Err())
	return names
}

// doneJobs counts the jobs the database at path records done, read while
// Heed runs.
func doneJobs(t *testing.T, path string) int {
	t.Helper()
	raw := readOnly(t, path)
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM jobs WHERE state = 'done'`).Scan(&n); err != nil {
		return 0 // not created yet
	}
	return n
}

// linkedSite is a site of n pages, /p/000.html …, each linking to several
// others (a binary tree from /p/000.html that reaches every page, and
// links back and across that find pages already known), with a robots.txt
// that allows everything; links maps each page to the paths it links to.
func linkedSite(n int) (pages map[string]webPage, links map[string][]string) {
	pages, links = map[string]webPage{"/robots.txt": {ctype: "text/plain", body: "User-agent: *\nAllow: /\n"}}, map[string][]string{}
	path := func(i int) string { return fmt.Sprintf("/p/%03d.html", i) }
	for i := range n {
		var to []string
		for _, j := range []int{2*i + 1, 2*i + 2, (i*7 + 3) % n, (i*13 + 5) % n, 0, i / 2} {
			if j < n {
				to = append(to, path(j))
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "<html><body><h1>page %d</h1>\n", i)
		for _, p := range to {
			fmt.Fprintf(&b, "<a href=%q>%s</a>\n", p, p)
		}
		b.WriteString("</body></html>\n")
		pages[path(i)] = webPage{body: b.String()}
		links[path(i)] = to
	}
	return pages, links
}

// integrityOK runs PRAGMA integrity_check on the database at path.
func integrityOK(t *testing.T, path string) {
	t.Helper()
	raw := readOnly(t, path)
	defer raw.Close()
	var ok string
	require.NoError(t, raw.QueryRow(`PRAGMA integrity_check`).Scan(&ok))
	assert.Equal(t, "ok", ok)
}

// W8, S2: heed crawl killed with SIGKILL in the middle of a crawl of 300
// linked pages. Every page recorded done has its links stored with it (no
// discovered link lost), no URL has two jobs, the database passes its
// integrity check; heed crawl --resume then completes the crawl: every page
// done, each saved once under its own name, none recorded done before the
// kill fetched again, and robots.txt, kept in the database, not fetched
// again.
func TestCrawl_W8_Kill9ThenResume(t *testing.T) {
	const n = 300
	pages, links := linkedSite(n)
	site := newWebSite(t, pages, 30*time.Millisecond)
	seed := site.URL + "/p/000.html"
	tmp := t.TempDir()
	db, dir := filepath.Join(tmp, "heed.db"), filepath.Join(tmp, "dl")
	flags := []string{"--db", db, "--dir", dir, "--rate", "60000", "--burst", "100", "--max-inflight", "2",
		"--jitter", "0-0", "-q"}

	first := start(t, append(append([]string{"crawl"}, flags...), "--depth", "1000", seed)...)
	waitFor(t, "50 pages done", 30*time.Second, func() bool { return doneJobs(t, db) >= 50 })
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGKILL))
	first.wait(t)
	require.True(t, first.cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled(), "killed, not exited: %s", first.err.String())
	integrityOK(t, db)

	// What the kill left: each page recorded done has every link of it as a
	// job (W8: stored in the commit that recorded it done), and no URL twice.
	js := crawlJobs(t, db)
	byPath := map[string]crawlJobLine{}
	var doneAtKill []string
	for _, j := range js {
		p := strings.TrimPrefix(j.URL, site.URL)
		require.NotContains(t, byPath, p, "one job per URL (W3)")
		byPath[p] = j
		if j.State == "done" {
			doneAtKill = append(doneAtKill, p)
		}
	}
	require.GreaterOrEqual(t, len(doneAtKill), 50)
	require.Less(t, len(doneAtKill), n, "the kill came in the middle of the crawl")
	for _, p := range doneAtKill {
		for _, l := range links[p] {
			assert.Contains(t, byPath, l, "%s is done: its link to %s is stored", p, l)
		}
	}
	killedAt := len(site.requests())

	res := heed(t, append(append([]string{"crawl"}, flags...), "--resume", "1")...)
	require.Equal(t, 0, res.code, "stderr: %s\nstdout: %s", res.stderr, res.stdout)
	integrityOK(t, db)

	// Every page done, one job each, under its own name; nothing else.
	js = crawlJobs(t, db)
	require.Len(t, js, n, "one job per page")
	want := map[string]string{}
	for p, pg := range pages {
		if p != "/robots.txt" {
			want[site.hostKey()+p] = pg.body
		}
	}
	for _, j := range js {
		assert.Equal(t, "done", j.State, "%s: %s", j.URL, j.LastError)
		assert.Equal(t, int64(1), j.CrawlID, j.URL)
	}
	assert.Equal(t, want, tree(t, dir), "each page saved once, under its own name, no part left")
	c := crawls(t, db)
	require.Len(t, c, 1)
	assert.Equal(t, [3]int64{n, 0, 0}, [3]int64{c[0].Done, c[0].Queued + c[0].Active, c[0].Failed})

	// Fetched once where it could be: a page done before the kill never
	// again; only those in flight at the kill (two at most) a second time.
	count := map[string]int{}
	for _, p := range site.requests() {
		count[p]++
	}
	for _, p := range doneAtKill {
		assert.Equal(t, 1, count[p], "%s was done before the kill", p)
	}
	twice := 0
	for p := range want {
		p = strings.TrimPrefix(p, site.hostKey())
		assert.LessOrEqual(t, count[p], 2, p)
		if count[p] == 2 {
			twice++
		}
	}
	t.Logf("the kill left %d of %d pages done; %d fetched twice", len(doneAtKill), n, twice)
	assert.LessOrEqual(t, twice, 2, "only the pages in flight at the kill are fetched again")
	assert.Equal(t, 1, count["/robots.txt"], "robots.txt is kept: the resumed crawl does not fetch it again")
	assert.Greater(t, len(site.requests()), killedAt, "the resumed crawl fetched the rest")
}
