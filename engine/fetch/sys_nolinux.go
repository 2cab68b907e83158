//go:build !linux

package fetch

import (
	"errors"
	"os"
)

// renameNoReplace is Linux's renameat2(RENAME_NOREPLACE); elsewhere the
// caller links and removes instead.
func renameNoReplace(*os.File, string, string) error { return errNoRename }

// createPartFile creates part name in root, failing with fs.ErrExist when
// anything is there.
func createPartFile(_ *os.File, root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
}

// syncFS is Linux's syncfs(2); elsewhere each file is synced alone.
func syncFS(*os.File) error { return errors.ErrUnsupported }

// startWriteback is Linux's sync_file_range(2); elsewhere the final sync
// writes everything.
func startWriteback(*os.File, int64, int64) {}

// createMarkedPart creates a marked part on Linux; elsewhere parts are
// unmarked.
func createMarkedPart(*os.File, string, func(func(string) bool)) (*os.File, string, error) {
	return nil, "", errNoMark
}

// openUnnamed opens a file with no name on Linux; elsewhere every part has
// its name from the start.
func openUnnamed(*os.File, string) (*os.File, error) { return nil, errNoUnnamed }

// linkFirstFree names an unnamed file on Linux; there is none elsewhere.
func linkFirstFree(int, *os.File, func(func(string) bool), func(string) bool) (string, error) {
	return "", errNoUnnamed
}

// markPart marks a part as a job's on Linux; elsewhere parts are unmarked.
func markPart(*os.File, string) {}

// unmark removes a part's mark on Linux; elsewhere there is none.
func unmark(*os.File, string) error { return nil }

// readMark reads a part's mark on Linux; elsewhere there is none.
func readMark(*os.File, string) (string, bool) { return "", false }
