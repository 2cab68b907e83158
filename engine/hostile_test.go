package engine_test

// RELIABILITY G37–G44: hostile servers, round two, through the whole engine
// over a real SQLite database and real loopback HTTP. Each test asserts
// where the bytes went, the job's state and what history says.

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/engine/fetch"
)

// G37: an error or redirect response whose body stalls after a few bytes,
// on a connection left open, ends its attempt all the same (a bounded,
// timed drain, then the connection is closed): the status is in history,
// and the host's in-flight slot is free for its other URLs.
func TestReliability_G37_StalledErrorBodyReleasesTheHost(t *testing.T) {
	for _, status := range []string{"404 Not Found", "500 Internal Server Error", "429 Too Many Requests", "302 Found"} {
		t.Run(status, func(t *testing.T) {
			tun := fast()
			tun.MaxInflight = 1
			tun.Retry.MaxAttempts = 1
			r := newRel(t, engine.Options{Defaults: tun})
			var good, stalled atomic.Int32
			base, count := rawServer(t, func(conn net.Conn, req *http.Request, _ int) {
				if req.URL.Path == "/other.txt" || stalled.Add(1) > 1 { // stalls once
					if req.URL.Path == "/other.txt" {
						good.Add(1)
					}
					io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
					return
				}
				extra := ""
				if strings.HasPrefix(status, "302") {
					extra = "Location: /other.txt\r\n"
				}
				if strings.HasPrefix(status, "429") {
					extra = "Retry-After: 1\r\n"
				}
				io.WriteString(conn, "HTTP/1.1 "+status+"\r\n"+extra+"Content-Length: 100\r\n\r\nabc")
				blockUntilClosed(conn) // then silence, the connection open
			})
			r.add(base+"/stall.txt", base+"/other.txt")
			r.run()

			assert.Positive(t, good.Load(), "the host's other URL was fetched")
			h := r.hist()
			require.NotEmpty(t, h)
			code := 0
			fmt.Sscanf(status, "%d", &code)
			assert.Equal(t, code, h[0].Status, "the stalled answer's status is in history")
			for _, j := range r.jobs() {
				assert.NotEqual(t, engine.JobActive, j.State, j.URL)
			}
			assert.GreaterOrEqual(t, count.Load(), int32(2))
		})
	}
}

// G38: a redirect to a URL with no valid host key (a port past 65535, an
// empty host, a bad IDNA label) fails its job at once with the reason, as
// the same URL typed in would be rejected: one request, no loop.
func TestReliability_G38_RedirectToAnInvalidURLFailsAtOnce(t *testing.T) {
	for _, loc := range []string{"http://127.0.0.2:99999/y", "http://:80/y", "http://-a-.example/y", "http://xn--a.example/y", "http://a..b/y"} {
		t.Run(loc, func(t *testing.T) {
			r := newRel(t, engine.Options{})
			srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
				w.Header().Set("Location", loc)
				w.WriteHeader(http.StatusFound)
			})
			r.add(srv.URL + "/x")
			r.run()
			j := r.job()
			assert.Equal(t, engine.JobFailed, j.State)
			assert.Contains(t, j.LastError, "redirect to an invalid URL")
			assert.Equal(t, 1, j.Attempts)
			assert.Len(t, srv.seen(), 1, "no loop")
			h := r.hist()
			require.Len(t, h, 1)
			assert.Equal(t, "failed", h[0].Outcome)
			assert.Contains(t, h[0].Error, "invalid URL")
		})
	}
}

// G39: a Location over 8 KiB is refused with the reason, and no history
// row holds it; a URL over 8 KiB is refused at input.
func TestReliability_G39_HugeLocationRefused(t *testing.T) {
	r := newRel(t, engine.Options{})
	huge := "/" + strings.Repeat("a", 9<<10)
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
		w.Header().Set("Location", huge)
		w.WriteHeader(http.StatusFound)
	})
	r.add(srv.URL + "/x")
	r.run()
	j := r.job()
	assert.Equal(t, engine.JobFailed, j.State)
	assert.Contains(t, j.LastError, "over the limit")
	for _, a := range r.hist() {
		assert.Less(t, len(a.URL)+len(a.Error), 1<<10, "no row holds the Location")
	}
	fi, err := os.Stat(r.dbPath)
	require.NoError(t, err)
	assert.Less(t, fi.Size(), int64(1<<20))

	rep, err := r.eng.Add(context.Background(), srv.URL+"/"+strings.Repeat("b", 9<<10))
	require.NoError(t, err)
	require.Len(t, rep.Rejected, 1)
	assert.Contains(t, rep.Rejected[0].Reason, "over the limit")
}

