package crawl

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}

func strs[T fmt.Stringer](xs []T) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, x.String())
	}
	return out
}

const urlset = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://example.com/</loc><lastmod>2026-01-01</lastmod></url>
  <url><loc>
      http://example.com/a?x=1&amp;y=2
  </loc><changefreq>daily</changefreq></url>
</urlset>`

const index = `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>http://example.com/sitemap1.xml.gz</loc></sitemap>
  <sitemap><loc>http://example.com/sitemap_index.xml</loc></sitemap>
</sitemapindex>`

func TestCrawl_W7_Sitemap(t *testing.T) {
	cases := []struct {
		name     string
		body     []byte
		urls     []string
		sitemaps []string
		skipped  int
	}{
		{"urlset", []byte(urlset), []string{"http://example.com/", "http://example.com/a?x=1&y=2"}, nil, 0},
		{"gzip urlset", gz(t, urlset), []string{"http://example.com/", "http://example.com/a?x=1&y=2"}, nil, 0},
		{"index, listing itself too", []byte(index), nil, []string{"http://example.com/sitemap1.xml.gz", "http://example.com/sitemap_index.xml"}, 0},
		{"gzip index", gz(t, index), nil, []string{"http://example.com/sitemap1.xml.gz", "http://example.com/sitemap_index.xml"}, 0},
		{"no namespace", []byte(`<urlset><url><loc>http://h/1</loc></url></urlset>`), []string{"http://h/1"}, nil, 0},
		{"byte order mark", []byte("\ufeff<urlset><url><loc>http://h/1</loc></url></urlset>"), []string{"http://h/1"}, nil, 0},
		{"bare ampersand", []byte(`<urlset><url><loc>http://h/?a=1&b=2</loc></url></urlset>`), []string{"http://h/?a=1&b=2"}, nil, 0},
		{"cdata", []byte(`<urlset><url><loc><![CDATA[http://h/?a=1&b=2]]></loc></url></urlset>`), []string{"http://h/?a=1&b=2"}, nil, 0},
		{"latin-1 declared", []byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset><url><loc>http://h/caf\xe9</loc></url></urlset>"), []string{"http://h/caf%C3%A9"}, nil, 0},
		{"image loc is not a page", []byte(`<urlset xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
			<url><loc>http://h/page</loc><image:image><image:loc>http://h/i.jpg</image:loc></image:image></url></urlset>`), []string{"http://h/page"}, nil, 0},
		{"loc outside url ignored", []byte(`<urlset><loc>http://h/stray</loc><url><loc>http://h/ok</loc></url></urlset>`), []string{"http://h/ok"}, nil, 0},
		{"sitemap entries in a urlset ignored", []byte(`<urlset><sitemap><loc>http://h/s.xml</loc></sitemap></urlset>`), nil, nil, 0},
		{"relative and foreign", []byte(`<urlset>
			<url><loc>/relative</loc></url>
			<url><loc>page.html</loc></url>
			<url><loc>ftp://h/file</loc></url>
			<url><loc>mailto:a@h</loc></url>
			<url><loc>javascript:alert(1)</loc></url>
			<url><loc>http://[::1</loc></url>
			<url><loc></loc></url>
			<url><loc>https://other.example/kept</loc></url>
			<url><loc>HTTP://H/upper#frag</loc></url>
		</urlset>`), []string{"https://other.example/kept", "http://H/upper"}, nil, 7},
		{"empty urlset", []byte(`<urlset/>`), nil, nil, 0},
		{"junk after the root not read", []byte(`<urlset><url><loc>http://h/1</loc></url></urlset><junk`), []string{"http://h/1"}, nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sm, err := ParseSitemap(bytes.NewReader(tc.body))
			require.NoError(t, err)
			assert.Equal(t, orEmpty(tc.urls), strs(sm.URLs))
			assert.Equal(t, orEmpty(tc.sitemaps), strs(sm.Sitemaps))
			assert.Equal(t, tc.skipped, sm.Skipped)
		})
	}
}

