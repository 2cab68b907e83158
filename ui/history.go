package ui

import (
	"image/color"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// historyPage is how many attempts the History tab shows per page (keyset
// paging with HistoryQuery.BeforeID).
const historyPage = 200

var historyColumns = []struct {
	title string
	width float32
}{
	{"Started", 150}, {"Host", 160}, {"URL", 300}, {"Try", 45}, {"Status", 60}, {"Outcome", 95},
	{"Took", 70}, {"Bytes", 90}, {"Level", 50}, {"Breaker", 85}, {"Error", 300},
}

// historyView is the History tab (U6): every attempt from the database,
// newest first, filtered by host and outcome, exportable as CSV.
type historyView struct {
	w       *Window
	table   *widget.Table
	rows    []engine.Attempt
	host    *widget.Entry
	outcome *widget.Select
	info    *widget.Label
	newer   *widget.Button
	older   *widget.Button
	export  *widget.Button
	pages   []int64 // BeforeID of each page before the current one
	before  int64
	loading bool
	content fyne.CanvasObject
}

func newHistoryView(w *Window) *historyView {
	hv := &historyView{w: w}
	hv.table = widget.NewTable(func() (int, int) { return len(hv.rows), len(historyColumns) },
		func() fyne.CanvasObject { return newCell() }, hv.updateCell)
	hv.table.ShowHeaderRow = true
	hv.table.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("") }
	hv.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		l.TextStyle.Bold = true
		if id.Col >= 0 && id.Col < len(historyColumns) {
			l.SetText(historyColumns[id.Col].title)
		} else {
			l.SetText("")
		}
	}
	for i, c := range historyColumns {
		hv.table.SetColumnWidth(i, c.width)
	}
	hv.host = widget.NewEntry()
	hv.host.SetPlaceHolder("host filter, e.g. example.com (Enter)")
	hv.host.OnSubmitted = func(string) { hv.firstPage() }
	hv.outcome = widget.NewSelect(append([]string{"any"}, engine.Outcomes...), nil)
	hv.outcome.SetSelected("any")
	hv.outcome.OnChanged = func(string) { hv.firstPage() }
	hv.info = widget.NewLabel("")
	hv.newer = widget.NewButtonWithIcon("Newer", theme.NavigateBackIcon(), hv.newerPage)
	hv.older = widget.NewButtonWithIcon("Older", theme.NavigateNextIcon(), hv.olderPage)
	hv.export = widget.NewButtonWithIcon("Export CSV…", theme.DocumentSaveIcon(), hv.onExport)
	refresh := widget.NewButtonWithIcon("", theme.ViewRefreshIcon(), hv.reload)
	filters := container.NewBorder(nil, nil,
		container.NewHBox(widget.NewLabel("Outcome"), hv.outcome),
		container.NewHBox(refresh, hv.newer, hv.info, hv.older, hv.export), hv.host)
	hv.content = container.NewBorder(filters, nil, nil, nil, hv.table)
	return hv
}

func (hv *historyView) query() engine.HistoryQuery {
	q := engine.HistoryQuery{Host: strings.TrimSpace(strings.ToLower(hv.host.Text)), BeforeID: hv.before, Limit: historyPage}
	if o := hv.outcome.Selected; o != "" && o != "any" {
		q.Outcome = o
	}
	return q
}

func (hv *historyView) updateCell(id widget.TableCellID, o fyne.CanvasObject) {
	c := o.(*cell)
	c.selected = false
	if id.Row < 0 || id.Row >= len(hv.rows) {
		c.setText("", false)
		return
	}
	a := &hv.rows[id.Row]
	switch id.Col {
	case 0:
		c.setText(a.StartedAt.Local().Format("01-02 15:04:05.000"), true)
	case 1:
		c.setText(a.Host, false)
	case 2:
		c.setText(a.URL, false)
	case 3:
		c.setText(strconv.Itoa(a.Attempt), false)
	case 4:
		if a.Status == 0 {
			c.setText("—", true)
		} else {
			c.setText(strconv.Itoa(a.Status), false)
		}
	case 5:
		c.setBadge(a.Outcome, outcomeColour(a.Outcome))
	case 6:
		c.setText(fmtTook(a.Duration), false)
	case 7:
		c.setText(fmtBytes(a.Bytes), a.Bytes == 0)
	case 8:
		c.setText(strconv.Itoa(a.Level), a.Level == 0)
	case 9:
		c.setText(a.Breaker.String(), a.Breaker == engine.Closed)
	case 10:
		txt := a.Error
		if a.RetryAfter > 0 {
			txt = "Retry-After " + fmtDur(a.RetryAfter) + " " + txt
		}
		c.setText(txt, false)
	}
}

func outcomeColour(o string) color.NRGBA {
	switch o {
	case "ok":
		return colRunning
	case "throttled", "retry":
		return colWaiting
	case "failed":
		return colOpen
	case "redirect", "partial", "restart":
		return colClosed
	}
	return colPaused
}

func (hv *historyView) firstPage() {
	hv.pages, hv.before = nil, 0
	hv.reload()
}

func (hv *historyView) olderPage() {
	if len(hv.rows) < historyPage {
		return
	}
	hv.pages = append(hv.pages, hv.before)
	hv.before = hv.rows[len(hv.rows)-1].ID
	hv.reload()
}

func (hv *historyView) newerPage() {
	if len(hv.pages) == 0 {
		return
	}
	hv.before = hv.pages[len(hv.pages)-1]
	hv.pages = hv.pages[:len(hv.pages)-1]
	hv.reload()
}

// reload reads the current page off the Fyne thread.
func (hv *historyView) reload() {
	if hv.loading || hv.w.eng == nil {
		return
	}
	hv.loading = true
	q := hv.query()
	page := len(hv.pages) + 1
	hv.w.background(func() {
		rows, err := hv.w.eng.Reader().History(bgCtx, q)
		fyne.Do(func() {
			hv.loading = false
			if err != nil {
				hv.info.SetText("cannot read history: " + err.Error())
				return
			}
			hv.rows = rows
			hv.info.SetText(pageText(page, len(hv.rows), "attempts"))
			hv.table.Refresh()
		})
	})
}

// onExport saves every attempt the filters select (all pages) as CSV.
func (hv *historyView) onExport() {
	d := dialog.NewFileSave(func(wc fyne.URIWriteCloser, err error) {
		if err != nil || wc == nil {
			return
		}
		hv.exportTo(wc)
	}, hv.w.win)
	d.SetFileName("heed-history.csv")
	d.Show()
}

// exportTo writes every attempt the filters select to wc as CSV, off the
// Fyne thread, and says where it went (or shows why it could not).
func (hv *historyView) exportTo(wc fyne.URIWriteCloser) {
	q := hv.query()
	q.BeforeID, q.Limit = 0, 0
	hv.w.background(func() {
		err := engine.WriteHistoryCSV(bgCtx, wc, hv.w.eng.Reader(), q)
		if cerr := wc.Close(); err == nil {
			err = cerr
		}
		fyne.Do(func() {
			if err != nil {
				dialog.ShowError(err, hv.w.win)
				return
			}
			hv.info.SetText("exported to " + wc.URI().Path())
		})
	})
}

// fmtTook shows how long a request took: in milliseconds below a second,
// where most are (fmtDur's tenths of a second showed them all as 0.0s).
func fmtTook(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
	case d < time.Second:
		return strconv.Itoa(int(d/time.Millisecond)) + " ms"
	}
	return fmtDur(d)
}
