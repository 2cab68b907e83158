package engine

import (
	"net/url"

	"heed/engine/fetch"
)

// HostKey returns the politeness key of rawURL (SPEC §1): the lower-case
// host in IDNA/punycode form, followed by ":port" only when the port is not
// the default of the scheme (80 for http, 443 for https).
//
//	HostKey("HTTP://Example.COM:80/a")  == "example.com"
//	HostKey("https://Bücher.de/")       == "xn--bcher-kva.de"
//	HostKey("http://example.com:8080/") == "example.com:8080"
//
// Every request to the same key shares one governor and one breaker.
// The error names the problem (no host, bad port, invalid IDNA name).
func HostKey(rawURL string) (string, error) { return fetch.HostKey(rawURL) }

// HostKeyOf is HostKey for an already parsed URL.
func HostKeyOf(u *url.URL) (string, error) { return fetch.HostKeyOf(u) }
