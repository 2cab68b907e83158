package fetch

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
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

// candidatesFrom yields name (when from is 0), then "stem (1).ext",
// "stem (2).ext" … from the from-th copy on (F3), with each one's number. A
// name that already ends in " (n)" continues from n, so "a (1).txt" is
// followed by "a (2).txt". Compound extensions such as ".tar.gz" stay
// together.
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

// free returns the first of name's candidates (F3), each with suffix added,
// that nothing in the folder has, that the folder does not keep for others
// (Config.Keep) and that taken (when set) does not refuse. The search
// starts where the last one for the same name stopped: those before were
// taken then, so a thousand downloads all called index.html take a step
// each, not a thousand (a name freed since is left for later; F3 asks only
// for a free one).
func (f *Fetcher) free(name, suffix string, taken func(string) bool) (string, error) {
	key := name + "\x00" + suffix
	f.hintMu.Lock()
	from := f.hints[key]
	f.hintMu.Unlock()
	var (
		found string
		err   error
	)
	candidatesFrom(name, from, func(c string, k int) bool {
		c += suffix
		if f.keep[strings.ToLower(c)] || (taken != nil && taken(c)) {
			return true
		}
		_, lerr := f.root.Lstat(c)
		switch {
		case errors.Is(lerr, fs.ErrNotExist):
			found = c
		case lerr == nil:
			if k > 0 {
				f.hintMu.Lock()
				f.hints[key] = max(f.hints[key], k)
				f.hintMu.Unlock()
			}
			return true
		default:
			err = lerr
		}
		return false
	})
	if found == "" && err == nil {
		err = fmt.Errorf("no free name for %q", name)
	}
	return found, err
}

// PartFor returns a free part name for a download of userURL (the name of
// its last path segment, F2, and ".part"), which taken does not refuse. The
// engine records it for the job before the file is created (J3, F4), so that
// every part in the folder is one the database knows.
func (f *Fetcher) PartFor(userURL *url.URL, taken func(string) bool) string {
	return f.partNamed(partBase(userURL), taken)
}

// PartForJob is PartFor with the job's id in the name ("f.iso.5006.part"):
// for when the names PartFor gives are taken in the database by other jobs,
// as the several workers of a fleet, each with its own folder, may have
// recorded parts of the same names.
func (f *Fetcher) PartForJob(userURL *url.URL, id int64, taken func(string) bool) string {
	return f.partNamed(partBase(userURL)+"."+strconv.FormatInt(id, 10), taken)
}

// partBase is the name a part of userURL's download starts from.
func partBase(userURL *url.URL) string {
	if name := urlName(userURL); name != "" {
		return name
	}
	return fallbackName
}

// partNamed is the first free part name of name's candidates.
func (f *Fetcher) partNamed(name string, taken func(string) bool) string {
	part, err := f.free(name, partSuffix, taken)
	if err != nil {
		// Nothing free under a million copies, or the folder unreadable:
		// the create fails with the reason.
		return name + partSuffix
	}
	return part
}

// FreeName returns the first of base's candidates (F3) that is free now and
// that taken (when set) does not refuse: the final name a finished download
// is recorded with before its part takes it.
func (f *Fetcher) FreeName(base string, taken func(string) bool) (string, error) {
	if !safePath(base) {
		return "", fmt.Errorf("file name %q: %w", base, errConfined)
	}
	return f.free(base, "", taken)
}

