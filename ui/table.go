package ui

import (
	"math"
	"slices"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// column is one column of a table: its title (and a shorter one for when
// it is narrow), the width it would like, the least it can do with, and
// its share of the spare width when the window is wider than the columns
// want (the explanatory column takes it).
type column struct {
	title, short string
	width, min   float32
	grow         float32
}

// fitWidths shares avail among cols: each gets the width it would like and
// the growing ones the rest; when there is less than they would like, the
// columns that do not grow give up width first, down to their least, then
// the growing ones. Below the sum of the least widths each gets its least
// (the table scrolls sideways).
func fitWidths(cols []column, avail float32) []float32 {
	leastOf := func(c column) float32 {
		if c.min <= 0 || c.min > c.width {
			return c.width
		}
		return c.min
	}
	out := make([]float32, len(cols))
	var want, least, fixedWant, fixedLeast, growWant, growLeast, grow float32
	for i, c := range cols {
		lo := leastOf(c)
		out[i] = c.width
		want += c.width
		least += lo
		if c.grow > 0 {
			growWant += c.width
			growLeast += lo
			grow += c.grow
		} else {
			fixedWant += c.width
			fixedLeast += lo
		}
	}
	switch {
	case avail >= want:
		spare := avail - want
		for i, c := range cols {
			if grow > 0 && c.grow > 0 {
				out[i] += spare * c.grow / grow
			}
		}
	case avail >= growWant+fixedLeast:
		// The fixed columns shrink, in proportion to what they can give.
		f := (avail - growWant - fixedLeast) / max(fixedWant-fixedLeast, 1)
		for i, c := range cols {
			if c.grow == 0 {
				lo := leastOf(c)
				out[i] = lo + (c.width-lo)*f
			}
		}
	case avail >= least:
		f := (avail - fixedLeast - growLeast) / max(growWant-growLeast, 1)
		for i, c := range cols {
			lo := leastOf(c)
			if c.grow == 0 {
				out[i] = lo
			} else {
				out[i] = lo + (c.width-lo)*f
			}
		}
	default:
		for i, c := range cols {
			out[i] = leastOf(c)
		}
	}
	return out
}

// fitTable is a widget.Table whose columns stretch and shrink with it
// (fitWidths), whose header cells fit their titles and sort arrow in their
// column, and which reports whether the pointer is over it.
type fitTable struct {
	widget.Table
	all     []column // every column the table may show
	cols    []column // the columns shown: the first of all
	widths  []float32
	fitted  float32 // the width the columns were last fitted to
	onHover func(in bool)

	// sorting: the column sorted by and the direction; onSort, when set,
	// makes the headers buttons.
	sortCol  int
	sortDesc bool
	onSort   func(col int)
}

// newFitTable makes a table of cols rows() long; create and update are
// the table's cell callbacks.
func newFitTable(cols []column, rows func() int, create func() fyne.CanvasObject,
	update func(widget.TableCellID, fyne.CanvasObject)) *fitTable {
	// No column narrower than its title (its short one), so that no
	// header is cut.
	cols = slices.Clone(cols)
	for i, c := range cols {
		title := c.short
		if title == "" {
			title = c.title
		}
		need := float32(math.Ceil(float64(fyne.MeasureText(title, theme.TextSize(), fyne.TextStyle{Bold: true}).Width))) +
			2*theme.Padding() + 2
		cols[i].min = max(c.min, need)
		cols[i].width = max(c.width, cols[i].min)
	}
	t := &fitTable{all: cols, cols: cols, sortCol: -1}
	t.Length = func() (int, int) { return rows(), len(t.cols) }
	t.CreateCell = create
	t.UpdateCell = update
	t.ShowHeaderRow = true
	t.CreateHeader = func() fyne.CanvasObject { return newHeaderCell() }
	t.UpdateHeader = t.updateHeader
	t.ExtendBaseWidget(t)
	for i, c := range cols {
		t.SetColumnWidth(i, c.width)
	}
	return t
}

// Resize lays the columns out anew for the table's width.
func (t *fitTable) Resize(s fyne.Size) {
	t.Table.Resize(s)
	t.fit(s.Width)
}

// showColumns shows the first n columns, for a column that only some
// sessions need (the hosts' Robots), which comes last.
func (t *fitTable) showColumns(n int) {
	n = min(max(n, 1), len(t.all))
	if n == len(t.cols) {
		return
	}
	t.cols = t.all[:n]
	w := t.fitted
	t.fitted = 0
	t.fit(w)
	t.Refresh()
}

// fits reports whether the first n columns fit the table's width at their
// least, without scrolling sideways.
func (t *fitTable) fits(n int) bool {
	width := t.Size().Width
	need := float32(n)*theme.Padding() + 1
	for _, c := range t.all[:min(n, len(t.all))] {
		if c.min > 0 && c.min < c.width {
			need += c.min
		} else {
			need += c.width
		}
	}
	return width <= 0 || need <= width
}

// fit shares width among the columns; each column also takes the table's
// padding beside it.
func (t *fitTable) fit(width float32) {
	if width <= 0 || width == t.fitted {
		return
	}
	t.fitted = width
	pad := theme.Padding()
	t.widths = fitWidths(t.cols, width-float32(len(t.cols))*pad-1)
	for i, w := range t.widths {
		t.SetColumnWidth(i, float32(int(w)))
	}
}

func (t *fitTable) MouseIn(e *desktop.MouseEvent) {
	if t.onHover != nil {
		t.onHover(true)
	}
	t.Table.MouseIn(e)
}

func (t *fitTable) MouseMoved(e *desktop.MouseEvent) {
	if t.onHover != nil {
		t.onHover(true)
	}
	t.Table.MouseMoved(e)
}

func (t *fitTable) MouseOut() {
	if t.onHover != nil {
		t.onHover(false)
	}
	t.Table.MouseOut()
}

func (t *fitTable) updateHeader(id widget.TableCellID, o fyne.CanvasObject) {
	h := o.(*headerCell)
	if id.Col < 0 || id.Col >= len(t.cols) {
		h.set("", "", 0, nil)
		return
	}
	c := t.cols[id.Col]
	arrow := 0
	if id.Col == t.sortCol {
		arrow = 1
		if t.sortDesc {
			arrow = -1
		}
	}
	var tap func()
	if t.onSort != nil && c.title != "" {
		col := id.Col
		tap = func() { t.onSort(col) }
	}
	h.set(c.title, c.short, arrow, tap)
}

// headerCell is a column title, bold, fitted to its column with the sort
// arrow inside it (a header button's icon drew over the next title), and
// a button when the table sorts by columns.
type headerCell struct {
	widget.BaseWidget
	text    *canvas.Text
	icon    *canvas.Image
	bg      *canvas.Rectangle
	title   string
	short   string
	arrow   int // 1 up, -1 down, 0 none
	onTap   func()
	hovered bool
}

func newHeaderCell() *headerCell {
	h := &headerCell{
		text: canvas.NewText("", theme.Color(theme.ColorNameForeground)),
		icon: canvas.NewImageFromResource(nil),
		bg:   canvas.NewRectangle(theme.Color(theme.ColorNameHover)),
	}
	h.text.TextStyle = fyne.TextStyle{Bold: true}
	h.text.TextSize = theme.TextSize()
	h.bg.CornerRadius = 4
	h.bg.Hidden = true
	h.icon.FillMode = canvas.ImageFillContain
	h.ExtendBaseWidget(h)
	return h
}

func (h *headerCell) set(title, short string, arrow int, tap func()) {
	h.title, h.short, h.arrow, h.onTap = title, short, arrow, tap
	switch arrow {
	case 1:
		h.icon.Resource = theme.MoveUpIcon()
	case -1:
		h.icon.Resource = theme.MoveDownIcon()
	default:
		h.icon.Resource = nil
	}
	h.Refresh()
}

// Tapped sorts by the column.
func (h *headerCell) Tapped(*fyne.PointEvent) {
	if h.onTap != nil {
		h.onTap()
	}
}

func (h *headerCell) MouseIn(*desktop.MouseEvent) {
	h.hovered = h.onTap != nil
	h.Refresh()
}
func (h *headerCell) MouseMoved(*desktop.MouseEvent) {}
func (h *headerCell) MouseOut() {
	h.hovered = false
	h.Refresh()
}

// Cursor shows a hand over a header that sorts.
func (h *headerCell) Cursor() desktop.Cursor {
	if h.onTap != nil {
		return desktop.PointerCursor
	}
	return desktop.DefaultCursor
}

func (h *headerCell) CreateRenderer() fyne.WidgetRenderer {
	return &headerRenderer{h: h}
}

type headerRenderer struct{ h *headerCell }

func (r *headerRenderer) Layout(size fyne.Size) {
	h := r.h
	pad := theme.Padding()
	iconW := float32(0)
	if h.arrow != 0 {
		iconW = theme.IconInlineSize()
	}
	avail := size.Width - 2*pad - iconW
	title := h.title
	style, ts := h.text.TextStyle, h.text.TextSize
	if fyne.MeasureText(title, ts, style).Width > avail && h.short != "" {
		title = h.short
	}
	h.text.Text = fitText(title, avail, ts, style)
	tw := fyne.MeasureText(h.text.Text, ts, style).Width
	th := fyne.MeasureText("M", ts, style).Height
	h.text.Move(fyne.NewPos(pad, (size.Height-th)/2))
	h.text.Resize(fyne.NewSize(tw, th))
	h.icon.Hidden = h.arrow == 0
	h.icon.Move(fyne.NewPos(pad+tw+2, (size.Height-iconW)/2))
	h.icon.Resize(fyne.NewSize(iconW, iconW))
	h.bg.Hidden = !h.hovered
	h.bg.Resize(size)
}

func (r *headerRenderer) MinSize() fyne.Size {
	th := fyne.MeasureText("M", r.h.text.TextSize, r.h.text.TextStyle).Height
	return fyne.NewSize(20, th+4*theme.Padding())
}

func (r *headerRenderer) Refresh() {
	r.h.text.Color = theme.Color(theme.ColorNameForeground)
	r.Layout(r.h.Size())
	r.h.text.Refresh()
	r.h.icon.Refresh()
	r.h.bg.Refresh()
}

func (r *headerRenderer) Objects() []fyne.CanvasObject {
	return []fyne.CanvasObject{r.h.bg, r.h.text, r.h.icon}
}
func (r *headerRenderer) Destroy() {}
