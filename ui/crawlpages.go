package ui

import (
	"context"
	"net/url"
	"slices"
	"strconv"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// pagesShown is how many of the selected crawl's newest pages the Crawls
// tab lists below the crawls.
const pagesShown = 200

// Columns of a crawl's pages.
const (
	cpURL = iota
	cpState
	cpDepth
	cpFoundOn
	cpResult
)

var pageColumns = []column{
	cpURL:     {title: "URL", width: 320, min: 200, grow: 1},
	cpState:   {title: "State", width: 86, min: 80},
	cpDepth:   {title: "Depth", width: 58, min: 50},
	cpFoundOn: {title: "Found on", width: 260, min: 140},
	cpResult:  {title: "Result", width: 320, min: 200, grow: 1},
}

// crawlPages lists the selected crawl's newest pages (W10): each with its
// state, its depth, the page that linked to it, and what came of it — a
// skipped one with the rule that skipped it.
type crawlPages struct {
	w     *Window
	title *widget.Label
	table *fitTable
	rows  []jobRow
	box   fyne.CanvasObject
}

func newCrawlPages(w *Window) *crawlPages {
	cp := &crawlPages{w: w}
	cp.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	cp.table = newFitTable(pageColumns, func() int { return len(cp.rows) },
		func() fyne.CanvasObject { return newCell() }, cp.updateCell)
	cp.table.OnSelected = func(widget.TableCellID) { cp.table.UnselectAll() }
	cp.box = container.NewBorder(cp.title, nil, nil, nil, cp.table)
	cp.set(nil, nil, nil)
	return cp
}

// set shows rows as the pages of crawl c (nil: none selected), or why
// they could not be read.
func (cp *crawlPages) set(c *engine.Crawl, rows []jobRow, err error) {
	cp.rows = rows
	switch {
	case err != nil:
		cp.title.SetText("Cannot read the crawl's pages: " + err.Error())
	case c == nil:
		cp.title.SetText("Select a crawl to see its pages.")
	case len(rows) == 0:
		cp.title.SetText("Crawl " + strconv.FormatInt(c.ID, 10) + " has no pages on its first seed's host yet.")
	default:
		cp.title.SetText("Pages of crawl " + strconv.FormatInt(c.ID, 10) + ", the last changed first (its newest " +
			strconv.Itoa(pagesShown) + " at most, on its first seed's host)")
	}
	cp.table.Refresh()
}

// crawlPagesQuery is the read of crawl c's newest pages, to run off the
// Fyne thread: the newest jobs of its first seed's host that it found.
func crawlPagesQuery(eng *engine.Engine, c engine.Crawl) func(context.Context) ([]jobRow, error) {
	host := ""
	if len(c.Seeds) > 0 {
		if u, err := url.Parse(c.Seeds[0]); err == nil {
			host, _ = engine.HostKeyOf(u)
		}
	}
	return func(ctx context.Context) ([]jobRow, error) {
		if host == "" {
			return nil, nil
		}
		// The engine lists jobs by host, not by crawl: the host's newest,
		// then this crawl's among them.
		recs, err := eng.Reader().Jobs(ctx, engine.JobQuery{Host: host, Newest: true, Limit: pagesShown})
		if err != nil {
			return nil, err
		}
		var rows []jobRow
		for _, r := range recs {
			if r.CrawlID == c.ID {
				rows = append(rows, pageRow(r))
			}
		}
		// What happened last on top: the pages in flight, then by their
		// last change.
		slices.SortStableFunc(rows, func(a, b jobRow) int {
			if aa, ba := a.rec.State == engine.JobActive, b.rec.State == engine.JobActive; aa != ba {
				if aa {
					return -1
				}
				return 1
			}
			return b.rec.UpdatedAt.Compare(a.rec.UpdatedAt)
		})
		return rows, nil
	}
}

// pageRow is how a crawl's page shows: what came of it in words.
func pageRow(r engine.Job) jobRow {
	row := jobRow{rec: r, url: maskURL(r.URL)}
	switch r.State {
	case engine.JobDone:
		row.why = say(fmtBytes(max(r.Size, r.Bytes)) + " → " + r.File)
	case engine.JobSkipped:
		row.why = skipWhy(r.LastError)
	case engine.JobQueued:
		row.why = say("waiting its turn"+prefixed(" — last: ", r.LastError), "waiting its turn")
	case engine.JobActive:
		row.why = say("downloading")
	case engine.JobPaused:
		row.why = say("paused with its crawl", "paused")
	case engine.JobCancelled:
		row.why = say("cancelled")
	default:
		row.why = say(r.LastError)
	}
	return row
}

func (cp *crawlPages) updateCell(id widget.TableCellID, o fyne.CanvasObject) {
	c := o.(*cell)
	c.selected = false
	if id.Row < 0 || id.Row >= len(cp.rows) {
		c.setText("", false)
		return
	}
	r := &cp.rows[id.Row]
	switch id.Col {
	case cpURL:
		c.setURL(r.url)
	case cpState:
		st, col, strong := jobStateLook(r.rec.State)
		if strong {
			c.setBadge(st, col)
		} else {
			c.setSoftBadge(say(st), col)
		}
	case cpDepth:
		c.setText(strconv.Itoa(r.rec.Depth), false)
	case cpFoundOn:
		if r.rec.FoundOn == "" {
			c.setText("a seed", true)
		} else {
			c.setURL(maskURL(r.rec.FoundOn))
		}
	case cpResult:
		c.setTexts(r.why, r.rec.State == engine.JobDone || r.rec.State == engine.JobQueued)
	}
}

// crawlsLayout lays the crawls table over the selected crawl's pages: the
// table takes the height of its rows (two at least, about a third of the
// height at most), the pages the rest.
type crawlsLayout struct {
	rows func() int
}

func (l *crawlsLayout) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	top, pages := objs[0], objs[1]
	rowH := newCell().MinSize().Height + theme.Padding()
	h := min(float32(max(l.rows(), 2)+1)*rowH+theme.Padding(), max(size.Height*0.36, 3*rowH))
	if !pages.Visible() {
		h = size.Height
	}
	top.Move(fyne.NewPos(0, 0))
	top.Resize(fyne.NewSize(size.Width, h))
	pages.Move(fyne.NewPos(0, h+theme.Padding()))
	pages.Resize(fyne.NewSize(size.Width, max(size.Height-h-theme.Padding(), 0)))
}

func (l *crawlsLayout) MinSize(objs []fyne.CanvasObject) fyne.Size {
	return fyne.NewSize(objs[0].MinSize().Width, objs[0].MinSize().Height+objs[1].MinSize().Height)
}
