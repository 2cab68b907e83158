package ui

import (
	"fmt"

	"fyne.io/fyne/v2"
)

// trayMenu is the system-tray icon's menu, where the desktop has a tray
// (Fyne's desktop.App over a StatusNotifier host): the totals, Pause all /
// Resume all, Show Heed and Quit. Its labels change at most once a second,
// and the menu is sent to the tray only when one did.
type trayMenu struct {
	menu   *fyne.Menu
	totals *fyne.MenuItem
	pause  *fyne.MenuItem
	shown  bool // the menu is on a tray
}

func (w *Window) newTrayMenu() *trayMenu {
	t := &trayMenu{
		totals: &fyne.MenuItem{Label: "nothing queued", Disabled: true},
		pause:  &fyne.MenuItem{Label: "Pause all", Action: w.onPauseAll},
	}
	show := &fyne.MenuItem{Label: "Show Heed", Action: func() { w.win.Show(); w.win.RequestFocus() }}
	quit := &fyne.MenuItem{Label: "Quit", IsQuit: true, Action: w.onCloseRequest}
	t.menu = fyne.NewMenu("Heed", t.totals, fyne.NewMenuItemSeparator(), t.pause, show, fyne.NewMenuItemSeparator(), quit)
	return t
}

// trayTotals is the tray's first line: "12 queued · 3 running".
func trayTotals(queued int64, running int) string {
	if queued == 0 && running == 0 {
		return "nothing queued"
	}
	return fmt.Sprintf("%s queued · %d running", fmtInt(queued), running)
}

// updateTray shows the latest totals and whether everything is paused in
// the tray's menu (called once a second).
func (w *Window) updateTray() {
	t := w.tray
	var queued int64
	for _, c := range w.hosts.model.counts {
		queued += c.Queued
	}
	totals := trayTotals(queued, w.running())
	pause := "Pause all"
	if w.pausedAll {
		pause = "Resume all"
	}
	if totals == t.totals.Label && pause == t.pause.Label {
		return
	}
	t.totals.Label, t.pause.Label = totals, pause
	if t.shown {
		t.menu.Refresh()
	}
}
