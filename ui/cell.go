package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// The state palette is Okabe and Ito's, chosen so that the states stay
// distinguishable for colour-blind people; every state is also written out
// as text, so colour is never the only cue. Each colour means one thing in
// every tab and in the chart:
var (
	paintWorking = color.NRGBA{R: 0x00, G: 0x9E, B: 0x73, A: 0xFF} // bluish green: sending, downloading (pale: pacing)
	paintBackoff = color.NRGBA{R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF} // orange: backing off, throttled
	paintFailing = color.NRGBA{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF} // vermillion: breaker open, failed
	paintProbing = color.NRGBA{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF} // reddish purple: half-open, probing
	paintPaused  = color.NRGBA{R: 0x88, G: 0x88, B: 0x88, A: 0xFF} // grey: paused, cancelled, stopped
	paintDone    = color.NRGBA{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF} // blue: done, a good answer
	white        = color.NRGBA{R: 0xFF, G: 0xFF, B: 0xFF, A: 0xFF}
	black        = color.NRGBA{A: 0xFF}
)

// inkOn returns black or white, whichever reads better on bg.
func inkOn(bg color.NRGBA) color.Color {
	if int(bg.R)*299+int(bg.G)*587+int(bg.B)*114 > 150000 {
		return black
	}
	return white
}

// pale is c as the background of a calm badge: a state that is normal and
// needs no attention (pacing, a closed breaker).
func pale(c color.NRGBA) color.NRGBA { return color.NRGBA{R: c.R, G: c.G, B: c.B, A: 0x40} }

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
//
// Text too long for the cell is cut: at its end with "…", or in its
// middle for a URL (setURL), or replaced by a shorter wording (setTexts).
//
// A wording is one thing said several ways, longest first: the cell shows
// the longest that fits.
type cell struct {
	widget.BaseWidget
	mode     cellMode
	text     *canvas.Text
	bg       *canvas.Rectangle // badge background, or the selection tint
	track    *canvas.Rectangle // bar: the empty part
	fill     *canvas.Rectangle // bar: the filled part
	part     *canvas.Rectangle // bar: a part past the fill, paler (a token being refilled)
	frac     float32
	partFrac float32
	button   *hoverButton
	btnText  string // the button's label, dropped when the cell is too narrow for it
	selected bool
	full     string   // the text as set; text.Text is it cut to the cell's width
	alts     []string // shorter wordings of full, longest first, for when it does not fit
	middle   bool     // cut in the middle (URLs)
	align    fyne.TextAlign
}

func newCell() *cell {
	c := &cell{
		text:  canvas.NewText("", theme.Color(theme.ColorNameForeground)),
		bg:    canvas.NewRectangle(color.Transparent),
		track: canvas.NewRectangle(color.Transparent),
		fill:  canvas.NewRectangle(color.Transparent),
		part:  canvas.NewRectangle(color.Transparent),
	}
	c.button = &hoverButton{}
	c.button.ExtendBaseWidget(c.button)
	c.text.TextSize = theme.TextSize()
	c.bg.CornerRadius = 4
	c.track.CornerRadius = 3
	c.fill.CornerRadius = 3
	c.part.CornerRadius = 3
	c.ExtendBaseWidget(c)
	return c
}

// wording is one thing said several ways, longest first.
type wording []string

// say is a wording of the given forms, without the empty ones.
func say(forms ...string) wording {
	w := make(wording, 0, len(forms))
	for _, f := range forms {
		if f != "" {
			w = append(w, f)
		}
	}
	if len(w) == 0 {
		w = append(w, "")
	}
	return w
}

func (c *cell) setFull(w wording, middle bool) {
	if len(w) == 0 {
		w = wording{""}
	}
	c.full, c.alts, c.middle = w[0], w[1:], middle
	c.text.Text = c.full
}

// setText shows s as plain text in the theme's colour (dim for secondary).
func (c *cell) setText(s string, dim bool) { c.setTexts(say(s), dim) }

