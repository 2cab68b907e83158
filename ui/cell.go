package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// The state palette is Okabe and Ito's, chosen so that the states stay
// distinguishable for colour-blind people; every state is also written out
// as text, so colour is never the only cue.
var (
	colRunning  = color.NRGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xFF} // bluish green
	colWaiting  = color.NRGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF} // orange
	colPaused   = color.NRGBA{R: 0x88, G: 0x88, B: 0x88, A: 0xFF} // grey
	colOpen     = color.NRGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF} // vermillion
	colHalfOpen = color.NRGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF} // reddish purple
	colClosed   = color.NRGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF} // blue
	colIdle     = color.NRGBA{R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF} // sky blue
	white       = color.NRGBA{R: 0xFF, G: 0xFF, B: 0xFF, A: 0xFF}
	black       = color.NRGBA{A: 0xFF}
)

// inkOn returns black or white, whichever reads better on bg.
func inkOn(bg color.NRGBA) color.Color {
	if int(bg.R)*299+int(bg.G)*587+int(bg.B)*114 > 150000 {
		return black
	}
	return white
}

// cellMode says which parts of a cell are visible.
type cellMode uint8

const (
	modeText   cellMode = iota // plain text
	modeBadge                  // text on a coloured rounded badge
	modeBar                    // a bar filled to a fraction, text over it
	modeButton                 // a button
)

// cell is the one template of Heed's tables: a table's CreateCell cannot
// know its column, so the template can be text, a coloured badge, a bar
// or a button, and UpdateCell picks one with set. It draws with canvas
// primitives, so updating it costs little even at 4 Hz on every row.
type cell struct {
	widget.BaseWidget
	mode     cellMode
	text     *canvas.Text
	bg       *canvas.Rectangle // badge background, or the selection tint
	track    *canvas.Rectangle // bar: the empty part
	fill     *canvas.Rectangle // bar: the filled part
	frac     float32
	button   *widget.Button
	selected bool
	full     string // the text as set; text.Text is it cut to the cell's width
}

func newCell() *cell {
	c := &cell{
		text:   canvas.NewText("", theme.Color(theme.ColorNameForeground)),
		bg:     canvas.NewRectangle(color.Transparent),
		track:  canvas.NewRectangle(color.Transparent),
		fill:   canvas.NewRectangle(color.Transparent),
		button: widget.NewButton("", nil),
	}
	c.text.TextSize = theme.TextSize()
	c.bg.CornerRadius = 4
	c.track.CornerRadius = 3
	c.fill.CornerRadius = 3
	c.ExtendBaseWidget(c)
	return c
}

// setText shows s as plain text in the theme's colour (dim for secondary).
func (c *cell) setText(s string, dim bool) {
	c.mode = modeText
	c.full, c.text.Text = s, s
	c.text.TextStyle = fyne.TextStyle{Bold: c.selected}
	if dim {
		c.text.Color = theme.Color(theme.ColorNamePlaceHolder)
	} else {
		c.text.Color = theme.Color(theme.ColorNameForeground)
	}
	c.text.Alignment = fyne.TextAlignLeading
	c.refresh()
}

// setBadge shows s on a badge of colour bg.
func (c *cell) setBadge(s string, bg color.NRGBA) {
	c.mode = modeBadge
	c.full, c.text.Text = s, s
	c.text.TextStyle = fyne.TextStyle{Bold: true}
	c.text.Color = inkOn(bg)
	c.text.Alignment = fyne.TextAlignCenter
	c.bg.FillColor = bg
	c.refresh()
}

// setSoftBadge shows s on a pale badge of colour bg, for states that
// are normal and need no attention (a closed breaker, ordinary pacing).
func (c *cell) setSoftBadge(s string, bg color.NRGBA) {
	c.mode = modeBadge
	c.full, c.text.Text = s, s
	c.text.TextStyle = fyne.TextStyle{}
	c.text.Color = theme.Color(theme.ColorNameForeground)
	c.text.Alignment = fyne.TextAlignCenter
	c.bg.FillColor = color.NRGBA{R: bg.R, G: bg.G, B: bg.B, A: 0x48}
	c.refresh()
}