func TestCrawl_W7_IndexListsItself(t *testing.T) {
	const self = "https://example.com/sitemap_index.xml"
	sm, err := ParseSitemap(strings.NewReader(`<sitemapindex>
		<sitemap><loc>https://example.com/sitemap_index.xml</loc></sitemap>
		<sitemap><loc>https://EXAMPLE.com:443/sitemap_index.xml#again</loc></sitemap>
		<sitemap><loc>https://example.com/posts.xml</loc></sitemap>
	</sitemapindex>`))
	require.NoError(t, err)
	require.Len(t, sm.Sitemaps, 3, "the index is returned as listed: the engine de-duplicates")
	assert.Equal(t, self, sm.Sitemaps[0].String())
	assert.Equal(t, Key(mustParse(t, self)), Key(sm.Sitemaps[1]), "the engine sees one key for both")
	assert.Empty(t, sm.URLs)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func TestCrawl_W7_NotASitemap(t *testing.T) {
	cases := []struct {
		name   string
		body   []byte
		reason string
	}{
		{"empty", nil, "no root element"},
		{"plain text", []byte("http://h/1\nhttp://h/2\n"), "text before the root element"},
		{"json", []byte(`{"urls": ["http://h/"]}`), "text before the root element"},
		{"html page", []byte(`<!DOCTYPE html><html><body><a href="/">x</a></body></html>`), "root element <html>"},
		{"rss feed", []byte(`<?xml version="1.0"?><rss><channel><link>http://h/</link></channel></rss>`), "root element <rss>"},
		{"binary zeros", make([]byte, 100), "illegal character"},
		{"gzip of text", gz(t, "not xml at all"), "text before the root element"},
		{"broken gzip", append([]byte{0x1f, 0x8b}, "garbage that is not gzip"...), "gzip"},
		{"corrupt gzip body", corruptGzip(t), "gzip"},
		{"bad element name", []byte(`<urlset><url><loc>http://h/1</loc></url><1bad/></urlset>`), "XML syntax error"},
		{"a text node of 2 MiB", []byte("<urlset>" + strings.Repeat(" ", 2<<20) + "</urlset>"), "over 1 MiB of text without markup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSitemap(bytes.NewReader(tc.body))
			require.ErrorIs(t, err, ErrNotSitemap)
			assert.Contains(t, err.Error(), tc.reason)
		})
	}
}

func corruptGzip(t *testing.T) []byte {
	b := gz(t, strings.Repeat("<urlset><url><loc>http://h/1</loc></url></urlset>", 100))
	for i := 20; i < len(b)-8; i += 3 {
		b[i] ^= 0x55
	}
	return b
}

func TestCrawl_W7_TruncatedKeepsWhatWasRead(t *testing.T) {
	sm, err := ParseSitemap(strings.NewReader(`<urlset><url><loc>http://h/1</loc></url><url><loc>http://h/2</loc></url><url><loc>http://h/`))
	require.ErrorIs(t, err, ErrNotSitemap)
	assert.Equal(t, []string{"http://h/1", "http://h/2"}, strs(sm.URLs))
}

func TestCrawl_W7_ReadError(t *testing.T) {
	boom := errors.New("connection reset")
	sm, err := ParseSitemap(&failingReader{data: `<urlset><url><loc>http://h/1</loc></url>`, err: boom})
	require.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrNotSitemap)
	assert.Equal(t, []string{"http://h/1"}, strs(sm.URLs))

	_, err = ParseSitemap(&failingReader{data: string(gz(t, urlset)[:30]), err: boom})
	require.ErrorIs(t, err, boom, "a read error under gzip is still a read error")
}

// urlsReader streams a urlset of n URLs (then its end), made as it is read.
type urlsReader struct {
	n, i   int
	buf    []byte
	closed bool
}

