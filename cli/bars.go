package cli

// The bars heed get draws on a terminal, with mpb: a line per download in
// flight, laid out for the terminal's width at each redraw, and a total
// line under them.

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"heed/engine"
	"heed/engine/fetch"
)

// termWriter is the terminal as mpb sees it: mpb's own cursor-up writer,
// with the size Env gives. The last column is left free, so that a line
// never ends in it: a terminal that wraps there at once would otherwise
// move every redraw down a line.
type termWriter struct {
	*cupwriter.Writer
	size func() (int, int, error)
	p    *progress // told the size found, for the lines and the number of bars between redraws
}

func (t termWriter) IsTerminal() bool { return true }

func (t termWriter) GetTermSize() (int, int, error) {
	w, h := 80, 24
	if t.size != nil {
		if tw, th, err := t.size(); err == nil && tw > 0 && th > 0 {
			w, h = tw, th
		}
	}
	w = max(w-1, 1)
	if t.p != nil {
		t.p.width.Store(int32(w))
		t.p.height.Store(int32(h))
	}
	return w, h, nil
}

// startBars starts drawing (caller holds mu).
func (p *progress) startBars() {
	p.mp = mpb.New(mpb.WithConsoleWriter(termWriter{cupwriter.New(p.env.Stdout, true), p.env.TermSize, p}),
		mpb.WithRefreshRate(200*time.Millisecond))
	p.dls = map[int64]*download{}
	p.ended = map[int64]time.Time{}
	p.line = p.totalLine(nil, 0)
	p.total, _ = p.mp.Add(0, mpb.BarFillerFunc(func(io.Writer, decor.Statistics) error { return nil }),
		mpb.BarFillerTrim(), mpb.BarPriority(math.MaxInt),
		mpb.PrependDecorators(decor.Any(func(st decor.Statistics) string {
			p.view.Lock()
			defer p.view.Unlock()
			return fit(p.line, st.AvailableWidth)
		})))
	p.live = true
}

// stopBars takes every bar away (caller holds mu) and returns the
// container to wait for, which redraws once more without them.
func (p *progress) stopBars() *mpb.Progress {
	if !p.live {
		return nil
	}
	p.live = false
	for id, d := range p.dls {
		d.bar.Abort(true)
		delete(p.dls, id)
	}
	p.total.Abort(true)
	return p.mp
}

// update brings the bars in line with the downloads in flight (caller
// holds mu): a bar for each new one, as many as the terminal has rows for,
// and none for one that ended.
func (p *progress) update(active []engine.Active) {
	now := time.Now()
	_, height := p.size()
	room := max(height-3, 1) // the total line, and a line or two of reports
	inFlight := map[int64]bool{}
	hostW := 0
	for _, a := range active {
		if at, ok := p.ended[a.JobID]; ok && !a.Started.After(at) {
			continue // ended since this snapshot was taken
		}
		inFlight[a.JobID] = true
		d := p.dls[a.JobID]
		if d != nil && !d.started.Equal(a.Started) { // its next try
			d.bar.Abort(true)
			delete(p.dls, a.JobID)
			d = nil
		}
		if d == nil {
			if len(p.dls) >= room {
				continue
			}
			d = &download{p: p, host: a.Host, url: fetch.Redact(a.URL), started: a.Started}
			bar, err := p.mp.Add(0, mpb.BarFillerFunc(d.fill), mpb.BarFillerTrim(), mpb.BarPriority(int(a.JobID)),
				mpb.PrependDecorators(decor.Any(d.hostCell)),
				mpb.AppendDecorators(decor.Any(d.pctCell), decor.Any(d.speedCell), decor.Any(d.urlCell)))
			if err != nil {
				continue
			}
			d.bar = bar
			p.dls[a.JobID] = d
		}
		hostW = max(hostW, runewidth.StringWidth(a.Host))
		p.view.Lock()
		d.bytes, d.startBytes, d.size = a.Bytes, a.StartBytes, a.Size
		p.view.Unlock()
	}
	for id, d := range p.dls {
		if !inFlight[id] {
			d.bar.Abort(true)
			delete(p.dls, id)
		}
	}
	for id, at := range p.ended {
		if now.Sub(at) > 2*time.Second {
			delete(p.ended, id)
		}
	}
	if p.counts != nil && now.Sub(p.countedAt) >= time.Second {
		p.countedAt = now
		if c, err := p.counts(); err == nil {
			p.queued = c.Queued
		}
	}
	line := p.totalLine(active, len(inFlight)-len(p.dls))
	p.view.Lock()
	p.line, p.hostW = line, min(hostW, 24)
	p.view.Unlock()
}

