package crawl

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const pageURL = "http://example.com/dir/page.html"

func extract(t testing.TB, body string, header http.Header) Page {
	t.Helper()
	p, err := Extract(strings.NewReader(body), mustParse(t, pageURL), header, "heed")
	require.NoError(t, err)
	return p
}

func linkURLs(p Page) []string {
	out := []string{}
	for _, l := range p.Links {
		out = append(out, l.URL.String())
	}
	return out
}

func TestCrawl_W2_Sources(t *testing.T) {
	cases := []struct {
		name, html, url, source string
	}{
		{"a href", `<a href="/a">x</a>`, "http://example.com/a", "a href"},
		{"area href", `<map><area href="b.html"></map>`, "http://example.com/dir/b.html", "area href"},
		{"link href", `<link rel=stylesheet href="/s.css">`, "http://example.com/s.css", "link href"},
		{"img src", `<img src="i.png">`, "http://example.com/dir/i.png", "img src"},
		{"source src", `<video><source src="/v.mp4"></video>`, "http://example.com/v.mp4", "source src"},
		{"script src", `<script src="/j.js"></script>`, "http://example.com/j.js", "script src"},
		{"iframe src", `<iframe src="/f.html"></iframe>`, "http://example.com/f.html", "iframe src"},
		{"frame src", `<frameset><frame src="/fr.html"></frameset>`, "http://example.com/fr.html", "frame src"},
		{"embed src", `<embed src="/e.swf">`, "http://example.com/e.swf", "embed src"},
		{"video src", `<video src="/v.webm"></video>`, "http://example.com/v.webm", "video src"},
		{"audio src", `<audio src="/a.ogg"></audio>`, "http://example.com/a.ogg", "audio src"},
		{"img srcset", `<img srcset="/s.png 2x">`, "http://example.com/s.png", "img srcset"},
		{"source srcset", `<picture><source srcset="/p.webp"></picture>`, "http://example.com/p.webp", "source srcset"},
		{"meta refresh", `<meta http-equiv="Refresh" content="5; url=/next">`, "http://example.com/next", "meta refresh"},
		{"upper-case tags and attributes", `<A HREF="/up">`, "http://example.com/up", "a href"},
		{"unquoted attribute", `<a href=/unq>`, "http://example.com/unq", "a href"},
		{"entity in attribute", `<a href="/a?x=1&amp;y=2">`, "http://example.com/a?x=1&y=2", "a href"},
		{"self-closing", `<img src="/sc.png"/>`, "http://example.com/sc.png", "img src"},
		{"scheme-relative", `<a href="//cdn.example.net/x">`, "http://cdn.example.net/x", "a href"},
		{"absolute https", `<a href="https://other.example/">`, "https://other.example/", "a href"},
		{"first attribute wins", `<a href="/first" href="/second">`, "http://example.com/first", "a href"},
		{"fragment dropped", `<a href="/f#section">`, "http://example.com/f", "a href"},
		{"fragment only is the page", `<a href="#top">`, pageURL, "a href"},
		{"query only", `<a href="?p=2">`, "http://example.com/dir/page.html?p=2", "a href"},
		{"dot segments resolved", `<a href="../up/./x">`, "http://example.com/up/x", "a href"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := extract(t, tc.html, nil)
			require.Len(t, p.Links, 1, "%v", linkURLs(p))
			assert.Equal(t, tc.url, p.Links[0].URL.String())
			assert.Equal(t, tc.source, p.Links[0].Source)
		})
	}
}

func TestCrawl_W2_NotLinks(t *testing.T) {
	cases := []struct{ name, html string }{
		{"img without src", `<img alt="x">`},
		{"empty href", `<a href="">x</a>`},
		{"blank href", `<a href="  ">x</a>`},
		{"empty src", `<img src="">`},
		{"srcset on video is not a link", `<video srcset="/v.png 2x"></video>`},
		{"href on img is not a link", `<img href="/h">`},
		{"base is not a link", `<base href="/b/">`},
		{"div href", `<div href="/d"></div>`},
		{"meta refresh without url", `<meta http-equiv=refresh content="5">`},
		{"meta other http-equiv", `<meta http-equiv=content-type content="text/html; url=/x">`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Empty(t, extract(t, tc.html, nil).Links)
		})
	}
}

