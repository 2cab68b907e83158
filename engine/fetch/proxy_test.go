package fetch

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// proxyHost is the name the tests download from. Nothing resolves it but
// the test proxies and the direct dialer of proxyEnv, as a proxy resolves
// the names it is asked for; a loopback address would never be proxied.
const proxyHost = "files.example.com"

// proxyEnv is an http and an https origin for proxyHost, an HTTP proxy
// (CONNECT and absolute-form) and a SOCKS5 proxy, each counting what it
// carried.
type proxyEnv struct {
	origin, originTLS *httptest.Server
	hits              atomic.Int64 // requests the origins answered
	httpProxy         string       // its URL
	socksProxy        string
	viaHTTP, viaSocks atomic.Int64
}

func newProxyEnv(t *testing.T) *proxyEnv {
	t.Helper()
	p := &proxyEnv{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.hits.Add(1)
		io.WriteString(w, "through "+r.Host)
	})
	p.origin = httptest.NewServer(h)
	p.originTLS = httptest.NewTLSServer(h)
	t.Cleanup(p.origin.Close)
	t.Cleanup(p.originTLS.Close)

	hp := httptest.NewServer(http.HandlerFunc(p.serveHTTPProxy))
	t.Cleanup(hp.Close)
	p.httpProxy = hp.URL

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go p.serveSocks(ln)
	p.socksProxy = "socks5://" + ln.Addr().String()
	return p
}

// resolve maps proxyHost:port to the origin serving that port's scheme.
func (p *proxyEnv) resolve(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	if host != proxyHost {
		return addr
	}
	if port == "443" {
		return p.originTLS.Listener.Addr().String()
	}
	return p.origin.Listener.Addr().String()
}

func (p *proxyEnv) serveHTTPProxy(w http.ResponseWriter, r *http.Request) {
	p.viaHTTP.Add(1)
	if r.Method == http.MethodConnect {
		up, err := net.Dial("tcp", p.resolve(r.Host))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		pipe(conn, up, buf.Reader)
		return
	}
	// Absolute form: "GET http://files.example.com/f HTTP/1.1".
	out := r.Clone(context.Background())
	out.RequestURI = ""
	out.URL.Host = p.resolve(net.JoinHostPort(r.URL.Hostname(), "80"))
	resp, err := http.DefaultTransport.(*http.Transport).Clone().RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// serveSocks speaks SOCKS5 (RFC 1928) without authentication, CONNECT only.
func (p *proxyEnv) serveSocks(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			r := bufio.NewReader(c)
			var hello [2]byte // version, number of methods
			if _, err := io.ReadFull(r, hello[:]); err != nil || hello[0] != 5 {
				c.Close()
				return
			}
			if _, err := io.ReadFull(r, make([]byte, hello[1])); err != nil {
				c.Close()
				return
			}
			c.Write([]byte{5, 0}) // no authentication
			var req [4]byte       // version, command, reserved, address type
			if _, err := io.ReadFull(r, req[:]); err != nil || req[1] != 1 {
				c.Close()
				return
			}
			var host string
			switch req[3] {
			case 1, 4: // IPv4, IPv6
				ip := make([]byte, map[byte]int{1: 4, 4: 16}[req[3]])
				io.ReadFull(r, ip)
				host = net.IP(ip).String()
			case 3: // a name, resolved here
				n, _ := r.ReadByte()
				name := make([]byte, n)
				io.ReadFull(r, name)
				host = string(name)
			}
			var port [2]byte
			if _, err := io.ReadFull(r, port[:]); err != nil {
				c.Close()
				return
			}
			addr := net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port[:]))))
			up, err := net.Dial("tcp", p.resolve(addr))
			if err != nil {
				c.Write([]byte{5, 4, 0, 1, 0, 0, 0, 0, 0, 0}) // host unreachable
				c.Close()
				return
			}
			p.viaSocks.Add(1)
			c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
			pipe(c, up, r)
		}()
	}
}

// pipe copies both ways until either side is done; from holds what the
// proxy already read from the client.
func pipe(client, up net.Conn, from io.Reader) {
	go func() { io.Copy(up, from); up.Close() }()
	io.Copy(client, up)
	client.Close()
}

// clearProxyEnv unsets every variable the proxy rule reads.
func clearProxyEnv(t *testing.T) {
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD"} {
		t.Setenv(k, "")
		t.Setenv(strings.ToLower(k), "")
	}
}

// fetcher builds a Fetcher now, so that it reads the environment as the
// test set it, trusting the TLS origin and resolving proxyHost itself when
// it dials directly.
func (p *proxyEnv) fetcher(t *testing.T) *env { return p.fetcherWith(t, nil) }

func (p *proxyEnv) fetcherWith(t *testing.T, mod func(*Config)) *env {
	e := newEnv(t, mod)
	pool := x509.NewCertPool()
	pool.AddCert(p.originTLS.Certificate())
	for _, tr := range []*http.Transport{e.f.owned, e.f.fresh.Transport.(*http.Transport)} {
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tlsConfig{}
		}
		tr.TLSClientConfig.RootCAs = pool
		dial := tr.DialContext
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dial(ctx, network, p.resolve(addr))
		}
	}
	return e
}

