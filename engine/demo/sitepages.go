package demo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The demo site's content (see Site): fixed text, fixed pictures.

// book is one page of the catalogue.
type book struct {
	slug, title, author string
	year                int
	photo, blurb        string
}

var books = []book{
	{"the-tide-tables", "The Tide Tables", "Mara Quell", 1987, "stacks",
		"A harbour master keeps the tide tables for forty years and finds, in the margins, the town's whole history."},
	{"salt-and-lamplight", "Salt and Lamplight", "Ines Varga", 2004, "harbour",
		"Letters between two lighthouse keepers who never meet, across one hard winter."},
	{"a-map-of-small-harbours", "A Map of Small Harbours", "Tomas Reed", 1999, "harbour",
		"Every harbour on the coast, drawn by hand, with what the fishermen say about each."},
	{"the-patient-crawler", "The Patient Crawler", "Odile Marsh", 2021, "reading-room",
		"A librarian teaches a machine to read the town's notices one page at a time, and to wait when asked."},
	{"winter-ferries", "Winter Ferries", "Hal Brenner", 1978, "harbour",
		"The last ferry crews of the bay, their boats and their timetables."},
	{"the-keepers-log", "The Keeper's Log", "Ruth Okafor", 2012, "stacks",
		"A year of weather, ships and visitors, as written down each night by the keeper of the north light."},
	{"notes-on-fog", "Notes on Fog", "Pim de Laat", 2016, "garden",
		"Short essays on the fog that comes in from the sea, and on what it hides."},
	{"the-last-lighthouse-cat", "The Last Lighthouse Cat", "June Albright", 2009, "garden",
		"A children's book about the cat who kept the mice out of the lamp room."},
}

// guide is one page of the how-to folder.
type guide struct {
	slug, title, text string
}

var guides = []guide{
	{"getting-a-card", "Getting a library card", "Bring something with your address on it to the front desk. A card is free, and lets you borrow up to twelve items at a time."},
	{"opening-hours", "Opening hours", "Monday to Friday 9:00 to 19:00, Saturday 10:00 to 16:00. Closed on Sundays and on public holidays."},
	{"reading-room", "Using the reading room", "The reading room is quiet. Ask at the desk for the old newspapers and the maps of the harbour."},
	{"interlibrary-loans", "Interlibrary loans", "A book we do not have can come from another library of the coast in about a week."},
	{"accessibility", "Accessibility", "The entrance on Quay Street has a ramp; the lift reaches every floor. Large-print books are on the ground floor."},
	{"wifi", "Wi-Fi and computers", "The network is open to everyone. Six computers can be booked for an hour at a time."},
}

// news is the pages only the sitemap lists.
var news = []struct{ slug, title, text string }{
	{"2026-spring", "Spring at the library", "The garden reading corner opens again in April, with a talk on the harbour's history."},
	{"2026-summer", "Summer opening hours", "From June the library stays open until 21:00 on Thursdays."},
}

