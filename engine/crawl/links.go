package crawl

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// MaxHTML is how much of a page Extract reads (W2): links after the first
// 10 MiB of a body are not followed.
const MaxHTML = 10 << 20

// MaxLinks is how many distinct links Extract returns for one page. A page
// of nothing but links (10 MiB holds about 800,000 "<a href=N>") would
// otherwise cost hundreds of megabytes and flood the crawl; the rest are
// counted in Page.Dropped.
const MaxLinks = 50000

// Link is one link found on a page.
type Link struct {
	// URL is the link resolved to an absolute http or https URL, as written
	// apart from the fixes needed to fetch it (see Extract), without its
	// fragment, which is never sent.
	URL *url.URL
	// Key is URL's de-duplication key, Key(URL) (W3): the page's links
	// are told apart by it, and the crawl stores it with the job.
	Key string
	// Source names where the link was found, for the user: "a href",
	// "img srcset", "meta refresh" …
	Source string
}

// Page is what Extract found on one page.
type Page struct {
	// Links are the followable links in document order, one per Key: a URL
	// that occurs twice is listed where it first occurs, with that Source.
	Links []Link
	// Nofollow counts the distinct URLs (by Key) not followed because of
	// a nofollow rule: rel=nofollow, or the page-wide rule of NoFollowAll.
	// A URL also linked without rel=nofollow is followed, not counted.
	Nofollow int
	// NoFollowAll reports that the page's robots meta or its X-Robots-Tag
	// header said nofollow (or none): Links is empty.
	// A robots meta counts wherever it is in the page; its name is
	// "robots" or the agent, its content lists "nofollow" or "none" among
	// comma- or space-separated directives, in any case.
	NoFollowAll bool
	// Truncated reports that the body was longer than MaxHTML: links after
	// the first MaxHTML bytes (and a tag cut at that point) are missing.
	Truncated bool
	// Dropped counts followable links not returned because Links already
	// held MaxLinks. A URL occurring again past the limit counts again.
	Dropped int
}

// IsHTML reports whether a Content-Type header value is text/html or
// application/xhtml+xml (any case, parameters ignored): the bodies Extract
// reads links from. An empty or unparsable value is not HTML.
func IsHTML(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// Extract reads at most MaxHTML bytes of an HTML page from r (the saved
// body) and returns its links (W2). final is the page's URL after
// redirects; header is the response header (X-Robots-Tag) and may be nil;
// agent is Heed's robots product token ("heed"), so that
// <meta name=heed> and "X-Robots-Tag: heed: nofollow" apply.
//
// Links come from a and area href, link href, the src of img, source,
// script, iframe, frame, embed, video and audio, the srcset of img and
// source, and meta http-equiv=refresh. A srcset ("a.jpg 2x, b.jpg 640w")
// is split by the HTML spec's algorithm, so a URL may hold commas not
// followed by a space ("a,b.jpg 2x"), and a candidate with invalid
// descriptors ("a.jpg 2q") is dropped, as a browser drops it. A refresh
// ("5; url=/next", "0;URL='/next'", "5, /next") is read by the spec's
// refresh steps; one without a URL refreshes the page and is no link.
// For each attribute the first occurrence counts, as in HTML; an empty
// value names no link. They are resolved against the first
// <base href> anywhere in the page (itself resolved against final) or, with
// none or a base that is not http or https, against final.
//
// The page is read with the HTML tokenizer, as a browser without scripts
// would: nothing inside comments, <script>, <style>, <textarea> or
// <title> is a link, while the content of <noscript> is markup.
// Malformed HTML, deep nesting and any byte sequence are fine: the
// tokenizer keeps no element stack, and memory stays bounded by MaxHTML
// and MaxLinks.
//
// Bytes are not decoded from the page's charset: a non-ASCII byte in a
// path or query is percent-encoded as it is (windows-1252 "é" becomes
// "%E9"), while a character reference such as "&eacute;" is UTF-8
// ("%C3%A9"). Before resolving, a reference is fixed as a browser would:
// surrounding spaces and controls are trimmed, tabs and newlines removed,
// "\" is "/" before the query, a "%" that starts no escape becomes "%25",
// spaces, controls, quotes, "<", ">" and non-ASCII bytes in the query are
// escaped, and "http:x" means a path, "http:///x" the host x. Only http
// and https links with a valid host are kept: javascript:, mailto:, data:
// and the like are dropped, as are links whose host is not a valid name.
//
// A read error from r ends the page: Extract returns the links found before
// it with the error. An error is also returned when final is not an
// absolute http or https URL.
func Extract(r io.Reader, final *url.URL, header http.Header, agent string) (Page, error) {
	if final == nil || !isHTTP(final.Scheme) || final.Host == "" || final.Opaque != "" {
		return Page{}, errors.New("crawl: extract: page URL is not an absolute http or https URL")
	}
	lim := &capReader{r: r, n: MaxHTML}
	x := extractor{agent: strings.ToLower(agent)}
	x.nofollowAll = robotsNofollow(header, x.agent)
	z := html.NewTokenizer(lim)
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if tt == html.StartTagToken && string(name) == "noscript" {
			z.NextIsNotRawText() // scripting is off: its content is markup
		}
		if hasAttr {
			if tag, ok := linkTag(name); ok {
				x.tag(z, tag)
			}
		}
	}
	var err error
	if e := z.Err(); e != nil && e != io.EOF {
		err = fmt.Errorf("crawl: extract: %w", e)
	}
	base := final
	if x.hasBase {
		if b, ok := resolve(final, x.base, nil); ok {
			base = b
		}
	}
	p := x.page(base)
	p.Truncated = lim.over
	return p, err
}

