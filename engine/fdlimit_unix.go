//go:build unix

package engine

import "syscall"

// openFileLimit is the process's limit of open files (the soft one, which
// Go raises to the hard one as it starts), or 0 when unknown.
func openFileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return uint64(rl.Cur)
}
