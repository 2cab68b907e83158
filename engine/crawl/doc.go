// Package crawl holds the pure parts of Heed's crawl mode (SPEC §10): the
// decisions the crawl engine asks about each URL and each fetched body.
// Nothing here does I/O beyond reading the io.Reader it is given, keeps
// state between calls, or starts goroutines.
//
// The engine starts from seed URLs. For each page it fetches it calls
// IsHTML on the Content-Type and, if so, Extract on the saved body; for
// each sitemap file, ParseSitemap. For each URL found it computes Key and
// skips keys already seen (one job per URL), asks Scope.Allows (counting
// the refusals), then Trap (skipping with the reason), then checks its own
// --depth and --max-pages before queueing the URL as written.
//
// One rule group per file, with its tests beside it:
//
//	key.go      Key, the de-duplication key (W3), and host keys
//	scope.go    Scope, Mode: what a crawl follows (W1)
//	trap.go     Trap: URLs that are crawler traps (W6)
//	links.go    Extract, IsHTML: the links of an HTML page (W2)
//	resolve.go  how a reference becomes a URL to fetch (W2, W7)
//	attrs.go    srcset, meta refresh and nofollow grammars (W2)
//	sitemap.go  ParseSitemap: sitemaps and sitemap indexes (W7)
package crawl
