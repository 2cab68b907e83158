//go:build !linux

package fetch

import "os"

// renameNoReplace is Linux's renameat2(RENAME_NOREPLACE); elsewhere the
// caller links and removes instead.
func renameNoReplace(*os.File, string, string) error { return errNoRename }
