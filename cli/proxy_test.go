package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// N4: heed host HOST --proxy sets the host's proxy; its password is never
// printed, in text or JSON, and a bad value is refused naming it.
func TestHost_N4_ProxyIsSetAndItsPasswordNeverShown(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	code, out, stderr := run(t, "", "host", "--db", db, "example.com", "--proxy", "socks5://me:s3cret@proxy.example:1080")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, out, "proxy         socks5://me:***@proxy.example:1080")
	for _, args := range [][]string{{"host", "--db", db, "example.com", "--json"}, {"hosts", "--db", db, "--json"}, {"hosts", "--db", db}} {
		code, out, stderr := run(t, "", args...)
		require.Equal(t, ExitOK, code, stderr)
		assert.NotContains(t, out+stderr, "s3cret", args)
	}
	code, out, _ = run(t, "", "host", "--db", db, "example.com", "--json")
	require.Equal(t, ExitOK, code)
	var h hostLine
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &h))
	require.NotNil(t, h.Effective)
	assert.Equal(t, "socks5://me:***@proxy.example:1080", h.Effective.Proxy)

	code, _, stderr = run(t, "", "host", "--db", db, "example.com", "--proxy", "ftp://me:s3cret@proxy.example")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, `--proxy: "ftp://me:***@proxy.example" is not an http://, https://, socks5:// or socks5h:// URL`)
	assert.NotContains(t, stderr, "s3cret")
}