// setBar shows a bar filled to frac (0…1) in col, with s over it.
func (c *cell) setBar(frac float64, col color.NRGBA, s string) {
	c.mode = modeBar
	c.frac = float32(min(max(frac, 0), 1))
	c.full, c.text.Text = s, s
	c.text.TextStyle = fyne.TextStyle{Monospace: true}
	c.text.Color = theme.Color(theme.ColorNameForeground)
	c.text.Alignment = fyne.TextAlignCenter
	c.track.FillColor = theme.Color(theme.ColorNameInputBackground)
	c.fill.FillColor = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 0xA0}
	c.refresh()
}

// setButton shows a button labelled s that calls tap.
func (c *cell) setButton(s string, icon fyne.Resource, tap func()) {
	c.mode = modeButton
	c.button.Text = s
	c.button.Icon = icon
	c.button.OnTapped = tap
	c.button.Importance = widget.LowImportance
	// Shown before it is refreshed: a hidden button's refresh did not take
	// its new icon, and a paused host's row came up with "Resume" and no ▶.
	c.button.Hidden = false
	c.text.Hidden = true
	c.button.Refresh()
	c.refresh()
}

func (c *cell) refresh() {
	c.text.Refresh()
	c.Refresh()
}

func (c *cell) CreateRenderer() fyne.WidgetRenderer {
	return &cellRenderer{c: c, objects: []fyne.CanvasObject{c.bg, c.track, c.fill, c.text, c.button}}
}

type cellRenderer struct {
	c       *cell
	objects []fyne.CanvasObject
}

func (r *cellRenderer) Layout(size fyne.Size) {
	c := r.c
	pad := float32(4)
	c.bg.Hidden = c.mode != modeBadge && !c.selected
	c.track.Hidden = c.mode != modeBar
	c.fill.Hidden = c.mode != modeBar
	c.text.Hidden = c.mode == modeButton
	c.button.Hidden = c.mode != modeButton
	switch c.mode {
	case modeBadge:
		c.bg.Move(fyne.NewPos(0, pad/2))
		c.bg.Resize(fyne.NewSize(size.Width, size.Height-pad))
		c.text.Move(fyne.NewPos(0, 0))
		c.text.Resize(size)
	case modeBar:
		c.track.Move(fyne.NewPos(0, pad))
		c.track.Resize(fyne.NewSize(size.Width, size.Height-2*pad))
		c.fill.Move(fyne.NewPos(0, pad))
		c.fill.Resize(fyne.NewSize(size.Width*c.frac, size.Height-2*pad))
		c.text.Move(fyne.NewPos(0, 0))
		c.text.Resize(size)
	case modeButton:
		c.button.Move(fyne.NewPos(0, 0))
		c.button.Resize(size)
	default:
		c.text.Move(fyne.NewPos(pad, 0))
		c.text.Resize(fyne.NewSize(size.Width-pad, size.Height))
	}
	if c.mode != modeButton {
		avail := size.Width - pad
		if c.mode != modeText {
			avail = size.Width - 2*pad
		}
		c.text.Text = fitText(c.full, avail, c.text.TextSize, c.text.TextStyle)
	}
	if c.selected && c.mode != modeBadge {
		c.bg.FillColor = theme.Color(theme.ColorNameSelection)
		c.bg.Move(fyne.NewPos(0, 0))
		c.bg.Resize(size)
	}
}

func (r *cellRenderer) MinSize() fyne.Size {
	h := r.c.text.MinSize().Height + 8
	return fyne.NewSize(40, max(h, r.c.button.MinSize().Height))
}

func (r *cellRenderer) Refresh() {
	r.Layout(r.c.Size())
	for _, o := range r.objects {
		if !o.Visible() {
			continue
		}
		if o != r.c.text && o != r.c.button {
			o.Refresh()
		}
	}
}

func (r *cellRenderer) Objects() []fyne.CanvasObject { return r.objects }
func (r *cellRenderer) Destroy()                     {}

// fitText is s, or its longest start that fits width with "…" after it:
// canvas text is not clipped, and a long URL or reason ran over the next
// column.
func fitText(s string, width, size float32, style fyne.TextStyle) string {
	if width <= 0 || fyne.MeasureText(s, size, style).Width <= width {
		return s
	}
	r := []rune(s)
	lo, hi := 0, len(r) // r[:lo]+"…" fits; r[:hi]+"…" does not, or hi is all of it
	for lo < hi-1 {
		mid := (lo + hi) / 2
		if fyne.MeasureText(string(r[:mid])+"…", size, style).Width <= width {
			lo = mid
		} else {
			hi = mid
		}
	}
	return string(r[:lo]) + "…"
}
