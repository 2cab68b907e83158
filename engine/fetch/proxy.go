package fetch

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/net/http/httpproxy"
)

// envProxy is the proxy rule of the environment, read when a transport is
// built (N4): HTTP_PROXY for http, HTTPS_PROXY for https, and ALL_PROXY, as
// curl and wget read it, for either scheme whose own variable is unset;
// NO_PROXY still names the hosts reached directly, and requests to
// localhost and loopback addresses never go through a proxy. Each variable
// may be spelled in lower case, which wins, as curl has it. A value may be
// http://, https://, socks5:// or socks5h://.
//
// net/http's ProxyFromEnvironment reads the environment once per process and
// knows no ALL_PROXY; this reads it per transport.
func envProxy() func(*http.Request) (*url.URL, error) {
	c := httpproxy.FromEnvironment()
	if all := getEnvAny("all_proxy", "ALL_PROXY"); all != "" {
		if c.HTTPProxy == "" {
			c.HTTPProxy = all
		}
		if c.HTTPSProxy == "" {
			c.HTTPSProxy = all
		}
	}
	fn := c.ProxyFunc()
	return func(r *http.Request) (*url.URL, error) { return fn(r.URL) }
}

// getEnvAny returns the first of names set to a non-empty value.
func getEnvAny(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Direct is the proxy setting that sends a host's requests straight to it,
// whatever the environment says.
const Direct = "direct"

// ParseProxy reads a proxy setting (N4): "" (follow the environment, nil),
// Direct (nil) or an absolute http://, https://, socks5:// or socks5h://
// URL with a host. Its error names the value with any password masked.
func ParseProxy(s string) (*url.URL, error) {
	if s == "" || s == Direct {
		return nil, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		shown := s
		if at := strings.LastIndex(s, "@"); at >= 0 { // Redact cannot mask what does not parse
			shown = "***" + s[at:]
		}
		return nil, fmt.Errorf("proxy: %q is not a URL; want http://, https://, socks5:// or socks5h://HOST:PORT, or %q", shown, Direct)
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return nil, fmt.Errorf("proxy: %q is not an http://, https://, socks5:// or socks5h:// URL", Redact(s))
	}
	if u.Host == "" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("proxy: %q is not a proxy address such as %s://HOST:PORT", Redact(s), u.Scheme)
	}
	return u, nil
}
