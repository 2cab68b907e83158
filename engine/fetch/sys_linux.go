//go:build linux

package fetch

import (
	"errors"
	"io/fs"
	"os"

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
	return &fs.PathError{Op: "rename", Path: to, Err: err}
}