// dropReused serves each connection's first request and then reads the
// next one and closes the connection without an answer, as a server whose
// keep-alive is broken does. It records when each request arrived.
func dropReused(t *testing.T) (string, func() []time.Time) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []time.Time
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for i := 0; ; i++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					mu.Lock()
					seen = append(seen, time.Now())
					mu.Unlock()
					if i > 0 {
						return // a request on a kept-alive connection: dropped unanswered
					}
					io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					_ = req
				}
			})
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String(), func() []time.Time { mu.Lock(); defer mu.Unlock(); return append([]time.Time(nil), seen...) }
}

// G40, G2: a server that drops reused kept-alive connections unanswered
// sees no more requests than its host's bucket allows (burst + rate·t over
// any window, as the server saw them), every one of them is in history,
// and a dropped request goes again at most once, on a fresh connection.
func TestReliability_G40_DroppedKeepAliveRequestsArePaced(t *testing.T) {
	tun := fast()
	tun.RatePerMin, tun.Burst, tun.MaxInflight = 240, 2, 1
	tun.JitterMax = 0
	r := newRel(t, engine.Options{Defaults: tun})
	base, arrivals := dropReused(t)
	var urls []string
	for i := range 8 {
		urls = append(urls, fmt.Sprintf("%s/f%d", base, i))
	}
	r.add(urls...)
	r.run()

	seen := arrivals()
	for i := range seen {
		for j := i; j < len(seen); j++ {
			window := seen[j].Sub(seen[i]).Seconds()
			allowed := float64(tun.Burst) + tun.RatePerMin/60*window + 0.5 // half a token for the clocks' rounding
			assert.LessOrEqual(t, float64(j-i+1), allowed, "%d requests in %.3fs", j-i+1, window)
		}
	}
	assert.Len(t, r.hist(), len(seen), "every request the server saw is in history")
	for _, j := range r.jobs() {
		assert.Equal(t, engine.JobDone, j.State, j.URL)
	}
}

// G42: an attempt Heed cut off itself — a stop (Ctrl-C), or a crash — does
// not count against max_attempts: four stops during one download leave its
// budget whole, and the next run finishes it.
func TestReliability_G42_StopsDoNotUseTheBudget(t *testing.T) {
	tun := fast()
	tun.Retry.MaxAttempts = 2
	r := newRel(t, engine.Options{Defaults: tun})
	var requests atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, req *http.Request, n int) {
		requests.Add(1)
		if n < 4 { // slow until the fifth request
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			w.Write([]byte("x"))
			w.(http.Flusher).Flush()
			<-req.Context().Done()
			return
		}
		io.WriteString(w, "whole")
	})
	r.add(srv.URL + "/f.txt")
	for i := range 4 {
		r.runUntil(func() bool { return requests.Load() > int32(i) })
		j := r.job()
		require.Equal(t, engine.JobQueued, j.State)
		assert.Zero(t, j.Attempts, "stop %d: the attempt it cut off is given back", i+1)
		assert.Equal(t, "interrupted", j.LastError)
	}
	r.run()
	j := r.job()
	assert.Equal(t, engine.JobDone, j.State, j.LastError)
	assert.Equal(t, 1, j.Attempts)
}

