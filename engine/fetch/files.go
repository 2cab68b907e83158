package fetch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// partSuffix marks files that are still being downloaded (F4).
const partSuffix = ".part"

// maxCandidates bounds the " (n)" search so a folder full of copies cannot
// make a download spin forever. The Fetcher remembers where each name's
// search last ended, so this many copies cost one search, not one each.
const maxCandidates = 1 << 20

// errConfined is wrapped by every error that means "this would write through
// something that is not ours" (F1, RELIABILITY A10).
var errConfined = errors.New("refused to write outside the download folder")

// candidates yields name, then "stem (1).ext", "stem (2).ext" … (F3). A name
// that already ends in " (n)" continues from n, so "a (1).txt" is followed by
// "a (2).txt". Compound extensions such as ".tar.gz" stay together.
func candidates(name string, yield func(string) bool) {
	candidatesFrom(name, 0, func(c string, _ int) bool { return yield(c) })
}

// candidatesFrom is candidates starting at the from-th one (0 is name
// itself, k ≥ 1 the k-th copy), passing each one's number to yield.
func candidatesFrom(name string, from int, yield func(c string, k int) bool) {
	if from == 0 && !yield(name, 0) {
		return
	}
	stem, ext := splitExt(name)
	n := 0
	if i := strings.LastIndex(stem, " ("); i > 0 && strings.HasSuffix(stem, ")") {
		if k, err := strconv.Atoi(stem[i+2 : len(stem)-1]); err == nil && k > 0 && k < maxCandidates {
			stem, n = stem[:i], k
		}
	}
	for k := max(n+1, from); k <= n+maxCandidates; k++ {
		if !yield(fmt.Sprintf("%s (%d)%s", stem, k, ext), k) {
			return
		}
	}
}

// candidates is the package's candidates with suffix added to each name,
// leaving out the names the folder keeps for others (Config.Keep).
func (f *Fetcher) candidates(name, suffix string, yield func(string) bool) {
	f.candidatesFrom(name, suffix, 0, func(c string, _ int) bool { return yield(c) })
}

func (f *Fetcher) candidatesFrom(name, suffix string, from int, yield func(c string, k int) bool) {
	candidatesFrom(name, from, func(c string, k int) bool {
		c += suffix
		if len(f.keep) > 0 && f.keep[strings.ToLower(c)] {
			return true
		}
		return yield(c, k)
	})
}

