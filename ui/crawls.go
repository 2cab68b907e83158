package ui

import (
	"context"
	"fmt"
	"image/color"
	"net/url"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// crawlsEvery is how often the Crawls tab reads the crawls while it is
// shown: each read counts every crawl's jobs in the database.
const crawlsEvery = 2 * time.Second

// Columns of the Crawls tab (W10).
const (
	ccID = iota
	ccSeeds
	ccScope
	ccState
	ccProgress
	ccDone
	ccQueued
	ccSkipped
	ccFailed
	ccOut
	ccBytes
)

var crawlColumns = []column{
	ccID:       {title: "ID", width: 44, min: 40},
	ccSeeds:    {title: "Seeds", width: 260, min: 160, grow: 1},
	ccScope:    {title: "Scope", width: 130, min: 70},
	ccState:    {title: "State", width: 100, min: 84},
	ccProgress: {title: "Pages", width: 150, min: 100},
	ccDone:     {title: "Done", width: 58, min: 48},
	ccQueued:   {title: "Queued", width: 66, min: 56},
	ccSkipped:  {title: "Skipped", width: 70, min: 60},
	ccFailed:   {title: "Failed", width: 60, min: 50},
	ccOut:      {title: "Out of scope", short: "Outside", width: 104, min: 70},
	ccBytes:    {title: "Downloaded", short: "Bytes", width: 100, min: 70},
}

// crawlsView is the Crawls tab: each crawl with its seeds, scope, state
// and what it has done, live; Pause, Resume and Cancel act on the selected
// one, Cancel after asking.
type crawlsView struct {
	w        *Window
	table    *fitTable
	rows     []engine.Crawl
	selected int64
	err      error
	loading  bool
	again    bool

	selLabel *widget.Label
	pause    *widget.Button
	resume   *widget.Button
	cancel   *widget.Button
	jobs     *widget.Button
	detail   *widget.Label
	hint     *fyne.Container
	pages    *crawlPages // the selected crawl's newest pages
	body     *fyne.Container
	confirm  *confirmDialog // the Cancel question, while shown
	content  fyne.CanvasObject
}

func newCrawlsView(w *Window) *crawlsView {
	cv := &crawlsView{w: w}
	cv.table = newFitTable(crawlColumns, func() int { return len(cv.rows) },
		func() fyne.CanvasObject { return newCell() }, cv.updateCell)
	cv.table.OnSelected = func(id widget.TableCellID) {
		if id.Row >= 0 && id.Row < len(cv.rows) {
			cv.selected = cv.rows[id.Row].ID
		}
		cv.table.UnselectAll() // the selection is the crawl, drawn by updateCell
		cv.table.Refresh()
		cv.show()
		cv.reload() // its pages
	}
	cv.selLabel = widget.NewLabel("")
	cv.selLabel.Truncation = fyne.TextTruncateEllipsis
	cv.pause = widget.NewButtonWithIcon("Pause", theme.MediaPauseIcon(), func() { cv.act(w.eng.PauseCrawl) })
	cv.resume = widget.NewButtonWithIcon("Resume", theme.MediaPlayIcon(), func() { cv.act(w.eng.ResumeCrawl) })
	cv.cancel = widget.NewButtonWithIcon("Cancel…", theme.CancelIcon(), cv.onCancel)
	cv.jobs = widget.NewButtonWithIcon("Show its jobs", theme.ListIcon(), cv.onShowJobs)
	empty := widget.NewLabel("No crawls yet. Press Crawl… above and give a URL: Heed follows its links within the " +
		"scope you choose, politely, and obeys the site's robots.txt.")
	empty.Alignment = fyne.TextAlignCenter
	empty.Wrapping = fyne.TextWrapWord
	headerGap := newHeaderCell().MinSize().Height + theme.Padding()
	cv.hint = container.New(layout.NewCustomPaddedLayout(headerGap, 0, 0, 0),
		container.NewStack(canvas.NewRectangle(theme.Color(theme.ColorNameBackground)),
			container.New(layout.NewCustomPaddedLayout(40, 0, 40, 40), container.NewVBox(empty))))
	cv.detail = widget.NewLabel("")
	cv.detail.Wrapping = fyne.TextWrapWord
	cv.detail.Selectable = true // to copy a seed
	bar := container.NewHBox(cv.pause, cv.resume, cv.cancel, widget.NewSeparator(), cv.jobs)
	top := container.NewBorder(nil, nil, nil, bar, cv.selLabel)
	cv.pages = newCrawlPages(w)
	cv.body = container.New(&crawlsLayout{rows: func() int { return len(cv.rows) }},
		container.NewStack(cv.table, cv.hint), cv.pages.box)
	cv.content = container.NewBorder(top, cv.detail, nil, nil, cv.body)
	cv.show()
	return cv
}

// reload reads the crawls off the Fyne thread (W10). A reload asked for
// while one runs happens after it, once.
func (cv *crawlsView) reload() {
	if cv.w.eng == nil {
		return
	}
	if cv.loading {
		cv.again = true
		return
	}
	cv.loading = true
	eng, selected := cv.w.eng, cv.selected
	cv.w.background(func() {
		rows, err := eng.Crawls(bgCtx)
		// Newest first, as the other tabs list.
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
		var sel *engine.Crawl
		var pages []jobRow
		var pagesErr error
		for i := range rows {
			if rows[i].ID == selected {
				sel = &rows[i]
				pages, pagesErr = crawlPagesQuery(eng, rows[i])(bgCtx)
			}
		}
		fyne.Do(func() {
			cv.loading = false
			cv.err = err
			if err == nil {
				cv.rows = rows
				switch {
				case cv.selected == 0 && len(rows) > 0:
					cv.selected = rows[0].ID // the newest, with its pages next
					cv.again = true
				case cv.selected == selected:
					cv.pages.set(sel, pages, pagesErr)
				}
			}
			cv.table.Refresh()
			cv.show()
			if cv.again {
				cv.again = false
				cv.reload()
			}
		})
	})
}

// row is the selected crawl, nil when none is listed.
func (cv *crawlsView) row() *engine.Crawl {
	for i := range cv.rows {
		if cv.rows[i].ID == cv.selected {
			return &cv.rows[i]
		}
	}
	return nil
}

// left is how many of a crawl's jobs have not ended.
func left(c *engine.Crawl) int64 { return c.Counts.Queued + c.Counts.Active + c.Counts.Paused }

// ended is how many of a crawl's jobs have.
func ended(c *engine.Crawl) int64 {
	return c.Counts.Done + c.Counts.Failed + c.Counts.Skipped + c.Counts.Cancelled
}

// crawlStateLook is a crawl's State: its word, colour, and whether it is a
// strong badge (it needs attention, or fetches now) or a pale one.
func crawlStateLook(c *engine.Crawl) (wording, color.NRGBA, bool) {
	switch {
	case c.State == engine.CrawlCancelled:
		return say("cancelled"), paintPaused, false
	case c.State == engine.CrawlPaused:
		return say("paused"), paintPaused, true
	case left(c) == 0:
		return say("finished"), paintDone, false
	case c.Counts.Active > 0:
		return say("crawling · "+strconv.FormatInt(c.Counts.Active, 10)+" in flight", "crawling"), paintWorking, true
	}
	return say("crawling"), paintWorking, false // pacing itself: waiting its turn or its crawl-delay
}

// seedsText is a crawl's seeds in a cell: the first, and how many more.
func seedsText(c *engine.Crawl) string {
	if len(c.Seeds) == 0 {
		return ""
	}
	s := maskURL(c.Seeds[0])
	if len(c.Seeds) > 1 {
		s += fmt.Sprintf(" and %d more", len(c.Seeds)-1)
	}
	return s
}

// scopeText is a crawl's rules in short: "host · depth 5 · 100 pages".
func scopeText(c *engine.Crawl) wording {
	long, short := c.Scope+" · depth "+strconv.Itoa(c.Depth), c.Scope+" · "+strconv.Itoa(c.Depth)
	if c.MaxPages > 0 {
		long += " · " + plural(c.MaxPages, "page", "pages")
	}
	return say(long, short, c.Scope)
}

func (cv *crawlsView) updateCell(id widget.TableCellID, o fyne.CanvasObject) {
	c := o.(*cell)
	if id.Row < 0 || id.Row >= len(cv.rows) {
		c.selected = false
		c.setText("", false)
		return
	}
	r := &cv.rows[id.Row]
	c.selected = r.ID == cv.selected
	count := func(n int64) { c.setText(fmtInt(n), n == 0) }
	switch id.Col {
	case ccID:
		c.setText(strconv.FormatInt(r.ID, 10), true)
	case ccSeeds:
		c.setURL(seedsText(r))
	case ccScope:
		c.setTexts(scopeText(r), false)
	case ccState:
		w, col, strong := crawlStateLook(r)
		if strong {
			c.setBadges(w, col)
		} else {
			c.setSoftBadge(w, col)
		}
	case ccProgress:
		total := max(r.Pages, ended(r)+left(r))
		frac := 0.0
		if total > 0 {
			frac = float64(ended(r)) / float64(total)
		}
		col := paintWorking
		if left(r) == 0 {
			col = paintDone
		}
		c.setBar(frac, col, fmtInt(ended(r))+" / "+fmtInt(total))
	case ccDone:
		count(r.Counts.Done)
	case ccQueued:
		count(r.Counts.Queued + r.Counts.Paused + r.Counts.Active)
	case ccSkipped:
		count(r.Counts.Skipped)
	case ccFailed:
		count(r.Counts.Failed)
	case ccOut:
		count(r.OutOfScope)
	case ccBytes:
		c.setText(fmtBytes(r.Bytes), r.Bytes == 0)
	}
}

// show says what the selected crawl is and does, in full, and enables
// only the actions that apply to it.
func (cv *crawlsView) show() {
	cv.hint.Hidden = len(cv.rows) > 0 || cv.err != nil
	cv.hint.Refresh()
	if none := len(cv.rows) == 0; none == cv.pages.box.Visible() { // with none, the hint says what a crawl is
		if none {
			cv.pages.box.Hide()
		} else {
			cv.pages.box.Show()
		}
		cv.body.Refresh()
	}
	r := cv.row()
	if r == nil {
		cv.selected = 0
	}
	switch {
	case cv.err != nil:
		cv.selLabel.SetText("Cannot read the crawls: " + cv.err.Error())
	case r == nil:
		cv.selLabel.SetText("Select a crawl to pause, resume or cancel it.")
	default:
		st, _, _ := crawlStateLook(r)
		cv.selLabel.SetText(fmt.Sprintf("Crawl %d — %s: %s done, %s skipped, %s failed, %s to go", r.ID, st[0],
			fmtInt(r.Counts.Done), fmtInt(r.Counts.Skipped), fmtInt(r.Counts.Failed), fmtInt(left(r))))
	}
	cv.detail.SetText(crawlDetail(r))
	enable := func(b *widget.Button, on bool) {
		if on {
			b.Enable()
		} else {
			b.Disable()
		}
	}
	enable(cv.pause, r != nil && r.State == engine.CrawlRunning && left(r) > 0)
	enable(cv.resume, r != nil && r.State == engine.CrawlPaused)
	enable(cv.cancel, r != nil && r.State != engine.CrawlCancelled && (left(r) > 0 || r.State == engine.CrawlPaused))
	enable(cv.jobs, r != nil && len(r.Seeds) > 0)
}

// crawlDetail is the line below the table: the selected crawl's seeds and
// rules in full, and its jobs by state.
func crawlDetail(r *engine.Crawl) string {
	if r == nil {
		return "Each crawl lists its pages: done, still queued, skipped (robots.txt or a crawler trap) and failed; " +
			"links outside its scope are counted, never fetched."
	}
	seeds := make([]string, len(r.Seeds))
	for i, s := range r.Seeds {
		seeds[i] = maskURL(s)
	}
	rules := "scope " + r.Scope + ", depth " + strconv.Itoa(r.Depth)
	if r.MaxPages > 0 {
		rules += ", at most " + plural(r.MaxPages, "page", "pages")
	}
	if r.Robots {
		rules += ", obeys robots.txt"
	} else {
		rules += ", ignores robots.txt"
	}
	if len(r.Include) > 0 {
		rules += ", only URLs matching " + strings.Join(r.Include, " or ")
	}
	if len(r.Exclude) > 0 {
		rules += ", never URLs matching " + strings.Join(r.Exclude, " or ")
	}
	n := r.Counts
	return fmt.Sprintf("Crawl %d from %s · %s · started %s · %d in flight, %d queued, %d paused, %d cancelled",
		r.ID, strings.Join(seeds, ", "), rules, fmtWhen(r.Created, time.Now()), n.Active, n.Queued, n.Paused, n.Cancelled)
}

// act pauses or resumes the selected crawl, off the Fyne thread.
func (cv *crawlsView) act(f func(context.Context, int64) ([]int64, error)) {
	if cv.selected == 0 {
		return
	}
	id := cv.selected
	cv.w.background(func() {
		_, err := f(bgCtx, id)
		fyne.Do(func() {
			if err != nil {
				cv.w.showProblem(fmt.Sprintf("Crawl %d could not be changed", id), err)
			}
			cv.reload()
			cv.w.refreshSoon()
		})
	})
}

// confirmDialog asks before something that cannot be undone.
type confirmDialog struct {
	msg  *widget.Label
	ok   *widget.Button
	keep *widget.Button
	dlg  dialog.Dialog
}

// onCancel asks before cancelling the selected crawl: its jobs not ended
// are cancelled and its pages' links are no longer followed.
func (cv *crawlsView) onCancel() {
	r := cv.row()
	if r == nil {
		return
	}
	id := r.ID
	q := &confirmDialog{msg: widget.NewLabel(fmt.Sprintf("Cancel crawl %d (%s)? Its %s not fetched yet are cancelled, "+
		"and no more of its links are followed. What it downloaded stays.", id, seedsText(r),
		plural(int(left(r)), "page", "pages")))}
	q.msg.Wrapping = fyne.TextWrapWord
	q.keep = widget.NewButton("Keep crawling", func() { q.dlg.Hide() })
	q.ok = widget.NewButtonWithIcon("Cancel crawl", theme.CancelIcon(), func() {
		q.dlg.Hide()
		cv.act(cv.w.eng.CancelCrawl)
	})
	q.ok.Importance = widget.DangerImportance
	content := container.NewBorder(nil, container.NewHBox(layoutSpacer(), q.keep, q.ok), nil, nil, q.msg)
	q.dlg = dialog.NewCustomWithoutButtons(fmt.Sprintf("Cancel crawl %d?", id), content, cv.w.win)
	q.dlg.SetOnClosed(func() { cv.confirm = nil })
	q.dlg.Resize(fyne.NewSize(520, 180))
	cv.confirm = q
	q.dlg.Show()
}

// onShowJobs shows the jobs of the selected crawl's first seed's host in
// the Jobs tab, newest first.
func (cv *crawlsView) onShowJobs() {
	r := cv.row()
	if r == nil || len(r.Seeds) == 0 {
		return
	}
	u, err := url.Parse(r.Seeds[0])
	if err != nil {
		return
	}
	host, err := engine.HostKeyOf(u)
	if err != nil {
		return
	}
	cv.w.jobs.host.SetText(host)
	cv.w.selectTab(tabJobs)
	cv.w.jobs.firstPage()
}