func TestProxy_N4_Environment(t *testing.T) {
	p := newProxyEnv(t)
	cases := []struct {
		name   string
		env    map[string]string
		scheme string
		via    string // "http", "socks" or "" (direct)
	}{
		{"HTTPS_PROXY carries https by CONNECT", map[string]string{"HTTPS_PROXY": p.httpProxy}, "https", "http"},
		{"HTTP_PROXY carries http in absolute form", map[string]string{"HTTP_PROXY": p.httpProxy}, "http", "http"},
		{"HTTPS_PROXY as socks5", map[string]string{"HTTPS_PROXY": p.socksProxy}, "https", "socks"},
		{"ALL_PROXY carries https", map[string]string{"ALL_PROXY": p.socksProxy}, "https", "socks"},
		{"ALL_PROXY carries http", map[string]string{"ALL_PROXY": p.socksProxy}, "http", "socks"},
		{"all_proxy in lower case", map[string]string{"all_proxy": p.socksProxy}, "https", "socks"},
		{"the scheme's own variable wins over ALL_PROXY", map[string]string{"HTTPS_PROXY": p.httpProxy, "ALL_PROXY": p.socksProxy}, "https", "http"},
		{"ALL_PROXY fills only the unset scheme", map[string]string{"HTTPS_PROXY": p.httpProxy, "ALL_PROXY": p.socksProxy}, "http", "socks"},
		{"NO_PROXY bypasses ALL_PROXY", map[string]string{"ALL_PROXY": p.socksProxy, "NO_PROXY": proxyHost}, "https", ""},
		{"NO_PROXY by domain bypasses HTTPS_PROXY", map[string]string{"HTTPS_PROXY": p.httpProxy, "no_proxy": ".example.com"}, "https", ""},
		{"no variable: direct", nil, "https", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearProxyEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			e := p.fetcher(t)
			hits, viaHTTP, viaSocks := p.hits.Load(), p.viaHTTP.Load(), p.viaSocks.Load()

			g := e.do(tc.scheme+"://"+proxyHost+"/f.txt", nil)
			require.NoError(t, g.Err)
			assert.Equal(t, 200, g.Status)
			assert.Equal(t, "through "+proxyHost, e.files()[g.File], "the origin answered")
			assert.Equal(t, int64(1), p.hits.Load()-hits)
			want := map[string][2]int64{"http": {1, 0}, "socks": {0, 1}, "": {0, 0}}[tc.via]
			assert.Equal(t, want, [2]int64{p.viaHTTP.Load() - viaHTTP, p.viaSocks.Load() - viaSocks},
				"requests carried by the HTTP proxy and by the SOCKS5 proxy")
		})
	}
}

// The rule is read when the transport is built, not once per process as
// net/http's ProxyFromEnvironment does.
func TestProxy_N4_ReadPerTransport(t *testing.T) {
	clearProxyEnv(t)
	u := mustURL(t, "https://"+proxyHost+"/")
	first, err := envProxy()(&http.Request{URL: u})
	require.NoError(t, err)
	assert.Nil(t, first)
	t.Setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
	second, err := envProxy()(&http.Request{URL: u})
	require.NoError(t, err)
	require.NotNil(t, second)
	assert.Equal(t, "socks5://127.0.0.1:1080", second.String())
}

// A proxy set for a host overrides the environment; "direct" ignores it.
func TestProxy_N4_SetForHost(t *testing.T) {
	p := newProxyEnv(t)
	clearProxyEnv(t)
	t.Setenv("ALL_PROXY", p.socksProxy)
	set := map[string]string{}
	env := p.fetcherWith(t, func(c *Config) {
		c.ProxyFor = func(u *url.URL) (*url.URL, bool) {
			s, ok := set[u.Hostname()]
			if !ok {
				return nil, false
			}
			pu, err := ParseProxy(s)
			require.NoError(t, err)
			return pu, true
		}
	})
	for _, tc := range []struct {
		name, setting string
		want          [2]int64 // via the HTTP proxy, via SOCKS5
	}{
		{"unset: the environment's ALL_PROXY", "", [2]int64{0, 1}},
		{"an http proxy for the host", p.httpProxy, [2]int64{1, 0}},
		{"direct", Direct, [2]int64{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			delete(set, proxyHost)
			if tc.setting != "" {
				set[proxyHost] = tc.setting
			}
			viaHTTP, viaSocks := p.viaHTTP.Load(), p.viaSocks.Load()
			env.f.owned.CloseIdleConnections()
			g := env.do("https://"+proxyHost+"/f.txt", nil)
			require.NoError(t, g.Err)
			assert.Equal(t, 200, g.Status)
			assert.Equal(t, tc.want, [2]int64{p.viaHTTP.Load() - viaHTTP, p.viaSocks.Load() - viaSocks})
		})
	}
}

func TestProxy_N4_BadSetting(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"ftp://proxy.example:21", `proxy: "ftp://proxy.example:21" is not an http://, https://, socks5:// or socks5h:// URL`},
		{"proxy.example:8080", `is not an http://`},
		{"http://", `proxy: "http://" is not a proxy address such as http://HOST:PORT`},
		{"http://u:s3cret@proxy.example:8080/x", `"http://u:***@proxy.example:8080/x"`},
		{"socks5://u:s3cret@%zz", `proxy: "***@%zz" is not a URL`},
	} {
		_, err := ParseProxy(tc.in)
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.err)
		assert.NotContains(t, err.Error(), "s3cret", "the password is never shown")
	}
	for _, ok := range []string{"", Direct, "http://proxy.example:3128", "https://u:p@proxy.example", "socks5://127.0.0.1:1080", "socks5h://proxy.example:1080/"} {
		_, err := ParseProxy(ok)
		assert.NoError(t, err, ok)
	}
}
