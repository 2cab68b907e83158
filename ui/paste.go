package ui

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
	"heed/engine/fetch"
)

// maxDropBytes bounds how much of one dropped file is read as URLs.
const maxDropBytes = 64 << 20

// shownRejects is how many rejected lines the paste dialog lists.
const shownRejects = 200

// pasteDialog is the Add URLs dialog (U4): a multi-line entry, and after
// Add, how many URLs were queued, skipped as duplicates, and rejected,
// each rejected line with its reason.
type pasteDialog struct {
	entry     *widget.Entry
	add       *widget.Button
	again     *widget.Button // download again the URLs whose jobs ended (J2)
	againNote *widget.Label  // what downloading again does to the files you have
	ended     []string
	show      *widget.Button // show the new jobs in the Jobs tab
	close     *widget.Button
	result    *widget.Label
	details   *widget.Label
	dlg       dialog.Dialog
	report    engine.AddReport
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
	p.againNote = widget.NewLabel("")
	p.againNote.Wrapping = fyne.TextWrapWord
	p.againNote.Hide()
	p.show = widget.NewButtonWithIcon("Show in Jobs", theme.ListIcon(), func() {
		p.dlg.Hide()
		w.selectTab(tabJobs)
		w.jobs.firstPage() // newest first: the new jobs are on top
	})
	p.show.Hide()
	detailScroll := container.NewVScroll(p.details)
	detailScroll.SetMinSize(fyne.NewSize(0, 150))
	bottom := container.NewVBox(p.result, detailScroll, p.againNote,
		container.NewHBox(layoutSpacer(), p.again, p.show, p.close, p.add))
	content := container.NewBorder(nil, bottom, nil, nil, p.entry)
	p.dlg = dialog.NewCustomWithoutButtons("Add URLs", content, w.win)
	p.dlg.Resize(fyne.NewSize(720, 580))
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
	dir := w.opt.Dir
	w.background(func() {
		rep, err := w.eng.Add(bgCtx, text)
		details, left := addDetails(rep, text), keptLines(rep, text)
		var ended, done []string
		for i, d := range rep.Duplicates {
			switch rep.DuplicateStates[i] {
			case engine.JobDone:
				done = append(done, d)
				ended = append(ended, d)
			case engine.JobFailed, engine.JobCancelled, engine.JobSkipped:
				ended = append(ended, d)
			}
		}
		note := againNote(dir, done)
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
			p.details.SetText(details)
			// A URL whose job ended is not fetched again unless asked (J2).
			p.ended = ended
			if len(p.ended) > 0 {
				p.again.SetText(fmt.Sprintf("Download %s again", plural(len(p.ended), "finished URL", "finished URLs")))
				p.again.Show()
			} else {
				p.again.Hide()
			}
			p.againNote.SetText(note)
			p.againNote.Hidden = note == ""
			p.againNote.Refresh()
			p.show.Hidden = len(rep.Queued) == 0
			p.show.Refresh()
			// What is left in the entry is what needs fixing: the lines
			// with something rejected, as they were typed.
			p.entry.SetText(left)
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
			p.againNote.Hide()
			p.show.Show()
			p.result.SetText(plural(rep.Again, "URL", "URLs") + " queued again, to be downloaded anew")
			w.refreshSoon()
		})
	})
}

// addSummary says in one line what Add did: "3 queued · 1 already known
// (skipped) · 2 lines rejected", counting a rejected line once however many
// words of it were rejected.
func addSummary(r engine.AddReport) string {
	lines, last := 0, -1
	for _, rj := range r.Rejected {
		if rj.Line <= 0 || rj.Line != last {
			lines++
		}
		last = rj.Line
	}
	return fmt.Sprintf("%s queued · %s already known (skipped) · %s rejected",
		fmtInt(int64(len(r.Queued))), fmtInt(int64(len(r.Duplicates))), plural(lines, "line", "lines"))
}

// addDetails lists each line that had something rejected once, as it was
// typed, with why — a line of prose is one line with one reason, not a
// line per word — then a few duplicates. Passwords in URLs are masked.
func addDetails(r engine.AddReport, text string) string {
	var b strings.Builder
	lines := rejectedLines(r, text)
	for i, l := range lines {
		if i == shownRejects {
			fmt.Fprintf(&b, "… and %s more lines with something rejected\n", fmtInt(int64(len(lines)-i)))
			break
		}
		if l.line > 0 {
			fmt.Fprintf(&b, "line %d: ", l.line)
		}
		fmt.Fprintf(&b, "“%s” — %s\n", clip(maskURL(l.text), 80), l.why())
	}
	for i, d := range r.Duplicates {
		if i == 5 {
			fmt.Fprintf(&b, "… and %s more already known\n", fmtInt(int64(len(r.Duplicates)-i)))
			break
		}
		fmt.Fprintf(&b, "already %s: %s\n", r.DuplicateStates[i], clip(maskURL(d), 100))
	}
	return strings.TrimRight(b.String(), "\n")
}

