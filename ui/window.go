// Package ui is Heed's window. It shows the engine's live snapshots and calls
// the engine's commands; it never speaks SQL or HTTP itself.
//
// Every widget change made from a goroutine other than Fyne's goes through
// fyne.Do. Only this package and main import Fyne.
package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"heed/assets"
	"heed/engine"
)

// Icon is the app icon as a Fyne resource.
var Icon = fyne.NewStaticResource("heed.png", assets.IconPNG)

// Options are what the window needs to know about where Heed keeps things.
type Options struct {
	Version string // shown in the status line
	DBPath  string // the database file in use
	Dir     string // the download folder
}

// Window is Heed's main window. Widget pointers are kept as fields so that
// tests can drive them and the refresh loop can update them in place.
type Window struct {
	eng    *engine.Engine
	win    fyne.Window
	status *widget.Label
	hosts  *widget.Label
}

// New builds the main window of app a over the engine eng. It does not
// show it.
func New(a fyne.App, eng *engine.Engine, opt Options) *Window {
	w := &Window{
		eng:    eng,
		win:    a.NewWindow("Heed"),
		status: widget.NewLabel("Heed " + opt.Version + " · database " + opt.DBPath + " · downloads to " + opt.Dir),
		hosts:  widget.NewLabel("No hosts yet. Queued URLs will appear here, one row per host."),
	}
	w.status.Truncation = fyne.TextTruncateEllipsis
	w.hosts.Alignment = fyne.TextAlignCenter
	w.win.SetIcon(Icon)
	w.win.SetContent(container.NewBorder(nil, w.status, nil, nil, container.NewCenter(w.hosts)))
	w.win.Resize(fyne.NewSize(1000, 640))
	return w
}

// Window returns the underlying Fyne window.
func (w *Window) Window() fyne.Window { return w.win }

// ShowAndRun shows the window and runs the app until the window closes.
func (w *Window) ShowAndRun() { w.win.ShowAndRun() }
