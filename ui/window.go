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
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
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
// to drive the window on its own ten seconds after it opens: "select"
// (select the most throttled host, showing its chart and timeline),
// "edit" (the same, then open its settings form), "paste" (the Add URLs
// dialog with a sample paste) or "jobs"/"history"/"settings" (that tab). Heed ignores
// any other value; people never need it.
const ScreenshotEnv = "HEED_SCREENSHOT_OPEN"

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
	pauseAllBtn *widget.Button
	tabs        *container.AppTabs
	hosts       *hostsView
	jobs        *jobsView
	history     *historyView
	settings    *settingsView
	form        *tunablesForm // the last tunables form opened (tests)
	paste       *pasteDialog  // the last paste dialog opened (tests)

	pausedAll bool
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
	}
	w.poll = newPoller(eng, opt.Feed)
	w.status = widget.NewLabel("Heed " + opt.Version + " · database " + opt.DBPath + " · downloads to " + opt.Dir)
	w.status.Truncation = fyne.TextTruncateEllipsis
	w.addBtn = widget.NewButtonWithIcon("Add URLs…", theme.ContentAddIcon(), func() { w.showPaste("") })
	w.addBtn.Importance = widget.HighImportance
	w.pauseAllBtn = widget.NewButtonWithIcon("Pause all", theme.MediaPauseIcon(), w.onPauseAll)

	w.hosts = newHostsView(w)
	w.hosts.sort = sortSpec{col: w.prefs.IntWithFallback(prefSortCol, colHost), desc: w.prefs.Bool(prefSortDesc)}
	if w.hosts.sort.col < 0 || w.hosts.sort.col >= len(hostColumns) {
		w.hosts.sort = sortSpec{col: colHost}
	}
	w.poll.setView(w.hosts.sort, "")
	w.jobs = newJobsView(w)
	w.history = newHistoryView(w)
	w.settings = newSettingsView(w)
	w.tabs = container.NewAppTabs(
		container.NewTabItemWithIcon("Hosts", theme.ComputerIcon(), w.hosts.content),
		container.NewTabItemWithIcon("Jobs", theme.ListIcon(), w.jobs.content),
		container.NewTabItemWithIcon("History", theme.HistoryIcon(), w.history.content),
		container.NewTabItemWithIcon("Settings", theme.SettingsIcon(), w.settings.content),
	)
	w.tabs.OnSelected = func(*container.TabItem) { w.onTab() }

	top := container.NewHBox(w.addBtn, w.pauseAllBtn)
	w.win.SetIcon(Icon)
	w.win.SetContent(container.NewBorder(top, w.status, nil, nil, w.tabs))
	w.win.Resize(fyne.NewSize(
		float32(w.prefs.FloatWithFallback(prefWidth, 1240)),
		float32(w.prefs.FloatWithFallback(prefHeight, 760))))
	w.win.Canvas().AddShortcut(&fyne.ShortcutPaste{}, func(fyne.Shortcut) { w.onPasteShortcut() })
	w.win.SetOnDropped(w.onDropped)
	w.win.SetOnClosed(w.onClosed)
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
	line := fmt.Sprintf("%d hosts · %d queued · %d/%d in flight", st.Hosts, queued, st.Inflight, st.InflightCap)
	if st.PausedAll {
		line += " · ALL PAUSED"
	}
	if w.stopped != nil {
		line = "DOWNLOADS STOPPED: " + w.stopped.Error() + " · " + line
	}
	w.status.SetText(line + " · downloads to " + w.opt.Dir + " · Heed " + w.opt.Version)
	if len(u.opened) > 0 && w.prefs.BoolWithFallback(prefNotifyBreaker, true) {
		msg := "Heed stopped sending requests to " + u.opened[0] + " after repeated failures."
		if len(u.opened) > 1 {
			msg = fmt.Sprintf("Heed stopped sending requests to %d hosts after repeated failures: %s",
				len(u.opened), strings.Join(u.opened[:min(len(u.opened), 3)], ", "))
		}
		w.app.SendNotification(fyne.NewNotification("Circuit breaker open", msg))
	}
	if u.drained && w.prefs.BoolWithFallback(prefNotifyFinished, true) {
		w.app.SendNotification(fyne.NewNotification("Heed: all downloads finished",
			"Nothing is queued or in flight any more."))
	}
}

func (w *Window) onSecond() {
	if w.tabs.Selected() != nil && w.tabs.Selected().Text == "Jobs" {
		w.jobs.reload()
	}
}

func (w *Window) onTab() {
	switch w.tabs.Selected().Text {
	case "Jobs":
		w.jobs.reload()
	case "History":
		w.history.reload()
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

// openFolder opens the download folder in the desktop's file manager.
func (w *Window) openFolder() {
	u := &url.URL{Scheme: "file", Path: w.opt.Dir}
	if err := w.app.OpenURL(u); err != nil {
		fyne.LogError("opening the download folder", err)
		w.status.SetText("cannot open the download folder " + w.opt.Dir + " here (" + err.Error() + "): open it yourself")
	}
}

// screenshotOpen opens what ScreenshotEnv asks for after the demo hosts
// had time to get into their states.
func (w *Window) screenshotOpen(ctx context.Context, what string) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(10 * time.Second):
	}
	fyne.Do(func() {
		switch what {
		case "paste":
			w.onPasteAdd(w.showPaste("https://mirror.example.invalid/report.pdf\nhttps://mirror.example.invalid/data.csv\n" +
				"https://mirror.example.invalid/report.pdf\nftp://old.example.net/file.zip\nwww.example.org/no-scheme\n"))
		case "edit", "select":
			var best *engine.HostSnapshot
			for i := range w.hosts.model.snap {
				s := &w.hosts.model.snap[i]
				if best == nil || s.Throttles > best.Throttles {
					best = s
				}
			}
			if best != nil {
				w.hosts.setSelected(best.Host)
				if what == "edit" {
					w.hosts.onEdit()
				}
			}
			if what == "select" { // show a paused host too, paused the way a person would
				if snap := w.hosts.model.snap; len(snap) > 1 && best != nil && snap[len(snap)-1].Host != best.Host {
					w.hosts.togglePause(snap[len(snap)-1].Host)
				}
			}
		case "jobs":
			w.tabs.SelectIndex(1)
		case "history":
			w.tabs.SelectIndex(2)
		case "settings":
			w.tabs.SelectIndex(3)
		}
	})
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
