package fetch

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// N1: a host that never completes the TCP handshake is given up after the connect timeout,
// retried (R2) as a timeout. The listener has a backlog of 0 and one connection it never
// accepts, so the kernel drops every further SYN.
func TestFetch_N1_ConnectTimeout(t *testing.T) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { filler.Close() })

	e := newEnv(t, func(c *Config) { c.ConnectTimeout = 300 * time.Millisecond })
	start := time.Now()
	res := e.do("http://"+addr+"/f.bin", nil)
	// Not a timing claim: without the connect timeout the system gives up after about two
	// minutes of SYN retries; 30 s is a hundred times the timeout set.
	assert.Less(t, time.Since(start), 30*time.Second, "given up by the connect timeout, not by the system")
	assert.Equal(t, Timeout, res.Class, "%v", res.Err)
	assert.True(t, res.Retryable)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "dial")
	assert.Empty(t, e.files())
}
