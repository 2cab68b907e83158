package ui

// The queue as a file, as heed export writes it and heed import reads it:
// the Jobs tab's Export… saves every job as a JSON line, Import… queues the
// URLs of such a file (or of a plain URL list). Passwords in URLs leave
// Heed masked (G44); an imported URL whose password was masked is queued
// without it.

import (
	"io"
	"sync/atomic"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/dialog"

	"heed/engine"
)

// onExportQueue asks where to save the queue.
func (w *Window) onExportQueue() {
	d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
		if err != nil || wc == nil {
			return
		}
		w.exportQueueTo(wc, wc.URI().Path())
	}, w.win)
	d.SetFileName("heed-queue.jsonl")
	d.Show()
}

// exportQueueTo writes every job to wc, off the Fyne thread, and says so in
// the status line (or shows why it could not).
func (w *Window) exportQueueTo(wc io.WriteCloser, name string) {
	w.background(func() {
		err := engine.WriteJobsJSON(bgCtx, wc, w.eng.Reader(), engine.JobQuery{})
		if cerr := wc.Close(); err == nil {
			err = cerr
		}
		fyne.Do(func() {
			if err != nil {
				w.showProblem("Exporting the queue to "+name, err)
				return
			}
			w.note("queue exported to " + name)
		})
	})
}

// onImportQueue asks for a file to queue.
func (w *Window) onImportQueue() {
	dialog.NewFileOpen(func(rc fyne.URIReadCloser, err error) {
		if err != nil || rc == nil {
			return
		}
		w.importQueueFrom(rc, rc.URI().Path())
	}, w.win).Show()
}

// importQueueFrom queues the URLs of rc as it is read, off the Fyne
// thread, and says what it did as a paste does.
func (w *Window) importQueueFrom(rc io.ReadCloser, name string) {
	w.background(func() {
		defer rc.Close()
		pr, pw := io.Pipe()
		var masked atomic.Int64
		go func() { pw.CloseWithError(engine.ImportList(rc, pw, &masked)) }()
		rep, err := w.eng.AddFrom(bgCtx, pr, engine.AddOptions{})
		pr.Close()
		fyne.Do(func() {
			msg := "imported " + name + ": " + addSummary(rep)
			if n := masked.Load(); n > 0 {
				msg += " · " + plural(int(n), "URL", "URLs") + " queued without the password export masked"
			}
			w.note(msg)
			if err != nil {
				w.showProblem("Importing "+name+" (what came before the problem is queued)", err)
			}
			w.jobs.firstPage()
			w.refreshSoon()
		})
	})
}
