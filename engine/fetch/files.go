package fetch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// partSuffix marks files that are still being downloaded (F4).
const partSuffix = ".part"

// maxCandidates bounds the " (n)" search so a folder full of copies cannot
// make a download spin forever.
const maxCandidates = 10000

// errConfined is wrapped by every error that means "this would write through
// something that is not ours" (F1, RELIABILITY A10).
var errConfined = errors.New("refused to write outside the download folder")

// candidates yields name, then "stem (1).ext", "stem (2).ext" … (F3). A name
// that already ends in " (n)" continues from n, so "a (1).txt" is followed by
// "a (2).txt". Compound extensions such as ".tar.gz" stay together.
func candidates(name string, yield func(string) bool) {
	if !yield(name) {
		return
	}
	stem, ext := splitExt(name)
	n := 0
	if i := strings.LastIndex(stem, " ("); i > 0 && strings.HasSuffix(stem, ")") {
		if k, err := strconv.Atoi(stem[i+2 : len(stem)-1]); err == nil && k > 0 && k < maxCandidates {
			stem, n = stem[:i], k
		}
	}
	for k := n + 1; k <= n+maxCandidates; k++ {
		if !yield(fmt.Sprintf("%s (%d)%s", stem, k, ext)) {
			return
		}
	}
}

// splitExt splits "a.tar.gz" into "a", ".tar.gz" and "photo.jpg" into
// "photo", ".jpg". A name without a dot (or only a leading one) has no
// extension.
func splitExt(name string) (stem, ext string) {
	ext = path.Ext(name)
	if ext == name || len(ext) > 16 {
		return name, ""
	}
	stem = name[:len(name)-len(ext)]
	if inner := path.Ext(stem); strings.EqualFold(inner, ".tar") && inner != stem {
		stem, ext = stem[:len(stem)-len(inner)], inner+ext
	}
	return stem, ext
}

// createPart creates a new, empty part file for name with O_EXCL, trying
// "name.part", then "stem (1).ext.part" … . O_EXCL never follows a symlink, so
// a link planted at any of these names is skipped, not written through.
func (f *Fetcher) createPart(name string) (*os.File, string, error) {
	var (
		file    *os.File
		partErr error
		chosen  string
	)
	candidates(name, func(c string) bool {
		p := c + partSuffix
		fl, err := createPartFile(f.dir, f.root, p)
		if err == nil {
			file, chosen = fl, p
			return false
		}
		if errors.Is(err, fs.ErrExist) {
			return true
		}
		partErr = err
		return false
	})
	if file != nil {
		return file, chosen, nil
	}
	if partErr == nil {
		partErr = fmt.Errorf("no free name for %q", name)
	}
	return nil, "", partErr
}

// openPart opens an existing part file for resuming. It refuses anything but
// a regular file with a single link: a symlink or hard link planted at the
// part name would otherwise let a download write into another file (A10).
// The check compares the entry before and after opening, so swapping the
// entry in between is caught too.
func (f *Fetcher) openPart(name string) (*os.File, int64, error) {
	if !isPartName(name) {
		return nil, 0, fmt.Errorf("part name %q: %w", name, errConfined)
	}
	before, err := f.root.Lstat(name)
	if err != nil {
		return nil, 0, err
	}
	if !before.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("part %q is not a regular file: %w", name, errConfined)
	}
	file, err := f.root.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, 0, err
	}
	after, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, 0, err
	}
	if !os.SameFile(before, after) || !after.Mode().IsRegular() || linkCount(after) > 1 {
		file.Close()
		return nil, 0, fmt.Errorf("part %q changed or is linked elsewhere: %w", name, errConfined)
	}
	return file, after.Size(), nil
}

// isPartName reports whether name is a single safe component ending in
// ".part", as createPart makes them.
func isPartName(name string) bool {
	base, ok := strings.CutSuffix(name, partSuffix)
	return ok && base != "" && sanitize(base) == base
}

// FinishParts makes the complete downloads of rs final (F3, F4): it syncs
// their parts together, closes them and gives each its final name. Each
// Result must carry a Pending part (Do with Request.Defer); on return it has
// Done and File set, or Class Disk and the reason. Parts synced together
// cost one syncfs(2) on Linux instead of one fsync each — a file system
// writes a batch of small files far faster in one pass — and a part whose
// sync failed is named in its own error.
func (f *Fetcher) FinishParts(rs []*Result) {
	files := make([]*os.File, len(rs))
	for i, r := range rs {
		files[i] = r.Pending.file
	}
	errs := syncAll(f.dir, files)
	for i, r := range rs {
		p := r.Pending
		r.Pending = nil
		err := errs[i]
		if err != nil {
			err = fmt.Errorf("sync %s: %w", p.part, err)
		}
		if cerr := p.file.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %s: %w", p.part, cerr)
		}
		final := ""
		if err == nil {
			final, err = f.name(p.part)
		}
		if final == "" {
			r.Class, r.Retryable, r.Err = Disk, false, fmt.Errorf("finish download: %w", err)
			continue
		}
		r.Done, r.File, r.Part = true, final, ""
	}
}

// syncAll writes files to stable storage, together where the system can:
// with one syncfs of dir's file system when there are several (it also
// flushes whatever else waits to be written there), else — and for each
// file when that fails, so an error lands on its file — one fsync each.
func syncAll(dir *os.File, files []*os.File) []error {
	errs := make([]error, len(files))
	if len(files) > 1 && dir != nil && syncFS(dir) == nil {
		return errs
	}
	for i, file := range files {
		errs[i] = file.Sync()
	}
	return errs
}

// name gives the synced, closed part its final name (F3, F4) and returns
// it. The final name is taken exclusively: Root.Link fails if the name
// exists (even as a dangling symlink), in which case the next candidate is
// tried. Where hard links are unsupported, an O_EXCL placeholder reserves the
// name and Rename replaces that placeholder with the part.
func (f *Fetcher) name(part string) (string, error) {
	base := strings.TrimSuffix(part, partSuffix)
	var (
		final    string
		lastErr  error
		noLinks  bool
		noRename = f.dir == nil
		renamed  bool
	)
	candidates(base, func(c string) bool {
		if !noRename {
			err := renameNoReplace(f.dir, part, c)
			if err == nil {
				final, renamed = c, true
				return false
			}
			if errors.Is(err, fs.ErrExist) {
				return true
			}
			noRename = true
		}
		if !noLinks {
			err := f.root.Link(part, c)
			if err == nil {
				final = c
				return false
			}
			if errors.Is(err, fs.ErrExist) {
				return true
			}
			noLinks = true // e.g. FAT, some network file systems
		}
		ph, err := f.root.OpenFile(c, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			return true
		}
		if err != nil {
			lastErr = err
			return false
		}
		ph.Close()
		if err := f.root.Rename(part, c); err != nil {
			f.root.Remove(c)
			lastErr = err
			return false
		}
		final = c
		return false
	})
	if final == "" {
		if lastErr == nil {
			lastErr = fmt.Errorf("no free name for %q", base)
		}
		return "", lastErr
	}
	if !noLinks && !renamed {
		// After a rename the part name is free and may already belong to
		// another job; only the Link path leaves our part to remove.
		if err := f.root.Remove(part); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return final, fmt.Errorf("remove %s: %w", part, err)
		}
	}
	// The file's bytes were synced before it got its name, so a final
	// name never shows a partial file (F4). The directory itself is not
	// synced per file: like the database's commits (WAL, synchronous=
	// NORMAL) a power cut may lose the newest names, never their bytes.
	return final, nil
}
