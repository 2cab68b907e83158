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
// a bar for the requests started, a shaded background while the host sat
// behind a backoff gate (orange), had its breaker open (vermillion) or
// half-open (purple) or was paused (grey), and a mark at the top for
// throttle responses (orange) and failures (vermillion).
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
	return r
}

type chartRenderer struct {
	c       *chart
	bg      *canvas.Rectangle
	shade   [chartSeconds]*canvas.Rectangle
	bar     [chartSeconds]*canvas.Rectangle
	mark    [chartSeconds]*canvas.Rectangle
	label   *canvas.Text
	objects []fyne.CanvasObject
}

func withAlpha(c color.NRGBA, a uint8) color.NRGBA { c.A = a; return c }

func (r *chartRenderer) Layout(size fyne.Size) {
	s := &r.c.s
	r.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
	r.bg.Resize(size)
	peak := uint16(1)
	for _, b := range s.b {
		peak = max(peak, b.started)
	}
	w := size.Width / chartSeconds
	markH := float32(6)
	plotH := size.Height - markH - 2
	for i, b := range s.b {
		x := float32(i) * w
		sh := r.shade[i]
		switch {
		case b.flags&flagOpen != 0:
			sh.FillColor = withAlpha(colOpen, 0x70)
		case b.flags&flagHalfOpen != 0:
			sh.FillColor = withAlpha(colHalfOpen, 0x70)
		case b.flags&flagPaused != 0:
			sh.FillColor = withAlpha(colPaused, 0x60)
		case b.flags&flagGate != 0:
			sh.FillColor = withAlpha(colWaiting, 0x50)
		default:
			sh.FillColor = color.Transparent
		}
		sh.Move(fyne.NewPos(x, 0))
		sh.Resize(fyne.NewSize(w+0.5, size.Height))

		h := plotH * float32(b.started) / float32(peak)
		r.bar[i].FillColor = colClosed
		r.bar[i].Move(fyne.NewPos(x+w*0.15, size.Height-h))
		r.bar[i].Resize(fyne.NewSize(w*0.7, h))

		m := r.mark[i]
		switch {
		case b.failures > 0:
			m.FillColor = colOpen
		case b.throttles > 0:
			m.FillColor = colWaiting
		default:
			m.FillColor = color.Transparent
		}
		m.Move(fyne.NewPos(x, 0))
		m.Resize(fyne.NewSize(w+0.5, markH))
	}
	r.label.Color = theme.Color(theme.ColorNamePlaceHolder)
	r.label.Text = ""
	if s.host != "" {
		r.label.Text = "peak " + itoa(int(peak)) + " requests/s"
	} else {
		r.label.Text = "select a host"
	}
	r.label.Move(fyne.NewPos(4, markH))
}

func itoa(n int) string { return fmtInt(int64(n)) }

func (r *chartRenderer) MinSize() fyne.Size { return fyne.NewSize(chartSeconds, 80) }

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
		item(colClosed, "requests started"),
		item(colWaiting, "throttled / gate"),
		item(colOpen, "failure / breaker open"),
		item(colHalfOpen, "half-open"),
		item(colPaused, "paused"),
	)
}
