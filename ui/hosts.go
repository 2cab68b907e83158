package ui

import (
	"context"
	"fmt"
	"image/color"
	"strconv"
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

// resortEvery is the least time between two re-orderings of the hosts
// table while its values change live: rows that swapped places four times
// a second could not be read, nor clicked. While the pointer is over the
// table the order does not change at all.
const resortEvery = 2 * time.Second

// hostKey is a hosts table column's sort key (nil: by host name).
type hostKey func(s *engine.HostSnapshot, f figures) float64

// figures are what the hosts table shows beside the snapshots, read from
// the database and the engine every second: each host's job counts and
// robots.txt.
type figures struct {
	counts map[string]engine.Counts
	robots map[string]engine.RobotsView
}

// Column indexes of the hosts table.
const (
	colAction = iota
	colHost
	colState
	colTokens
	colRate
	colBackoff
	colBreaker
	colInflight
	colQueued
	colDone
	colFailed
	colLast
	colRobots // shown only while a crawl has needed some host's robots.txt
)

// hostColumns are the hosts table's columns (U1); the State column says
// in words what the host does and takes the spare width.
var hostColumns = []column{
	colAction:   {width: 44, min: 40}, // a ⏸ or ▶ button; the toolbar above says it in words
	colHost:     {title: "Host", width: 150, min: 90},
	colState:    {title: "State", width: 300, min: 176, grow: 1},
	colTokens:   {title: "Tokens", width: 70, min: 56},
	colRate:     {title: "Rate", width: 64, min: 58},
	colBackoff:  {title: "Backoff", short: "Level", width: 80, min: 60},
	colBreaker:  {title: "Breaker", width: 130, min: 96},
	colInflight: {title: "In flight", short: "Active", width: 66, min: 56},
	colQueued:   {title: "Queued", width: 64, min: 56},
	colDone:     {title: "Done", width: 54, min: 46},
	colFailed:   {title: "Failed", width: 58, min: 50},
	colLast:     {title: "Last", width: 46, min: 40},
	colRobots:   {title: "Robots", width: 150, min: 64},
}

var hostKeys = []hostKey{
	colAction: func(s *engine.HostSnapshot, _ figures) float64 { return b2f(s.Paused) },
	colHost:   nil,
	colState:  func(s *engine.HostSnapshot, _ figures) float64 { return float64(stateRank(s)) },
	colTokens: func(s *engine.HostSnapshot, _ figures) float64 { return s.Tokens },
	colRate:   func(s *engine.HostSnapshot, _ figures) float64 { return s.RatePerMin },
	colBackoff: func(s *engine.HostSnapshot, _ figures) float64 {
		return float64(s.Level)*1e12 + float64(s.GateIn)
	},
	colBreaker: func(s *engine.HostSnapshot, _ figures) float64 {
		return float64(breakerRank(s.Breaker))*1e12 + float64(s.Failures)
	},
	colRobots: func(s *engine.HostSnapshot, f figures) float64 {
		v, ok := f.robots[s.Host]
		return robotsRank(v, ok)
	},
	colInflight: func(s *engine.HostSnapshot, _ figures) float64 { return float64(s.Inflight) },
	colQueued:   func(s *engine.HostSnapshot, f figures) float64 { return float64(f.counts[s.Host].Queued) },
	colDone:     func(s *engine.HostSnapshot, f figures) float64 { return float64(f.counts[s.Host].Done) },
	colFailed:   func(s *engine.HostSnapshot, f figures) float64 { return float64(f.counts[s.Host].Failed) },
	colLast:     func(s *engine.HostSnapshot, _ figures) float64 { return float64(s.LastStatus) },
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func breakerRank(b engine.BreakerState) int {
	switch b {
	case engine.Open:
		return 2
	case engine.HalfOpen:
		return 1
	}
	return 0
}

// Host states, in the order the State column sorts them.
const (
	stIdle = iota
	stRunning
	stReady
	stWaiting
	stPaused
	stHalfOpen
	stOpen
)

func stateRank(s *engine.HostSnapshot) int {
	switch {
	case s.Breaker == engine.Open:
		return stOpen
	case s.Paused || s.Waiting == engine.WaitPaused:
		return stPaused
	case s.Inflight > 0:
		return stRunning
	case s.Breaker == engine.HalfOpen:
		return stHalfOpen
	case s.Waiting == engine.WaitEmpty:
		return stIdle
	case s.Waiting == engine.WaitReady:
		return stReady
	}
	return stWaiting
}

// stateLook is the State column's colour, and whether the state needs
// attention (a strong badge) or is ordinary politeness (a pale one: pacing,
// waiting for a token or its spacing). An idle host has no badge.
func stateLook(s *engine.HostSnapshot) (c color.NRGBA, strong, badge bool) {
	switch stateRank(s) {
	case stOpen:
		return paintFailing, true, true
	case stPaused:
		return paintPaused, true, true
	case stRunning:
		return paintWorking, true, true
	case stHalfOpen:
		return paintProbing, true, true
	case stIdle:
		return paintPaused, false, false
	case stReady:
		return paintWorking, false, true
	}
	switch s.Waiting {
	case engine.WaitGate:
		return paintBackoff, true, true
	case engine.WaitRetryDelay:
		return paintFailing, false, true
	case engine.WaitBreaker:
		return paintProbing, true, true
	}
	return paintWorking, false, true
}

// breakerText is the Breaker column: state and countdown (long and short),
// its colour, and whether it is shown as a badge: a closed breaker is the
// ordinary case and is plain text, however many failures it counts.
func breakerText(s *engine.HostSnapshot) (w wording, c color.NRGBA, badge bool) {
	switch s.Breaker {
	case engine.Open:
		if s.HalfOpenIn <= 0 {
			return say("open · probe due", "open"), paintFailing, true
		}
		in := fmtDur(s.HalfOpenIn)
		return say("open · probe in "+in, "open · "+in), paintFailing, true
	case engine.HalfOpen:
		if s.ProbeOut {
			return say("half-open · probing", "probing"), paintProbing, true
		}
		return say("half-open"), paintProbing, true
	}
	if s.Failures > 0 {
		n := strconv.Itoa(s.Failures)
		return say("closed · "+n+" failed", "closed, "+n+" failed", "closed · "+n), paintPaused, false
	}
	return say("closed"), paintPaused, false
}

// backoffText is the Backoff column: the level, and the countdown to the
// gate when the State column does not say it already (U1).
func backoffText(s *engine.HostSnapshot) wording {
	gateSaid := s.Waiting == engine.WaitGate && stateRank(s) == stWaiting
	switch {
	case s.Level == 0 && (s.GateIn <= 0 || gateSaid):
		return say("—")
	case s.GateIn <= 0 || gateSaid:
		return say("level "+strconv.Itoa(s.Level), strconv.Itoa(s.Level))
	}
	return say(fmt.Sprintf("level %d · %s", s.Level, fmtDur(s.GateIn)), fmt.Sprintf("%d · %s", s.Level, fmtDur(s.GateIn)))
}

// hostsView is the Hosts tab: the live table, the toolbar acting on the
// selected host, and that host's chart and timeline.
type hostsView struct {
	w        *Window
	table    *fitTable
	model    hostUpdate
	bound    map[*cell]widget.TableCellID
	sort     sortSpec
	selected string
	sortedAt time.Time // when the rows were last re-ordered
	resort   bool      // re-order with the next update, whatever the pointer does
	inTable  bool      // the pointer is over the table
	inButton bool      // the pointer is over a row's button

	selLabel                                                  *widget.Label
	pauseBtn, editBtn, probeBtn, resetBtn, tripBtn, followBtn *widget.Button
	helpBtn                                                   *widget.Button
	chart                                                     *chart
	robots                                                    *widget.Label // the selected host's robots.txt
	skips                                                     skips
	timeline                                                  *widget.List
	events                                                    []engine.Event
	empty                                                     *widget.Label
	emptyBox                                                  *fyne.Container
	details                                                   fyne.CanvasObject
	content                                                   fyne.CanvasObject
}

func newHostsView(w *Window) *hostsView {
	hv := &hostsView{w: w, bound: map[*cell]widget.TableCellID{}}
	hv.table = newFitTable(hostColumns, func() int { return len(hv.model.order) },
		func() fyne.CanvasObject {
			c := newCell()
			c.button.onHover = func(in bool) { hv.inButton = in }
			return c
		}, hv.updateCell)
	hv.table.OnSelected = hv.onSelected
	hv.table.onSort = hv.sortBy
	hv.table.showColumns(colRobots) // until a crawl needs a robots.txt
	hv.table.onHover = func(in bool) { hv.inTable = in }
	hv.selLabel = widget.NewLabel("Select a host to act on it.")
	hv.selLabel.Truncation = fyne.TextTruncateEllipsis
	hv.pauseBtn = &widget.Button{Text: "Pause", Icon: theme.MediaPauseIcon(), OnTapped: hv.onPause}
	hv.editBtn = &widget.Button{Text: "Edit…", Icon: theme.SettingsIcon(), OnTapped: hv.onEdit}
	hv.followBtn = &widget.Button{Text: "Use defaults", OnTapped: hv.onFollowDefaults}
	hv.probeBtn = &widget.Button{Text: "Probe now", OnTapped: func() { hv.act(hv.w.eng.ProbeNow) }}
	hv.resetBtn = &widget.Button{Text: "Reset breaker", OnTapped: func() { hv.act(hv.w.eng.ResetBreaker) }}
	hv.tripBtn = &widget.Button{Text: "Trip breaker", OnTapped: func() { hv.act(hv.w.eng.TripBreaker) }}
	hv.helpBtn = &widget.Button{Text: "What the columns mean", Icon: theme.InfoIcon(), OnTapped: hv.showHelp,
		Importance: widget.LowImportance}
	for _, b := range []*widget.Button{hv.pauseBtn, hv.editBtn, hv.followBtn, hv.probeBtn, hv.resetBtn, hv.tripBtn, hv.helpBtn} {
		b.ExtendBaseWidget(b)
	}
	hv.chart = newChart()
	hv.robots = widget.NewLabel("")
	hv.robots.Truncation = fyne.TextTruncateEllipsis
	hv.robots.Hide()
	hv.timeline = widget.NewList(func() int { return len(hv.events) },
		func() fyne.CanvasObject {
			l := widget.NewLabel("")
			l.Truncation = fyne.TextTruncateEllipsis
			return l
		},
		func(i widget.ListItemID, o fyne.CanvasObject) {
			l := o.(*widget.Label)
			if i >= len(hv.events) {
				l.SetText("")
				return
			}
			e := hv.events[i]
			txt := e.At.Local().Format("15:04:05") + "  " + e.Kind.String()
			if e.Detail != "" {
				txt += " — " + e.Detail
			}
			l.SetText(txt)
		})
	hv.empty = widget.NewLabel("No hosts yet. Add URLs (button above, Ctrl+V, or drop a text file) — one row per host appears here.")
	hv.empty.Alignment = fyne.TextAlignCenter
	hv.empty.Wrapping = fyne.TextWrapWord
	// The hint sits below the table's header row, on the window's
	// background so that the column lines do not run through it.
	headerGap := newHeaderCell().MinSize().Height + theme.Padding()
	hv.emptyBox = container.New(layout.NewCustomPaddedLayout(headerGap, 0, 0, 0),
		container.NewStack(canvas.NewRectangle(theme.Color(theme.ColorNameBackground)),
			container.New(layout.NewCustomPaddedLayout(40, 0, 40, 40), container.NewVBox(hv.empty))))
	hv.setSelected("")

	bar := container.NewHBox(hv.pauseBtn, hv.editBtn, hv.followBtn, widget.NewSeparator(), hv.probeBtn, hv.resetBtn, hv.tripBtn)
	top := container.NewBorder(nil, nil, nil, bar, hv.selLabel)
	legend := container.NewBorder(nil, nil, nil, hv.helpBtn, stateLegend())
	tableBox := container.NewBorder(nil, legend, nil, nil, container.NewStack(hv.table, hv.emptyBox))
	timelineBox := container.NewBorder(widget.NewLabelWithStyle("Event timeline (newest first)", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), nil, nil, nil, hv.timeline)
	chartBox := container.NewBorder(widget.NewLabelWithStyle("Last 3 minutes", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), chartLegend(), nil, nil, hv.chart)
	split := container.NewHSplit(chartBox, timelineBox)
	split.Offset = 0.55
	hv.details = container.NewBorder(hv.robots, nil, nil, nil, split)
	hv.content = container.NewBorder(top, nil, nil, nil,
		container.New(&tableFirst{rows: func() int { return len(hv.model.order) }}, tableBox, hv.details))
	return hv
}

// tableFirst lays the hosts table over the selected host's details and
// gives the table priority: the details take about a third of the height,
// at most 260 px, and only what is left once the table can show its header,
// its rows (up to a few) and its legend; in a window too low for both, only
// the table.
type tableFirst struct {
	rows func() int // the table's rows now
}

// tableLeast is the most height the hosts table keeps before the details
// get any: a header, six rows and the legend.
const tableLeast = 330

func (l *tableFirst) Layout(objs []fyne.CanvasObject, size fyne.Size) {
	table, details := objs[0], objs[1]
	rowH := newCell().MinSize().Height + theme.Padding()
	need := min(tableLeast, float32(max(l.rows(), 3)+2)*rowH+rowH*0.6)
	dh := min(size.Height*0.36, 260, size.Height-need)
	if dh < details.MinSize().Height || dh < 140 {
		dh = 0
	}
	if dh == 0 {
		details.Hide()
	} else {
		details.Show()
	}
	gap := float32(0)
	if dh > 0 {
		gap = theme.Padding()
	}
	table.Move(fyne.NewPos(0, 0))
	table.Resize(fyne.NewSize(size.Width, size.Height-dh-gap))
	details.Move(fyne.NewPos(0, size.Height-dh))
	details.Resize(fyne.NewSize(size.Width, dh))
}

func (l *tableFirst) MinSize(objs []fyne.CanvasObject) fyne.Size {
	return objs[0].MinSize()
}

// stateLegend says what the State colours mean, the same in every tab and
// in the chart.
func stateLegend() fyne.CanvasObject {
	item := func(c color.NRGBA, s string) fyne.CanvasObject {
		sw := canvas.NewRectangle(c)
		sw.CornerRadius = 3
		sw.SetMinSize(fyne.NewSize(14, 14))
		t := canvas.NewText(s, theme.Color(theme.ColorNameForeground))
		t.TextSize = theme.CaptionTextSize()
		return container.NewHBox(container.NewCenter(sw), t)
	}
	return container.NewHBox(
		item(paintWorking, "sending (pale: pacing itself)"),
		item(paintBackoff, "backing off: the server said slow down"),
		item(paintFailing, "failing: breaker open"),
		item(paintProbing, "probing"),
		item(paintPaused, "paused"),
		item(paintDone, "done"),
	)
}

// hostsHelp explains the hosts table's words to someone who has never
// read the SPEC.
const hostsHelp = `State says what the host does now and, for a wait, how long it lasts and why.

Tokens — how many requests the host may send back to back right now. One comes back at the host's rate (60/min: one a second), up to its burst (4 by default). A part of a token buys nothing, so 2.97 shows as 2.

Rate — requests per minute the host gets, at most.

Backoff — after a "busy" answer (429 or 503) Heed waits before asking that host again, and the longest wait doubles with each such answer: up to 1 s, 2 s, 4 s … at most a minute by default, drawn at random below that. The level is how many times it has doubled. The wait is never shorter than what the server asked for in its Retry-After. Four good answers in a row undo one doubling.

Breaker — after 5 failures in a row (timeouts, dropped connections, 5xx, 429) Heed stops asking the host: the breaker is open. After 30 s one request probes it (half-open): an answer closes the breaker, another failure opens it again. "closed · 1 failed" is normal: one good answer resets the count.

Robots — for a host a crawl visits: what its robots.txt says. "ok" when Heed follows its rules, "allow all" when it has none (an HTTP 404), "disallow all (HTTP 503)" while it cannot be read: then nothing else is fetched from the host until it can. Its crawl-delay, if it asks for one, is the least time between two requests. Select the host for the rules and when the file was fetched.

In flight — requests running now / the most the host gets at once.

Queued, Done, Failed — how many of the host's jobs are in each state. Last — the status of its last answer.

Every number here can be changed for one host (select it, Edit…) or for all (Settings).`

func (hv *hostsView) showHelp() {
	l := widget.NewLabel(hostsHelp)
	l.Wrapping = fyne.TextWrapWord
	s := container.NewVScroll(l)
	d := dialog.NewCustom("What the hosts table says", "Close", s, hv.w.win)
	d.Resize(fyne.NewSize(min(640, hv.w.win.Canvas().Size().Width-40), min(560, hv.w.win.Canvas().Size().Height-40)))
	d.Show()
}

// sortBy sorts by col; a second click on the same column reverses.
func (hv *hostsView) sortBy(col int) {
	if hv.sort.col == col {
		hv.sort.desc = !hv.sort.desc
	} else {
		hv.sort = sortSpec{col: col}
	}
	hv.table.sortCol, hv.table.sortDesc = hv.sort.col, hv.sort.desc
	hv.w.poll.setView(hv.sort, hv.selected)
	hv.model.order = sortRows(hv.model.snap, figures{hv.model.counts, hv.model.robots}, hv.sort)
	hv.sortedAt = hv.model.now
	hv.w.prefs.SetInt(prefSortCol, hv.sort.col)
	hv.w.prefs.SetBool(prefSortDesc, hv.sort.desc)
	hv.table.Refresh()
}

// row returns the snapshot shown in row r, or nil.
func (hv *hostsView) row(r int) *engine.HostSnapshot {
	if r < 0 || r >= len(hv.model.order) {
		return nil
	}
	return &hv.model.snap[hv.model.order[r]]
}

// updateCell fills a recycled cell for id: every property, every time.
func (hv *hostsView) updateCell(id widget.TableCellID, o fyne.CanvasObject) {
	c := o.(*cell)
	hv.bound[c] = id
	s := hv.row(id.Row)
	if s == nil {
		c.selected = false
		c.setText("", false)
		return
	}
	c.selected = s.Host == hv.selected
	switch id.Col {
	case colAction:
		host := s.Host
		if s.Paused {
			c.setButton("Resume", theme.MediaPlayIcon(), func() { hv.togglePause(host) })
		} else {
			c.setButton("Pause", theme.MediaPauseIcon(), func() { hv.togglePause(host) })
		}
	case colHost:
		name, short := hv.w.hostName(s.Host), hv.w.opt.HostLabels[s.Host]
		if s.OwnTunables {
			name += " (own settings)"
			if short != "" {
				short += " (own)"
			}
		}
		c.setTexts(say(name, short), false)
	case colState:
		w := hostSentence(s, hv.model.facts[s.Host])
		col, strong, badge := stateLook(s)
		if badge {
			c.setSentence(w, col, strong)
		} else {
			c.setTexts(w, true)
		}
	case colTokens:
		frac, upto := 0.0, 0.0
		if s.Burst > 0 {
			frac = float64(min(spendable(s.Tokens), s.Burst)) / float64(s.Burst)
			upto = s.Tokens / float64(s.Burst)
		}
		c.setBar2(frac, upto, paintWorking, tokensText(s))
	case colRate:
		c.setText(fmtRate(s.RatePerMin), false)
	case colBackoff:
		w := backoffText(s)
		c.setTexts(w, w[0] == "—")
	case colBreaker:
		w, col, badge := breakerText(s)
		if badge {
			c.setBadges(w, col)
		} else {
			c.setTexts(w, s.Failures == 0)
		}
	case colRobots:
		v, ok := hv.model.robots[s.Host]
		w := robotsShort(v, ok)
		if col, strong, badge := robotsLook(v); badge {
			c.setSentence(w, col, strong)
		} else {
			c.setTexts(w, !ok)
		}
	case colInflight:
		c.setText(strconv.Itoa(s.Inflight)+" / "+strconv.Itoa(s.MaxInflight), s.Inflight == 0)
	case colQueued:
		n := hv.model.counts[s.Host].Queued
		c.setText(fmtInt(n), n == 0)
	case colDone:
		n := hv.model.counts[s.Host].Done
		c.setText(fmtInt(n), n == 0)
	case colFailed:
		n := hv.model.counts[s.Host].Failed
		c.setText(fmtInt(n), n == 0)
	case colLast:
		if s.LastStatus == 0 {
			c.setText("—", true)
		} else {
			c.setText(strconv.Itoa(s.LastStatus), false)
		}
	}
}

// showRobots shows or hides the Robots column: a session that crawls
// nothing does not give it the width, nor does a window too narrow for it
// (the selected host's details still say it).
func (hv *hostsView) showRobots(on bool) {
	n := len(hostColumns)
	if !on || !hv.table.fits(n) {
		n = colRobots
		if hv.sort.col == colRobots {
			hv.sortBy(colHost)
		}
	}
	hv.table.showColumns(n)
}

// pointerOver reports whether the pointer is over the table or one of its
// rows' buttons.
func (hv *hostsView) pointerOver() bool { return hv.inTable || hv.inButton }

// apply shows a tick's update: a full table refresh when rows moved,
// else only the cells on screen whose host changed (U2). Rows keep their
// order while the pointer is over the table, and re-sort at most every
// resortEvery otherwise, so that a row does not slide away as it is read
// or clicked; a new host joins at the bottom meanwhile.
func (hv *hostsView) apply(u hostUpdate) {
	old := hv.model
	// Keep the sort chosen on this thread if the poller had not seen it.
	if spec, _ := hv.w.poll.getView(); spec != hv.sort {
		u.order = sortRows(u.snap, figures{u.counts, u.robots}, hv.sort)
	}
	hold := (hv.pointerOver() || u.now.Sub(hv.sortedAt) < resortEvery) && !hv.resort
	if hold && u.sameHosts && len(old.order) > 0 && len(old.order) <= len(u.snap) {
		u.order = keepOrder(old.order, len(u.snap))
	} else {
		hv.sortedAt = u.now
		hv.resort = false
	}
	hv.model = u
	hv.showRobots(len(u.robots) > 0)
	hv.emptyBox.Hidden = len(u.snap) > 0
	if len(old.order) != len(u.order) || !slicesEqual(old.order, u.order) {
		hv.emptyBox.Refresh()
		hv.table.Refresh()
	} else {
		for c, id := range hv.bound {
			if id.Row < len(u.order) && id.Col >= 0 && u.changed[u.order[id.Row]] {
				hv.updateCell(id, c)
			}
		}
	}
	if u.series != nil && u.series.host == hv.selected {
		hv.chart.set(u.series)
	}
	if hv.selected != "" {
		hv.updateToolbar()
		hv.updateRobots()
		if len(u.events) > 0 {
			hv.addEvents(u.events)
		}
	}
}

// keepOrder is the previous order, with the rows of hosts added since at
// its end.
func keepOrder(old []int32, n int) []int32 {
	out := make([]int32, len(old), n)
	copy(out, old)
	for i := len(old); i < n; i++ {
		out = append(out, int32(i))
	}
	return out
}

func slicesEqual(a, b []int32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (hv *hostsView) onSelected(id widget.TableCellID) {
	s := hv.row(id.Row)
	hv.table.UnselectAll() // rows move as values change: the selection follows the host, drawn by the cells
	if s == nil || id.Col == colAction {
		return
	}
	hv.setSelected(s.Host)
}

// setSelected makes host the one the toolbar, chart and timeline show.
func (hv *hostsView) setSelected(host string) {
	hv.selected = host
	hv.w.poll.setView(hv.sort, host)
	hv.events = nil
	hv.timeline.Refresh()
	hv.chart.set(&series{host: host})
	hv.updateToolbar()
	hv.updateRobots()
	hv.table.Refresh()
	if host != "" {
		hv.loadEvents()
	}
}

// selectedSnap is the current snapshot of the selected host.
func (hv *hostsView) selectedSnap() (engine.HostSnapshot, bool) {
	if hv.selected == "" || hv.w.eng == nil {
		return engine.HostSnapshot{}, false
	}
	return hv.w.eng.Core().HostSnapshot(hv.selected)
}

func (hv *hostsView) updateToolbar() {
	s, ok := hv.selectedSnap()
	btns := []*widget.Button{hv.pauseBtn, hv.editBtn, hv.followBtn, hv.probeBtn, hv.resetBtn, hv.tripBtn}
	if !ok {
		hv.selLabel.SetText("Select a host to pause it, edit its settings or see its timeline.")
		for _, b := range btns {
			b.Disable()
		}
		return
	}
	for _, b := range btns {
		b.Enable()
	}
	if s.Paused {
		hv.pauseBtn.SetText("Resume")
		hv.pauseBtn.SetIcon(theme.MediaPlayIcon())
	} else {
		hv.pauseBtn.SetText("Pause")
		hv.pauseBtn.SetIcon(theme.MediaPauseIcon())
	}
	if !s.OwnTunables {
		hv.followBtn.Disable()
	}
	// Each breaker control only where it does something (B5).
	if s.Breaker != engine.Open {
		hv.probeBtn.Disable()
	}
	if s.Breaker == engine.Closed {
		hv.resetBtn.Disable()
	}
	if s.Breaker == engine.Open {
		hv.tripBtn.Disable()
	}
	text := hv.w.hostName(s.Host) + " — " + hostSentence(&s, hv.model.facts[s.Host])[0]
	if rank := stateRank(&s); rank != stOpen && rank != stHalfOpen && s.Breaker != engine.Closed {
		br, _, _ := breakerText(&s)
		text += "; breaker " + br[0] // the state says no more than the breaker
	}
	if s.Quota != "" && s.Waiting != engine.WaitQuota { // the State says it when it binds
		text += "; the server's quota: " + s.Quota
	}
	hv.selLabel.SetText(text)
}

// updateRobots shows the selected host's robots.txt above its chart and
// timeline, for a host a crawl has needed it of (W10).
func (hv *hostsView) updateRobots() {
	v, ok := hv.model.robots[hv.selected]
	now := hv.model.now
	if now.IsZero() {
		now = time.Now()
	}
	known := ok && hv.selected != ""
	text := robotsDetail(v, known, now)
	if n := hv.model.counts[hv.selected].Skipped; known && !hv.skips.loading &&
		(hv.skips.host != hv.selected || hv.skips.n != n) {
		hv.loadSkips(hv.selected, n)
		return // it shows what it read
	}
	if known && hv.skips.host == hv.selected && hv.skips.text != "" {
		text += " · kept out so far: " + hv.skips.text
	}
	if text != hv.robots.Text {
		hv.robots.SetText(text)
	}
	if hidden := text == ""; hidden != hv.robots.Hidden {
		hv.robots.Hidden = hidden
		if hv.details != nil {
			hv.details.Refresh()
		}
	}
}

// togglePause pauses or resumes host at once (U3, G9).
func (hv *hostsView) togglePause(host string) {
	s, ok := hv.w.eng.Core().HostSnapshot(host)
	if !ok {
		return
	}
	hv.w.command(func(ctx context.Context) error {
		if s.Paused {
			return hv.w.eng.ResumeHost(ctx, host)
		}
		return hv.w.eng.PauseHost(ctx, host, "paused from the window")
	})
}

func (hv *hostsView) onPause() {
	if hv.selected != "" {
		hv.togglePause(hv.selected)
		hv.updateToolbar()
	}
}

// act runs a breaker command on the selected host (B5); its event comes
// with the next update (addEvents).
func (hv *hostsView) act(f func(ctx context.Context, host string) error) {
	if hv.selected == "" {
		return
	}
	host := hv.selected
	hv.w.command(func(ctx context.Context) error { return f(ctx, host) })
	hv.updateToolbar()
}

func (hv *hostsView) onEdit() {
	if hv.selected == "" {
		return
	}
	host := hv.selected
	t, _ := hv.w.eng.Core().HostTunables(host)
	hv.w.showTunables("Settings of "+hv.w.hostName(host), t, func(nt engine.Tunables) error {
		if err := nt.Normalize().Validate(); err != nil {
			return err // said in the form, which stays open
		}
		hv.w.command(func(ctx context.Context) error { return hv.w.eng.SetHostTunables(ctx, host, nt) })
		return nil
	}, false)
}

func (hv *hostsView) onFollowDefaults() {
	if hv.selected == "" {
		return
	}
	host := hv.selected
	hv.w.command(func(ctx context.Context) error { return hv.w.eng.UseDefaults(ctx, host) })
	hv.updateToolbar()
}

// addEvents puts events of the selected host, as the engine reports them
// (oldest first), at the top of its timeline: at once, not when the
// database has them, which a read right after a click could miss (a pause,
// a trip by the person).
func (hv *hostsView) addEvents(evs []engine.Event) {
	top := make([]engine.Event, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- {
		top = append(top, evs[i])
	}
	hv.events = mergeEvents(top, hv.events)
	hv.timeline.Refresh()
}

// mergeEvents is top (newest first) above base, without the events of top
// that base already has: the database and the engine's report both carry
// an event for a moment after it is stored.
func mergeEvents(top, base []engine.Event) []engine.Event {
	type key struct {
		at     int64
		kind   engine.EventKind
		detail string
	}
	have := make(map[key]bool, len(base))
	for _, e := range base {
		have[key{e.At.UnixNano(), e.Kind, e.Detail}] = true
	}
	out := make([]engine.Event, 0, len(top)+len(base))
	for _, e := range top {
		if k := (key{e.At.UnixNano(), e.Kind, e.Detail}); !have[k] {
			have[k] = true
			out = append(out, e)
		}
	}
	out = append(out, base...)
	if len(out) > timelineLen {
		out = out[:timelineLen]
	}
	return out
}

// timelineLen is how many events the timeline shows.
const timelineLen = 200

// loadEvents reads the selected host's timeline off the Fyne thread.
func (hv *hostsView) loadEvents() {
	host := hv.selected
	hv.w.background(func() {
		evs, err := hv.w.eng.Reader().HostEvents(bgCtx, host, timelineLen)
		if err == nil {
			hv.w.poll.seed(evs) // the last Retry-After it sent, for its State
		}
		fyne.Do(func() {
			if hv.selected != host {
				return
			}
			if err != nil {
				evs = []engine.Event{{At: time.Now(), Detail: "cannot read the timeline: " + err.Error()}}
			}
			// Events the engine reported while the read ran stay on top.
			var newer []engine.Event
			for _, e := range hv.events {
				if len(evs) == 0 || e.At.After(evs[0].At) {
					newer = append(newer, e)
				}
			}
			hv.events = mergeEvents(newer, evs)
			hv.timeline.Refresh()
		})
	})
}
