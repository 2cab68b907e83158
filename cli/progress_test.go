package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/cli/clitest"
	"heed/engine"
)

// fakeTerm is a terminal for Main in-process: its size can change, and
// each write to it is kept with the width asked last before it (the
// redraw's: only mpb's redraws ask, once each).
type fakeTerm struct {
	mu      sync.Mutex
	w, h    int
	asked   int
	redraws int
	chunks  []chunk
}

type chunk struct {
	width int
	data  []byte
}

func (f *fakeTerm) size() (int, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = f.w
	f.redraws++
	return f.w, f.h, nil
}

func (f *fakeTerm) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.chunks = append(f.chunks, chunk{f.asked, append([]byte(nil), p...)})
	return len(p), nil
}

func (f *fakeTerm) resize(w, h int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.w, f.h = w, h
}

// slowServer serves size-byte files slowly (about 64 KiB a second), so
// that their bars are drawn a while.
func slowServer(t *testing.T, size int) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(size))
		chunk := bytes.Repeat([]byte("x"), 4<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(60 * time.Millisecond):
			}
			w.Write(chunk[:min(len(chunk), size-sent)])
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// The bars follow the terminal's width at each redraw: made narrower
// twice (no reflow, as xterm), no redrawn line is ever wider than the
// terminal and no download has two bar lines. A URL's password is never
// shown.
func TestProgress_FollowsTheTerminalsWidth(t *testing.T) {
	ts := slowServer(t, 192<<10)
	term := &fakeTerm{w: 100, h: 24}
	dir := t.TempDir()
	masked := strings.Replace(ts.URL, "http://", "http://someone:secret@", 1)
	var urls []string
	for i := range 3 {
		urls = append(urls, fmt.Sprintf("%s/some/rather/long/path/to/the/file-number-%d.bin", masked, i))
	}
	var errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: term, Stderr: &errb, Version: "9.9.9",
		Interactive: true, ErrTerminal: true, TermSize: term.size}
	go func() { // narrower after a few redraws, then narrower still
		for _, w := range []int{60, 41} {
			for {
				term.mu.Lock()
				n := term.redraws
				term.mu.Unlock()
				if n >= 3 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			term.resize(w, 24)
			term.mu.Lock()
			term.redraws = 0
			term.mu.Unlock()
		}
	}()
	code := Main(context.Background(), env, append([]string{"get", "--db", filepath.Join(dir, "h.db"), "--dir", dir,
		"--rate", "6000", "--max-inflight", "3", "--jitter", "0-0"}, urls...))
	require.Equal(t, ExitOK, code, errb.String())
	assert.NotContains(t, errb.String(), "queued 3", "said above the bars, on the terminal")

	scr := clitest.NewScreen(100, 24)
	widths := map[int]bool{}
	for i, c := range term.chunks {
		if c.width > 0 && c.width != scr.Width {
			scr.Resize(c.width, 24)
		}
		widths[scr.Width] = true
		scr.Write(bytes.ReplaceAll(c.data, []byte("\n"), []byte("\r\n"))) // as a terminal's driver does (onlcr)
		bars := map[string]int{}
		for _, l := range scr.Lines() {
			require.LessOrEqual(t, utf8.RuneCountInString(l), scr.Width, "after write %d", i)
			if strings.ContainsAny(l, "█░") {
				for k := range 3 {
					if strings.Contains(l, fmt.Sprintf("-%d.bin", k)) {
						bars[fmt.Sprint(k)]++
					}
				}
			}
		}
		for k, n := range bars {
			require.Equal(t, 1, n, "after write %d, file %s has %d bar lines:\n%s", i, k, n, scr)
		}
	}
	for _, l := range scr.Wrapped { // a report may wrap where the terminal is too narrow for it, a redrawn line never
		assert.False(t, strings.ContainsAny(l, "█░") || strings.Contains(l, " done · "), "a redrawn line wider than the terminal: %q\n%s", l, scr)
	}
	assert.True(t, widths[100] && widths[60] && widths[41], "drawn at every width: %v", widths)
	all := scr.String()
	assert.NotContains(t, all, "secret", "a password on the screen")
	assert.Equal(t, 3, strings.Count(all, "\ndone     "), all)
	assert.Contains(t, all, "queued 3, duplicates 0")
	assert.NotContains(t, all, "█", "bars left behind:\n%s", all)
}

// -q on a terminal leaves only problems and the summary: no bars.
func TestProgress_QuietDrawsNoBars(t *testing.T) {
	ts := slowServer(t, 16<<10)
	term := &fakeTerm{w: 80, h: 24}
	dir := t.TempDir()
	var errb bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: term, Stderr: &errb, Version: "9.9.9",
		Interactive: true, ErrTerminal: true, TermSize: term.size}
	code := Main(context.Background(), env, []string{"get", "-q", "--db", filepath.Join(dir, "h.db"), "--dir", dir,
		"--jitter", "0-0", ts.URL + "/a.bin", ts.URL + "/b.bin"})
	require.Equal(t, ExitOK, code, errb.String())
	assert.Empty(t, term.chunks, "nothing on standard output")
	assert.Contains(t, errb.String(), "this run: 2 done")
}

// A line is shortened in its middle, where it differs least.
func TestShorten(t *testing.T) {
	assert.Equal(t, "https://example.com/a", shorten("https://example.com/a", 21))
	assert.Equal(t, "https://e…/file.iso", shorten("https://example.com/some/long/path/file.iso", 19))
	assert.Equal(t, 19, utf8.RuneCountInString(shorten("https://example.com/some/long/path/file.iso", 19)))
	assert.Equal(t, "h", shorten("https://example.com/", 1))
}

