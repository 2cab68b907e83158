package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"heed/engine/fetch"
)

// requestFlags are the flags of a run (get, crawl, worker, the window) that
// shape every request beside the politeness settings: a browser's cookies
// and the logins of ~/.netrc.
type requestFlags struct {
	cookies string
	noNetrc bool
}

func (r *requestFlags) register(f *pflag.FlagSet) {
	f.StringVar(&r.cookies, "cookies", "", "send the cookies of FILE, a cookies.txt as browsers export it (Netscape format)")
	f.BoolVar(&r.noNetrc, "no-netrc", false, "do not send the logins of ~/.netrc (or $NETRC) to the hosts it names")
	name(f, "cookies", "FILE")
}

// RequestConfig is the part of a run's fetch settings that cookies and
// netrc give: the cookies of the cookies.txt at cookies ("" for none) and,
// with netrc, the logins of NetrcPath. A cookies file that cannot be read is
// an error; a netrc that cannot is said on warn and left out, so that a
// broken ~/.netrc blocks no download that needs no login.
func RequestConfig(cookies string, netrc bool, warn io.Writer) (fetch.Config, error) {
	var c fetch.Config
	if cookies != "" {
		jar, _, err := fetch.ReadCookies(cookies)
		if err != nil {
			return c, fmt.Errorf("--%w", err)
		}
		c.Cookies = jar
	}
	if netrc {
		if path := fetch.NetrcPath(); path != "" {
			n, err := fetch.ReadNetrc(path)
			if err != nil {
				fmt.Fprintf(warn, "heed: %v; no logins from it are sent\n", err)
			} else {
				c.Netrc = n
			}
		}
	}
	return c, nil
}

// config is RequestConfig for these flags.
func (r *requestFlags) config(warn io.Writer) (fetch.Config, error) {
	return RequestConfig(r.cookies, !r.noNetrc, warn)
}
