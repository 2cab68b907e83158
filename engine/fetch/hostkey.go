package fetch

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// hostKeyProfile converts a host name to its lower-case ASCII (punycode)
// form. It is the IDNA Lookup profile without the strict STD3 check, so that
// names with underscores (common in real crawls) still get a key; the
// result is still lower-case punycode, which is all a key needs.
var hostKeyProfile = idna.New(
	idna.MapForLookup(),
	idna.StrictDomainName(false),
	idna.Transitional(false),
	idna.BidiRule(),
)

// HostKey is the politeness key of rawURL (SPEC §1; see engine.HostKey),
// which is also the host part of the URL as Heed stores and requests it:
// lower case, IDNA/punycode, a canonical IP literal, no default port.
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
		if !utf8.ValidString(host) {
			return "", fmt.Errorf("host key: invalid host name %q: not UTF-8", host)
		}
		a, err := hostKeyProfile.ToASCII(host)
		if err != nil {
			return "", fmt.Errorf("host key: invalid host name %q: %w", host, err)
		}
		if again, err := hostKeyProfile.ToASCII(a); err != nil || again != a {
			// A key is its own key: a name whose ASCII form is no valid name
			// (a replacement character mapped in) has none.
			return "", fmt.Errorf("host key: invalid host name %q", host)
		}
		name = strings.ToLower(strings.TrimRight(a, "."))
		if name == "" || strings.HasPrefix(name, ".") || strings.Contains(name, "..") {
			return "", fmt.Errorf("host key: invalid host name %q: an empty label", host)
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