// freeCandidates is candidates for finding a free name for a new file (a
// part, or the final name picked for one): it starts where the last such
// search for the same name stopped (the name it took, or the one that
// failed), since those before were taken then, so that a thousand downloads
// all called index.html take a step each, not a thousand. A name freed since
// is left for later; F3 asks only for one that is free.
func (f *Fetcher) freeCandidates(name, suffix string, yield func(string) bool) {
	key := name + "\x00" + suffix
	f.hintMu.Lock()
	from := f.hints[key]
	f.hintMu.Unlock()
	f.candidatesFrom(name, suffix, from, func(c string, k int) bool {
		if yield(c) {
			return true
		}
		if k > 0 {
			f.hintMu.Lock()
			f.hints[key] = max(f.hints[key], k)
			f.hintMu.Unlock()
		}
		return false
	})
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

// createPart creates a new, empty part file for name, trying "name.part",
// then "stem (1).ext.part" … . Each name is taken exclusively — O_EXCL, or a
// link, neither of which follows a symlink — so a link planted at any of
// these names is skipped, not written through. The part is marked as job's
// (see OwnedParts) from the instant it has its name where the system can
// (createMarkedPart); elsewhere just after.
func (f *Fetcher) createPart(name string, job int64) (*os.File, string, error) {
	parts := func(yield func(string) bool) {
		f.freeCandidates(name, partSuffix, yield)
	}
	mark := ""
	if f.owner != "" && job > 0 && f.dir != nil {
		mark = partMark(f.owner, job)
	}
	if mark != "" && !f.noMarked.Load() {
		file, part, err := createMarkedPart(f.dir, mark, parts)
		switch {
		case err == nil:
			return file, part, nil
		case errors.Is(err, fs.ErrExist):
			return nil, "", fmt.Errorf("no free name for %q", name)
		case errors.Is(err, errNoMark):
			f.noMarked.Store(true) // not here: mark after creating, from now on
		default:
			return nil, "", err
		}
	}
	var (
		file    *os.File
		partErr error
		chosen  string
	)
	parts(func(p string) bool {
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
		if mark != "" {
			markPart(file, mark)
		}
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

// FinishParts makes the complete downloads of rs final (F3, F4): SyncParts,
// then NameParts. Each Result must carry a Pending part (Do with
// Request.Defer); on return it has Done and File set, or Class Disk and the
// reason. A caller that records each final name before the part takes it
// (so that a crash in between cannot lose the name) calls the two itself.
func (f *Fetcher) FinishParts(rs []*Result) {
	f.SyncParts(rs)
	f.NameParts(rs)
}

// SyncParts syncs the complete parts of rs together, closes them and picks
// each a final name that is free now (F3), without taking it yet: on return
// each Result has File set to that name and Pending still set (its part
// closed), or Class Disk and the reason with Pending nil and the part kept.
// Names picked in one call are distinct. Parts synced together cost one
// syncfs(2) on Linux instead of one fsync each — a file system writes a
// batch of small files far faster in one pass — and a part whose sync
// failed is named in its own error.
func (f *Fetcher) SyncParts(rs []*Result) {
	files := make([]*os.File, len(rs))
	for i, r := range rs {
		files[i] = r.Pending.file
	}
	errs := syncAll(f.dir, files)
	picked := make(map[string]bool, len(rs))
	for i, r := range rs {
		p := r.Pending
		err := errs[i]
		base := strings.TrimSuffix(p.part, partSuffix)
		if p.held != "" {
			base = p.held
		}
		if err != nil {
			err = fmt.Errorf("sync %s: %w", p.file.Name(), err)
		}
		if p.held == "" || err != nil { // a held body stays open: its file has no name to open again
			if cerr := p.file.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("close %s: %w", p.part, cerr)
			}
			p.file = nil
		}
		final := ""
		if err == nil {
			final, err = f.pick(base, picked)
		}
		if final == "" {
			f.Release(r)
			r.Class, r.Retryable, r.Err = Disk, false, fmt.Errorf("finish download: %w", err)
			continue
		}
		picked[final] = true
		r.File = final
	}
}

// NameParts gives each part that SyncParts left pending its final name:
// File, or the next free one if File was taken since it was picked. On
// return each such Result has Done set, File its name and Part and Pending
// cleared, or Class Disk and the reason with the part kept under its name.
// Results without a pending part are left as they are.
func (f *Fetcher) NameParts(rs []*Result) {
	for _, r := range rs {
		p := r.Pending
		if p == nil {
			continue
		}
		r.Pending = nil
		var (
			final string
			err   error
		)
		if p.held != "" {
			// Synced before, and linked now: an error closing it changes nothing on disk.
			final, err = f.nameHeld(p.file, r.File)
			p.file.Close()
			p.file = nil
		} else {
			final, err = f.name(p.part, r.File)
		}
		if final == "" {
			r.Class, r.Retryable, r.Err = Disk, false, fmt.Errorf("finish download: %w", err)
			r.File = ""
			continue
		}
		f.unmark(final)
		r.Done, r.File, r.Part = true, final, ""
	}
}

// NameLeftover gives a complete part that a crash left without its final
// name that name: file, or the next free one after it (F3), and returns the
// name that holds the download. It names the part only if it is a regular
// file of its own (A10) holding exactly size bytes whose SHA-256 is sum
// (hex): since the crash, the part name may have been taken by another
// download. When the part is gone, is a hard link to one of them, or holds
// other bytes (another download took the part name since), it took its name
// before the crash: file, or — if file was taken in between — a later
// candidate holding those bytes. It returns "" and no error when
// the download is not found under any of these names, and an error
// wrapping fs.ErrNotExist when neither the part nor file is in the download
// folder: the download may be in another folder. A download held in a file
// with no name (part "") is looked for under file and the candidates after
// it only: "" then means its bytes went with the crash.
func (f *Fetcher) NameLeftover(part, file string, size int64, sum string) (string, error) {
	named, err := f.nameLeftover(part, file, size, sum)
	if named != "" {
		f.unmark(named)
	}
	return named, err
}

func (f *Fetcher) nameLeftover(part, file string, size int64, sum string) (string, error) {
	if part == "" && sanitize(file) == file {
		// Held in a file with no name (see hold): it had its name before the
		// crash, file or a candidate after it, or it went with the process.
		return f.findNamed(file, size, sum)
	}
	if !isPartName(part) || sanitize(file) != file {
		return "", fmt.Errorf("name %q as %q: %w", part, file, errConfined)
	}
	pst, perr := f.root.Lstat(part)
	fst, ferr := f.root.Lstat(file)
	switch {
	case perr == nil && ferr == nil && os.SameFile(pst, fst):
		// Named by a hard link, the part's own name not yet removed.
		if err := f.root.Remove(part); err != nil {
			return "", err
		}
		return file, nil
	case errors.Is(perr, fs.ErrNotExist) && errors.Is(ferr, fs.ErrNotExist):
		return "", fmt.Errorf("neither %s nor %s is in %s: %w", part, file, f.root.Name(), fs.ErrNotExist)
	case errors.Is(perr, fs.ErrNotExist):
		return f.findNamed(file, size, sum)
	case perr == nil && pst.Mode().IsRegular() && linkCount(pst) > 1:
		// Named by a hard link to a later candidate, the part's own name
		// not yet removed.
		if c := f.sameAs(pst, file); c != "" {
			if err := f.root.Remove(part); err != nil {
				return "", err
			}
			return c, nil
		}
	}
	fl, n, err := f.openPart(part)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errConfined):
		// Not a part of its own: the download took its name before the
		// crash, and something else took the part name since.
		return f.findNamed(file, size, sum)
	case err != nil:
		return "", err
	}
	same := n == size
	if same {
		same, err = sumIs(fl, sum)
	}
	if cerr := fl.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", part, err)
	}
	if !same {
		// Another download's part: this one took its name before the
		// crash, and the other its part name since.
		return f.findNamed(file, size, sum)
	}
	// An empty file at file may be the placeholder of a crash inside name,
	// or anybody's: it is kept either way (F3).
	return f.name(part, file)
}