// rejectedLine is one line of a paste with something rejected in it.
type rejectedLine struct {
	line    int
	text    string   // the line as typed (the rejected part when the line is unknown)
	reasons []string // distinct reasons, in order
	n       int      // rejected words in it
	words   int      // words in it
}

func (l rejectedLine) why() string {
	reasons := strings.Join(l.reasons, "; ")
	switch {
	case l.n <= 1:
		return reasons
	case l.n == l.words:
		return fmt.Sprintf("no URL in its %d words: %s", l.n, reasons)
	}
	return fmt.Sprintf("%d of its words are not URLs: %s", l.n, reasons)
}

// rejectedLines groups a paste's rejects by the line they came from, each
// line once, with the line's text as it was typed.
func rejectedLines(r engine.AddReport, text string) []rejectedLine {
	if len(r.Rejected) == 0 {
		return nil
	}
	var src []string
	if text != "" {
		src = strings.Split(text, "\n")
	}
	var out []rejectedLine
	for _, rj := range r.Rejected {
		if n := len(out); n > 0 && rj.Line > 0 && out[n-1].line == rj.Line {
			l := &out[n-1]
			l.n++
			if !slices.Contains(l.reasons, rj.Reason) {
				l.reasons = append(l.reasons, rj.Reason)
			}
			continue
		}
		l := rejectedLine{line: rj.Line, text: rj.Text, reasons: []string{rj.Reason}, n: 1, words: 1}
		if rj.Line > 0 && rj.Line <= len(src) {
			l.text = strings.TrimSpace(strings.TrimSuffix(src[rj.Line-1], "\r"))
			l.words = max(len(strings.Fields(l.text)), 1)
		}
		out = append(out, l)
	}
	return out
}

// keptLines is what the entry keeps after Add: the lines that had
// something rejected, exactly as typed, so that the person can fix them;
// the lines whose every URL was taken go.
func keptLines(r engine.AddReport, text string) string {
	if len(r.Rejected) == 0 {
		return ""
	}
	src := strings.Split(text, "\n")
	var kept []string
	seen := map[int]bool{}
	for _, rj := range r.Rejected {
		if rj.Line <= 0 || rj.Line > len(src) {
			kept = append(kept, rj.Text)
			continue
		}
		if !seen[rj.Line] {
			seen[rj.Line] = true
			kept = append(kept, strings.TrimSuffix(src[rj.Line-1], "\r"))
		}
	}
	return strings.Join(kept, "\n")
}

// againNote says what downloading done URLs again does to the files you
// have: nothing; the new copy is saved beside it (F3). For one URL it
// names both files, as far as the window can tell them from the URL.
func againNote(dir string, done []string) string {
	switch len(done) {
	case 0:
		return ""
	case 1:
		if name := urlFileName(done[0]); name != "" {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return fmt.Sprintf("Downloading it again saves it as “%s” beside the “%s” you have; nothing is replaced.",
					freeName(dir, name), name)
			}
		}
		return "Downloading it again saves a new copy beside the file you have, under a name such as “name (1).ext”; nothing is replaced."
	}
	return fmt.Sprintf("%d of them were downloaded already: each new copy is saved beside the file you have, "+
		"under a name such as “name (1).ext”; nothing is replaced.", len(done))
}

// urlFileName is the file name a URL's last path segment gives (F2).
func urlFileName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	seg := path.Base(u.Path)
	if seg == "/" || seg == "." || seg == "" {
		return ""
	}
	return fetch.SafeName(seg)
}

// freeName is the first of "name (1).ext", "name (2).ext" … not in dir,
// as the engine picks a final name (F3).
func freeName(dir, name string) string {
	ext := path.Ext(name)
	if ext == name || len(ext) > 16 {
		ext = ""
	}
	stem := strings.TrimSuffix(name, ext)
	if strings.EqualFold(path.Ext(stem), ".tar") {
		ext = path.Ext(stem) + ext
		stem = strings.TrimSuffix(name, ext)
	}
	for k := 1; k < 10000; k++ {
		c := fmt.Sprintf("%s (%d)%s", stem, k, ext)
		if _, err := os.Lstat(filepath.Join(dir, c)); err != nil {
			return c
		}
	}
	return stem + " (n)" + ext
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

// clip is s cut to n runes, with "…" when cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
