package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jobURLs lists the URLs of the jobs in the database at path, by id.
func jobURLs(t *testing.T, path string) []string {
	t.Helper()
	code, out, stderr := run(t, "", "jobs", "--db", path, "--json")
	require.Equal(t, ExitOK, code, stderr)
	var urls []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var j struct{ URL string }
		require.NoError(t, json.Unmarshal([]byte(l), &j))
		urls = append(urls, j.URL)
	}
	return urls
}

// Issue 33, export/import: what heed export writes from one database, heed
// import queues into another: the same URLs; importing it again finds them
// all known, and loses nothing.
func TestExportImport_Issue33_RoundTripQueuesTheSameURLs(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "from.db"), filepath.Join(dir, "to.db")
	code, _, stderr := run(t, "", "add", "--db", from, "http://example.com/a", "https://example.org/b c.pdf", "http://example.net/d")
	require.Equal(t, ExitOK, code, stderr)
	code, _, stderr = run(t, "", "add", "--db", to, "http://example.net/d", "http://example.net/mine")
	require.Equal(t, ExitOK, code, stderr)

	code, export, stderr := run(t, "", "export", "--db", from)
	require.Equal(t, ExitOK, code, stderr)
	assert.Equal(t, 3, strings.Count(export, "\n"))
	for _, k := range []string{`"url":`, `"state":"queued"`, `"file":`, `"crawl_id":`, `"depth":`} {
		assert.Contains(t, export, k)
	}
	file := filepath.Join(dir, "queue.jsonl")
	require.NoError(t, os.WriteFile(file, []byte(export), 0o600))

	code, _, stderr = run(t, "", "import", "--db", to, file)
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "queued 2, duplicates 1")
	assert.ElementsMatch(t, append(jobURLs(t, from), "http://example.net/mine"), jobURLs(t, to))

	code, _, stderr = run(t, export, "import", "--db", to, "-")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "queued 0, duplicates 3")
	assert.Len(t, jobURLs(t, to), 4)

	code, queued, stderr := run(t, "", "export", "--db", from, "--state", "done")
	require.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, queued, "--state keeps only the jobs in that state")
}

// G44: heed export never writes a URL's password; heed import queues such a
// URL without the masked one, and says so.
func TestExportImport_G44_PasswordsAreMasked(t *testing.T) {
	dir := t.TempDir()
	from, to := filepath.Join(dir, "from.db"), filepath.Join(dir, "to.db")
	code, _, stderr := run(t, "", "add", "--db", from, "https://ann:s3cret@example.com/private.zip")
	require.Equal(t, ExitOK, code, stderr)
	code, export, stderr := run(t, "", "export", "--db", from)
	require.Equal(t, ExitOK, code, stderr)
	assert.NotContains(t, export, "s3cret")
	assert.Contains(t, export, "https://ann:***@example.com/private.zip")

	code, _, stderr = run(t, export, "import", "--db", to, "-")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, "1 URLs had their password masked")
	assert.Equal(t, []string{"https://ann@example.com/private.zip"}, jobURLs(t, to))
}

// Issue 33: a line of an import file that is neither a URL list line nor a
// job object stops the import, named by its line number (exit 2); the lines
// before it stay queued. A plain URL list imports as heed add reads it, its
// rejected lines named by their line in the file.
func TestImport_Issue33_MalformedLineNamesItsLineAndKeepsThoseBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	in := `{"id":1,"url":"http://example.com/a","state":"done"}
http://example.com/b
{"id":3,"url":
http://example.com/c
`
	code, _, stderr := run(t, in, "import", "--db", path, "-")
	assert.Equal(t, ExitUsage, code, stderr)
	assert.Contains(t, stderr, "line 3")
	assert.Contains(t, stderr, "queued 2")
	assert.Equal(t, []string{"http://example.com/a", "http://example.com/b"}, jobURLs(t, path))

	code, _, stderr = run(t, "# a list\nhttp://example.com/d\nftp://example.com/e\n{\"id\":9}\n", "import", "--db", path, "-")
	assert.Equal(t, ExitUsage, code, stderr)
	assert.Contains(t, stderr, `line 4: a job line of heed export has a "url"`)
	assert.Contains(t, stderr, `rejected "ftp://example.com/e" (line 3)`)
	assert.Equal(t, []string{"http://example.com/a", "http://example.com/b", "http://example.com/d"}, jobURLs(t, path))
}
