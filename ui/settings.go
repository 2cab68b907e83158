package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// settingsView is the Settings tab (U7): where Heed keeps things (fixed at
// start), the default tunables of every host nobody configured, and the
// desktop notifications. Settings are kept in the app's Preferences; the
// defaults are kept by the engine in the database.
type settingsView struct {
	w              *Window
	defaultsBtn    *widget.Button
	notifyFinished *widget.Check
	notifyBreaker  *widget.Check
	content        fyne.CanvasObject
}

func newSettingsView(w *Window) *settingsView {
	sv := &settingsView{w: w}
	dir := widget.NewLabel(w.opt.Dir)
	dir.Wrapping = fyne.TextWrapBreak
	db := widget.NewLabel(w.opt.DBPath)
	db.Wrapping = fyne.TextWrapBreak
	open := widget.NewButtonWithIcon("Open", theme.FolderOpenIcon(), w.openFolder)
	sv.defaultsBtn = widget.NewButtonWithIcon("Edit default host settings…", theme.SettingsIcon(), sv.onDefaults)
	sv.notifyFinished = widget.NewCheck("when all queued downloads have finished", func(b bool) {
		w.prefs.SetBool(prefNotifyFinished, b)
	})
	sv.notifyFinished.SetChecked(w.prefs.BoolWithFallback(prefNotifyFinished, true))
	sv.notifyBreaker = widget.NewCheck("when a host's circuit breaker opens", func(b bool) {
		w.prefs.SetBool(prefNotifyBreaker, b)
	})
	sv.notifyBreaker.SetChecked(w.prefs.BoolWithFallback(prefNotifyBreaker, true))
	form := widget.NewForm(
		widget.NewFormItem("Download folder", container.NewBorder(nil, nil, nil, open, dir)),
		widget.NewFormItem("", widget.NewLabel("Fixed while Heed runs; start Heed with --dir to change it.")),
		widget.NewFormItem("Database", db),
		widget.NewFormItem("Defaults", container.NewHBox(sv.defaultsBtn)),
		widget.NewFormItem("", widget.NewLabel("Hosts without settings of their own follow these; changes apply at once.")),
		widget.NewFormItem("Notify me", container.NewVBox(sv.notifyFinished, sv.notifyBreaker)),
		widget.NewFormItem("Version", widget.NewLabel("Heed "+w.opt.Version)),
	)
	sv.content = container.NewVScroll(container.NewPadded(form))
	return sv
}

// onDefaults edits the default tunables (U7), saved with eng.SetDefaults.
func (sv *settingsView) onDefaults() {
	eng := sv.w.eng
	sv.w.showTunables("Default host settings", eng.Core().Defaults(), func(t engine.Tunables) error {
		return eng.SetDefaults(bgCtx, t)
	}, true)
}
