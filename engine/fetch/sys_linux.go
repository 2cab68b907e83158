//go:build linux

package fetch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames from to to inside dir in one step, failing with
// fs.ErrExist when to exists — whatever it is, a symlink included, which
// is never followed (F3). Both names are single components in dir, so the
// rename cannot leave the folder (F1). errNoRename means the file system
// cannot do it; the caller falls back to link and remove.
func renameNoReplace(dir *os.File, from, to string) error {
	fd := int(dir.Fd())
	err := unix.Renameat2(fd, from, fd, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return fs.ErrExist
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EINVAL), errors.Is(err, unix.EOPNOTSUPP):
		return errNoRename
	}
	return err
}

// createPartFile creates part name in dir (root's folder) for reading and
// writing, failing with fs.ErrExist when anything (a symlink included) is
// there. It is root.OpenFile with O_CREATE|O_EXCL in one system call: Go's
// os.OpenFile also tries to register a new file with the network poller,
// which costs a regular file four fcntl calls and a failing epoll_ctl. The
// name is one safe component, so the file cannot land outside dir (F1).
func createPartFile(dir *os.File, root *os.Root, name string) (*os.File, error) {
	if !isPartName(name) {
		return nil, fmt.Errorf("part name %q: %w", name, errConfined)
	}
	if dir == nil {
		return root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	}
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o666)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			err = fs.ErrExist
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// syncFS writes everything waiting on dir's file system to stable storage,
// and reports a write error that happened there since the last call.
func syncFS(dir *os.File) error { return unix.Syncfs(int(dir.Fd())) }

// startWriteback asks the system to start writing n bytes of f from off to
// disk, and returns without waiting for it.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}

// markAttr is the extended attribute that marks a part as a job's.
const markAttr = "user.heed.job"

// createMarkedPart creates part name in dir already marked with mark, so
// that no instant exists when the part has its name but not its mark: an
// unnamed file (O_TMPFILE), marked, then linked under each of names in
// turn until one is free (see linkFirstFree). It returns the file and the
// name it took; fs.ErrExist when every name is taken; errNoMark when the
// system cannot do this (no O_TMPFILE, no /proc), and the caller creates
// the part as createPartFile does and marks it after.
func createMarkedPart(dir *os.File, mark string, names func(yield func(string) bool)) (*os.File, string, error) {
	fd, err := unix.Openat(int(dir.Fd()), ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return nil, "", errNoMark
	}
	if err := unix.Fsetxattr(fd, markAttr, []byte(mark), 0); err != nil {
		unix.Close(fd)
		return nil, "", errNoMark
	}
	taken, err := linkFirstFree(fd, dir, names, isPartName)
	if err != nil {
		unix.Close(fd)
		if errors.Is(err, errNoUnnamed) {
			err = errNoMark
		}
		return nil, "", err
	}
	return os.NewFile(uintptr(fd), taken), taken, nil
}

// openUnnamed opens a new, empty file in dir that has no name (O_TMPFILE):
// it goes with its last descriptor unless linkFirstFree gives it one.
// called is how errors speak of it. errNoUnnamed means the system cannot.
func openUnnamed(dir *os.File, called string) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o666)
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), called), nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
		return nil, errNoUnnamed
	}
	return nil, &fs.PathError{Op: "open", Path: called, Err: err}
}

// linkFirstFree gives the unnamed open file fd, in dir, the first of names
// that is free: a name where anything is (a symlink included, never
// followed) is skipped, as with O_EXCL (F3, A10). valid, if set, must
// accept each name (a name it refuses stops the search with errConfined).
// It returns the name taken; fs.ErrExist when every name is taken;
// errNoUnnamed when links are refused here.
func linkFirstFree(fd int, dir *os.File, names func(yield func(string) bool), valid func(string) bool) (string, error) {
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	var (
		taken  string
		result = fs.ErrExist
	)
	names(func(name string) bool {
		if valid != nil && !valid(name) {
			result = fmt.Errorf("file name %q: %w", name, errConfined)
			return false
		}
		err := linkFD(fd, self, dir, name)
		switch {
		case err == nil:
			taken, result = name, nil
			return false
		case errors.Is(err, unix.EEXIST):
			return true
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EPERM), errors.Is(err, unix.EXDEV):
			result = errNoUnnamed // no /proc, or links refused
			return false
		}
		result = &fs.PathError{Op: "link", Path: name, Err: err}
		return false
	})
	return taken, result
}

// noEmptyPathLink is set once linkat(2) refused AT_EMPTY_PATH here and the
// link through /proc/self/fd worked (Linux before 6.10 allows the first only
// with CAP_DAC_READ_SEARCH): from then on a part is linked through /proc,
// which costs a path walk each time.
var noEmptyPathLink atomic.Bool

// linkDirect links the open file fd as name in dir, from its descriptor.
var linkDirect = func(fd int, dir *os.File, name string) error {
	return unix.Linkat(fd, "", int(dir.Fd()), name, unix.AT_EMPTY_PATH)
}

// linkFD gives the open file fd the name name in dir: straight from the
// descriptor where the system allows it, else through self, its
// /proc/self/fd path.
func linkFD(fd int, self string, dir *os.File, name string) error {
	tried := !noEmptyPathLink.Load()
	if tried {
		err := linkDirect(fd, dir, name)
		if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
			return err
		}
	}
	err := unix.Linkat(unix.AT_FDCWD, self, int(dir.Fd()), name, unix.AT_SYMLINK_FOLLOW)
	if tried && (err == nil || errors.Is(err, unix.EEXIST)) {
		// The first way was refused, not the folder gone: /proc from now on.
		noEmptyPathLink.Store(true)
	}
	return err
}

// markPart marks f with mark, if the file system keeps extended
// attributes; a part it cannot mark stays unmarked.
func markPart(f *os.File, mark string) {
	_ = unix.Fsetxattr(int(f.Fd()), markAttr, []byte(mark), 0)
}

// unmark removes the mark from name in dir, once it is a part no more.
// The file is opened as readMark opens it: never through a symlink, never
// waiting, a regular file only.
func unmark(dir *os.File, name string) error {
	fd, err := openRegular(dir, name)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fremovexattr(fd, markAttr); err != nil && !errors.Is(err, unix.ENODATA) {
		return err
	}
	return nil
}

// openRegular opens name in dir for reading without following a symlink
// and without blocking (a FIFO put in its place is not waited for), and
// only if it is a regular file.
func openRegular(dir *os.File, name string) (int, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: not a regular file", name)
	}
	return fd, nil
}

// readMark returns the mark of part name in dir, and whether it has one.
// The part is opened without following a symlink and without blocking (a
// FIFO put in its place is not waited for), and only a regular file counts.
func readMark(dir *os.File, name string) (string, bool) {
	fd, err := openRegular(dir, name)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	buf := make([]byte, 128)
	n, err := unix.Fgetxattr(fd, markAttr, buf)
	if err != nil {
		return "", false
	}
	return string(buf[:n]), true
}
