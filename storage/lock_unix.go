//go:build unix

package storage

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// flock takes an exclusive, non-blocking flock on f. flock locks belong to the open file
// description, so a second one fails even inside one process, and the kernel drops them when the
// process dies, kill -9 included.
func flock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
