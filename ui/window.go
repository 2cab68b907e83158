// Package ui is Heed's window. It shows the engine's live snapshots and calls
// the engine's commands; it never speaks SQL or HTTP itself.
//
// Threading: one goroutine (the refresh loop) reads an engine snapshot four
// times a second, diffs and sorts it, and hands the result to the Fyne
// thread in one fyne.Do per tick; while that update is not yet applied the
// next tick is skipped, so updates never pile up. Database reads (jobs,
// history, timelines, counts) run on goroutines started with
// Window.background and come back through fyne.Do. Fyne callbacks only
// call the politeness core's in-memory commands (pause, retune, breaker
// actions), which take its lock for microseconds.
//
// Only this package and main import Fyne.
package ui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/assets"
	"heed/engine"
)

// Icon is the app icon as a Fyne resource.
var Icon = fyne.NewStaticResource("heed.png", assets.IconPNG)

// bgCtx is the context of the window's background reads: they are short
// and bounded (paged queries), so they are not cancelled.
var bgCtx = context.Background()

// Options are what the window needs to know about where Heed keeps things.
type Options struct {
	Version string // shown in the status line
	DBPath  string // the database file in use
	Dir     string // the download folder
	// Feed, when set, is the Feed whose Job and Event methods the engine
	// was given (engine.Options.OnJob, OnEvent); the per-host chart then
	// counts every request, even those too short to be seen in flight.
	Feed *Feed
	// HostLabels names hosts the window would otherwise show as a bare
	// address: heed demo's hosts, by host key ("127.0.0.3:41234" →
	// "throttling"). The window shows "throttling · 127.0.0.3:41234".
	HostLabels map[string]string
}

// Preference keys (U7).
const (
	prefWidth          = "window.width"
	prefHeight         = "window.height"
	prefSortCol        = "hosts.sort.column"
	prefSortDesc       = "hosts.sort.descending"
	prefNotifyFinished = "notify.finished"
	prefNotifyBreaker  = "notify.breaker"
)

// ScreenshotEnv names the environment variable scripts/screenshot.sh uses
// to drive the window on its own after it opens (see screenshotOpen):
// "hosts" (the hosts view with the most throttled host selected, one host
// paused and one host's breaker tripped), "edit" (that host's settings
// form), "paste" (the Add URLs dialog after a sample paste), "jobs" (a
// running download selected), "help" (what the hosts table's words mean),
// "quit" (the close confirmation), "history"/"settings" (that tab), or, for
// the demo site's crawl, "crawl" (the Crawl… dialog filled in), "crawls"
// (the Crawls tab), "robots" (the site in the hosts view) or "skipped" (its
// skipped jobs), each
// optionally followed by "@WIDTHxHEIGHT" for the window's size. Once the
// window shows what was asked it prints ScreenshotReady on its standard
// output. Heed ignores any other value; people never need it.
const ScreenshotEnv = "HEED_SCREENSHOT_OPEN"

// ScreenshotReady is the line the window prints when a ScreenshotEnv view
// is ready to be captured.
const ScreenshotReady = "HEED_SCREENSHOT_READY"

// Window is Heed's main window. Widget pointers are kept as fields so that
// tests can drive them and the refresh loop can update them in place.
type Window struct {
	app   fyne.App
	eng   *engine.Engine
	opt   Options
	win   fyne.Window
	prefs fyne.Preferences
	poll  *poller

	status      *widget.Label
	addBtn      *widget.Button
	crawlBtn    *widget.Button
	pauseAllBtn *widget.Button
	tabs        *container.AppTabs
	workers     *workersView // nil on one machine's database
	hosts       *hostsView
	jobs        *jobsView
	crawls      *crawlsView
	history     *historyView
	settings    *settingsView
	form        *tunablesForm // the last tunables form opened (tests)
	paste       *pasteDialog  // the last paste dialog opened (tests)
	crawlDlg    *crawlDialog  // the last Crawl… dialog opened (tests)

	quit      *quitDialog // the close confirmation, while shown
	tray      *trayMenu
	notice    string    // a message for the status line (a notification that could not be shown)
	noticeAt  time.Time // when it was set; it shows for noticeFor
	canNotify bool      // the desktop shows notifications (Start asks D-Bus)
	// openPath opens a folder in the desktop's file manager; tests replace it.
	openPath func(path string) error

	pausedAll bool
	seconds   int           // onSecond calls so far
	closed    bool          // the window has closed
	stopped   error         // why the engine stopped downloading, if it did
	pending   atomic.Bool   // an update is queued on the Fyne thread
	kick      chan struct{} // refresh now (after a user action)
	stop      context.CancelFunc
	stopOnce  sync.Once
	bg        sync.WaitGroup // background reads in flight
	// inline runs background work on the calling goroutine: tests set it,
	// so that the test driver's synchronous fyne.Do stays on one goroutine.
	inline bool
}