// pageHTML wraps a page's body in the site's header, menu and footer. up
// is the way from the page's folder to the site's root ("", "../", …),
// so every link is relative and the site works on any address.
func pageHTML(up, title, body string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>%s · Harbour Town Library</title>
<link rel="stylesheet" href="%sstyle.css">
<link rel="icon" href="%simg/logo.svg">
</head><body>
<header><a href="%s"><img src="%simg/logo.svg" alt="Harbour Town Library" width="48" height="48"></a>
<nav><a href="%s">Home</a> · <a href="%sabout.html">About</a> · <a href="%sbooks/">Books</a> · <a href="%sguides/">Guides</a> · <a href="%scalendar/2026/01/">Events</a> · <a href="%sarchive/">Archive</a></nav></header>
<main>
<h1>%s</h1>
`, html.EscapeString(title), up, up, up, up, up, up, up, up, up, up, html.EscapeString(title))
	b.WriteString(body)
	fmt.Fprintf(&b, `</main>
<footer><a href="%sprivate/">Staff area</a> · <a rel="nofollow" href="%ssearch?q=tides">Search</a> · part of the <a href="https://libraries.example.org/coast">Coast Libraries network</a></footer>
</body></html>
`, up, up)
	return b.String()
}

var (
	pagesOnce sync.Once
	pages     map[string]string
)

// sitePages is every fixed HTML page of the site, by path.
func sitePages() map[string]string {
	pagesOnce.Do(func() { pages = buildPages() })
	return pages
}

func buildPages() map[string]string {
	p := map[string]string{}
	p["/"] = pageHTML("", "Welcome", `<p>The library of Harbour Town: <a href="books/">books</a>, <a href="guides/">guides</a> and
<a href="calendar/2026/01/">events</a> by the sea.</p>
<img src="img/reading-room.png" alt="The reading room" width="160" height="100">
<p>New here? Start with <a href="guides/getting-a-card.html">getting a library card</a>.</p>
`)
	p["/about.html"] = pageHTML("", "About the library", `<p>The library opened in 1904 in the old customs house.
The minutes of its board are kept in the <a href="private/minutes.html">staff area</a>.</p>
<img src="img/harbour.png" alt="The harbour" width="160" height="100">
`)
	var list strings.Builder
	list.WriteString("<ul>\n")
	for _, bk := range books {
		fmt.Fprintf(&list, "<li><a href=\"%s.html\">%s</a> by %s (%d)</li>\n", bk.slug, html.EscapeString(bk.title), html.EscapeString(bk.author), bk.year)
	}
	list.WriteString("</ul>\n<img src=\"../img/stacks.png\" alt=\"The stacks\" width=\"160\" height=\"100\">\n")
	p["/books/"] = pageHTML("../", "Books", list.String())
	for i, bk := range books {
		next := books[(i+1)%len(books)]
		p["/books/"+bk.slug+".html"] = pageHTML("../", bk.title, fmt.Sprintf(`<p class="by">%s, %d</p>
<img src="../img/%s.png" alt="" width="160" height="100">
<p>%s</p>
<p><a href="../private/reservations.html?book=%s">Reserve a copy</a> (staff only) · next: <a href="%s.html">%s</a></p>
`, html.EscapeString(bk.author), bk.year, bk.photo, html.EscapeString(bk.blurb), bk.slug, next.slug, html.EscapeString(next.title)))
	}
	p["/books/out-of-print.html"] = pageHTML("../", "Out of print", `<p>Books we no longer lend, kept in the reading room:
<a href="the-tide-tables.html">the first edition of The Tide Tables</a>, and the harbour almanacs of 1890 to 1950.</p>
`)
	list.Reset()
	list.WriteString("<ul>\n")
	for _, g := range guides {
		fmt.Fprintf(&list, "<li><a href=\"%s.html\">%s</a></li>\n", g.slug, html.EscapeString(g.title))
	}
	list.WriteString("</ul>\n")
	p["/guides/"] = pageHTML("../", "Guides", list.String())
	for i, g := range guides {
		body := "<p>" + html.EscapeString(g.text) + "</p>\n"
		if i+1 < len(guides) {
			body += fmt.Sprintf("<p>Next: <a href=\"%s.html\">%s</a></p>\n", guides[i+1].slug, html.EscapeString(guides[i+1].title))
		}
		p["/guides/"+g.slug+".html"] = pageHTML("../", g.title, body)
	}
	for _, n := range news {
		p["/news/"+n.slug+".html"] = pageHTML("../", n.title, fmt.Sprintf(`<p>%s</p>
<p>See the <a href="../guides/opening-hours.html">opening hours</a>.</p>
<img src="../img/garden.png" alt="The garden" width="160" height="100">
`, html.EscapeString(n.text)))
	}
	private := `<p>This is the staff area. Crawlers are asked to keep out (robots.txt).</p>
`
	p["/private/"] = pageHTML("../", "Staff area", private+`<p><a href="minutes.html">Board minutes</a> · <a href="annual-report.html">Annual report</a></p>
`)
	p["/private/minutes.html"] = pageHTML("../", "Board minutes", private)
	p["/private/annual-report.html"] = pageHTML("../", "Annual report", private)
	p["/private/reservations.html"] = pageHTML("../", "Reservations", private)
	return p
}

// monthNames are the calendar's month names.
var monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

// calendarPage is the events page of /calendar/YYYY/MM/: a month from
// 2000 to 9999, each linking the next one, so a crawler that follows
// every link never runs out of months.
func calendarPage(p string) (string, bool) {
	rest, _ := strings.CutPrefix(p, "/calendar/")
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[2] != "" || len(parts[0]) != 4 || len(parts[1]) != 2 {
		return "", false
	}
	y, err1 := strconv.Atoi(parts[0])
	m, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || y < 2000 || y > 9999 || m < 1 || m > 12 {
		return "", false
	}
	ny, nm := y, m+1
	if nm > 12 {
		ny, nm = y+1, 1
	}
	next := fmt.Sprintf("../../%04d/%02d/", ny, nm)
	if ny == y {
		next = fmt.Sprintf("../%02d/", nm)
	}
	var b strings.Builder
	// Three events a month, on days drawn from the month itself.
	for k, what := range []string{"Story time for children", "Talk: the harbour in old maps", "Book club: " + books[(y*12+m)%len(books)].title} {
		day := 1 + (y*31+m*7+k*11)%28
		fmt.Fprintf(&b, "<li>%d %s: %s</li>\n", day, monthNames[m-1], html.EscapeString(what))
	}
	up := "../../../"
	return pageHTML(up, fmt.Sprintf("Events in %s %d", monthNames[m-1], y), fmt.Sprintf(`<ul>
%s</ul>
<p><a href="%s">Next month →</a></p>
`, b.String(), next)), true
}

// archivePage is /archive/ with "older/" repeated any number of times: each
// links "older/", one folder deeper, as some real archives do by mistake.
func archivePage(p string) (string, bool) {
	rest, _ := strings.CutPrefix(p, "/archive/")
	n := 0
	for rest != "" {
		var ok bool
		if rest, ok = strings.CutPrefix(rest, "older/"); !ok {
			return "", false
		}
		n++
	}
	title := "Archive"
	if n > 0 {
		title = fmt.Sprintf("Archive, page %d", n+1)
	}
	return pageHTML(strings.Repeat("../", n+1), title, `<p>Notices of past years, newest first.</p>
<p><a href="older/">Older notices</a></p>
`), true
}

// robotsTxt is the site's robots.txt, its Sitemap line on base.
func robotsTxt(base string, delay time.Duration) string {
	var b strings.Builder
	b.WriteString("# Harbour Town Library: crawlers welcome, but not in the staff area.\n")
	b.WriteString("User-agent: *\nDisallow: /private/\n")
	if delay > 0 {
		b.WriteString("Crawl-delay: " + strconv.FormatFloat(delay.Seconds(), 'f', -1, 64) + "\n")
	}
	b.WriteString("\nSitemap: " + base + "/sitemap.xml\n")
	return b.String()
}

// sitemapPaths are the pages /sitemap.xml lists: some linked from pages,
// the news and the out-of-print page linked from none, and one that
// robots.txt disallows.
var sitemapPaths = []string{"/", "/about.html", "/books/", "/guides/", "/books/out-of-print.html",
	"/news/2026-spring.html", "/news/2026-summer.html", "/private/annual-report.html"}

func sitemapXML(base string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	for _, p := range sitemapPaths {
		fmt.Fprintf(&b, "  <url><loc>%s%s</loc><lastmod>2026-01-05</lastmod></url>\n", html.EscapeString(base), p)
	}
	b.WriteString("</urlset>\n")
	return b.String()
}

const styleCSS = `body { font-family: Georgia, serif; max-width: 42em; margin: 2em auto; color: #1d2a33; background: #f7f4ee; }
header { display: flex; gap: 1em; align-items: center; border-bottom: 2px solid #2c6e8f; }
nav a, footer a { color: #2c6e8f; }
footer { margin-top: 3em; font-size: 0.9em; color: #5a6a73; }
.by { font-style: italic; }
`

const logoSVG = `<svg xmlns="http://www.w3.org/2000/svg" width="48" height="48" viewBox="0 0 48 48">
<rect width="48" height="48" rx="8" fill="#2c6e8f"/>
<path d="M20 40 L22 14 L26 14 L28 40 Z" fill="#f7f4ee"/>
<rect x="19" y="9" width="10" height="6" fill="#e69f00"/>
</svg>
`

// photoHues are the site's pictures: a gradient each, in its own colour.
var photoHues = map[string][3]uint8{
	"reading-room": {0xc9, 0x8b, 0x4e},
	"stacks":       {0x7a, 0x4e, 0x2d},
	"harbour":      {0x2c, 0x6e, 0x8f},
	"garden":       {0x4f, 0x8a, 0x3c},
}

var (
	photosMu sync.Mutex
	photos   = map[string][]byte{}
)

// picture is the picture at /img/name.
func picture(name string) (resource, bool) {
	if name == "logo.svg" {
		return resource{"image/svg+xml", []byte(logoSVG)}, true
	}
	stem, ok := strings.CutSuffix(name, ".png")
	hue, known := photoHues[stem]
	if !ok || !known {
		return resource{}, false
	}
	photosMu.Lock()
	defer photosMu.Unlock()
	if b, ok := photos[stem]; ok {
		return resource{"image/png", b}, true
	}
	b := photoPNG(hue)
	photos[stem] = b
	return resource{"image/png", b}, true
}

// photoPNG draws a 160×100 picture: hue fading to the page colour, with a
// horizon. The PNG encoder is deterministic, so are its bytes.
func photoPNG(hue [3]uint8) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 160, 100))
	for y := range 100 {
		for x := range 160 {
			t := float64(y) / 99
			mix := func(a uint8, b uint8) uint8 { return uint8(float64(a)*(1-t) + float64(b)*t) }
			c := color.RGBA{mix(hue[0], 0xf7), mix(hue[1], 0xf4), mix(hue[2], 0xee), 0xff}
			if y == 62 || (y > 62 && (x+y)%17 == 0) {
				c = color.RGBA{0x1d, 0x2a, 0x33, 0xff}
			}
			img.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img) // writing to a bytes.Buffer does not fail
	return b.Bytes()
}

// etagOf is a strong ETag for body.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// notFoundPage is the site's 404 page.
func notFoundPage(p string) string {
	return pageHTML("/", "Not found", "<p>Nothing here: "+html.EscapeString(p)+"</p>\n")
}