// findNamed returns the name, file or a candidate after it (F3), under
// which a part took its name: the first one, in order, holding exactly
// size bytes whose SHA-256 is sum. It returns "" when none holds them.
func (f *Fetcher) findNamed(file string, size int64, sum string) (found string, err error) {
	err = f.eachTaken(file, func(c string, st fs.FileInfo) (bool, error) {
		if !st.Mode().IsRegular() || st.Size() != size {
			return true, nil
		}
		fl, err := f.root.Open(c)
		if err != nil {
			return false, err
		}
		defer fl.Close()
		same, err := sumIs(fl, sum)
		if err != nil {
			return false, fmt.Errorf("read %s: %w", c, err)
		}
		if same {
			found = c
		}
		return !same, nil
	})
	return found, err
}

// sameAs returns the first of file's candidates (F3) that is the file st
// describes; "" when none is.
func (f *Fetcher) sameAs(st fs.FileInfo, file string) (found string) {
	f.eachTaken(file, func(c string, cst fs.FileInfo) (bool, error) {
		if os.SameFile(st, cst) {
			found = c
		}
		return found == "", nil
	})
	return found
}

// eachTaken calls fn with file and each candidate after it (F3) that
// exists, in order, while fn says to go on: up to the first free name,
// since a part takes the first free candidate. It returns fn's error, or
// the first that is not a free name.
func (f *Fetcher) eachTaken(file string, fn func(c string, st fs.FileInfo) (more bool, err error)) error {
	var err error
	f.candidates(file, "", func(c string) bool {
		st, lerr := f.root.Lstat(c)
		if lerr != nil {
			if !errors.Is(lerr, fs.ErrNotExist) {
				err = lerr
			}
			return false
		}
		more, ferr := fn(c, st)
		err = ferr
		return more && ferr == nil
	})
	return err
}

// sumIs reports whether the SHA-256 of what fl holds is sum (hex).
func sumIs(fl *os.File, sum string) (bool, error) {
	h := sha256.New()
	if _, err := io.Copy(h, fl); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == sum, nil
}

// unmark takes the mark off a part that has its final name, if that name
// looks like a part's (F2 allows "x.part"): a finished file must never be
// taken for a part. Other finished files keep the mark, which names no part
// and costs nothing to leave.
func (f *Fetcher) unmark(name string) {
	if f.owner != "" && f.dir != nil && isPartName(name) {
		// A file it cannot open, readMark cannot open either: never taken
		// for a part.
		_ = unmark(f.dir, name)
	}
}

