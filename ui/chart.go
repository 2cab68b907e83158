package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
)

// chart draws one host's last chartSeconds seconds, one column a second:
// a bar for the requests started (green, as sending is everywhere), a
// shaded background while the host sat behind a backoff gate (orange), had
// its breaker open (vermillion) or half-open (purple) or was paused (grey),
// and a mark at the top for throttle responses (orange) and failures
// (vermillion). Above the plot it says what the tallest bar is worth, below
// it a time axis ("−3 min … now"); neither is drawn over the bars.
type chart struct {
	widget.BaseWidget
	s series
}

func newChart() *chart {
	c := &chart{}
	c.ExtendBaseWidget(c)
	return c
}

// set shows s (nil clears the chart).
func (c *chart) set(s *series) {
	if s == nil {
		s = &series{}
	}
	c.s = *s
	c.Refresh()
}

// chartTicks are the time axis' labels, at seconds before now.
var chartTicks = []struct {
	ago  int
	text string
}{{180, "−3 min"}, {120, "−2 min"}, {60, "−1 min"}, {0, "now"}}

func (c *chart) CreateRenderer() fyne.WidgetRenderer {
	r := &chartRenderer{c: c, bg: canvas.NewRectangle(color.Transparent)}
	r.objects = append(r.objects, r.bg)
	for i := range chartSeconds {
		r.shade[i] = canvas.NewRectangle(color.Transparent)
		r.bar[i] = canvas.NewRectangle(color.Transparent)
		r.mark[i] = canvas.NewRectangle(color.Transparent)
		r.objects = append(r.objects, r.shade[i])
	}
	for i := range chartSeconds {
		r.objects = append(r.objects, r.bar[i], r.mark[i])
	}
	r.label = canvas.NewText("", theme.Color(theme.ColorNamePlaceHolder))
	r.label.TextSize = theme.CaptionTextSize()
	r.objects = append(r.objects, r.label)
	for i := range chartTicks {
		r.ticks[i] = canvas.NewText(chartTicks[i].text, theme.Color(theme.ColorNamePlaceHolder))
		r.ticks[i].TextSize = theme.CaptionTextSize()
		r.tickMarks[i] = canvas.NewRectangle(theme.Color(theme.ColorNamePlaceHolder))
		r.objects = append(r.objects, r.ticks[i], r.tickMarks[i])
	}
	return r
}

type chartRenderer struct {
	c         *chart
	bg        *canvas.Rectangle
	shade     [chartSeconds]*canvas.Rectangle
	bar       [chartSeconds]*canvas.Rectangle
	mark      [chartSeconds]*canvas.Rectangle
	label     *canvas.Text
	ticks     [4]*canvas.Text
	tickMarks [4]*canvas.Rectangle
	objects   []fyne.CanvasObject
}

func withAlpha(c color.NRGBA, a uint8) color.NRGBA { c.A = a; return c }

func (r *chartRenderer) Layout(size fyne.Size) {
	s := &r.c.s
	capSize := theme.CaptionTextSize()
	textH := fyne.MeasureText("0", capSize, fyne.TextStyle{}).Height
	top := textH + 2    // the peak label's strip
	bottom := textH + 4 // the time axis' strip
	plotH := max(size.Height-top-bottom, 10)
	r.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
	r.bg.Move(fyne.NewPos(0, top))
	r.bg.Resize(fyne.NewSize(size.Width, plotH))
	peak := uint16(1)
	for _, b := range s.b {
		peak = max(peak, b.started)
	}
	w := size.Width / chartSeconds
	markH := float32(6)
	barH := plotH - markH - 2
	for i, b := range s.b {
		x := float32(i) * w
		sh := r.shade[i]
		switch {
		case b.flags&flagOpen != 0:
			sh.FillColor = withAlpha(paintFailing, 0x70)
		case b.flags&flagHalfOpen != 0:
			sh.FillColor = withAlpha(paintProbing, 0x70)
		case b.flags&flagPaused != 0:
			sh.FillColor = withAlpha(paintPaused, 0x60)
		case b.flags&flagGate != 0:
			sh.FillColor = withAlpha(paintBackoff, 0x50)
		default:
			sh.FillColor = color.Transparent
		}
		sh.Move(fyne.NewPos(x, top))
		sh.Resize(fyne.NewSize(w+0.5, plotH))

		h := barH * float32(b.started) / float32(peak)
		r.bar[i].FillColor = paintWorking
		r.bar[i].Move(fyne.NewPos(x+w*0.15, top+plotH-h))
		r.bar[i].Resize(fyne.NewSize(w*0.7, h))

		m := r.mark[i]
		switch {
		case b.failures > 0:
			m.FillColor = paintFailing
		case b.throttles > 0:
			m.FillColor = paintBackoff
		default:
			m.FillColor = color.Transparent
		}
		m.Move(fyne.NewPos(x, top))
		m.Resize(fyne.NewSize(w+0.5, markH))
	}
	r.label.Color = theme.Color(theme.ColorNamePlaceHolder)
	if s.host != "" {
		r.label.Text = "tallest bar: " + plural(int(peak), "request", "requests") + " started in a second"
	} else {
		r.label.Text = "select a host to chart its last 3 minutes"
	}
	lw := fyne.MeasureText(r.label.Text, capSize, fyne.TextStyle{}).Width
	r.label.Move(fyne.NewPos(max(size.Width-lw-2, 0), 0))
	for i, t := range chartTicks {
		x := size.Width * float32(chartSeconds-t.ago) / chartSeconds
		tw := fyne.MeasureText(t.text, capSize, fyne.TextStyle{}).Width
		lx := min(max(x-tw/2, 0), size.Width-tw)
		r.ticks[i].Color = theme.Color(theme.ColorNamePlaceHolder)
		r.ticks[i].Move(fyne.NewPos(lx, top+plotH+3))
		r.tickMarks[i].FillColor = theme.Color(theme.ColorNamePlaceHolder)
		r.tickMarks[i].Move(fyne.NewPos(min(x, size.Width-1), top+plotH))
		r.tickMarks[i].Resize(fyne.NewSize(1, 3))
	}
}

func (r *chartRenderer) MinSize() fyne.Size { return fyne.NewSize(chartSeconds, 90) }

func (r *chartRenderer) Refresh() {
	r.Layout(r.c.Size())
	canvas.Refresh(r.c)
}

func (r *chartRenderer) Objects() []fyne.CanvasObject { return r.objects }
func (r *chartRenderer) Destroy()                     {}

// chartLegend explains the chart's colours in words.
func chartLegend() fyne.CanvasObject {
	item := func(c color.NRGBA, s string) fyne.CanvasObject {
		sw := canvas.NewRectangle(c)
		sw.SetMinSize(fyne.NewSize(12, 12))
		t := canvas.NewText(s, theme.Color(theme.ColorNameForeground))
		t.TextSize = theme.CaptionTextSize()
		return container.NewHBox(container.NewCenter(sw), t)
	}
	return container.NewHBox(
		item(paintWorking, "requests started"),
		item(paintBackoff, "throttled / backing off"),
		item(paintFailing, "failure / breaker open"),
		item(paintProbing, "half-open"),
		item(paintPaused, "paused"),
	)
}