// A download's line fits the width it is laid out for, the URL keeping
// at least minURL columns; columns go when there is no room.
func TestLayoutFor(t *testing.T) {
	for _, w := range []int{10, 20, 40, 41, 60, 79, 120, 200} {
		l := layoutFor(w, 15)
		sum := l.host + l.speed + l.url
		if l.pct {
			sum += 5
		}
		if l.bar > 0 {
			sum += l.bar + 2
		}
		assert.Equal(t, w, sum, "width %d: %+v", w, l)
		assert.GreaterOrEqual(t, l.url, min(w, minURL), "width %d", w)
		assert.LessOrEqual(t, l.bar, 30)
	}
	assert.Equal(t, layout{host: 15, bar: 18, speed: 13, url: 26, pct: true}, layoutFor(79, 15))
	assert.Zero(t, layoutFor(20, 15).bar, "no bar in 20 columns")
}

// The total line: counts and bytes; an ETA when the sizes in flight are
// known and nothing else is queued (by how fast jobs end, "~", when jobs
// are); and while nothing runs, which host waits and why.
func TestProgress_TotalLine(t *testing.T) {
	p := newProgress(Env{Interactive: true}, false)
	p.done, p.failed, p.bytes = 3, 1, 3<<20
	now := time.Now()
	active := []engine.Active{
		{JobID: 1, Host: "a.example", Started: now.Add(-2 * time.Second), Bytes: 2 << 20, Size: 4 << 20},
		{JobID: 2, Host: "b.example", Started: now.Add(-2 * time.Second), Bytes: 2 << 20, Size: 4 << 20},
	}
	line := p.totalLine(active, 0)
	assert.Regexp(t, `^3 done · 1 failed · 7\.0 MiB · 2\.0 MiB/s · ETA 2s$`, line)

	p.queued = 10
	assert.Regexp(t, ` · ETA ~\d+(ms|s)$`, p.totalLine(active, 0), "by how fast jobs end")
	assert.Contains(t, p.totalLine(active, 0), "10 queued")
	assert.Contains(t, p.totalLine(active, 3), "3 more in flight")

	p.waiting = "example.com: breaker open, probe in 25s"
	assert.Regexp(t, `^3 done · 1 failed · 10 queued · 3\.0 MiB · waiting  example\.com: breaker open, probe in 25s$`, p.totalLine(nil, 0))
}

// A crawl's URL that robots.txt keeps out is said as skipped with the rule
// (not under -q: it is no problem), counted apart from the failures in the
// summary and the total line.
func TestProgress_SkippedIsSaidAndCountedApart(t *testing.T) {
	skip := engine.JobEnd{ID: 1, URL: "http://h.example/private/x.html", Host: "h.example", Outcome: "skipped",
		Err: "robots.txt: Disallow: /private/"}
	var out, errb bytes.Buffer
	p := newProgress(Env{Stdout: &out, Stderr: &errb}, false)
	p.jobEnded(skip)
	p.mu.Lock()
	p.flush()
	line := p.totalLine(nil, 0)
	p.mu.Unlock()
	assert.Equal(t, "skipped  http://h.example/private/x.html — robots.txt: Disallow: /private/\n", out.String())
	assert.Equal(t, "0 done · 1 skipped · 0 failed · 0 B", line)
	p.summary(engine.Counts{Skipped: 1}, false)
	assert.Contains(t, errb.String(), "this run: 0 done (0 B), 1 skipped, 0 failed, ")

	out.Reset()
	q := newProgress(Env{Stdout: &out, Stderr: &errb}, true)
	q.jobEnded(skip)
	q.mu.Lock()
	q.flush()
	q.mu.Unlock()
	assert.Empty(t, out.String(), "-q: a skipped URL is no problem")
	assert.Equal(t, 1, q.skipped)
	assert.Zero(t, q.failed)
}

// While a host waits out its robots.txt Crawl-delay, get and crawl say so.
func TestWhyWaiting_CrawlDelay(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hosts := []engine.HostSnapshot{{Host: "slow.example", At: at, Waiting: engine.WaitCrawlDelay,
		CrawlDelay: 5 * time.Second, NextDue: at.Add(3 * time.Second)}}
	assert.Equal(t, "slow.example: its robots.txt asks for a crawl-delay of 5s, next request in 3s", whyWaiting(hosts))
}

// While a crawl waits on a host whose robots.txt is unreachable (or being
// fetched), the wait says so; a robots.txt that is fine adds nothing.
func TestWhyWaiting_SaysWhenRobotsTxtHoldsAHost(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hosts := []engine.HostSnapshot{{Host: "down.example", At: at, Waiting: engine.WaitRetryDelay, NextDue: at.Add(30 * time.Second)}}
	views := map[string]engine.RobotsView{}
	robots := func(host string) (engine.RobotsView, bool) { v, ok := views[host]; return v, ok }
	assert.Equal(t, "down.example: retry delay, next request in 30s", whyWaitingWith(hosts, robots), "no robots.txt known")
	views["down.example"] = engine.RobotsView{State: "ok, crawl-delay 5s"}
	assert.Equal(t, "down.example: retry delay, next request in 30s", whyWaitingWith(hosts, robots))
	views["down.example"] = engine.RobotsView{State: "disallow all (HTTP 503)"}
	assert.Equal(t, "down.example: retry delay, next request in 30s — robots: disallow all (HTTP 503)", whyWaitingWith(hosts, robots))
}
