package demo

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Site is a small web site to crawl, for `heed demo` and the tests: the
// Harbour Town Library, a few dozen pages in a couple of folders, with
// pictures and a style sheet, that is polite to crawl only for a crawler
// that reads its robots.txt. Everything it serves is fixed: the same
// request always gets the same bytes, with a Last-Modified and a strong
// ETag, and Range works (http.ServeContent).
//
//	/robots.txt         User-agent: *, Disallow: /private/, Crawl-delay: 2,
//	                    and a Sitemap: line to /sitemap.xml
//	/sitemap.xml        some of the pages below, and three linked from no
//	                    page (/news/…, /books/out-of-print.html), and one
//	                    under /private/
//	/                   the home page: links to every folder, the style
//	                    sheet, the logo, the staff area under /private/, a
//	                    rel=nofollow search link and a page on another host
//	/about.html, /style.css, /img/*.svg|png
//	/books/             the catalogue and a page per book (each links a
//	                    reservation form under /private/)
//	/guides/            how-to pages, each linking the next
//	/news/…             pages the sitemap alone lists
//	/calendar/2026/01/  a calendar: each month links the next one, for ever
//	                    (a crawl's depth bounds it)
//	/archive/           a trap: each page links "older/", one folder
//	                    deeper, for ever (a crawl's trap rule catches it:
//	                    one path segment repeated)
//	/private/…          pages that robots.txt keeps crawlers out of
//
// Anything else is 404 Not Found. Every link is relative, so the site
// works on any address; robots.txt and the sitemap, which need absolute
// URLs, take theirs from the request's Host.
type Site struct {
	// CrawlDelay is the Crawl-delay robots.txt asks for, in whole seconds
	// or tenths; 0 leaves the line out. NewSite sets SiteCrawlDelay.
	CrawlDelay time.Duration

	mu  sync.Mutex
	log []Request
}

// SiteCrawlDelay is the Crawl-delay the demo site's robots.txt asks for.
const SiteCrawlDelay = 2 * time.Second

// SiteName is the name the demo site goes by in Request.Host and in the
// window's host labels.
const SiteName = "site"

// NewSite returns the demo site as an http.Handler, its robots.txt asking
// for a Crawl-delay of SiteCrawlDelay.
func NewSite() *Site { return &Site{CrawlDelay: SiteCrawlDelay} }

// siteModTime is the Last-Modified of everything the site serves.
var siteModTime = time.Date(2026, time.January, 5, 9, 30, 0, 0, time.UTC)

// ServeHTTP answers GET and HEAD with the site's resources.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rw := &responseWriter{ResponseWriter: w, req: r, limit: -1}
	start := time.Now()
	defer func() {
		status := rw.status
		if status == 0 {
			status = http.StatusOK
		}
		s.mu.Lock()
		s.log = append(s.log, Request{Time: start, Host: SiteName, Method: r.Method, Path: r.URL.RequestURI(),
			Range: r.Header.Get("Range"), IfRange: r.Header.Get("If-Range"), Status: status, Bytes: rw.written})
		s.mu.Unlock()
	}()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		rw.Header().Set("Allow", "GET, HEAD")
		http.Error(rw, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	res, ok := s.resource(r)
	if !ok {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.WriteHeader(http.StatusNotFound)
		_, _ = rw.Write([]byte(notFoundPage(r.URL.Path)))
		return
	}
	rw.Header().Set("Content-Type", res.ctype)
	rw.Header().Set("ETag", etagOf(res.body))
	http.ServeContent(rw, r, "", siteModTime, bytes.NewReader(res.body))
}

// Log returns a copy of every request the site answered, in the order the
// answers completed; Path is the request's path with its query.
func (s *Site) Log() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.log))
	copy(out, s.log)
	return out
}

// resource is what the site serves at r's path.
type resource struct {
	ctype string
	body  []byte
}

func (s *Site) resource(r *http.Request) (resource, bool) {
	p := r.URL.Path
	html := func(b string) (resource, bool) { return resource{"text/html; charset=utf-8", []byte(b)}, true }
	switch {
	case p == "/robots.txt":
		return resource{"text/plain; charset=utf-8", []byte(robotsTxt("http://"+r.Host, s.CrawlDelay))}, true
	case p == "/sitemap.xml":
		return resource{"application/xml", []byte(sitemapXML("http://" + r.Host))}, true
	case p == "/style.css":
		return resource{"text/css; charset=utf-8", []byte(styleCSS)}, true
	case strings.HasPrefix(p, "/img/"):
		return picture(strings.TrimPrefix(p, "/img/"))
	case strings.HasPrefix(p, "/calendar/"):
		if b, ok := calendarPage(p); ok {
			return html(b)
		}
	case strings.HasPrefix(p, "/archive/"):
		if b, ok := archivePage(p); ok {
			return html(b)
		}
	}
	if b, ok := sitePages()[p]; ok {
		return html(b)
	}
	return resource{}, false
}

// SiteServer is the demo site listening on its own loopback address.
type SiteServer struct {
	*Site
	URL  string // the home page: "http://127.0.0.8:41234/"
	Addr string // the listening address, its host key: "127.0.0.8:41234"

	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// StartSite serves a NewSite on addr ("127.0.0.8:0" when empty, or
// 127.0.0.1 at a free port where that address cannot be bound) until
// Close.
func StartSite(addr string) (*SiteServer, error) {
	var ln net.Listener
	var err error
	if addr == "" {
		ln, err = listen("127.0.0.8:0", "127.0.0.1:0")
	} else {
		ln, err = listen(addr, "")
	}
	if err != nil {
		return nil, errors.Join(errors.New("demo: the site"), err)
	}
	s := &SiteServer{Site: NewSite(), Addr: ln.Addr().String(), ln: ln, done: make(chan struct{})}
	s.URL = "http://" + s.Addr + "/"
	s.srv = &http.Server{Handler: s.Site, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // http.ErrServerClosed on Close
	}()
	return s, nil
}

// Close stops the site: its port is free and its handlers have returned
// when Close returns.
func (s *SiteServer) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}
