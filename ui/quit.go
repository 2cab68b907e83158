package ui

import (
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// quitDialog asks before the window closes while downloads run: they stop,
// keep their partial files, and resume when Heed next starts.
type quitDialog struct {
	msg  *widget.Label
	quit *widget.Button
	stay *widget.Button
	dlg  dialog.Dialog
}

// running is how many downloads are in progress now.
func (w *Window) running() int {
	if w.eng == nil {
		return 0
	}
	return len(w.eng.Active())
}

// quitQuestion is what the close confirmation asks.
func quitQuestion(n int) string {
	if n == 1 {
		return "1 download is running; it stops and resumes next time. Quit?"
	}
	return fmt.Sprintf("%s downloads are running; they stop and resume next time. Quit?", fmtInt(int64(n)))
}

// onCloseRequest is the window's close button (and the tray's Quit): it
// closes at once when nothing downloads, and asks first when something
// does.
func (w *Window) onCloseRequest() {
	n := w.running()
	if n == 0 {
		w.win.Close()
		return
	}
	if w.quit != nil {
		w.quit.msg.SetText(quitQuestion(n))
		return
	}
	q := &quitDialog{msg: widget.NewLabel(quitQuestion(n))}
	q.msg.Wrapping = fyne.TextWrapWord
	q.stay = widget.NewButton("Keep downloading", func() {
		q.dlg.Hide()
	})
	q.quit = widget.NewButtonWithIcon("Quit", theme.LogoutIcon(), func() {
		q.dlg.Hide()
		w.win.Close()
	})
	q.quit.Importance = widget.DangerImportance
	content := container.NewBorder(nil, container.NewHBox(layoutSpacer(), q.stay, q.quit), nil, nil, q.msg)
	q.dlg = dialog.NewCustomWithoutButtons("Quit Heed?", content, w.win)
	q.dlg.SetOnClosed(func() { w.quit = nil })
	q.dlg.Resize(fyne.NewSize(460, 160))
	w.quit = q
	w.win.Show()
	w.win.RequestFocus()
	q.dlg.Show()
}