func TestCrawl_W2_BaseHref(t *testing.T) {
	cases := []struct {
		name, html string
		want       []string
	}{
		{"absolute base", `<base href="http://other.example/b/"><a href="x">`, []string{"http://other.example/b/x"}},
		{"relative base", `<base href="/sub/"><a href="x">`, []string{"http://example.com/sub/x"}},
		{"relative base without slash", `<base href="../other"><a href="x">`, []string{"http://example.com/x"}},
		{"base applies to links before it", `<a href="x"><base href="/late/">`, []string{"http://example.com/late/x"}},
		{"first base with href wins", `<base href="/one/"><base href="/two/"><a href="x">`, []string{"http://example.com/one/x"}},
		{"base without href skipped", `<base target="_blank"><base href="/h/"><a href="x">`, []string{"http://example.com/h/x"}},
		{"javascript base ignored", `<base href="javascript:x"><a href="x">`, []string{"http://example.com/dir/x"}},
		{"absolute links ignore base", `<base href="/b/"><a href="https://abs.example/y">`, []string{"https://abs.example/y"}},
		{"base applies to src and srcset", `<base href="/b/"><img src="i" srcset="s 2x">`, []string{"http://example.com/b/i", "http://example.com/b/s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, linkURLs(extract(t, tc.html, nil)))
		})
	}
}

func TestCrawl_W2_BaseIsFinalURL(t *testing.T) {
	final := mustParse(t, "https://redirected.example/new/place")
	p, err := Extract(strings.NewReader(`<a href="x">`), final, nil, "heed")
	require.NoError(t, err)
	assert.Equal(t, []string{"https://redirected.example/new/x"}, linkURLs(p))
}

func TestCrawl_W2_TokenizerSemantics(t *testing.T) {
	cases := []struct {
		name, html string
		want       []string
	}{
		{"comment", `<!-- <a href="/c"> --><a href="/ok">`, []string{"/ok"}},
		{"comment with dashes inside", `<!-- -- <a href="/c"> -- --><a href="/ok">`, []string{"/ok"}},
		{"unclosed comment eats the rest", `<a href="/ok"><!-- <a href="/c">`, []string{"/ok"}},
		{"script text", `<script>document.write('<a href="/s">')</script><a href="/ok">`, []string{"/ok"}},
		{"script with end tag in string", `<script>var s = "</scr" + "ipt><a href='/s'>";</script><a href="/ok">`, []string{"/ok"}},
		{"style text", `<style>a { background: url("/bg.png") } </style><a href="/ok">`, []string{"/ok"}},
		{"textarea text", `<textarea><a href="/t"></textarea><a href="/ok">`, []string{"/ok"}},
		{"title text", `<title><a href="/t"></title><a href="/ok">`, []string{"/ok"}},
		{"noscript is markup", `<noscript><img src="/ns.gif"></noscript><a href="/ok">`, []string{"/ns.gif", "/ok"}},
		{"cdata is a bogus comment", `<![CDATA[<a href="/c">]]><a href="/ok">`, []string{"/ok"}},
		{"end tag attributes ignored", `</a href="/e"><a href="/ok">`, []string{"/ok"}},
		{"plaintext ends markup", `<a href="/ok"><plaintext><a href="/p">`, []string{"/ok"}},
		{"template content is markup", `<template><a href="/tpl"></template>`, []string{"/tpl"}},
		{"doctype", `<!DOCTYPE html><a href="/ok">`, []string{"/ok"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for _, w := range tc.want {
				want = append(want, "http://example.com"+w)
			}
			got := linkURLs(extract(t, tc.html, nil))
			if len(want) == 0 {
				want = []string{}
			}
			assert.Equal(t, want, got)
		})
	}
}

func TestCrawl_W2_MalformedHTML(t *testing.T) {
	cases := []struct {
		name, html string
		want       []string
	}{
		{"unclosed quote runs to the next quote", `<a href="/a><a href="/b">x`, []string{"http://example.com/a%3E%3Ca%20href="}},
		{"missing close bracket", `<a href=/a <a href=/b>`, []string{"http://example.com/a"}},
		{"tag cut by EOF is dropped", `<a href="/ok"><a href="/cut`, []string{"http://example.com/ok"}},
		{"stray brackets", `<<a href="/a">>< / a>`, []string{"http://example.com/a"}},
		{"attributes without values", `<a href><a href="/b">`, []string{"http://example.com/b"}},
		{"NUL bytes", "<a href=\"/a\x00b\">", []string{"http://example.com/a%EF%BF%BDb"}},
		{"garbage", "\xff\xfe<\x00>\x01<a\x02 href=/g>", []string{}},
		{"unbalanced everything", `<div><p><table><a href="/t"></div></div></span>`, []string{"http://example.com/t"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, linkURLs(extract(t, tc.html, nil)))
		})
	}
}

