package crawl

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html/charset"
)

// The limits of one sitemap file (W7), those of the sitemaps protocol.
const (
	// MaxSitemapBytes is the most a sitemap file may hold, uncompressed.
	MaxSitemapBytes = 50 << 20
	// MaxSitemapURLs is the most entries (<loc>s) a sitemap file may list.
	MaxSitemapURLs = 50000
)

// maxXMLRun bounds a run of bytes without "<": encoding/xml holds a whole
// text node (or comment, or tag) in memory before it checks it, so a gzip
// bomb of zeros or of spaces would otherwise cost MaxSitemapBytes of
// memory. No sitemap needs a megabyte of text in one node.
const maxXMLRun = 1 << 20

// The refusals of ParseSitemap. Each error it returns wraps one of them
// (test with errors.Is) and adds the detail.
var (
	// ErrSitemapTooBig: the file is over MaxSitemapBytes uncompressed,
	// a gzip bomb for instance.
	ErrSitemapTooBig = errors.New("sitemap over 50 MB uncompressed")
	// ErrSitemapTooManyURLs: the file lists more than MaxSitemapURLs.
	ErrSitemapTooManyURLs = errors.New("sitemap lists more than 50,000 URLs")
	// ErrNotSitemap: the file is not XML, not well-formed, has another root
	// element than <urlset> or <sitemapindex>, or is broken gzip.
	ErrNotSitemap = errors.New("not a sitemap")
)

// Sitemap is what one sitemap file listed.
type Sitemap struct {
	// URLs are the page URLs of a <urlset>, in file order.
	URLs []*url.URL
	// Sitemaps are the sitemap URLs of a <sitemapindex>, in file order.
	// The engine fetches them in turn, up to an index depth of 3; an
	// index may list itself, and the engine's de-duplication ends that.
	Sitemaps []*url.URL
	// Skipped counts the <loc> entries dropped because they are not an
	// absolute http or https URL with a valid host.
	Skipped int
}

// ParseSitemap reads one sitemap file from r (W7): an XML <urlset> or
// <sitemapindex>, either of them possibly gzip-compressed. Gzip is
// recognised by its magic bytes (1f 8b), not by a file name or a header;
// one layer is undone.
//
// The file is read as a stream with encoding/xml, so memory stays small
// whatever the file's size: a text node, comment or tag over 1 MiB (more
// than a megabyte without a "<") is refused as not a sitemap. Elements are matched by local name, so a wrong or
// missing namespace is accepted; only a <loc> directly inside <url> (or
// <sitemap>) counts, so the <image:loc> of an image extension does not.
// Bare "&"s, common in the wild, are read as themselves; an XML encoding
// other than UTF-8 is converted.
//
// A <loc> is kept if, trimmed of spaces, it is an absolute http or https
// URL with a valid host: relative URLs and other schemes are counted in
// Skipped, never resolved. URLs on other hosts are kept: the crawl's
// scope decides about them. The fragment is dropped.
//
// A refused file gives an error wrapping ErrSitemapTooBig,
// ErrSitemapTooManyURLs or ErrNotSitemap with the reason. The entries read
// before the refusal are still returned with it (at most MaxSitemapURLs);
// the engine may use them or not. A read error from r is returned the
// same way.
func ParseSitemap(r io.Reader) (Sitemap, error) {
	src := &errReader{r: r}
	br := bufio.NewReader(src)
	var in io.Reader = br
	gz := false
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return Sitemap{}, sitemapReadError(src, true, err)
		}
		in, gz = zr, true
	}
	lim := &limitReader{r: in, n: MaxSitemapBytes}
	d := xml.NewDecoder(lim)
	d.Strict = false
	d.CharsetReader = charset.NewReaderLabel

	var (
		sm      Sitemap
		list    *[]*url.URL
		entry   string // "url" or "sitemap"
		depth   int
		inEntry bool
		inLoc   bool
		loc     strings.Builder
		count   int
		hosts   = make(hostCache)
	)
	for {
		tok, err := d.Token()
		if err != nil {
			if lim.over {
				return sm, fmt.Errorf("%w: read %d bytes and there is more", ErrSitemapTooBig, MaxSitemapBytes)
			}
			if lim.longRun {
				return sm, fmt.Errorf("%w: over 1 MiB of text without markup", ErrNotSitemap)
			}
			if src.err != nil || (gz && lim.err != nil) {
				return sm, sitemapReadError(src, gz, lim.err)
			}
			if err == io.EOF {
				if list == nil {
					return sm, fmt.Errorf("%w: no root element", ErrNotSitemap)
				}
				return sm, nil
			}
			return sm, fmt.Errorf("%w: %v", ErrNotSitemap, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 1 && list == nil:
				switch t.Name.Local {
				case "urlset":
					list, entry = &sm.URLs, "url"
				case "sitemapindex":
					list, entry = &sm.Sitemaps, "sitemap"
				default:
					return sm, fmt.Errorf("%w: root element <%s>, want <urlset> or <sitemapindex>", ErrNotSitemap, t.Name.Local)
				}
			case depth == 2:
				inEntry = t.Name.Local == entry
			case depth == 3 && inEntry && t.Name.Local == "loc":
				inLoc = true
				loc.Reset()
			}
		case xml.EndElement:
			if depth == 3 && inLoc {
				inLoc = false
				if count++; count > MaxSitemapURLs {
					return sm, fmt.Errorf("%w: stopped at entry %d", ErrSitemapTooManyURLs, count)
				}
				if u, ok := resolve(nil, strings.TrimSpace(loc.String()), hosts); ok {
					*list = append(*list, u)
				} else {
					sm.Skipped++
				}
			}
			if depth == 2 {
				inEntry = false
			}
			depth--
			if depth == 0 && list != nil {
				return sm, nil // the root is closed: what follows is not read
			}
		case xml.CharData:
			if inLoc {
				loc.Write(t)
			} else if list == nil && len(bytes.TrimLeft(bytes.TrimSpace(t), "\ufeff")) > 0 {
				return sm, fmt.Errorf("%w: text before the root element (not XML)", ErrNotSitemap)
			}
		}
	}
}

// sitemapReadError is the error for a failed read: of r itself, or of the
// gzip stream over it.
func sitemapReadError(src *errReader, gz bool, err error) error {
	if src.err != nil {
		return fmt.Errorf("sitemap: reading: %w", src.err)
	}
	if gz {
		return fmt.Errorf("%w: gzip: %v", ErrNotSitemap, err)
	}
	return fmt.Errorf("sitemap: reading: %w", err)
}

// errReader remembers the first error other than io.EOF from r.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// limitReader reads at most n bytes from r; past them it fails, noting
// over when r had more. It also fails, noting longRun, after maxXMLRun
// bytes without a "<", and remembers r's first error other than EOF.
type limitReader struct {
	r       io.Reader
	n       int64
	over    bool
	run     int // bytes since the last "<"
	longRun bool
	err     error
}

var errLimit = errors.New("sitemap: size limit")

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		var b [1]byte
		if n, _ := io.ReadFull(l.r, b[:]); n > 0 {
			l.over = true
			return 0, errLimit
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if err != nil && err != io.EOF && l.err == nil {
		l.err = err
	}
	if i := bytes.LastIndexByte(p[:n], '<'); i >= 0 {
		l.run = n - i - 1
	} else {
		l.run += n
	}
	if l.run > maxXMLRun {
		l.longRun = true
		return 0, errLimit
	}
	return n, err
}