func (r *urlsReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		switch {
		case r.i == 0:
			r.buf = append(r.buf, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`...)
		case r.i > r.n && r.closed:
			return 0, io.EOF
		case r.i > r.n:
			r.buf, r.closed = append(r.buf, "</urlset>"...), true
		default:
			r.buf = append(r.buf, "<url><loc>http://example.com/page/"...)
			r.buf = strconv.AppendInt(r.buf, int64(r.i), 10)
			r.buf = append(r.buf, "</loc></url>\n"...)
		}
		r.i++
	}
	n := copy(p, r.buf)
	r.buf = r.buf[:copy(r.buf, r.buf[n:])]
	return n, nil
}

func TestCrawl_W7_URLLimit(t *testing.T) {
	cases := []struct {
		name string
		n    int
		err  bool
	}{
		{"exactly 50,000", MaxSitemapURLs, false},
		{"50,001", MaxSitemapURLs + 1, true},
		{"10 million", 10_000_000, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &urlsReader{n: tc.n}
			sm, err := ParseSitemap(r)
			assert.Len(t, sm.URLs, MaxSitemapURLs, "the URLs before the limit are returned")
			if !tc.err {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrSitemapTooManyURLs)
			assert.Contains(t, err.Error(), "more than 50,000 URLs")
			assert.Less(t, r.i, MaxSitemapURLs+100, "reading stops at the limit")
		})
	}
}

// paddingReader streams n bytes: a <urlset> start, then elements that list
// nothing, so that only the size limit can stop it.
type paddingReader struct {
	n, off int64
}

var padding = "<url><lastmod>2026-01-01</lastmod></url><!-- " + strings.Repeat("padding ", 120) + "-->\n"

func (r *paddingReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n-r.off {
		p = p[:r.n-r.off]
	}
	head := "<urlset>"
	n := 0
	for n < len(p) {
		pos := r.off + int64(n)
		var c byte
		if pos < int64(len(head)) {
			c = head[pos]
		} else {
			c = padding[(pos-int64(len(head)))%int64(len(padding))]
		}
		p[n] = c
		n++
	}
	r.off += int64(n)
	return n, nil
}

func TestCrawl_W7_SizeLimit(t *testing.T) {
	r := &paddingReader{n: 51 << 20}
	_, err := ParseSitemap(r)
	require.ErrorIs(t, err, ErrSitemapTooBig)
	assert.Contains(t, err.Error(), "over 50 MB uncompressed")
	assert.LessOrEqual(t, r.off, int64(MaxSitemapBytes+64<<10), "reading stops near the limit")
}

func TestCrawl_W7_LimitReader(t *testing.T) {
	cases := []struct {
		name string
		size int
		over bool
	}{
		{"under", 9, false},
		{"exactly the limit", 10, false},
		{"one byte over", 11, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &limitReader{r: bytes.NewReader(make([]byte, tc.size)), n: 10}
			b, err := io.ReadAll(l)
			assert.Equal(t, tc.over, l.over)
			if tc.over {
				assert.ErrorIs(t, err, errLimit)
			} else {
				assert.NoError(t, err)
			}
			assert.LessOrEqual(t, len(b), 10)
		})
	}
}

// gzipBomb streams, through a pipe, the gzip compression of head followed
// by total bytes of fill: the bomb is made only as fast as it is read.
// made counts the uncompressed bytes made so far.
func gzipBomb(t *testing.T, head string, fill []byte, total int64, made *atomic.Int64) io.Reader {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pr.CloseWithError(errors.New("test over")) })
	go func() {
		w, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		if _, err := w.Write([]byte(head)); err != nil {
			pw.CloseWithError(err)
			return
		}
		for n := int64(0); n < total; n += int64(len(fill)) {
			if _, err := w.Write(fill); err != nil {
				pw.CloseWithError(err)
				return
			}
			made.Add(int64(len(fill)))
		}
		pw.CloseWithError(w.Close())
	}()
	return pr
}

func TestCrawl_W7_GzipBomb(t *testing.T) {
	cases := []struct {
		name   string
		head   string
		fill   string
		target error
		reason string
	}{
		{"1 GB of zeros", "", "\x00", ErrNotSitemap, "over 1 MiB of text without markup"},
		{"1 GB of zeros after a urlset start", "<urlset>", "\x00", ErrNotSitemap, "over 1 MiB of text without markup"},
		{"1 GB of spaces in a loc", "<urlset><url><loc>", " ", ErrNotSitemap, "over 1 MiB of text without markup"},
		{"1 GB of empty entries", "<urlset>", padding, ErrSitemapTooBig, "over 50 MB uncompressed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var made atomic.Int64
			fill := []byte(strings.Repeat(tc.fill, 64<<10/len(tc.fill)))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := ParseSitemap(gzipBomb(t, tc.head, fill, 1<<30, &made))
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, tc.target)
			assert.Contains(t, err.Error(), tc.reason)
			assert.Less(t, made.Load(), int64(MaxSitemapBytes+4<<20), "the bomb is not decompressed past the limit")
			assert.Less(t, after.HeapInuse, before.HeapInuse+32<<20, "memory stays bounded")
		})
	}
}