// setTexts is setText with shorter wordings for a narrow column.
func (c *cell) setTexts(w wording, dim bool) {
	c.mode = modeText
	c.setFull(w, false)
	// Not bold when selected: the row's tint says it, and bold text no
	// longer fitted where the plain text did.
	c.text.TextStyle = fyne.TextStyle{}
	if dim {
		c.text.Color = theme.Color(theme.ColorNamePlaceHolder)
	} else {
		c.text.Color = theme.Color(theme.ColorNameForeground)
	}
	c.align = fyne.TextAlignLeading
	c.refresh()
}

// setURL shows a URL, shortened in its middle when it does not fit, where
// URLs of one host differ least.
func (c *cell) setURL(s string) {
	c.setText(s, false)
	c.middle = true
	c.refresh()
}

// setBadge shows s on a badge of colour bg.
func (c *cell) setBadge(s string, bg color.NRGBA) { c.setBadges(say(s), bg) }

// setBadges is setBadge with shorter wordings for a narrow column; with
// several, its text is a sentence: plain and left-aligned.
func (c *cell) setBadges(w wording, bg color.NRGBA) {
	c.mode = modeBadge
	c.setFull(w, false)
	sentence := len(w) > 1
	c.text.TextStyle = fyne.TextStyle{Bold: !sentence} // a word in bold, a sentence plain
	c.text.Color = inkOn(bg)
	c.align = fyne.TextAlignCenter
	if sentence {
		c.align = fyne.TextAlignLeading
	}
	c.bg.FillColor = bg
	c.refresh()
}

// setSentence shows a sentence (the hosts' State) on a badge: strong in
// colour bg when it needs attention, pale when it is ordinary.
func (c *cell) setSentence(w wording, bg color.NRGBA, strong bool) {
	if strong {
		c.setBadges(w, bg)
	} else {
		c.setSoftBadge(w, bg)
	}
	c.text.TextStyle = fyne.TextStyle{}
	c.align = fyne.TextAlignLeading
	c.refresh()
}

// setSoftBadge shows s on a pale badge of colour bg, for states that
// are normal and need no attention (ordinary pacing).
func (c *cell) setSoftBadge(w wording, bg color.NRGBA) {
	c.mode = modeBadge
	c.setFull(w, false)
	c.text.TextStyle = fyne.TextStyle{}
	c.text.Color = theme.Color(theme.ColorNameForeground)
	c.align = fyne.TextAlignCenter
	if len(w) > 1 {
		c.align = fyne.TextAlignLeading
	}
	c.bg.FillColor = pale(bg)
	c.refresh()
}

// setBar shows a bar filled to frac (0…1) in col, with s over it.
func (c *cell) setBar(frac float64, col color.NRGBA, s string) {
	c.setBar2(frac, frac, col, s)
	c.text.TextStyle = fyne.TextStyle{}
	c.refresh()
}

// setBar2 shows a bar filled solid to frac and pale on to upto: the
// tokens a host can spend, and the one it is refilling.
func (c *cell) setBar2(frac, upto float64, col color.NRGBA, s string) {
	c.mode = modeBar
	c.frac = float32(min(max(frac, 0), 1))
	c.partFrac = max(float32(min(max(upto, 0), 1)), c.frac)
	c.setFull(say(s), false)
	c.text.TextStyle = fyne.TextStyle{Monospace: true}
	c.text.Color = theme.Color(theme.ColorNameForeground)
	c.align = fyne.TextAlignCenter
	c.track.FillColor = theme.Color(theme.ColorNameInputBackground)
	c.fill.FillColor = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 0xA0}
	c.part.FillColor = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 0x38}
	c.refresh()
}

// setButton shows a button labelled s that calls tap; narrower than its
// label, it shows only its icon.
func (c *cell) setButton(s string, icon fyne.Resource, tap func()) {
	c.mode = modeButton
	c.btnText = s
	c.button.Icon = icon
	c.button.OnTapped = tap
	c.button.Importance = widget.LowImportance
	// Shown before it is refreshed: a hidden button's refresh did not take
	// its new icon, and a paused host's row came up with "Resume" and no ▶.
	c.button.Hidden = false
	c.text.Hidden = true
	c.button.Text = c.buttonLabel(c.Size().Width)
	c.button.Refresh()
	c.refresh()
}

