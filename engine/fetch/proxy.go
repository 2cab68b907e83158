package fetch

import (
	"net/http"
	"net/url"
	"os"

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
