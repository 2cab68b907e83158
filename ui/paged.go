package ui

import (
	"context"
	"fmt"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// pagedTable is the piece the Jobs and History tabs share: a table of rows
// newest first, read a page at a time off the Fyne thread, paged by key
// (each page is the rows before the last id of the one above it, never an
// OFFSET), with Newer / Older buttons, a label saying where one is ("page
// 2 of 7 · 1,234 jobs") and a hint over an empty table.
//
// The owner says how to read a page (query: called on the Fyne thread with
// the filters as they are, it returns the read to run in the background)
// and, when it knows it, how many rows the filters select (total).
//
// While the pointer is over the table, page 1 stays where it is: rows that
// arrive meanwhile (a paste, a crawl) do not push the row under the
// pointer away; they show once the pointer leaves.
type pagedTable[R any] struct {
	w        *Window
	what     string // "jobs", "attempts"
	pageSize int
	id       func(*R) int64
	query    func(before int64) func(context.Context) ([]R, error)
	total    func() (int64, bool)
	loaded   func() // after a page came in, on the Fyne thread

	rows    []R
	table   *fitTable
	info    *widget.Label
	newer   *widget.Button
	older   *widget.Button
	empty   *widget.Label
	emptyBg *canvas.Rectangle
	hint    *fyne.Container
	pages   []int64 // the cursor of each page above the current one
	before  int64   // the current page's cursor: rows with a smaller id (0: from the newest)
	anchor  int64   // page 1 while the pointer is over it: its top row's id + 1
	loading bool
	again   bool // a reload was asked for while one ran
	hovered bool
	err     error
	box     fyne.CanvasObject // the table with its empty hint
}

func newPagedTable[R any](w *Window, what string, pageSize int, cols []column, id func(*R) int64,
	update func(r *R, col int, c *cell)) *pagedTable[R] {
	pt := &pagedTable[R]{w: w, what: what, pageSize: pageSize, id: id}
	pt.table = newFitTable(cols, func() int { return len(pt.rows) },
		func() fyne.CanvasObject { return newCell() },
		func(tid widget.TableCellID, o fyne.CanvasObject) {
			c := o.(*cell)
			c.selected = false
			if tid.Row < 0 || tid.Row >= len(pt.rows) {
				c.setText("", false)
				return
			}
			update(&pt.rows[tid.Row], tid.Col, c)
		})
	pt.table.onHover = func(in bool) {
		pt.hovered = in
		if !in && pt.anchor != 0 {
			pt.anchor = 0
			pt.reload()
		}
	}
	pt.info = widget.NewLabel("")
	pt.newer = widget.NewButtonWithIcon("Newer", theme.NavigateBackIcon(), pt.newerPage)
	pt.older = widget.NewButtonWithIcon("Older", theme.NavigateNextIcon(), pt.olderPage)
	pt.older.IconPlacement = widget.ButtonIconTrailingText
	pt.empty = widget.NewLabel("")
	pt.empty.Alignment = fyne.TextAlignCenter
	pt.empty.Wrapping = fyne.TextWrapWord
	// The hint sits below the header row on the window's background, so
	// that the table's column lines do not run through it.
	pt.emptyBg = canvas.NewRectangle(theme.Color(theme.ColorNameBackground))
	headerGap := newHeaderCell().MinSize().Height + theme.Padding()
	pt.hint = container.New(layout.NewCustomPaddedLayout(headerGap, 0, 0, 0),
		container.NewStack(pt.emptyBg, container.New(layout.NewCustomPaddedLayout(40, 0, 40, 40), container.NewVBox(pt.empty))))
	pt.hint.Hide()
	pt.box = container.NewStack(pt.table, pt.hint)
	pt.showPage()
	return pt
}

// nav is the Newer / page / Older group for a filter row.
func (pt *pagedTable[R]) nav() fyne.CanvasObject {
	return container.NewHBox(pt.newer, pt.info, pt.older)
}

// setEmpty sets what the empty table says when nothing at all is there
// (a filter that matches nothing says so in the page label).
func (pt *pagedTable[R]) setEmpty(s string) { pt.empty.SetText(s) }

func (pt *pagedTable[R]) firstPage() {
	pt.pages, pt.before, pt.anchor = nil, 0, 0
	pt.reload()
}

func (pt *pagedTable[R]) olderPage() {
	if len(pt.rows) < pt.pageSize {
		return
	}
	pt.pages = append(pt.pages, pt.cursor())
	pt.before = pt.id(&pt.rows[len(pt.rows)-1])
	pt.anchor = 0
	pt.reload()
}

func (pt *pagedTable[R]) newerPage() {
	if len(pt.pages) == 0 {
		return
	}
	pt.before = pt.pages[len(pt.pages)-1]
	pt.pages = pt.pages[:len(pt.pages)-1]
	pt.anchor = 0
	pt.reload()
}

// cursor is the key the current page is read from.
func (pt *pagedTable[R]) cursor() int64 {
	if pt.before == 0 && pt.anchor != 0 {
		return pt.anchor
	}
	return pt.before
}

// page is the current page's number, from 1.
func (pt *pagedTable[R]) page() int { return len(pt.pages) + 1 }

// reload reads the current page off the Fyne thread. A reload asked for
// while one runs happens after it, once.
func (pt *pagedTable[R]) reload() {
	if pt.w.eng == nil {
		return
	}
	if pt.loading {
		pt.again = true
		return
	}
	if pt.hovered && pt.before == 0 && pt.anchor == 0 && len(pt.rows) > 0 {
		pt.anchor = pt.id(&pt.rows[0]) + 1 // hold page 1 still under the pointer
	}
	pt.loading = true
	read := pt.query(pt.cursor())
	pt.w.background(func() {
		rows, err := read(bgCtx)
		fyne.Do(func() {
			pt.loading = false
			pt.err = err
			if err == nil {
				pt.rows = rows
			}
			pt.showPage()
			pt.table.Refresh()
			if pt.loaded != nil {
				pt.loaded()
			}
			if pt.again {
				pt.again = false
				pt.reload()
			}
		})
	})
}

// showPage says where the page is, enables the buttons that go somewhere,
// and shows the empty hint over an empty first page.
func (pt *pagedTable[R]) showPage() {
	pt.info.SetText(pt.pageText())
	if len(pt.pages) == 0 {
		pt.newer.Disable()
	} else {
		pt.newer.Enable()
	}
	if len(pt.rows) < pt.pageSize {
		pt.older.Disable()
	} else {
		pt.older.Enable()
	}
	if len(pt.rows) == 0 && pt.page() == 1 && pt.err == nil && pt.empty.Text != "" {
		pt.emptyBg.FillColor = theme.Color(theme.ColorNameBackground)
		pt.hint.Show()
	} else {
		pt.hint.Hide()
	}
}

// pageText is the page label: where the page is and how many rows the
// filters select, or that nothing matches, so that an empty table is not
// taken for one still loading.
func (pt *pagedTable[R]) pageText() string {
	if pt.err != nil {
		return "cannot read " + pt.what + ": " + pt.err.Error()
	}
	var total int64
	known := false
	if pt.total != nil {
		total, known = pt.total()
	}
	return pageText(pt.page(), len(pt.rows), pt.pageSize, total, known, pt.what)
}

// pageText is "page 2 of 7 · 1,234 jobs", "page 2" when the total is not
// known, "no jobs match" for an empty first page.
func pageText(page, rows, pageSize int, total int64, known bool, what string) string {
	if rows == 0 {
		if page == 1 {
			return "no " + what + " match"
		}
		return fmt.Sprintf("page %d: no more %s", page, what)
	}
	if !known {
		return fmt.Sprintf("page %d", page)
	}
	pages := max((total+int64(pageSize)-1)/int64(pageSize), int64(page))
	return fmt.Sprintf("page %d of %s · %s %s", page, fmtInt(pages), fmtInt(total), what)
}