// totalLine sums the run up (caller holds mu): "3 done · 1 failed ·
// 12 queued · 4.5 MiB · 1.2 MiB/s · ETA 25s", or why nothing runs.
func (p *progress) totalLine(active []engine.Active, more int) string {
	now := time.Now()
	parts := []string{fmt.Sprintf("%d done", p.done)}
	if p.skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", p.skipped))
	}
	parts = append(parts, fmt.Sprintf("%d failed", p.failed))
	if p.queued > 0 {
		parts = append(parts, fmt.Sprintf("%d queued", p.queued))
	}
	if p.retried > 0 {
		parts = append(parts, retries(p.retried))
	}
	if p.throttled > 0 {
		parts = append(parts, fmt.Sprintf("%d throttled", p.throttled))
	}
	var got, left int64
	var speed float64
	sized := true
	for _, a := range active {
		got += a.Bytes
		if a.Size > 0 {
			left += max(a.Size-a.Bytes, 0)
		} else {
			sized = false
		}
		if el := now.Sub(a.Started).Seconds(); el > 0.2 {
			speed += float64(a.Bytes-a.StartBytes) / el
		}
	}
	parts = append(parts, humanBytes(p.bytes+got))
	if more > 0 {
		parts = append(parts, fmt.Sprintf("%d more in flight", more))
	}
	switch {
	case len(active) == 0 && p.waiting != "":
		parts = append(parts, "waiting  "+p.waiting)
	case len(active) == 0:
	case p.queued == 0 && sized && speed > 0:
		parts = append(parts, humanBytes(int64(speed))+"/s", "ETA "+eta(time.Duration(float64(left)/speed*float64(time.Second))))
	default:
		parts = append(parts, humanBytes(int64(speed))+"/s")
		if ended := p.done + p.failed; ended > 0 && p.queued > 0 {
			// sizes of queued files are not known: by how fast jobs end
			perJob := now.Sub(p.started) / time.Duration(ended)
			parts = append(parts, "ETA ~"+eta(perJob*time.Duration(p.queued+int64(len(active)))))
		}
	}
	return strings.Join(parts, " · ")
}

// eta is d rounded as a person reads a wait: 25s, 4m10s, 2h5m.
func eta(d time.Duration) string {
	switch {
	case d >= time.Hour:
		d = d.Round(time.Minute)
	default:
		d = d.Round(time.Second)
	}
	return shortDuration(d)
}

// download is one download's bar: "example.com ████░░░░  42%  1.2 MiB/s
// https://example.com/…/file.iso", its columns laid out for the width mpb
// gives it, the URL shortened in the middle to fit.
type download struct {
	p         *progress
	bar       *mpb.Bar
	host, url string
	started   time.Time
	// guarded by p.view
	bytes, startBytes, size int64
	lay                     layout // this redraw's, set by hostCell, the first of its cells
}

// layout is how wide each column of a download's line is (0: not shown).
type layout struct {
	host, bar, speed, url int
	pct                   bool
}

// minURL is the narrowest the URL is shortened to before columns go.
const minURL = 16

// layoutFor lays a download's line out in width columns: the URL first,
// then the percent, a bar, the host and the speed, as far as they fit.
func layoutFor(width, hostW int) layout {
	var l layout
	left := width - minURL
	take := func(n int) bool {
		if n > 0 && left >= n {
			left -= n
			return true
		}
		return false
	}
	l.pct = take(5)  // " 42%"
	if take(2 + 8) { // a space either side of the bar
		l.bar = 8
	}
	if take(hostW) {
		l.host = hostW
	}
	if take(13) { // " 1023.9 KiB/s"
		l.speed = 13
	}
	if l.bar > 0 { // the bar takes half of what is left, up to 30
		g := min(left/2, 30-l.bar)
		l.bar += g
		left -= g
	}
	l.url = minURL + left
	return l
}

func (d *download) hostCell(st decor.Statistics) string {
	d.p.view.Lock()
	defer d.p.view.Unlock()
	d.lay = layoutFor(st.AvailableWidth, d.p.hostW)
	if d.lay.host == 0 {
		return ""
	}
	return runewidth.FillRight(shorten(d.host, d.lay.host), d.lay.host)
}

func (d *download) fill(w io.Writer, st decor.Statistics) error {
	d.p.view.Lock()
	defer d.p.view.Unlock()
	n := min(d.lay.bar, st.AvailableWidth-2)
	if n <= 0 {
		return nil
	}
	full, empty := "█", "░"
	if runewidth.StringWidth(full+empty) != 2 { // where they are drawn wide
		full, empty = "#", "-"
	}
	k := 0
	if d.size > 0 {
		k = int(min(float64(d.bytes)/float64(d.size), 1) * float64(n))
	}
	_, err := io.WriteString(w, " "+strings.Repeat(full, k)+strings.Repeat(empty, n-k)+" ")
	return err
}

func (d *download) pctCell(decor.Statistics) string {
	d.p.view.Lock()
	defer d.p.view.Unlock()
	switch {
	case !d.lay.pct:
		return ""
	case d.size > 0:
		return fmt.Sprintf("%4.0f%%", min(float64(d.bytes)/float64(d.size), 1)*100)
	}
	return "    ?"
}

func (d *download) speedCell(decor.Statistics) string {
	d.p.view.Lock()
	defer d.p.view.Unlock()
	if d.lay.speed == 0 {
		return ""
	}
	s := ""
	if el := time.Since(d.started).Seconds(); el > 0.2 {
		s = humanBytes(int64(float64(d.bytes-d.startBytes)/el)) + "/s"
	}
	return fmt.Sprintf("%*s", d.lay.speed, s)
}

func (d *download) urlCell(st decor.Statistics) string {
	d.p.view.Lock()
	w := min(d.lay.url, st.AvailableWidth) - 1
	d.p.view.Unlock()
	if w <= 0 {
		return ""
	}
	return " " + shorten(d.url, w)
}

// shorten fits s in w columns by cutting its middle, where URLs and host
// names differ least: https://example.com/…/file.iso.
func shorten(s string, w int) string {
	if runewidth.StringWidth(s) <= w {
		return s
	}
	if w <= 1 {
		return runewidth.Truncate(s, w, "")
	}
	tail := (w - 1) / 2
	head := w - 1 - tail
	return runewidth.Truncate(s, head, "") + "…" + runewidth.TruncateLeft(s, runewidth.StringWidth(s)-tail, "")
}

// fit cuts s at its end to w columns.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	return runewidth.Truncate(s, w, "…")
}
