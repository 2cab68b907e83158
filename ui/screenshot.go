package ui

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// screenshotOpen drives the window for scripts/screenshot.sh (see
// ScreenshotEnv): it waits for the demo hosts to get into their states,
// opens what was asked, and prints ScreenshotReady once the window shows
// it. The demo queues its hosts in this order, which names them when the
// window has no labels for them.
var demoOrder = []string{"healthy", "throttling", "flaky", "slow", "dropping", "quota"}

// demoSite is the label of heed demo's site to crawl (demo.SiteName).
const demoSite = "site"

func (w *Window) screenshotOpen(ctx context.Context, spec string) {
	what, size, _ := strings.Cut(spec, "@")
	if wd, ht, ok := strings.Cut(size, "x"); ok {
		x, err1 := strconv.Atoi(wd)
		y, err2 := strconv.Atoi(ht)
		if err1 == nil && err2 == nil {
			fyne.Do(func() { w.win.Resize(fyne.NewSize(float32(x), float32(y))) })
		}
	}
	sleep := func(d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	ready := func() { fmt.Println(ScreenshotReady) }
	if !sleep(10 * time.Second) {
		return
	}
	switch what {
	case "hosts", "select":
		fyne.Do(func() { w.hosts.setSelected(w.demoHost("throttling")) })
		if !sleep(14 * time.Second) {
			return
		}
		// A paused host and a tripped breaker, as a person would make them.
		fyne.Do(func() {
			w.hosts.togglePause(w.demoHost("dropping"))
			w.command(func(ctx context.Context) error { return w.eng.TripBreaker(ctx, w.demoHost("healthy")) })
		})
		// Then wait until the throttling host is behind its gate, with
		// time to spare, and the flaky one has backed off at least once.
		for deadline := time.Now().Add(40 * time.Second); time.Now().Before(deadline); {
			if !sleep(250 * time.Millisecond) {
				return
			}
			t, ok1 := w.eng.Core().HostSnapshot(w.demoHost("throttling"))
			f, ok2 := w.eng.Core().HostSnapshot(w.demoHost("flaky"))
			if ok1 && ok2 && t.Waiting == engine.WaitGate && t.GateIn > 1200*time.Millisecond && f.Level > 0 {
				break
			}
		}
		sleep(400 * time.Millisecond) // a tick or two to draw it
		ready()
	case "edit":
		// The form scrolled to the request settings, with a secret among
		// the headers: it shows masked.
		host := w.demoHost("throttling")
		t, _ := w.eng.Core().HostTunables(host)
		t.Headers = []string{"Accept-Language: en", "Authorization: Bearer demo-token"}
		t.BytesPerSec = 512 << 10
		if err := w.eng.SetHostTunables(ctx, host, t); err != nil {
			fmt.Println("heed: screenshot:", err)
		}
		fyne.Do(func() {
			w.hosts.setSelected(host)
			w.hosts.onEdit()
			w.form.scroll.ScrollToBottom()
		})
		sleep(time.Second)
		ready()
	case "paste":
		// A paste with a duplicate, lines that are no URL (one of them
		// prose), and a URL downloaded already, to be offered again.
		done, _ := w.eng.Reader().Jobs(ctx, engine.JobQuery{State: engine.JobDone, Limit: 1})
		text := "https://mirror.example.invalid/report.pdf\nhttps://mirror.example.invalid/data.csv\n" +
			"https://mirror.example.invalid/report.pdf\nHere are the files for Monday's meeting, thanks!\n" +
			"ftp://old.example.net/file.zip\nwww.example.org/no-scheme\n"
		if len(done) == 1 {
			text += done[0].URL + "\n"
		}
		fyne.Do(func() { w.onPasteAdd(w.showPaste(text)) })
		sleep(2 * time.Second)
		ready()
	case "jobs":
		fyne.Do(func() { w.selectTab(tabJobs) })
		// Select a running download whose size is known, so that its
		// time left shows, the one with the most left.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			if !sleep(500 * time.Millisecond) {
				return
			}
			found := make(chan bool, 1)
			fyne.Do(func() {
				best := -1
				for i, r := range w.jobs.rows() {
					if r.rec.State == engine.JobActive && r.when != "" &&
						(best < 0 || r.rec.Size-r.rec.Bytes > w.jobs.rows()[best].rec.Size-w.jobs.rows()[best].rec.Bytes) {
						best = i
					}
				}
				if best >= 0 {
					w.jobs.table.Select(widget.TableCellID{Row: best, Col: jcURL})
					w.jobs.table.ScrollTo(widget.TableCellID{Row: min(best+5, len(w.jobs.rows())-1), Col: 0})
				}
				found <- best >= 0
			})
			if <-found {
				break
			}
		}
		sleep(1200 * time.Millisecond)
		ready()
	case "crawl", "crawls", "robots", "skipped":
		if w.crawlShot(ctx, what, sleep) {
			ready()
		}
	case "help":
		fyne.Do(w.hosts.showHelp)
		sleep(time.Second)
		ready()
	case "quit":
		fyne.Do(w.onCloseRequest)
		sleep(time.Second)
		ready()
	case "history":
		fyne.Do(func() { w.selectTab(tabHistory) })
		sleep(time.Second)
		ready()
	case "settings":
		fyne.Do(func() { w.selectTab(tabSettings) })
		sleep(time.Second)
		ready()
	case "workers": // the window on a fleet's queue (scripts/fleet-screenshot.sh)
		fyne.Do(func() { w.selectTab(tabWorkers) })
		sleep(3 * time.Second)
		ready()
	}
}