// New builds the main window of app a over the engine eng. It does not
// show it; ShowAndRun shows it and starts the refresh loop.
func New(a fyne.App, eng *engine.Engine, opt Options) *Window {
	w := &Window{
		app:   a,
		eng:   eng,
		opt:   opt,
		win:   a.NewWindow("Heed"),
		prefs: a.Preferences(),
		kick:  make(chan struct{}, 1),
		// Until Start has asked the desktop: tests, which never start the
		// loop, see the notifications on the test app.
		canNotify: true,
	}
	w.openPath = w.openFolderPath
	w.poll = newPoller(eng, opt.Feed)
	w.status = widget.NewLabel("Heed " + opt.Version + " · database " + opt.DBPath + " · downloads to " + opt.Dir)
	w.status.Truncation = fyne.TextTruncateEllipsis
	w.addBtn = widget.NewButtonWithIcon("Add URLs…", theme.ContentAddIcon(), func() { w.showPaste("") })
	w.addBtn.Importance = widget.HighImportance
	w.crawlBtn = widget.NewButtonWithIcon("Crawl…", theme.SearchIcon(), func() { w.showCrawl("") })
	w.pauseAllBtn = widget.NewButtonWithIcon("Pause all", theme.MediaPauseIcon(), w.onPauseAll)

	w.hosts = newHostsView(w)
	w.hosts.sort = sortSpec{col: w.prefs.IntWithFallback(prefSortCol, colHost), desc: w.prefs.Bool(prefSortDesc)}
	if w.hosts.sort.col <= colAction || w.hosts.sort.col >= len(hostColumns) {
		w.hosts.sort = sortSpec{col: colHost}
	}
	w.hosts.table.sortCol, w.hosts.table.sortDesc = w.hosts.sort.col, w.hosts.sort.desc
	w.poll.setView(w.hosts.sort, "")
	w.jobs = newJobsView(w)
	w.crawls = newCrawlsView(w)
	w.history = newHistoryView(w)
	w.settings = newSettingsView(w)
	w.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon(tabHosts, theme.ComputerIcon(), w.hosts.content),
		container.NewTabItemWithIcon(tabJobs, theme.ListIcon(), w.jobs.content),
		container.NewTabItemWithIcon(tabCrawls, theme.SearchIcon(), w.crawls.content),
		container.NewTabItemWithIcon(tabHistory, theme.HistoryIcon(), w.history.content),
		container.NewTabItemWithIcon(tabSettings, theme.SettingsIcon(), w.settings.content),
	)
	if w.workers = newWorkersView(w); w.workers != nil { // a fleet's queue (M4)
		w.tabs.Append(container.NewTabItemWithIcon(tabWorkers, theme.StorageIcon(), w.workers.content))
	}
	w.tabs.OnSelected = func(*container.TabItem) { w.onTab() }

	top := container.NewHBox(w.addBtn, w.crawlBtn, w.pauseAllBtn)
	w.win.SetIcon(Icon)
	w.win.SetContent(container.NewBorder(top, w.status, nil, nil, w.tabs))
	w.win.Resize(fyne.NewSize(
		float32(w.prefs.FloatWithFallback(prefWidth, 1240)),
		float32(w.prefs.FloatWithFallback(prefHeight, 760))))
	w.win.Canvas().AddShortcut(&fyne.ShortcutPaste{}, func(fyne.Shortcut) { w.onPasteShortcut() })
	w.win.SetOnDropped(w.onDropped)
	w.win.SetOnClosed(w.onClosed)
	w.win.SetCloseIntercept(w.onCloseRequest)
	w.win.SetMaster() // with a tray icon, closing the window still quits
	w.tray = w.newTrayMenu()
	return w
}

// EngineStopped shows that the engine stopped downloading on its own and
// why (RELIABILITY 35: its database could not record a transition, for
// instance on a full disk): a dialog now, and the reason in the status line
// from then on. Safe to call from any goroutine.
func (w *Window) EngineStopped(err error) {
	fyne.Do(func() {
		w.stopped = err
		dialog.ShowError(fmt.Errorf("Heed stopped downloading: %w.\n\nNothing queued or downloaded is lost: "+
			"free some space (or fix the database), then start Heed again.", err), w.win)
		w.refreshSoon()
	})
}

// showProblem shows, in the window, an error the window's own action met
// (never on stderr, which a person running Heed from a menu never sees).
func (w *Window) showProblem(what string, err error) {
	dialog.ShowError(fmt.Errorf("%s: %w", what, err), w.win)
}

// noticeFor is how long a notice stays in the status line.
const noticeFor = 30 * time.Second

// note puts msg at the start of the status line for a while.
func (w *Window) note(msg string) {
	w.notice, w.noticeAt = msg, time.Now()
}

