package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heed crawls lists each crawl: its state, scope, depth, jobs done, left,
// skipped and failed, its links out of scope, its bytes and its seeds (the
// first three of them, in the table); --json has one object per crawl, all
// its seeds in an array. Without crawls the table has its header only.
func TestCrawls_ListsEachCrawl(t *testing.T) {
	other := newTestSite(t, map[string]string{"/": "elsewhere"})
	site := newTestSite(t, map[string]string{
		"/robots.txt": "User-agent: *\nDisallow: /private/\n",
		"/":           `<a href="/a.html">a</a> <a href="/private/x.html">x</a> <a href="` + other.URL + `/">o</a>`,
		"/a.html":     "a",
		"/1.html":     "1", "/2.html": "2", "/3.html": "3", "/4.html": "4",
	})
	dir := t.TempDir()
	db, dl := filepath.Join(dir, "h.db"), filepath.Join(dir, "dl")
	code, out, stderr := run(t, "", "add", "--db", db, site.URL+"/unrelated.txt")
	require.Equal(t, ExitOK, code, stderr)
	code, out, stderr = run(t, "", "crawls", "--db", db)
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, "ID  STATE  SCOPE  DEPTH  DONE  QUEUED  SKIPPED  FAILED  OUT OF SCOPE  BYTES  SEEDS\n", out)
	code, out, stderr = run(t, "", "crawls", "--db", db, "--json")
	require.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, out)

	args := append([]string{"crawl", "--db", db, "--dir", dl, "--max-attempts", "1"}, fast...)
	code, _, stderr = run(t, "", append(args, site.URL+"/")...)
	require.Equal(t, ExitFailed, code, "the unrelated URL queued before is a 404: %s", stderr)
	code, _, stderr = run(t, "", append(args, "--scope", "prefix", "--depth", "0",
		site.URL+"/1.html", site.URL+"/2.html", site.URL+"/3.html", site.URL+"/4.html")...)
	require.Equal(t, ExitOK, code, stderr)

	code, out, stderr = run(t, "", "crawls", "--db", db)
	require.Equal(t, ExitOK, code, stderr)
	q := regexp.QuoteMeta
	assert.Regexp(t, `(?m)^ID\s+STATE\s+SCOPE\s+DEPTH\s+DONE\s+QUEUED\s+SKIPPED\s+FAILED\s+OUT OF SCOPE\s+BYTES\s+SEEDS$`, out)
	assert.Regexp(t, `(?m)^1\s+running\s+host\s+5\s+2\s+0\s+1\s+0\s+1\s+\d+ B\s+`+q(site.URL+"/")+`$`, out)
	assert.Regexp(t, `(?m)^2\s+running\s+prefix\s+0\s+4\s+0\s+0\s+0\s+0\s+4 B\s+`+
		q(fmt.Sprintf("%[1]s/1.html %[1]s/2.html %[1]s/3.html (and 1 more)", site.URL))+`$`, out)

	lines := crawlLines(t, db)
	require.Len(t, lines, 2)
	assert.Equal(t, []string{site.URL + "/1.html", site.URL + "/2.html", site.URL + "/3.html", site.URL + "/4.html"}, lines[1].Seeds)
	assert.Equal(t, "prefix", lines[1].Scope)
	assert.Equal(t, 0, lines[1].Depth)
	assert.Equal(t, [5]int64{4, 0, 0, 0, 4}, [5]int64{lines[1].Done, lines[1].Queued, lines[1].Skipped, lines[1].Failed, lines[1].Bytes})
	assert.Equal(t, [4]int64{2, 1, 1, 0}, [4]int64{lines[0].Done, lines[0].Skipped, lines[0].OutOfScope, lines[0].Failed},
		"done, skipped, out of scope, failed: the unrelated 404 is not the crawl's")
}
