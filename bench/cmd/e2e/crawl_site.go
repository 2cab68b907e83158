package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The crawl benchmark's site (issue #31): crawlPages HTML pages on each of
// many loopback hosts, served by `e2e crawl-site` in a process of its own so
// that its CPU is not the crawler's. Host i listens on 127.2.(i/250).(i%250+1)
// (a port the kernel picks), so every host is its own host key to Heed and
// its own host to wget2.
//
// Each host serves the same 50 pages (the same-host links are relative; only
// the footer's links to other hosts differ): "/" and /p/01.html … /p/49.html,
// about 4 KiB of ordinary markup with 15–20 links each — a navigation bar,
// links in the text, a "see also" list, two links to pages of other hosts of
// the site, one to a host outside it (partner.invalid), and on "/" only a
// link to /private/, which robots.txt disallows. Every page also links a
// stylesheet, a favicon that is missing (404) and one of four photos, of
// which two are tiny JPEGs and two are missing. So a host answers 57
// distinct URLs: robots.txt, 50 pages, 6 assets.
const (
	crawlPages  = 50
	crawlAssets = 6 // /static/site.css, /favicon.ico, /img/photo-0.jpg … photo-3.jpg
	// crawlPerHost is every URL of a host a polite, robots-obeying crawl fetches.
	crawlPerHost = 1 + crawlPages + crawlAssets
	// unknownURL is the number of every request for a URL the site does not
	// have (/private/ is one before it).
	unknownURL = crawlPerHost + 1
)

// Kinds of request the site logs.
const (
	kindPage = iota
	kindRobots
	kindAsset    // answered 200
	kindMissing  // answered 404 (the missing assets, and anything unknown)
	kindPrivate  // under /private/, which robots.txt disallows
	kindOffGraph // an unknown path under /p/
	numKinds
)

var kindNames = [numKinds]string{"page", "robots.txt", "asset", "404", "disallowed", "unknown page"}

func crawlHostIP(i int) net.IP { return net.IPv4(127, 2, byte(i/250), byte(i%250+1)) }

// crawlLog is what the site received: per host, each request's arrival
// (nanoseconds since the site started) and kind, in arrival order.
type crawlLog struct {
	Hosts [][]crawlHit `json:"hosts"`
	// CPU is the site process's own user+system CPU time so far; Start
	// when it started (Unix nanoseconds), the zero of every hit's T.
	CPU   time.Duration `json:"cpu"`
	Start int64         `json:"start"`
	// Conns is how many connections the site's hosts accepted so far.
	Conns int64 `json:"conns"`
}

// crawlHit is one request: when it arrived, its kind, and which of the
// host's URLs it asked for (0 robots.txt, 1+i page i, then the assets;
// unknown URLs share one number), so that a URL fetched twice shows.
type crawlHit struct {
	T    int64 `json:"t"`
	Kind uint8 `json:"k"`
	URL  uint8 `json:"u"`
}

type siteHost struct {
	mu   sync.Mutex
	hits []crawlHit
	idx  int
	base string // "http://127.2.x.y:port"
}

type site struct {
	conns atomic.Int64 // connections accepted, all hosts together
	start time.Time
	hosts []*siteHost
	pages [crawlPages][]byte // each page up to its footer, the same on every host
	depth int                // the deepest page's depth from "/", in links
}

// crawlSiteMain is `e2e crawl-site -hosts N -seeds FILE`: it listens on N
// hosts, writes each host's "/" to FILE, prints "ready ADDR DEPTH" (ADDR is
// the control server: GET /log answers the log as JSON, POST /reset empties
// it) and serves until its standard input closes.
func crawlSiteMain(args []string) int {
	fs := flag.NewFlagSet("crawl-site", flag.ExitOnError)
	n := fs.Int("hosts", 2000, "hosts")
	seeds := fs.String("seeds", "", "write each host's / here, one a line")
	_ = fs.Parse(args)
	raiseNoFile()
	s := &site{start: time.Now(), hosts: make([]*siteHost, *n)}
	s.buildPages()
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 5 * time.Minute,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		}}
	var list strings.Builder
	for i := range s.hosts {
		l, err := net.Listen("tcp", net.JoinHostPort(crawlHostIP(i).String(), "0"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "crawl-site: host %d: %v\n", i, err)
			return 1
		}
		s.hosts[i] = &siteHost{idx: i, base: "http://" + l.Addr().String(), hits: make([]crawlHit, 0, crawlPerHost)}
		fmt.Fprintf(&list, "%s/\n", s.hosts[i].base)
		go srv.Serve(l)
	}
	if err := os.WriteFile(*seeds, []byte(list.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "crawl-site:", err)
		return 1
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crawl-site:", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /log", s.serveLog)
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, _ *http.Request) {
		for _, h := range s.hosts {
			h.mu.Lock()
			h.hits = h.hits[:0]
			h.mu.Unlock()
		}
	})
	go http.Serve(ctl, mux)
	fmt.Printf("ready %s %d\n", ctl.Addr(), s.depth)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