// notify sends a desktop notification, or, where the desktop has no
// notification service (no D-Bus session, no notification daemon), says
// it in the status line instead: Fyne would only have written an error to
// stderr.
func (w *Window) notify(title, content string) {
	if w.canNotify {
		w.app.SendNotification(fyne.NewNotification(title, content))
		return
	}
	w.note(title + ": " + content)
}

// hostName is how a host shows: its key, after its label when the window
// has one ("throttling · 127.0.0.3:41234").
func (w *Window) hostName(host string) string {
	if l := w.opt.HostLabels[host]; l != "" {
		return l + " · " + host
	}
	return host
}

// Window returns the underlying Fyne window.
func (w *Window) Window() fyne.Window { return w.win }

// ShowAndRun shows the window, starts the refresh loop, and runs the app
// until the window closes; the loop stops with it.
func (w *Window) ShowAndRun() {
	w.Start()
	w.app.Lifecycle().SetOnStopped(w.Stop)
	w.win.ShowAndRun()
	w.Stop()
}

// Start starts the refresh loop (ShowAndRun does it). Stop ends it.
func (w *Window) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	go w.loop(ctx)
	go w.countsLoop(ctx)
	w.canNotify = false
	go func() {
		d := probeDesktop()
		fyne.Do(func() {
			w.canNotify = d.notifications
			if desk, ok := w.app.(desktop.App); ok && d.tray {
				desk.SetSystemTrayMenu(w.tray.menu)
				desk.SetSystemTrayWindow(w.win)
				w.tray.shown = true
			}
		})
	}()
	if v := os.Getenv(ScreenshotEnv); v != "" {
		go w.screenshotOpen(ctx, v)
	}
}

// Stop ends the refresh loop and the timers; it is safe to call twice.
func (w *Window) Stop() {
	w.stopOnce.Do(func() {
		if w.stop != nil {
			w.stop()
		}
	})
}

func (w *Window) onClosed() {
	w.closed = true
	s := w.win.Canvas().Size()
	if s.Width > 100 && s.Height > 100 {
		w.prefs.SetFloat(prefWidth, float64(s.Width))
		w.prefs.SetFloat(prefHeight, float64(s.Height))
	}
	w.Stop()
}

// loop is the refresh loop (U2): a snapshot every tickEvery, or at once
// after a user action, and one fyne.Do per tick. While an update waits to
// be applied, ticks are skipped (coalesced).
func (w *Window) loop(ctx context.Context) {
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
		}
		n++
		if w.pending.Load() {
			continue
		}
		u := w.poll.tick(time.Now())
		w.pending.Store(true)
		fyne.Do(func() {
			defer w.pending.Store(false)
			if ctx.Err() == nil {
				w.apply(u)
			}
		})
		if n%4 == 0 { // the Jobs tab refreshes once a second while shown
			fyne.Do(w.onSecond)
		}
	}
}

