package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// N5: heed host HOST --header and --host-bandwidth set the host's request
// settings; a header that may hold a secret is never printed, in text or
// JSON; --header "" clears them; a header Heed owns is refused naming it.
func TestHost_N5_HeadersAndBandwidth(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	code, out, stderr := run(t, "", "host", "--db", db, "example.com",
		"--header", "X-Team: blue", "--header", "Authorization: Bearer s3cret", "--host-bandwidth", "1048576")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "header        X-Team: blue\n")
	assert.Contains(t, out, "header        Authorization: ***\n")
	assert.Contains(t, out, "bandwidth     1.0 MiB/s\n")
	for _, args := range [][]string{{"host", "--db", db, "example.com", "--json"}, {"hosts", "--db", db, "--json"}, {"hosts", "--db", db}, {"host", "--db", db, "example.com"}} {
		code, out, stderr := run(t, "", args...)
		require.Equal(t, ExitOK, code, stderr)
		assert.NotContains(t, out+stderr, "s3cret", args)
	}
	code, out, _ = run(t, "", "host", "--db", db, "example.com", "--json")
	require.Equal(t, ExitOK, code)
	var h hostLine
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &h))
	require.NotNil(t, h.Effective)
	assert.Equal(t, []string{"X-Team: blue", "Authorization: ***"}, h.Effective.Headers)
	assert.Equal(t, int64(1<<20), h.Effective.BytesPerSec)

	code, out, stderr = run(t, "", "host", "--db", db, "example.com", "--header", "")
	require.Equal(t, ExitOK, code, stderr)
	assert.NotContains(t, out, "header ")

	code, _, stderr = run(t, "", "host", "--db", db, "example.com", "--header", "Range: bytes=0-")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `--header "Range: bytes=0-": Heed asks for ranges itself to resume`)
	code, _, stderr = run(t, "", "host", "--db", db, "example.com", "--host-bandwidth", "-5")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "--host-bandwidth: -5 is out of range")
}

// N5: heed get --cookies sends a cookies.txt's cookies to their host, a
// --header goes to every host, and a cookies file that cannot be read is a
// usage error naming it, before anything is queued.
func TestGet_N5_CookiesAndHeaders(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	dir := t.TempDir()
	cookies := filepath.Join(dir, "cookies.txt")
	require.NoError(t, os.WriteFile(cookies, []byte("# Netscape HTTP Cookie File\n"+u.Hostname()+"\tFALSE\t/\tFALSE\t0\tsid\tc00kie\n"), 0o600))
	db := filepath.Join(dir, "h.db")
	code, out, stderr := run(t, "", "get", "--db", db, "--dir", filepath.Join(dir, "out"), "--cookies", cookies,
		"--header", "X-Team: blue", srv.URL+"/a.txt")
	require.Equal(t, ExitOK, code, stderr)
	require.Len(t, seen, 1)
	assert.Equal(t, "sid=c00kie", seen[0].Get("Cookie"))
	assert.Equal(t, "blue", seen[0].Get("X-Team"))
	assert.NotContains(t, out+stderr, "c00kie")

	code, _, stderr = run(t, "", "get", "--db", filepath.Join(dir, "other.db"), "--cookies", filepath.Join(dir, "missing.txt"), srv.URL+"/b.txt")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "--cookies: open "+filepath.Join(dir, "missing.txt"))
	_, err := os.Stat(filepath.Join(dir, "other.db"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was queued")
}

// A netrc that cannot be read is said, and the download goes on without it.
func TestGet_N5_BrokenNetrcIsSaidNotFatal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	dir := t.TempDir()
	netrc := filepath.Join(dir, "netrc")
	require.NoError(t, os.WriteFile(netrc, []byte("machine example.com user ann\n"), 0o600))
	t.Setenv("NETRC", netrc)
	code, _, stderr := run(t, "", "get", "--db", filepath.Join(dir, "h.db"), "--dir", filepath.Join(dir, "out"), srv.URL+"/a.txt")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stderr, `heed: netrc: `+netrc+` "user" is not a netrc keyword`)
	assert.Contains(t, stderr, "no logins from it are sent")
}
