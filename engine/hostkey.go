package engine

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// hostKeyProfile converts a host name to its lower-case ASCII (punycode)
// form. It is the IDNA Lookup profile without the strict STD3 check, so that
// names with underscores (common in real crawls) still get a key; the
// result is still lower-case punycode, which is all a key needs.
var hostKeyProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
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
func HostKey(rawURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return "", fmt.Errorf("host key: %w", err)
	}
	return HostKeyOf(u)
}

// HostKeyOf is HostKey for an already parsed URL.
func HostKeyOf(u *url.URL) (string, error) {
	if u == nil {
		return "", errors.New("host key: nil URL")
	}
	host := u.Hostname()
	if host == "" {
		return "", fmt.Errorf("host key: URL %q has no host", u.Redacted())
	}
	port := u.Port()
	if port != "" {
		p, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return "", fmt.Errorf("host key: port %q of %q is not a number 0…65535", port, host)
		}
		port = strconv.FormatUint(p, 10) // "080" and "80" are the same port
	}
	var name string
	if ip := net.ParseIP(host); ip != nil {
		name = ip.String() // canonical form; IPv6 is bracketed below
	} else {
		a, err := hostKeyProfile.ToASCII(host)
		if err != nil {
			return "", fmt.Errorf("host key: invalid host name %q: %w", host, err)
		}
		name = strings.ToLower(strings.TrimSuffix(a, "."))
		if name == "" {
			return "", fmt.Errorf("host key: invalid host name %q", host)
		}
	}
	if port != "" && port == defaultPort(u.Scheme) {
		port = ""
	}
	if strings.Contains(name, ":") { // IPv6 literal
		if port == "" {
			return "[" + name + "]", nil
		}
		return "[" + name + "]:" + port, nil
	}
	if port == "" {
		return name, nil
	}
	return name + ":" + port, nil
}

// defaultPort is the port a scheme uses when none is written.
func defaultPort(scheme string) string {
	switch strings.ToLower(scheme) {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}
