package ui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// settingsView is the Settings tab (U7): where Heed keeps things (the
// download folder, chosen here for the next start), the default tunables of
// every host nobody configured, the global limits (L2, live), and the
// desktop notifications. The folder and notifications are kept in the app's
// Preferences; the defaults and limits by the engine in the database.
type settingsView struct {
	w              *Window
	defaultsBtn    *widget.Button
	rateCap        *widget.Entry // L2: requests per second over all hosts, 0 = none
	speedCap       *widget.Entry // L2: KiB per second over all hosts, 0 = none
	limitsBtn      *widget.Button
	limitsMsg      *widget.Label
	folderBtn      *widget.Button
	folderMsg      *widget.Label
	notifyFinished *widget.Check
	notifyBreaker  *widget.Check
	form           *widget.Form
	content        fyne.CanvasObject
}

// PrefFolder is the preference holding the download folder chosen in the
// window (U7): main opens the next window on it unless --dir says otherwise.
const PrefFolder = "download.folder"

func newSettingsView(w *Window) *settingsView {
	sv := &settingsView{w: w}
	dir := widget.NewLabel(w.opt.Dir)
	dir.Wrapping = fyne.TextWrapBreak
	db := widget.NewLabel(w.opt.DBPath)
	db.Wrapping = fyne.TextWrapBreak
	open := widget.NewButtonWithIcon("Open", theme.FolderOpenIcon(), w.openFolder)
	sv.folderBtn = widget.NewButtonWithIcon("Change…", theme.FolderIcon(), sv.onFolder)
	sv.folderMsg = widget.NewLabel("")
	sv.folderMsg.Wrapping = fyne.TextWrapWord
	sv.folderMsg.Hide()
	if next := w.prefs.String(PrefFolder); next != "" && next != w.opt.Dir {
		sv.showNextFolder(next)
	}
	sv.defaultsBtn = widget.NewButtonWithIcon("Edit default host settings…", theme.SettingsIcon(), sv.onDefaults)
	sv.rateCap, sv.speedCap = widget.NewEntry(), widget.NewEntry()
	sv.limitsBtn = widget.NewButtonWithIcon("Apply limits", theme.ConfirmIcon(), sv.onLimits)
	sv.limitsMsg = widget.NewLabel("")
	sv.limitsMsg.Wrapping = fyne.TextWrapWord
	if w.eng != nil {
		sv.showLimits(w.eng.Limits())
	}
	// Checked before their callbacks are set: setting them from the
	// preferences must not write the preferences back as the window opens
	// (the write raced Fyne's reload of the file: "Preferences load error").
	sv.notifyFinished = widget.NewCheck("when all queued downloads have finished", nil)
	sv.notifyFinished.SetChecked(w.prefs.BoolWithFallback(prefNotifyFinished, true))
	sv.notifyFinished.OnChanged = func(b bool) { w.prefs.SetBool(prefNotifyFinished, b) }
	sv.notifyBreaker = widget.NewCheck("when a host's circuit breaker opens", nil)
	sv.notifyBreaker.SetChecked(w.prefs.BoolWithFallback(prefNotifyBreaker, true))
	sv.notifyBreaker.OnChanged = func(b bool) { w.prefs.SetBool(prefNotifyBreaker, b) }
	form := widget.NewForm(
		widget.NewFormItem("Download folder", container.NewVBox(
			container.NewBorder(nil, nil, nil, container.NewHBox(open, sv.folderBtn), dir), sv.folderMsg)),
		widget.NewFormItem("Database", db),
		widget.NewFormItem("Defaults", container.NewHBox(sv.defaultsBtn)),
		widget.NewFormItem("", widget.NewLabel("Hosts without settings of their own follow these (rates per minute, per host); changes apply at once.")),
		&widget.FormItem{Text: "Requests per second", Widget: sv.rateCap,
			HintText: "over all hosts together (0: no cap); each host's own rate is per minute, in its settings"},
		&widget.FormItem{Text: "Download speed, KiB/s", Widget: sv.speedCap,
			HintText: "over all hosts together (0: no cap)"},
		widget.NewFormItem("", container.NewBorder(nil, nil, sv.limitsBtn, nil, sv.limitsMsg)),
		widget.NewFormItem("Notify me", container.NewVBox(sv.notifyFinished, sv.notifyBreaker)),
		widget.NewFormItem("Version", widget.NewLabel("Heed "+w.opt.Version)),
	)
	sv.form = form
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

// showLimits puts the limits in force in the two entries (0 = no cap).
func (sv *settingsView) showLimits(l engine.Limits) {
	sv.rateCap.SetText(strconv.FormatFloat(l.RatePerSec, 'g', -1, 64))
	sv.speedCap.SetText(strconv.FormatFloat(float64(l.BytesPerSec)/1024, 'g', -1, 64))
	sv.limitsMsg.SetText("They apply at once and are kept.")
}

// readLimits parses the two entries; the error names the entry.
func (sv *settingsView) readLimits() (engine.Limits, error) {
	r, err := strconv.ParseFloat(strings.TrimSpace(sv.rateCap.Text), 64)
	if err != nil {
		return engine.Limits{}, fmt.Errorf("requests per second: %q is not a number", sv.rateCap.Text)
	}
	k, err := strconv.ParseFloat(strings.TrimSpace(sv.speedCap.Text), 64)
	if err != nil || k < 0 || k > math.MaxInt64/2048 {
		return engine.Limits{}, fmt.Errorf("download speed: %q is not a number of KiB/s from 0", sv.speedCap.Text)
	}
	l := engine.Limits{RatePerSec: r, BytesPerSec: int64(math.Round(k * 1024))}
	return l, l.Validate()
}

// onLimits applies the global limits (L2) live and saves them; a value out of
// bounds is refused with its reason and nothing changes.
func (sv *settingsView) onLimits() {
	l, err := sv.readLimits()
	if err != nil {
		sv.limitsMsg.SetText("Not applied: " + err.Error())
		return
	}
	eng := sv.w.eng
	sv.w.background(func() {
		err := eng.SetLimits(bgCtx, l)
		fyne.Do(func() {
			if err != nil {
				sv.limitsMsg.SetText("Not applied: " + err.Error())
				return
			}
			sv.showLimits(eng.Limits())
		})
	})
}

// onFolder picks the download folder for the next start (U7): downloads in
// flight and their partial files stay where they are.
func (sv *settingsView) onFolder() {
	d := dialog.NewFolderOpen(func(u fyne.ListableURI, err error) {
		if err != nil || u == nil {
			return
		}
		sv.setFolder(u.Path())
	}, sv.w.win)
	if l, err := storage.ListerForURI(storage.NewFileURI(sv.w.opt.Dir)); err == nil {
		d.SetLocation(l)
	}
	d.Show()
}

// setFolder remembers dir as the download folder of the next start.
func (sv *settingsView) setFolder(dir string) {
	sv.w.prefs.SetString(PrefFolder, dir)
	if dir == sv.w.opt.Dir {
		sv.folderMsg.Hide()
		return
	}
	sv.showNextFolder(dir)
}

func (sv *settingsView) showNextFolder(dir string) {
	sv.folderMsg.SetText("From the next start Heed downloads to " + dir + " (this run finishes here; a --dir on the command line still wins).")
	sv.folderMsg.Show()
}
