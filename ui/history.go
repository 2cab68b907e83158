package ui

import (
	"context"
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

// Columns of the History tab.
const (
	hcStarted = iota
	hcHost
	hcURL
	hcTry
	hcStatus
	hcOutcome
	hcTook
	hcBytes
	hcLevel
	hcBreaker
	hcError
)

var historyColumns = []column{
	hcStarted: {title: "Started", width: 104, min: 96},
	hcHost:    {title: "Host", width: 110, min: 90},
	hcURL:     {title: "URL", width: 250, min: 170},
	hcTry:     {title: "Try", width: 130, min: 70},
	hcStatus:  {title: "Status", width: 56, min: 52},
	hcOutcome: {title: "Outcome", width: 84, min: 76},
	hcTook:    {title: "Took", width: 66, min: 60},
	hcBytes:   {title: "Bytes", width: 80, min: 70},
	hcLevel:   {title: "Level", width: 48, min: 46},
	hcBreaker: {title: "Breaker", width: 74, min: 70},
	hcError:   {title: "Error", width: 240, min: 200, grow: 1},
}

// historyView is the History tab (U6): every attempt from the database,
// newest first, filtered by host and outcome, exportable as CSV.
type historyView struct {
	w       *Window
	pt      *pagedTable[engine.Attempt]
	host    *widget.Entry
	outcome *widget.Select
	export  *widget.Button
	note    *widget.Label // where an export went
	content fyne.CanvasObject
}

func newHistoryView(w *Window) *historyView {
	hv := &historyView{w: w}
	hv.pt = newPagedTable(w, "attempts", historyPage, historyColumns, func(a *engine.Attempt) int64 { return a.ID }, hv.updateCell)
	hv.pt.query = hv.query
	hv.pt.setEmpty("No requests yet: every request Heed makes is listed here, newest first.")
	hv.host = widget.NewEntry()
	hv.host.SetPlaceHolder("host filter, e.g. example.com (Enter)")
	hv.host.OnSubmitted = func(string) { hv.pt.firstPage() }
	outcomes := []string{"any"}
	for _, o := range engine.Outcomes {
		outcomes = append(outcomes, outcomeWords(o))
	}
	hv.outcome = widget.NewSelect(outcomes, nil)
	hv.outcome.SetSelected("any")
	hv.outcome.OnChanged = func(string) { hv.pt.firstPage() }
	hv.export = widget.NewButtonWithIcon("Export CSV…", theme.DocumentSaveIcon(), hv.onExport)
	hv.note = widget.NewLabel("")
	hv.note.Truncation = fyne.TextTruncateEllipsis
	hv.note.Hide()
	refresh := widget.NewButtonWithIcon("", theme.ViewRefreshIcon(), hv.pt.reload)
	filters := container.NewBorder(nil, nil,
		container.NewHBox(widget.NewLabel("Outcome"), hv.outcome),
		container.NewHBox(refresh, hv.pt.nav(), hv.export), hv.host)
	hv.content = container.NewBorder(filters, hv.note, nil, nil, hv.pt.box)
	return hv
}

func (hv *historyView) rows() []engine.Attempt { return hv.pt.rows }
func (hv *historyView) reload()                { hv.pt.reload() }
func (hv *historyView) firstPage()             { hv.pt.firstPage() }

func (hv *historyView) filter() engine.HistoryQuery {
	q := engine.HistoryQuery{Host: strings.TrimSpace(strings.ToLower(hv.host.Text)), Limit: historyPage}
	if o := hv.outcome.Selected; o != "" && o != "any" {
		q.Outcome = outcomeOf(o)
	}
	return q
}

func (hv *historyView) query(before int64) func(context.Context) ([]engine.Attempt, error) {
	q := hv.filter()
	q.BeforeID = before
	r := hv.w.eng.Reader()
	return func(ctx context.Context) ([]engine.Attempt, error) { return r.History(ctx, q) }
}

func (hv *historyView) updateCell(a *engine.Attempt, col int, c *cell) {
	switch col {
	case hcStarted:
		c.setText(fmtStarted(a.StartedAt, time.Now()), true)
	case hcHost:
		c.setTexts(say(hv.w.hostName(a.Host), hv.w.opt.HostLabels[a.Host]), false)
	case hcURL:
		c.setURL(maskURL(a.URL)) // the engine masks history already; this reads "***"
	case hcTry:
		c.setTexts(say(tryText(a), strconv.Itoa(a.Attempt)+" (+"+strconv.Itoa(a.Throttled)+")"), false)
	case hcStatus:
		if a.Status == 0 {
			c.setText("—", true)
		} else {
			c.setText(strconv.Itoa(a.Status), false)
		}
	case hcOutcome:
		col, strong := outcomeLook(a.Outcome)
		if strong {
			c.setBadge(outcomeWords(a.Outcome), col)
		} else {
			c.setSoftBadge(say(outcomeWords(a.Outcome)), col)
		}
	case hcTook:
		c.setText(fmtTook(a.Duration), false)
	case hcBytes:
		c.setText(fmtBytes(a.Bytes), a.Bytes == 0)
	case hcLevel:
		c.setText(strconv.Itoa(a.Level), a.Level == 0)
	case hcBreaker:
		c.setText(a.Breaker.String(), a.Breaker == engine.Closed)
	case hcError:
		txt := a.Error
		if a.RetryAfter > 0 {
			txt = "server asked to wait " + fmtDur(a.RetryAfter) + " (Retry-After)" + prefixed(" · ", txt)
		}
		c.setText(txt, false)
	}
}

func prefixed(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

// outcomeLook is an outcome's colour, the same as the job state or host
// state it leads to, and whether it needs attention.
func outcomeLook(o string) (color.NRGBA, bool) {
	switch o {
	case "ok":
		return paintDone, false // the ordinary case: calm
	case "throttled":
		return paintBackoff, true
	case "failed":
		return paintFailing, true
	case "retry":
		return paintFailing, false
	case "canceled":
		return paintPaused, false
	}
	return paintPaused, false // redirect, partial, restart, resent, robots: steps of an attempt
}

// fmtStarted is when an attempt started: the time to the millisecond
// today, with the date before that.
func fmtStarted(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05.000")
	}
	return t.Format("Jan 2 15:04:05")
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
	q := hv.filter()
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
			hv.note.SetText("exported to " + wc.URI().Path())
			hv.note.Show()
		})
	})
}

// fmtTook shows how long a request took: in milliseconds below a second,
// where most are.
func fmtTook(d time.Duration) string {
	switch {
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + " ms"
	case d < time.Second:
		return strconv.Itoa(int(d/time.Millisecond)) + " ms"
	}
	return fmtDur(d)
}