func (s *site) serveLog(w http.ResponseWriter, _ *http.Request) {
	out := crawlLog{Start: s.start.UnixNano(), Conns: s.conns.Load()}
	for _, h := range s.hosts {
		h.mu.Lock()
		out.Hosts = append(out.Hosts, append([]crawlHit(nil), h.hits...))
		h.mu.Unlock()
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		out.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

var (
	robotsTxt = []byte("# The crawl benchmark's site\nUser-agent: *\nDisallow: /private/\n")
	siteCSS   = []byte("body{font:16px/1.5 sans-serif;margin:0 auto;max-width:48em}nav ul{display:flex;gap:1em;list-style:none}" +
		"figure{margin:1em 0}footer{border-top:1px solid #ccc;margin-top:2em;font-size:.9em}\n")
	// tinyJPEG is the start of a JPEG: a photo's few bytes.
	tinyJPEG = []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9")
	notFound = []byte("<!DOCTYPE html><title>Not found</title><h1>Not found</h1>\n")
	// assetPaths are the assets every page links; the first three are
	// served, the others are missing.
	assetPaths  = [crawlAssets]string{"/static/site.css", "/img/photo-0.jpg", "/img/photo-2.jpg", "/favicon.ico", "/img/photo-1.jpg", "/img/photo-3.jpg"}
	assetTypes  = [3]string{"text/css", "image/jpeg", "image/jpeg"}
	assetBodies = [3][]byte{siteCSS, tinyJPEG, tinyJPEG}
)

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := time.Since(s.start)
	h := s.hostOf(r)
	if h == nil {
		http.Error(w, "unknown host", http.StatusMisdirectedRequest)
		return
	}
	kind, status, ctype, body := kindMissing, http.StatusNotFound, "text/html; charset=utf-8", notFound
	url := unknownURL
	var footer []byte
	switch p := r.URL.Path; {
	case p == "/robots.txt":
		kind, status, ctype, body, url = kindRobots, http.StatusOK, "text/plain; charset=utf-8", robotsTxt, 0
	case p == "/":
		kind, status, body, url = kindPage, http.StatusOK, s.pages[0], 1
		footer = s.footer(h, 0)
	case strings.HasPrefix(p, "/p/") && strings.HasSuffix(p, ".html"):
		kind = kindOffGraph
		if i, err := strconv.Atoi(p[3 : len(p)-5]); err == nil && i > 0 && i < crawlPages && p == pagePath(i) {
			kind, status, body, url = kindPage, http.StatusOK, s.pages[i], 1+i
			footer = s.footer(h, i)
		}
	case strings.HasPrefix(p, "/private/"):
		kind, url = kindPrivate, crawlPerHost
	default:
		for k, a := range assetPaths {
			if p == a {
				url, kind = 1+crawlPages+k, kindMissing
				if k < 3 {
					kind, status, ctype, body = kindAsset, http.StatusOK, assetTypes[k], assetBodies[k]
				}
			}
		}
	}
	h.mu.Lock()
	h.hits = append(h.hits, crawlHit{T: int64(t), Kind: uint8(kind), URL: uint8(url)})
	h.mu.Unlock()
	hd := w.Header()
	hd["Content-Type"] = []string{ctype}
	hd["Content-Length"] = []string{strconv.Itoa(len(body) + len(footer))}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
	_, _ = w.Write(footer)
}

// hostOf is the host whose address the request came in on.
func (s *site) hostOf(r *http.Request) *siteHost {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	if !ok {
		return nil
	}
	ip := a.IP.To4()
	if ip == nil || ip[0] != 127 || ip[1] != 2 || ip[3] == 0 {
		return nil
	}
	i := int(ip[2])*250 + int(ip[3]) - 1
	if i >= len(s.hosts) {
		return nil
	}
	return s.hosts[i]
}

func pagePath(i int) string {
	if i == 0 {
		return "/"
	}
	return fmt.Sprintf("/p/%02d.html", i)
}

// footer is page i's footer on host h: two links to other hosts of the site,
// one outside it, and the end of the document.
func (s *site) footer(h *siteHost, i int) []byte {
	n := len(s.hosts)
	a, b := s.hosts[(h.idx+1)%n], s.hosts[(h.idx+n/2+i)%n]
	var f strings.Builder
	f.Grow(512)
	f.WriteString("<footer>\n<p>Elsewhere on the network: ")
	fmt.Fprintf(&f, `<a href="%s%s">the next site</a>, <a href="%s/">a sister site</a>`, a.base, pagePath((i+1)%crawlPages), b.base)
	f.WriteString(` and <a href="http://partner.invalid/catalogue/">our partner</a>.</p>` + "\n")
	f.WriteString("<p>&copy; 2026 The Loopback Press. All rights reserved.</p>\n</footer>\n</body>\n</html>\n")
	return []byte(f.String())
}

// buildPages writes the 50 pages (each without its footer) and checks that
// every page is reachable from "/", recording the deepest one's depth.
func (s *site) buildPages() {
	words := strings.Fields(`politeness crawler host request rate token bucket robots sitemap archive catalogue
		library index chapter section figure table summary note history journal letter report season river
		harbour market garden station bridge museum council school review edition volume issue paper print
		morning evening winter summer autumn spring north south east west quiet careful steady patient`)
	links := make([][]int, crawlPages)
	for i := range crawlPages {
		rng := rand.New(rand.NewPCG(uint64(i), 31))
		var b strings.Builder
		b.Grow(4096)
		title := fmt.Sprintf("%s %s — page %d", strings.ToUpper(words[i%len(words)][:1])+words[i%len(words)][1:], words[(i*7+3)%len(words)], i)
		fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<link rel="stylesheet" href="/static/site.css">
<link rel="icon" href="/favicon.ico">
</head>
<body>
<header>
<nav><ul>
<li><a href="/">Home</a></li>
`, title)
		out := []int{0}
		for k := 1; k <= 4; k++ {
			fmt.Fprintf(&b, "<li><a href=\"%s\">Section %d</a></li>\n", pagePath(k), k)
			out = append(out, k)
		}
		b.WriteString("</ul></nav>\n</header>\n<main>\n<article>\n")
		fmt.Fprintf(&b, "<h1>%s</h1>\n", title)
		for para := range 6 {
			b.WriteString("<p>")
			for w := range 70 {
				if w > 0 {
					b.WriteByte(' ')
				}
				if w == 35 {
					to := rng.IntN(crawlPages)
					fmt.Fprintf(&b, `<a href="%s">%s %s</a>`, pagePath(to), words[rng.IntN(len(words))], words[rng.IntN(len(words))])
					out = append(out, to)
					continue
				}
				b.WriteString(words[rng.IntN(len(words))])
			}
			b.WriteString(".</p>\n")
			if para == 2 {
				fmt.Fprintf(&b, "<figure><img src=\"/img/photo-%d.jpg\" alt=\"A %s by the %s\" width=\"640\" height=\"480\">"+
					"<figcaption>The %s, in %s.</figcaption></figure>\n",
					i%4, words[rng.IntN(len(words))], words[rng.IntN(len(words))], words[rng.IntN(len(words))], words[rng.IntN(len(words))])
			}
		}
		b.WriteString("</article>\n<aside>\n<h2>See also</h2>\n<ul>\n")
		for _, d := range []int{1, 2, 10, 25} {
			to := (i + d) % crawlPages
			fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", pagePath(to), words[(to*5)%len(words)])
			out = append(out, to)
		}
		b.WriteString("</ul>\n")
		if i == 0 {
			b.WriteString("<p><a href=\"/private/drafts.html\">Drafts (staff only)</a></p>\n")
		}
		b.WriteString("</aside>\n</main>\n")
		s.pages[i] = []byte(b.String())
		links[i] = out
	}
	depth := map[int]int{0: 0}
	for queue := []int{0}; len(queue) > 0; queue = queue[1:] {
		for _, to := range links[queue[0]] {
			if _, ok := depth[to]; !ok {
				depth[to] = depth[queue[0]] + 1
				s.depth = max(s.depth, depth[to])
				queue = append(queue, to)
			}
		}
	}
	if len(depth) != crawlPages {
		panic(fmt.Sprintf("crawl site: only %d of %d pages are reachable from /", len(depth), crawlPages))
	}
}

// readReady reads the site's "ready ADDR DEPTH" line.
func readReady(r *bufio.Reader) (addr string, depth int, err error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", 0, fmt.Errorf("crawl site: %w", err)
	}
	if _, err := fmt.Sscanf(line, "ready %s %d", &addr, &depth); err != nil {
		return "", 0, fmt.Errorf("crawl site said %q: %w", line, err)
	}
	return addr, depth, nil
}