// partMark is what marks a part as job's, for owner.
func partMark(owner string, job int64) string { return owner + "/" + strconv.FormatInt(job, 10) }

// OwnedParts returns the part files in the download folder that were
// created for Config.Owner, each with the job it was created for. Only
// regular files with a part name are looked at, and none is followed
// through a symlink (A10). Where the system keeps no marks, it finds none.
func (f *Fetcher) OwnedParts() (map[string]int64, error) {
	if f.owner == "" {
		return nil, nil
	}
	d, err := f.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	owned := map[string]int64{}
	for {
		es, err := d.ReadDir(1024)
		for _, e := range es {
			if !e.Type().IsRegular() || !isPartName(e.Name()) {
				continue
			}
			mark, ok := readMark(f.dir, e.Name())
			owner, job, found := strings.Cut(mark, "/")
			if !ok || !found || owner != f.owner {
				continue
			}
			if id, err := strconv.ParseInt(job, 10, 64); err == nil && id > 0 {
				owned[e.Name()] = id
			}
		}
		if errors.Is(err, io.EOF) {
			return owned, nil
		}
		if err != nil {
			return owned, err
		}
	}
}

// RemovePart removes a part that nothing records, so that the next
// download of its file takes its name again instead of "name (1)". It
// refuses a name that is not a part name (F1).
func (f *Fetcher) RemovePart(part string) error {
	if !isPartName(part) {
		return fmt.Errorf("remove %q: %w", part, errConfined)
	}
	return f.root.Remove(part)
}

// RemoveEmptyPart removes part if it is an empty regular file, and leaves
// it otherwise: whatever a failed attempt reported, a part that holds bytes
// (from an earlier attempt) is kept for a resume. It reports whether it
// removed it.
func (f *Fetcher) RemoveEmptyPart(part string) (bool, error) {
	if !isPartName(part) {
		return false, fmt.Errorf("remove %q: %w", part, errConfined)
	}
	st, err := f.root.Lstat(part)
	if err != nil || !st.Mode().IsRegular() || st.Size() != 0 {
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		return false, err
	}
	return true, f.root.Remove(part)
}

// pick returns the first of base's candidates (F3) that is free now and not
// in taken.
func (f *Fetcher) pick(base string, taken map[string]bool) (string, error) {
	var (
		free string
		err  error
	)
	f.freeCandidates(base, "", func(c string) bool {
		if taken[c] {
			return true
		}
		_, err = f.root.Lstat(c)
		if errors.Is(err, fs.ErrNotExist) {
			free, err = c, nil
			return false
		}
		return err == nil // taken; any other error stops the search
	})
	if free == "" && err == nil {
		err = fmt.Errorf("no free name for %q", base)
	}
	return free, err
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

// nameHeld gives the synced body held in file, which has no name, its
// final name (F3, F4): first, or a candidate after it. The name is taken by
// a link, which fails where anything is (a symlink included), and then the
// next candidate is tried. Where the system refuses the link, the body is
// copied into a part, synced and named as any part, and bodies are not
// held from then on.
func (f *Fetcher) nameHeld(file *os.File, first string) (string, error) {
	final, err := linkFirstFree(int(file.Fd()), f.dir, func(yield func(string) bool) {
		f.candidates(first, "", yield)
	}, nil)
	if errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("no free name for %q", first)
	}
	if !errors.Is(err, errNoUnnamed) {
		return final, err
	}
	f.noHeld.Store(true)
	out, part, err := f.createPart(first, 0)
	if err != nil {
		return "", fmt.Errorf("create part file: %w", err)
	}
	_, err = io.Copy(out, io.NewSectionReader(file, 0, 1<<62))
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.root.Remove(part)
		return "", fmt.Errorf("copy into %s: %w", part, err)
	}
	return f.name(part, first)
}

// name gives the synced, closed part its final name (F3, F4), first, or a
// candidate after it, and returns it. The final name is taken exclusively:
// Root.Link fails if the name exists (even as a dangling symlink), in which
// case the next candidate is tried. Where hard links are unsupported, an O_EXCL placeholder reserves the
// name and Rename replaces that placeholder with the part.
func (f *Fetcher) name(part, first string) (string, error) {
	var (
		final    string
		lastErr  error
		noLinks  bool
		noRename = f.dir == nil
		renamed  bool
	)
	f.candidates(first, "", func(c string) bool {
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
			lastErr = fmt.Errorf("no free name for %q", first)
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