// G44: a URL's password is never shown: not in jobs, history, their JSON
// and CSV, nor in what the engine reports; it is sent to the URL's own
// origin, on a redirect there too, and never to another origin.
func TestReliability_G44_CredentialsMaskedAndKeptToTheirOrigin(t *testing.T) {
	r := newRel(t, engine.Options{})
	var mu sync.Mutex
	auths := map[string]string{} // path → Authorization
	other := newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
		mu.Lock()
		auths["other"+req.URL.Path] = req.Header.Get("Authorization")
		mu.Unlock()
		io.WriteString(w, "other")
	})
	var origin *server
	origin = newServer(t, func(w http.ResponseWriter, req *http.Request, _ int) {
		mu.Lock()
		auths[req.URL.Path] = req.Header.Get("Authorization")
		mu.Unlock()
		switch req.URL.Path {
		case "/same":
			http.Redirect(w, req, "/here.txt", http.StatusFound)
		case "/away":
			http.Redirect(w, req, other.URL+"/there.txt", http.StatusFound)
		default:
			io.WriteString(w, "data")
		}
	})
	secret := "s3cr3t-pw"
	withUser := strings.Replace(origin.URL, "http://", "http://alice:"+secret+"@", 1)
	var ends []engine.JobEnd
	r.close()
	r.opt.OnJob = func(e engine.JobEnd) { mu.Lock(); ends = append(ends, e); mu.Unlock() }
	r.open(r.opt)
	rep, err := r.eng.Add(context.Background(), withUser+"/same "+withUser+"/away "+withUser+"/same")
	require.NoError(t, err)
	require.Len(t, rep.Duplicates, 1)
	assert.NotContains(t, rep.Duplicates[0], secret)
	r.run()

	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+secret))
	mu.Lock()
	assert.Equal(t, basic, auths["/same"])
	assert.Equal(t, basic, auths["/here.txt"], "a redirect to the same origin keeps the credentials")
	assert.Equal(t, "", auths["other/there.txt"], "never sent to another origin")
	for _, e := range ends {
		assert.NotContains(t, e.URL+e.Err, secret)
	}
	mu.Unlock()
	var out strings.Builder
	require.NoError(t, engine.WriteJobsJSON(context.Background(), &out, r.db, engine.JobQuery{}))
	require.NoError(t, engine.WriteHistoryJSON(context.Background(), &out, r.db, engine.HistoryQuery{}))
	require.NoError(t, engine.WriteHistoryCSV(context.Background(), &out, r.db, engine.HistoryQuery{}))
	assert.NotContains(t, out.String(), secret)
	assert.Contains(t, out.String(), "alice:***@")
	for _, a := range r.hist() {
		assert.NotContains(t, a.URL+a.Error, secret)
	}
	for _, j := range r.jobs() {
		assert.Equal(t, engine.JobDone, j.State, fetch.Redact(j.URL))
	}
}

// A status line of "000" is no response at all: the attempt is a
// transport failure with the reason, not a status 0 that reads as one.
func TestReliability_G_StatusLine000IsNoStatus(t *testing.T) {
	tun := fast()
	tun.Retry.MaxAttempts = 1
	r := newRel(t, engine.Options{Defaults: tun})
	base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
		io.WriteString(conn, "HTTP/1.1 000 Nothing\r\nContent-Length: 0\r\n\r\n")
	})
	r.add(base + "/f")
	r.run()
	j := r.job()
	assert.Equal(t, engine.JobFailed, j.State)
	assert.Contains(t, j.LastError, `malformed status line "000 Nothing"`)
}

// Any number of 1xx informational responses before the answer is fine, as
// for curl: they are skipped, bounded by the response header timeout.
func TestReliability_G_ManyInformationalResponsesSkipped(t *testing.T) {
	r := newRel(t, engine.Options{})
	base, _ := rawServer(t, func(conn net.Conn, _ *http.Request, _ int) {
		for range 12 {
			io.WriteString(conn, "HTTP/1.1 102 Processing\r\n\r\n")
		}
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndone")
	})
	r.add(base + "/f.txt")
	r.run()
	assert.Equal(t, engine.JobDone, r.job().State, r.job().LastError)
	assert.Equal(t, "done", r.files()["f.txt"])
}

// An input file that is no list at all (/dev/zero) ends the add with an
// error naming the line, quickly, holding a line's worth at most (G43).
func TestReliability_G43_EndlessInputEnds(t *testing.T) {
	r := newRel(t, engine.Options{})
	zero, err := os.Open("/dev/zero")
	require.NoError(t, err)
	defer zero.Close()
	_, err = r.eng.AddFrom(context.Background(), zero, engine.AddOptions{})
	require.ErrorIs(t, err, fetch.ErrNotAList)
	assert.ErrorContains(t, err, "line 1")
	assert.Empty(t, r.jobs())
}