// rawLink is a link as written, before resolution.
type rawLink struct {
	ref      string
	source   string
	nofollow bool
}

// extractor collects the links of one page while the tokenizer runs.
type extractor struct {
	agent       string
	raws        []rawLink
	base        string
	hasBase     bool
	nofollowAll bool
}

// srcTags are the elements whose src attribute is a link, with the Source
// of such a link.
var srcTags = map[string]string{
	"img": "img src", "source": "source src", "script": "script src",
	"iframe": "iframe src", "frame": "frame src", "embed": "embed src",
	"video": "video src", "audio": "audio src",
}

// hrefSources and srcsetSources are the Sources of href and srcset links.
var (
	hrefSources   = map[string]string{"a": "a href", "area": "area href", "link": "link href"}
	srcsetSources = map[string]string{"img": "img srcset", "source": "source srcset"}
)

// linkTag returns the name of an element that may hold links, as a
// constant string, without allocating.
func linkTag(name []byte) (string, bool) {
	switch string(name) {
	case "a":
		return "a", true
	case "area":
		return "area", true
	case "link":
		return "link", true
	case "base":
		return "base", true
	case "meta":
		return "meta", true
	case "img":
		return "img", true
	case "source":
		return "source", true
	case "script":
		return "script", true
	case "iframe":
		return "iframe", true
	case "frame":
		return "frame", true
	case "embed":
		return "embed", true
	case "video":
		return "video", true
	case "audio":
		return "audio", true
	}
	return "", false
}

// tag reads the attributes of a start tag that may hold links.
func (x *extractor) tag(z *html.Tokenizer, name string) {
	src, isSrc := srcTags[name]
	var attrs [3]string // by tag: href, rel | src, srcset | name, http-equiv, content
	var seen [3]bool
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		i := attrIndex(name, isSrc, string(k))
		if i >= 0 && !seen[i] {
			seen[i], attrs[i] = true, string(v)
		}
	}
	switch {
	case name == "a" || name == "area" || name == "link":
		x.add(attrs[0], hrefSources[name], hasToken(attrs[1], "nofollow"))
	case name == "base":
		if seen[0] && !x.hasBase {
			x.base, x.hasBase = attrs[0], true
		}
	case name == "meta":
		x.meta(attrs[0], attrs[1], attrs[2])
	default:
		x.add(attrs[0], src, false)
		if seen[1] && srcsetSources[name] != "" {
			for _, c := range parseSrcset(attrs[1]) {
				x.add(c, srcsetSources[name], false)
			}
		}
	}
}

// attrIndex is where tag keeps attribute key, or -1 when it does not care.
func attrIndex(tag string, isSrc bool, key string) int {
	switch {
	case isSrc:
		switch key {
		case "src":
			return 0
		case "srcset":
			return 1
		}
	case tag == "meta":
		switch key {
		case "name":
			return 0
		case "http-equiv":
			return 1
		case "content":
			return 2
		}
	default:
		switch key {
		case "href":
			return 0
		case "rel":
			return 1
		}
	}
	return -1
}

// add records a link as written; empty values name no link.
func (x *extractor) add(ref, source string, nofollow bool) {
	if strings.TrimFunc(ref, isSpaceOrControl) == "" {
		return
	}
	x.raws = append(x.raws, rawLink{ref: ref, source: source, nofollow: nofollow})
}

// meta handles <meta name=robots|agent content=…> and
// <meta http-equiv=refresh content=…>.
func (x *extractor) meta(name, equiv, content string) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "robots" || (n == x.agent && n != "") {
		if hasDirective(content, " \t\n\f\r,") {
			x.nofollowAll = true
		}
	}
	if strings.EqualFold(strings.TrimSpace(equiv), "refresh") {
		if ref, ok := parseRefresh(content); ok {
			x.add(ref, "meta refresh", false)
		}
	}
}

// page resolves the collected links against base and builds the Page.
func (x *extractor) page(base *url.URL) Page {
	var p Page
	followed := make(map[string]bool)
	nofollow := make(map[string]bool)
	hosts := make(hostCache)
	for _, r := range x.raws {
		u, ok := resolve(base, r.ref, hosts)
		if !ok {
			continue
		}
		k := key(u, hosts)
		switch {
		case followed[k]:
		case x.nofollowAll || r.nofollow:
			nofollow[k] = true
		case len(p.Links) >= MaxLinks:
			p.Dropped++
		default:
			followed[k] = true
			delete(nofollow, k)
			p.Links = append(p.Links, Link{URL: u, Key: k, Source: r.source})
		}
	}
	p.Nofollow = len(nofollow)
	p.NoFollowAll = x.nofollowAll
	return p
}

// capReader reads at most n bytes from r and then notes whether r had more.
type capReader struct {
	r    io.Reader
	n    int64
	over bool
	done bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		if !c.done {
			c.done = true
			var b [1]byte
			n, _ := io.ReadFull(c.r, b[:])
			c.over = n > 0
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}