// buttonLabel is the button's text at width: none when only the icon fits.
func (c *cell) buttonLabel(width float32) string {
	if width <= 0 || c.btnText == "" {
		return c.btnText
	}
	need := fyne.MeasureText(c.btnText, theme.TextSize(), fyne.TextStyle{Bold: true}).Width +
		theme.IconInlineSize() + 2*theme.InnerPadding() + theme.Padding()
	if need > width {
		return ""
	}
	return c.btnText
}

func (c *cell) refresh() {
	c.text.Refresh()
	c.Refresh()
}

func (c *cell) CreateRenderer() fyne.WidgetRenderer {
	return &cellRenderer{c: c, objects: []fyne.CanvasObject{c.bg, c.track, c.part, c.fill, c.text, c.button}}
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
	c.part.Hidden = c.mode != modeBar || c.partFrac <= c.frac
	c.text.Hidden = c.mode == modeButton
	c.button.Hidden = c.mode != modeButton
	c.text.Alignment = c.align
	textX, textW := pad, size.Width-2*pad
	switch c.mode {
	case modeBadge:
		c.bg.Move(fyne.NewPos(0, pad/2))
		c.bg.Resize(fyne.NewSize(size.Width, size.Height-pad))
		if c.align == fyne.TextAlignLeading {
			textX, textW = 2*pad, size.Width-4*pad
		}
	case modeBar:
		c.track.Move(fyne.NewPos(0, pad))
		c.track.Resize(fyne.NewSize(size.Width, size.Height-2*pad))
		c.fill.Move(fyne.NewPos(0, pad))
		c.fill.Resize(fyne.NewSize(size.Width*c.frac, size.Height-2*pad))
		c.part.Move(fyne.NewPos(0, pad))
		c.part.Resize(fyne.NewSize(size.Width*c.partFrac, size.Height-2*pad))
	case modeButton:
		c.button.Move(fyne.NewPos(0, 0))
		c.button.Resize(size)
		if t := c.buttonLabel(size.Width); t != c.button.Text {
			c.button.Text = t
			c.button.Refresh()
		}
	}
	if c.mode != modeButton {
		c.text.Move(fyne.NewPos(textX, 0))
		c.text.Resize(fyne.NewSize(textW, size.Height))
		c.text.Text = c.fit(textW)
	}
	if c.selected && c.mode != modeBadge {
		c.bg.FillColor = theme.Color(theme.ColorNameSelection)
		c.bg.Move(fyne.NewPos(0, 0))
		c.bg.Resize(size)
	}
}

// fit is the cell's text as it fits width: whole, in its shorter wording,
// or cut (in the middle for a URL, else at the end).
func (c *cell) fit(width float32) string {
	size, style := c.text.TextSize, c.text.TextStyle
	fits := func(s string) bool { return fyne.MeasureText(s, size, style).Width <= width }
	if width <= 0 || fits(c.full) {
		return c.full
	}
	s := c.full
	for _, a := range c.alts {
		s = a
		if fits(s) {
			return s
		}
	}
	if c.middle {
		return shortenMiddle(s, fits)
	}
	return fitText(s, width, size, style)
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

// hoverButton is a button that says when the pointer is over it, so that
// a table whose rows re-sort live can hold still under the pointer (a row's
// Pause button must not slide away to another host as it is clicked).
type hoverButton struct {
	widget.Button
	onHover func(in bool)
}

func (b *hoverButton) MouseIn(e *desktop.MouseEvent) {
	if b.onHover != nil {
		b.onHover(true)
	}
	b.Button.MouseIn(e)
}

func (b *hoverButton) MouseOut() {
	if b.onHover != nil {
		b.onHover(false)
	}
	b.Button.MouseOut()
}