// createFile creates part for reading and writing, failing with
// fs.ErrExist when anything (a symlink included) is there: O_EXCL never
// follows a link, so one planted at the part's name is not written through
// (A10).
func (f *Fetcher) createFile(part string) (*os.File, error) {
	if !isPartName(part) {
		return nil, fmt.Errorf("part name %q: %w", part, errConfined)
	}
	if err := f.realDirs(part); err != nil {
		return nil, err
	}
	file, err := f.root.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if dir := path.Dir(part); errors.Is(err, fs.ErrNotExist) && dir != "." {
		// A crawl's folder, removed since its part was chosen (PruneDirs
		// of a file not fetched): made again, inside the root.
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		file, err = f.root.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	}
	return file, err
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
	if err := f.realDirs(name); err != nil {
		return nil, 0, err
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

// isPartName reports whether name is a safe path (see safePath) ending in
// ".part", as PartFor and TreePartFor make them.
func isPartName(name string) bool {
	base, ok := strings.CutSuffix(name, partSuffix)
	return ok && safePath(base)
}

// safePath reports whether name is one safe component, or several joined by
// "/" (a crawl's tree, W9), each safe (F1, F2): nothing in it can lead out
// of the download folder.
func safePath(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range strings.Split(name, "/") {
		if !safeComponent(c) && (i > 0 || !hostDirOK(c)) {
			return false
		}
	}
	return true
}

// hostDir is the folder a crawl keeps a host's files in (W9): its host key
// as it is ("127.0.0.1:8080", "[::1]:8080"), as wget names it on Linux; on
// Windows, where ":" cannot be in a name, "127.0.0.1+8080". A host key that
// would not be a safe name otherwise is cleaned as any name is.
func hostDir(u *url.URL) string {
	host, err := HostKeyOf(u)
	if err != nil {
		return "unknown-host"
	}
	if runtime.GOOS == "windows" {
		host = strings.ReplaceAll(host, ":", "+")
	}
	if sanitize(host) == host || hostDirOK(host) {
		return host
	}
	return SafeName(strings.ReplaceAll(host, ":", "+"))
}

// hostDirOK reports whether c is safe as the first component of a tree
// path, where a host folder may hold ":" on systems that allow it.
func hostDirOK(c string) bool {
	if runtime.GOOS == "windows" {
		return false
	}
	alt := strings.ReplaceAll(c, ":", "+")
	return alt != c && sanitize(alt) == alt
}

// Rename gives a complete, synced part its final name (F3, F4) in one step
// that never replaces anything: it fails with fs.ErrExist when final exists
// (a symlink included, which is never followed). Where the system has no
// such rename, the part is linked to final and then removed; where it has
// no links either, an O_EXCL placeholder reserves final and the part is
// renamed over it.
func (f *Fetcher) Rename(part, final string) error {
	dir, base := path.Split(final)
	pdir, pbase := path.Split(part)
	if !isPartName(part) || !safePath(final) || f.keep[strings.ToLower(final)] || dir != pdir {
		return fmt.Errorf("rename %q to %q: %w", part, final, errConfined)
	}
	d := f.dir
	if dir != "" {
		// The folder the two are in, opened through the root, so that the
		// rename happens there whatever its path leads through (F1).
		sub, err := f.root.Open(strings.TrimSuffix(dir, "/"))
		if err != nil {
			return err
		}
		defer sub.Close()
		d = sub
	}
	err := renameNoReplace(d, pbase, base)
	if !errors.Is(err, errNoRename) {
		return err
	}
	switch err := f.root.Link(part, final); {
	case err == nil:
		if err := f.root.Remove(part); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", part, err)
		}
		return nil
	case errors.Is(err, fs.ErrExist):
		return fs.ErrExist
	}
	ph, err := f.root.OpenFile(final, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	ph.Close()
	if err := f.root.Rename(part, final); err != nil {
		f.root.Remove(final)
		return err
	}
	return nil
}

// Exists reports whether name is in the download folder (as anything).
func (f *Fetcher) Exists(name string) (bool, error) {
	_, err := f.root.Lstat(name)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
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

// keptNames returns the lower-case names of the files in paths that are in
// the folder dir.
func keptNames(dir *os.File, paths []string) map[string]bool {
	here, err := dir.Stat()
	if err != nil {
		return nil
	}
	keep := map[string]bool{}
	for _, p := range paths {
		if st, err := os.Stat(filepath.Dir(p)); err == nil && os.SameFile(st, here) {
			keep[strings.ToLower(filepath.Base(p))] = true
		}
	}
	return keep
}

// errNoRename says the system cannot rename without replacing; Rename then
// links the part to its final name and removes the part.
var errNoRename = errors.New("rename without replace is not supported here")

// TreePath is where a crawl saves the file of u (W9): HOST/PATH, HOST the
// host key as it is (":" becomes "+" on Windows), each PATH component
// cleaned as F2 cleans a name, dot-segments resolved, "index.html" for a
// path ending in "/", a query folded into the last name. Nothing in it can
// lead out of the folder (F1).
func TreePath(u *url.URL) string {
	host := hostDir(u)
	parts := []string{host}
	p := path.Clean("/" + u.EscapedPath())
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, s := range segs {
		if dec, err := url.PathUnescape(s); err == nil {
			s = dec
		}
		s = strings.ReplaceAll(s, "/", "_") // an escaped "/" stays inside its segment
		s = strings.ReplaceAll(s, "\\", "_")
		if c := sanitize(s); c != "" {
			parts = append(parts, c)
		}
	}
	last := ""
	if strings.HasSuffix(u.EscapedPath(), "/") || len(parts) == 1 {
		last = fallbackName
	} else {
		last, parts = parts[len(parts)-1], parts[:len(parts)-1]
	}
	if q := u.RawQuery; q != "" {
		if dec, err := url.QueryUnescape(q); err == nil {
			q = dec
		}
		q = strings.NewReplacer("/", "_", "\\", "_").Replace(q) // the query stays inside the name
		last = SafeName(last + "?" + q)
	}
	return strings.Join(append(parts, last), "/")
}

// TreePartFor returns a free part name for the crawl file at tree (a
// TreePath), which taken does not refuse, with the folders it needs made: a
// folder whose name a file has takes the next free name (F3).
func (f *Fetcher) TreePartFor(tree string, taken func(string) bool) (string, error) {
	dir, base := path.Split(tree)
	dir, err := f.ensureDir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return "", err
	}
	if dir != "" {
		base = dir + "/" + base
	}
	return f.free(base, partSuffix, taken)
}

// ensureDir makes the folders of dir (a safe path) inside the download
// folder, and returns the path they have: a component something other than
// a folder has takes the first of its free names (F3) instead.
func (f *Fetcher) ensureDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	if !safePath(dir) {
		return "", fmt.Errorf("folder %q: %w", dir, errConfined)
	}
	made := ""
	for _, c := range strings.Split(dir, "/") {
		var use string
		candidatesFrom(c, 0, func(cand string, _ int) bool {
			p := cand
			if made != "" {
				p = made + "/" + cand
			}
			st, err := f.root.Lstat(p)
			switch {
			case err == nil && st.IsDir():
				use = p
			case errors.Is(err, fs.ErrNotExist):
				if f.root.Mkdir(p, 0o755) == nil || isDir(f.root, p) {
					use = p
				}
			}
			return use == ""
		})
		if use == "" {
			return "", fmt.Errorf("no folder free for %q in %q", c, made)
		}
		made = use
	}
	return made, nil
}

func isDir(r *os.Root, p string) bool {
	st, err := r.Lstat(p)
	return err == nil && st.IsDir()
}

// Open opens a file in the download folder for reading, through the root:
// a crawl reads its pages' links from their synced parts (W2).
func (f *Fetcher) Open(name string) (*os.File, error) {
	if !isPartName(name) && !safePath(name) {
		return nil, fmt.Errorf("open %q: %w", name, errConfined)
	}
	return f.root.Open(name)
}

// PruneDirs removes the folders of name, from the innermost out, while they
// are empty: the folders chosen for a crawl's file that is not fetched.
func (f *Fetcher) PruneDirs(name string) {
	if !isPartName(name) && !safePath(name) {
		return
	}
	for dir := path.Dir(name); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if f.root.Remove(dir) != nil {
			return
		}
	}
}

// realDirs refuses a path (of a crawl's tree) any of whose folders is
// there as something other than a real folder: a symlinked subfolder is
// never written through (RELIABILITY A10). Folders not there yet pass.
func (f *Fetcher) realDirs(name string) error {
	for dir := path.Dir(name); dir != "." && dir != "/"; dir = path.Dir(dir) {
		st, err := f.root.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		case !st.IsDir():
			return fmt.Errorf("folder %q is not a real folder: %w", dir, errConfined)
		}
	}
	return nil
}