// demoHost is the host key of the demo host named name: by the window's
// labels, else by the order the demo queues its hosts in.
func (w *Window) demoHost(name string) string {
	for host, l := range w.opt.HostLabels {
		if l == name {
			return host
		}
	}
	snap := w.eng.Core().Snapshot()
	for i, n := range demoOrder {
		if n == name && i < len(snap) {
			return snap[i].Host
		}
	}
	return ""
}

// crawlShot gets the window ready for a shot of the demo site's crawl:
// "crawl" (the Crawl… dialog filled in), "crawls" (the Crawls tab once the
// crawl has pages of each kind), "robots" (the site selected in the hosts
// view while it waits for its crawl-delay) or "skipped" (the Jobs tab
// listing the site's skipped jobs, one selected). It reports false when
// ctx ended.
func (w *Window) crawlShot(ctx context.Context, what string, sleep func(time.Duration) bool) bool {
	site := w.demoHost(demoSite)
	base := "http://" + site + "/"
	// until waits for cond, checked on the Fyne thread, at most d.
	until := func(d time.Duration, cond func() bool) bool {
		for deadline := time.Now().Add(d); time.Now().Before(deadline); {
			ok := make(chan bool, 1)
			fyne.Do(func() { ok <- cond() })
			if <-ok {
				return true
			}
			if !sleep(250 * time.Millisecond) {
				return false
			}
		}
		return ctx.Err() == nil
	}
	switch what {
	case "crawl":
		fyne.Do(func() {
			d := w.showCrawl(base + "books/\n" + base + "guides/")
			d.scope.SetSelected(scopes[2].label)
			d.depth.SetText("3")
			d.maxPages.SetText("200")
			d.exclude.SetText(`\?book=`)
			d.more.Open(0)
		})
		return sleep(time.Second)
	case "crawls":
		fyne.Do(func() { w.selectTab(tabCrawls) })
		// Pages of every kind: some done, some skipped, more to come.
		ok := until(60*time.Second, func() bool {
			for _, c := range w.crawls.rows {
				if c.Counts.Done >= 14 && c.Counts.Skipped > 0 && left(&c) > 0 {
					w.crawls.table.OnSelected(widget.TableCellID{Row: 0, Col: ccSeeds}) // reads its pages
					return true
				}
			}
			return false
		})
		return ok && sleep(1500*time.Millisecond)
	case "skipped":
		if !sleep(6 * time.Second) { // the home page's links are in
			return false
		}
		fyne.Do(func() {
			w.selectTab(tabJobs)
			w.jobs.state.SetSelected(string(engine.JobSkipped))
		})
		ok := until(30*time.Second, func() bool {
			if len(w.jobs.rows()) == 0 {
				return false
			}
			w.jobs.table.OnSelected(widget.TableCellID{Row: 0, Col: jcURL})
			return true
		})
		return ok && sleep(1200*time.Millisecond)
	}
	// robots: the site selected, its rules read, waiting for its crawl-delay.
	fyne.Do(func() { w.hosts.setSelected(site) })
	ok := until(60*time.Second, func() bool {
		s, _ := w.eng.Core().HostSnapshot(site)
		return w.hosts.skips.host == site && w.hosts.skips.text != "" &&
			s.Waiting == engine.WaitCrawlDelay && dueIn(&s) > 1200*time.Millisecond
	})
	return ok && sleep(300*time.Millisecond)
}