// countsLoop reads the per-host done/failed counts every few seconds.
func (w *Window) countsLoop(ctx context.Context) {
	t := time.NewTicker(countsEvery)
	defer t.Stop()
	for {
		w.poll.loadCounts()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refreshSoon asks the loop for a tick now, after a user action.
func (w *Window) refreshSoon() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// tickNow takes a snapshot and applies it at once, on the calling
// (Fyne) goroutine: for tests and benchmarks.
func (w *Window) tickNow(now time.Time) {
	w.apply(w.poll.tick(now))
}

// background runs fn off the Fyne thread (database reads and writes);
// fn reports back with fyne.Do.
func (w *Window) background(fn func()) {
	if w.inline {
		fn()
		return
	}
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		fn()
	}()
}

// command runs an engine command off the Fyne thread — it returns once its
// change is on disk — and shows its error, if any, in the window.
func (w *Window) command(f func(context.Context) error) {
	w.background(func() {
		err := f(bgCtx)
		fyne.Do(func() {
			if err != nil {
				dialog.ShowError(err, w.win)
			}
			w.refreshSoon()
		})
	})
}

// apply shows one tick on the Fyne thread.
func (w *Window) apply(u hostUpdate) {
	w.hosts.apply(u)
	st, queued := u.stats, u.queued
	w.pausedAll = st.PausedAll
	if st.PausedAll {
		w.pauseAllBtn.SetText("Resume all")
		w.pauseAllBtn.SetIcon(theme.MediaPlayIcon())
	} else {
		w.pauseAllBtn.SetText("Pause all")
		w.pauseAllBtn.SetIcon(theme.MediaPauseIcon())
	}
	if len(u.opened) > 0 && w.prefs.BoolWithFallback(prefNotifyBreaker, true) {
		names := make([]string, len(u.opened))
		for i, h := range u.opened {
			names[i] = w.hostName(h)
		}
		msg := "Heed stopped sending requests to " + names[0] + " after repeated failures."
		if len(names) > 1 {
			msg = fmt.Sprintf("Heed stopped sending requests to %d hosts after repeated failures: %s",
				len(names), strings.Join(names[:min(len(names), 3)], ", "))
		}
		w.notify("Circuit breaker open", msg)
	}
	if u.drained && w.prefs.BoolWithFallback(prefNotifyFinished, true) {
		w.notify("Heed: all downloads finished", "Nothing is queued or in flight any more.")
	}
	w.status.SetText(w.statusLine(st, queued, u.now))
}

// statusLine is the line at the bottom of the window: a notice, then how
// many hosts and jobs there are and where downloads go.
func (w *Window) statusLine(st engine.Stats, queued int64, now time.Time) string {
	line := fmt.Sprintf("%s · %s queued · %d of %d requests in flight", plural(st.Hosts, "host", "hosts"),
		fmtInt(queued), st.Inflight, st.InflightCap)
	if st.PausedAll {
		line += " · ALL PAUSED"
	}
	if w.notice != "" && now.Sub(w.noticeAt) < noticeFor {
		line = w.notice + " · " + line
	}
	if w.stopped != nil {
		line = "DOWNLOADS STOPPED: " + w.stopped.Error() + " · " + line
	}
	return line + " · downloads to " + w.opt.Dir + " · Heed " + w.opt.Version
}

// The tabs' titles.
const (
	tabHosts    = "Hosts"
	tabJobs     = "Jobs"
	tabCrawls   = "Crawls"
	tabHistory  = "History"
	tabSettings = "Settings"
)

// selectTab shows the tab titled title.
func (w *Window) selectTab(title string) {
	for i, it := range w.tabs.Items {
		if it.Text == title {
			w.tabs.SelectIndex(i)
			return
		}
	}
}

func (w *Window) onSecond() {
	w.seconds++
	if w.tabs.Selected() != nil {
		switch w.tabs.Selected().Text {
		case tabJobs:
			w.jobs.reload()
		case tabCrawls: // each read counts the crawls' jobs in the database
			if w.seconds%int(crawlsEvery/time.Second) == 0 {
				w.crawls.reload()
			}
		case tabWorkers:
			if w.seconds%int(workersEvery/time.Second) == 0 {
				w.workers.reload()
			}
		}
	}
	w.updateTray()
}

func (w *Window) onTab() {
	switch w.tabs.Selected().Text {
	case tabJobs:
		w.jobs.reload()
	case tabCrawls:
		w.crawls.reload()
	case tabHistory:
		w.history.reload()
	case tabWorkers:
		w.workers.reload()
	}
}

// onPauseAll pauses or resumes every host at once (U7).
// It is remembered for the next start.
func (w *Window) onPauseAll() {
	pause := !w.eng.Core().Stats().PausedAll
	eng := w.eng
	w.background(func() {
		err := eng.SetPausedAll(bgCtx, pause)
		fyne.Do(func() {
			if err != nil {
				w.status.SetText("cannot save that everything is paused: " + err.Error())
			}
			w.refreshSoon()
		})
	})
}

// openFolder opens the download folder in the desktop's file manager, off
// the Fyne thread; when there is none, the window says so and where the
// folder is.
func (w *Window) openFolder() {
	dir, open := w.opt.Dir, w.openPath
	w.background(func() {
		err := open(dir)
		if err == nil {
			return
		}
		fyne.Do(func() {
			w.showProblem("Cannot open the download folder "+dir+" here; open it yourself", err)
			w.note("cannot open " + dir + ": " + err.Error())
		})
	})
}

// openFolderPath opens path with the desktop's opener, and reports an
// opener that is missing or fails (xdg-open without a file manager says so
// on stderr and exits non-zero: its words become the error).
func (w *Window) openFolderPath(path string) error {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
	default:
		return w.app.OpenURL(&url.URL{Scheme: "file", Path: path})
	}
	var out bytes.Buffer
	cmd := exec.Command("xdg-open", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 2 * time.Second // a file manager it starts may keep the pipe open
	err := cmd.Run()
	if errors.Is(err, exec.ErrNotFound) {
		return errors.New("there is no xdg-open to open folders with")
	}
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		if msg := strings.TrimSpace(out.String()); msg != "" {
			return fmt.Errorf("%s (%w)", msg, err)
		}
		return fmt.Errorf("xdg-open: %w (is a file manager installed?)", err)
	}
	return nil
}

func layoutSpacer() fyne.CanvasObject { return layout.NewSpacer() }

// fmtInt writes n with thin grouping for thousands: 12 345.
func fmtInt(n int64) string {
	s := fmt.Sprint(n)
	if n < 10000 && n > -10000 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && r != '-' && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