func TestCrawl_W2_OneLinkPerKey(t *testing.T) {
	p := extract(t, `<a href="/a">1</a><img src="HTTP://EXAMPLE.COM:80/a"><a href="/%61#x">3</a><a href="/b">`, nil)
	assert.Equal(t, []string{"http://example.com/a", "http://example.com/b"}, linkURLs(p))
	assert.Equal(t, "a href", p.Links[0].Source)
}

func TestCrawl_W2_MaxLinks(t *testing.T) {
	var b strings.Builder
	for i := range MaxLinks + 10 {
		fmt.Fprintf(&b, "<a href=/%d>", i)
	}
	b.WriteString("<a href=/0>") // a duplicate past the limit is no extra link
	p := extract(t, b.String(), nil)
	assert.Len(t, p.Links, MaxLinks)
	assert.Equal(t, 10, p.Dropped)
}

func TestCrawl_W2_IsHTML(t *testing.T) {
	cases := []struct {
		name, ct string
		want     bool
	}{
		{"text/html", "text/html", true},
		{"with charset", "text/html; charset=windows-1252", true},
		{"any case", "Text/HTML;Charset=UTF-8", true},
		{"xhtml", "application/xhtml+xml", true},
		{"broken parameters", "text/html; charset", true},
		{"plain text", "text/plain", false},
		{"xml", "application/xml", false},
		{"empty", "", false},
		{"image", "image/png", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, IsHTML(tc.ct))
		})
	}
}

