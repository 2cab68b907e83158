package ui

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// maxDropBytes bounds how much of one dropped file is read as URLs.
const maxDropBytes = 64 << 20

// shownRejects is how many rejected lines the paste dialog lists.
const shownRejects = 200

// pasteDialog is the Add URLs dialog (U4): a multi-line entry, and after
// Add, how many URLs were queued, skipped as duplicates, and rejected,
// each rejected line with its reason.
type pasteDialog struct {
	entry   *widget.Entry
	add     *widget.Button
	again   *widget.Button // download again the URLs whose jobs ended (J2)
	ended   []string
	close   *widget.Button
	result  *widget.Label
	details *widget.Label
	dlg     dialog.Dialog
	report  engine.AddReport
}

// showPaste opens the Add URLs dialog with text already in it.
func (w *Window) showPaste(text string) *pasteDialog {
	p := &pasteDialog{}
	p.entry = widget.NewMultiLineEntry()
	p.entry.SetPlaceHolder("Paste URLs here: one per line, or separated by spaces. Only http and https.")
	p.entry.Wrapping = fyne.TextWrapOff
	p.entry.SetText(text)
	p.result = widget.NewLabel("")
	p.result.Wrapping = fyne.TextWrapWord
	p.result.TextStyle.Bold = true
	p.details = widget.NewLabel("")
	p.details.Wrapping = fyne.TextWrapWord
	p.close = widget.NewButton("Close", func() { p.dlg.Hide() })
	p.add = widget.NewButtonWithIcon("Add", theme.ContentAddIcon(), func() { w.onPasteAdd(p) })
	p.add.Importance = widget.HighImportance
	p.again = widget.NewButtonWithIcon("", theme.ViewRefreshIcon(), func() { w.onPasteAgain(p) })
	p.again.Hide()
	detailScroll := container.NewVScroll(p.details)
	detailScroll.SetMinSize(fyne.NewSize(0, 110))
	bottom := container.NewVBox(p.result, detailScroll, container.NewHBox(layoutSpacer(), p.again, p.close, p.add))
	content := container.NewBorder(nil, bottom, nil, nil, p.entry)
	p.dlg = dialog.NewCustomWithoutButtons("Add URLs", content, w.win)
	p.dlg.Resize(fyne.NewSize(680, 520))
	p.dlg.Show()
	w.win.Canvas().Focus(p.entry)
	w.paste = p
	return p
}

// onPasteAdd queues the entry's URLs off the Fyne thread and shows what
// became of them.
func (w *Window) onPasteAdd(p *pasteDialog) {
	text := p.entry.Text
	if strings.TrimSpace(text) == "" {
		p.result.SetText("Nothing to add: paste some URLs first.")
		return
	}
	p.add.Disable()
	p.result.SetText("Adding…")
	w.background(func() {
		rep, err := w.eng.Add(bgCtx, text)
		fyne.Do(func() {
			p.add.Enable()
			p.report = rep
			if err != nil {
				// A long paste is stored in parts: those before the error stay queued.
				if len(rep.Queued)+len(rep.Duplicates) == 0 {
					p.result.SetText("Nothing was queued: " + err.Error())
				} else {
					p.result.SetText(addSummary(rep) + "; the rest was not queued: " + err.Error())
				}
				w.refreshSoon()
				return
			}
			p.result.SetText(addSummary(rep))
			p.details.SetText(addDetails(rep))
			// A URL whose job ended is not fetched again unless asked (J2).
			p.ended = p.ended[:0]
			for i, d := range rep.Duplicates {
				switch rep.DuplicateStates[i] {
				case engine.JobDone, engine.JobFailed, engine.JobCancelled:
					p.ended = append(p.ended, d)
				}
			}
			if len(p.ended) > 0 {
				p.again.SetText(fmt.Sprintf("Download %s again", plural(len(p.ended), "finished URL", "finished URLs")))
				p.again.Show()
			} else {
				p.again.Hide()
			}
			// What is left in the entry is what needs fixing.
			left := make([]string, len(rep.Rejected))
			for i, rj := range rep.Rejected {
				left[i] = rj.Text
			}
			p.entry.SetText(strings.Join(left, "\n"))
			w.refreshSoon()
		})
	})
}

// onPasteAgain queues again the pasted URLs whose jobs had ended (done,
// failed or cancelled), as heed get --again does.
func (w *Window) onPasteAgain(p *pasteDialog) {
	urls := slices.Clone(p.ended)
	p.again.Disable()
	w.background(func() {
		rep, err := w.eng.AddFrom(bgCtx, strings.NewReader(strings.Join(urls, "\n")), engine.AddOptions{Again: true})
		fyne.Do(func() {
			p.again.Enable()
			if err != nil {
				p.result.SetText("Not queued again: " + err.Error())
				return
			}
			p.again.Hide()
			p.result.SetText(plural(rep.Again, "URL", "URLs") + " queued again, to be downloaded anew")
			w.refreshSoon()
		})
	})
}

// plural is "1 URL", "3 URLs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmtInt(int64(n)) + " " + many
}

// addSummary says in one line what Add did: "3 queued · 1 duplicate · 2
// rejected".
func addSummary(r engine.AddReport) string {
	return fmt.Sprintf("%s queued · %s skipped as already queued or known · %s rejected",
		fmtInt(int64(len(r.Queued))), fmtInt(int64(len(r.Duplicates))), fmtInt(int64(len(r.Rejected))))
}

// addDetails lists the rejected lines with their reasons, then a few
// duplicates.
func addDetails(r engine.AddReport) string {
	var b strings.Builder
	for i, rj := range r.Rejected {
		if i == shownRejects {
			fmt.Fprintf(&b, "… and %d more rejected lines\n", len(r.Rejected)-i)
			break
		}
		if rj.Line > 0 {
			fmt.Fprintf(&b, "line %d: ", rj.Line)
		}
		fmt.Fprintf(&b, "%q — %s\n", clip(rj.Text, 80), rj.Reason)
	}
	for i, d := range r.Duplicates {
		if i == 5 {
			fmt.Fprintf(&b, "… and %d more duplicates\n", len(r.Duplicates)-i)
			break
		}
		fmt.Fprintf(&b, "duplicate: %s\n", clip(d, 100))
	}
	return strings.TrimRight(b.String(), "\n")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// onPasteShortcut is Ctrl+V on the window (outside any text field): the
// clipboard goes into the Add URLs dialog, to be confirmed with Add.
func (w *Window) onPasteShortcut() {
	w.showPaste(w.app.Clipboard().Content())
}

// onDropped takes dropped text files (their lines) and dropped links into
// the Add URLs dialog. Files are read off the Fyne thread.
func (w *Window) onDropped(_ fyne.Position, uris []fyne.URI) {
	w.background(func() {
		var b strings.Builder
		var problems []string
		for _, u := range uris {
			if u.Scheme() != "file" {
				b.WriteString(u.String() + "\n")
				continue
			}
			f, err := os.Open(u.Path())
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			data, err := io.ReadAll(io.LimitReader(f, maxDropBytes))
			f.Close()
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			b.Write(data)
			b.WriteByte('\n')
		}
		fyne.Do(func() {
			p := w.showPaste(b.String())
			if len(problems) > 0 {
				p.result.SetText("Could not read: " + strings.Join(problems, "; "))
			}
		})
	})
}
