//go:build unix

package fetch

import (
	"net"
	"syscall"
)

// quiet reports whether an idle connection has nothing to read: neither
// bytes its host sent unasked (a 408 on its keep-alive timeout, bytes past a
// response's end) nor its close. It peeks, without waiting.
func quiet(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	quiet := true
	rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		quiet = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return quiet
}