type failingReader struct {
	data string
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.data == "" {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestCrawl_W2_Errors(t *testing.T) {
	for _, final := range []string{"", "/relative", "mailto:x@y", "ftp://h/"} {
		t.Run("final "+final, func(t *testing.T) {
			var u = mustParse(t, final)
			_, err := Extract(strings.NewReader(`<a href=/a>`), u, nil, "heed")
			assert.Error(t, err)
		})
	}
	_, err := Extract(strings.NewReader(""), nil, nil, "heed")
	assert.Error(t, err)

	boom := errors.New("disk on fire")
	p, err := Extract(&failingReader{data: `<a href="/before">x</a>`, err: boom}, mustParse(t, pageURL), nil, "heed")
	require.ErrorIs(t, err, boom)
	assert.Equal(t, []string{"http://example.com/before"}, linkURLs(p))
}

func TestCrawl_W2_DeepNesting(t *testing.T) {
	const depth = 100000
	body := strings.Repeat("<div>", depth) + `<a href="/deep">` + strings.Repeat("</div>", depth) + `<a href="/after">`
	p := extract(t, body, nil)
	assert.Equal(t, []string{"http://example.com/deep", "http://example.com/after"}, linkURLs(p))
	assert.False(t, p.Truncated)
}

// hugePage is a page of n bytes made as it is read: blocks of 1 KiB,
// each with one distinct link, so that it never sits in memory (and its
// making allocates nothing that would blur the measure).
type hugePage struct {
	n, off int64
	block  []byte // the current block
	rest   []byte // its unread part
	i      int
}

func (h *hugePage) Read(p []byte) (int, error) {
	if h.off >= h.n {
		return 0, io.EOF
	}
	if len(h.rest) == 0 {
		b := append(h.block[:0], `<div class="item"><a href="/item/`...)
		b = strconv.AppendInt(b, int64(h.i), 10)
		b = append(b, `">item</a>`...)
		for len(b) < 1024-len("</div>\n") {
			b = append(b, ' ')
		}
		h.block = append(b, "</div>\n"...)
		h.rest = h.block
		h.i++
	}
	n := copy(p, h.rest)
	if rest := h.n - h.off; int64(n) > rest {
		n = int(rest)
	}
	h.rest = h.rest[n:]
	h.off += int64(n)
	return n, nil
}

func TestCrawl_W2_HugePage(t *testing.T) {
	allocs := func(n int64) (Page, uint64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p, err := Extract(&hugePage{n: n}, mustParse(t, pageURL), nil, "heed")
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		return p, after.TotalAlloc - before.TotalAlloc
	}
	p50, a50 := allocs(50 << 20)
	assert.True(t, p50.Truncated)
	assert.Equal(t, MaxHTML/1024, len(p50.Links), "one link per KiB of the first 10 MiB")
	assert.Equal(t, "http://example.com/item/10239", p50.Links[len(p50.Links)-1].URL.String())

	p11, a11 := allocs(11 << 20)
	assert.True(t, p11.Truncated)
	assert.Equal(t, len(p11.Links), len(p50.Links))

	exact, _ := allocs(MaxHTML)
	assert.False(t, exact.Truncated, "exactly MaxHTML bytes is not truncated")

	t.Logf("allocated %d MiB for 50 MB, %d MiB for 11 MB", a50>>20, a11>>20)
	assert.Less(t, a50, uint64(64<<20), "a 50 MB page allocates far less than its size")
	assert.Less(t, float64(a50), 1.2*float64(a11), "bytes past MaxHTML cost nothing")
}

func FuzzExtract(f *testing.F) {
	for _, s := range []string{
		`<a href="/a">`, `<base href="//x/"><img srcset="a,b 1x, c 2x">`, `<meta http-equiv=refresh content="0;url='x'">`,
		`<a href="javascript:x" rel=nofollow>`, "<a href=\"\xe9\\a?b c#d\">", `<noscript><img src=http:x>`,
		`<meta name=robots content=none><a href=y>`, `<a href="http:///h/%zz">`, `<!--<a href=z>-->`,
	} {
		f.Add(s)
	}
	final := mustParse(f, pageURL)
	f.Fuzz(func(t *testing.T, body string) {
		p, err := Extract(strings.NewReader(body), final, nil, "heed")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, l := range p.Links {
			u := l.URL
			if !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
				t.Fatalf("link %q is not absolute http or https", u)
			}
			k := Key(u)
			if seen[k] {
				t.Fatalf("key %q twice", k)
			}
			seen[k] = true
			if l.Source == "" {
				t.Fatalf("link %q without source", u)
			}
		}
		if p.NoFollowAll && len(p.Links) > 0 {
			t.Fatal("NoFollowAll with links")
		}
	})
}

// benchPage is a realistic page of about 100 KB with 300 links: a head with
// styles and scripts, navigation, articles with images and srcsets.
func benchPage() string {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Bench page</title>
<link rel="stylesheet" href="/static/site.css"><link rel="icon" href="/favicon.ico">
<script src="/static/app.js" defer></script><style>body{font:16px/1.5 sans-serif}</style></head><body>
<nav><ul>`)
	n := 3
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `<li class="nav-item"><a class="nav-link" href="/section/%d/">Section %d</a></li>`, i, i)
		n++
	}
	b.WriteString("</ul></nav><main>")
	for i := 0; n < 300; i++ {
		fmt.Fprintf(&b, `<article id="post-%d"><h2><a href="/posts/2026/%02d/post-%d.html">Post number %d</a></h2>
<img src="/img/%d.jpg" srcset="/img/%d-640.jpg 640w, /img/%d-1280.jpg 1280w" alt="Picture %d" width="640" height="480">
<p>%s <a href="https://other%d.example.org/ref?id=%d&amp;src=bench" rel="noopener">reference</a>.</p>
<!-- comment with <a href="/hidden"> inside --></article>
`, i, i%12+1, i, i, i, i, i, i, strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 4), i, i)
		n += 5
	}
	b.WriteString("</main><footer>")
	for b.Len() < 100_000 {
		b.WriteString(`<p class="footer">Footer text, with no links in it, to make the page as long as a real one.</p>`)
	}
	b.WriteString("</footer></body></html>")
	return b.String()
}

func BenchmarkExtract(b *testing.B) {
	page := benchPage()
	final := mustParse(b, pageURL)
	p, err := Extract(strings.NewReader(page), final, nil, "heed")
	require.NoError(b, err)
	require.InDelta(b, 300, len(p.Links), 5)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Extract(strings.NewReader(page), final, nil, "heed"); err != nil {
			b.Fatal(err)
		}
	}
}

// A link carries its W3 key, so that a crawl stores what told the page's links
// apart without computing it again.
func TestCrawl_W3_LinkCarriesItsKey(t *testing.T) {
	p := extract(t, `<a href="HTTP://Example.COM:80/a/./b/../c?q=%7e">x</a><a href="/d#top">y</a>`, nil)
	require.Len(t, p.Links, 2, "%v", linkURLs(p))
	assert.Equal(t, "http://example.com/a/c?q=~", p.Links[0].Key)
	for _, l := range p.Links {
		assert.Equal(t, Key(l.URL), l.Key, "link %s", l.URL)
	}
}
