package ui

import (
	"context"
	"fmt"
	"image/color"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// hostColumn is one column of the hosts table (U1): its title, width and
// the value it sorts by (nil: by host name).
type hostColumn struct {
	title string
	width float32
	key   func(s *engine.HostSnapshot, counts map[string]engine.Counts) float64
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
	colJobs
	colLast
)

var hostColumns = []hostColumn{
	colAction: {"", 90, func(s *engine.HostSnapshot, _ map[string]engine.Counts) float64 {
		return b2f(s.Paused)
	}},
	colHost: {"Host", 190, nil},
	colState: {"State", 170, func(s *engine.HostSnapshot, _ map[string]engine.Counts) float64 {
		return float64(stateRank(s))
	}},
	colTokens: {"Tokens", 100, func(s *engine.HostSnapshot, _ map[string]engine.Counts) float64 {
		return s.Tokens
	}},
	colRate: {"Rate", 76, func(s *engine.HostSnapshot, _ map[string]engine.Counts) float64 { return s.RatePerMin }},
	colBackoff: {"Backoff", 120, func(s *engine.HostSnapshot, _ map[string]engine.Counts) float64 {
		return float64(s.Level)*1e12 + float64(s.GateIn)
	}},
	colBreaker: {"Breaker", 175, func(s *engine.HostSnapshot, _ map[string]engine.Counts) float64 {
		return float64(breakerRank(s.Breaker))*1e12 + float64(s.Failures)
	}},
	colInflight: {"In flight", 70, func(s *engine.HostSnapshot, _ map[string]engine.Counts) float64 {
		return float64(s.Inflight)
	}},
	colJobs: {"Queued / done / failed", 168, func(s *engine.HostSnapshot, c map[string]engine.Counts) float64 {
		return float64(c[s.Host].Queued)
	}},
	colLast: {"Last", 50, func(s *engine.HostSnapshot, _ map[string]engine.Counts) float64 {
		return float64(s.LastStatus)
	}},
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

// hostState is the State column: a word a newcomer understands, and its
// colour.
func hostState(s *engine.HostSnapshot) (string, color.NRGBA) {
	switch stateRank(s) {
	case stOpen:
		return "breaker open", colOpen
	case stPaused:
		switch {
		case !s.Paused:
			return "paused (all)", colPaused
		case strings.HasPrefix(s.PauseReason, "Retry-After"):
			return "paused (Retry-After)", colPaused // the whole reason is in the status line
		}
		return "paused", colPaused
	case stRunning:
		return "running", colRunning
	case stHalfOpen:
		if !s.ProbeOut {
			return "half-open (next request probes)", colHalfOpen
		}
		return "probing (half-open)", colHalfOpen
	case stIdle:
		return "idle (nothing queued)", colIdle
	case stReady:
		return "ready", colRunning
	}
	return "waiting (" + waitWords(s.Waiting) + ")", colWaiting
}

// calmState reports whether a host's state is ordinary politeness that
// needs no attention: idle, or waiting for a token or spacing jitter.
func calmState(s *engine.HostSnapshot) bool {
	switch stateRank(s) {
	case stIdle:
		return true
	case stWaiting:
		return s.Waiting == engine.WaitToken || s.Waiting == engine.WaitJitter
	}
	return false
}

// waitWords says in words why a host waits (U5).
func waitWords(w engine.WaitReason) string {
	switch w {
	case engine.WaitToken:
		return "token"
	case engine.WaitGate:
		return "backoff gate"
	case engine.WaitJitter:
		return "spacing"
	case engine.WaitBreaker:
		return "breaker"
	case engine.WaitPaused:
		return "host paused"
	case engine.WaitInflightCap:
		return "in-flight cap"
	case engine.WaitGlobalCap:
		return "global cap"
	case engine.WaitRetryDelay:
		return "retry delay"
	case engine.WaitEmpty:
		return "nothing queued"
	}
	return w.String()
}

// breakerBadge is the Breaker column: state and countdown, and colour.
func breakerBadge(s *engine.HostSnapshot) (string, color.NRGBA) {
	switch s.Breaker {
	case engine.Open:
		return "open · half-open in " + fmtDur(s.HalfOpenIn), colOpen
	case engine.HalfOpen:
		if s.ProbeOut {
			return "half-open · probe out", colHalfOpen
		}
		return "half-open", colHalfOpen
	}
	if s.Failures > 0 {
		return fmt.Sprintf("closed · %d failed", s.Failures), colClosed
	}
	return "closed", colClosed
}

// backoffText is the Backoff column: level and the countdown to the gate.
func backoffText(s *engine.HostSnapshot) string {
	switch {
	case s.Level == 0 && s.GateIn <= 0:
		return "—"
	case s.GateIn <= 0:
		return "level " + strconv.Itoa(s.Level)
	}
	return fmt.Sprintf("level %d · %s", s.Level, fmtDur(s.GateIn))
}

// fmtDur shows a countdown: 4.2s, 42s, 3m12s, 2h05m.
func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
		fallthrough
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// fmtRate shows requests per minute compactly.
func fmtRate(r float64) string {
	switch {
	case r >= 100:
		return strconv.FormatFloat(r, 'f', 0, 64) + "/min"
	case r >= 1:
		return strconv.FormatFloat(r, 'g', 3, 64) + "/min"
	}
	return strconv.FormatFloat(r, 'g', 2, 64) + "/min"
}

// hostsView is the Hosts tab: the live table, the toolbar acting on the
// selected host, and that host's chart and timeline.
type hostsView struct {
	w        *Window
	table    *widget.Table
	model    hostUpdate
	bound    map[*cell]widget.TableCellID
	sort     sortSpec
	selected string

	selLabel                                                  *widget.Label
	pauseBtn, editBtn, probeBtn, resetBtn, tripBtn, followBtn *widget.Button
	chart                                                     *chart
	timeline                                                  *widget.List
	events                                                    []engine.Event
	empty                                                     *widget.Label
	content                                                   fyne.CanvasObject
}

func newHostsView(w *Window) *hostsView {
	hv := &hostsView{w: w, bound: map[*cell]widget.TableCellID{}}
	hv.table = &widget.Table{
		Length:        func() (int, int) { return len(hv.model.order), len(hostColumns) },
		CreateCell:    func() fyne.CanvasObject { return newCell() },
		UpdateCell:    hv.updateCell,
		OnSelected:    hv.onSelected,
		ShowHeaderRow: true,
		CreateHeader:  func() fyne.CanvasObject { return widget.NewButton("", nil) },
		UpdateHeader:  hv.updateHeader,
	}
	hv.table.ExtendBaseWidget(hv.table)
	for i, c := range hostColumns {
		hv.table.SetColumnWidth(i, c.width)
	}
	hv.selLabel = widget.NewLabel("Select a host to act on it.")
	hv.selLabel.Truncation = fyne.TextTruncateEllipsis
	hv.pauseBtn = &widget.Button{Text: "Pause", Icon: theme.MediaPauseIcon(), OnTapped: hv.onPause}
	hv.editBtn = &widget.Button{Text: "Edit…", Icon: theme.SettingsIcon(), OnTapped: hv.onEdit}
	hv.followBtn = &widget.Button{Text: "Use defaults", OnTapped: hv.onFollowDefaults}
	hv.probeBtn = &widget.Button{Text: "Probe now", OnTapped: func() { hv.act(hv.w.eng.ProbeNow) }}
	hv.resetBtn = &widget.Button{Text: "Reset breaker", OnTapped: func() { hv.act(hv.w.eng.ResetBreaker) }}
	hv.tripBtn = &widget.Button{Text: "Trip breaker", OnTapped: func() { hv.act(hv.w.eng.TripBreaker) }}
	for _, b := range []*widget.Button{hv.pauseBtn, hv.editBtn, hv.followBtn, hv.probeBtn, hv.resetBtn, hv.tripBtn} {
		b.ExtendBaseWidget(b)
	}
	hv.chart = newChart()
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
	hv.setSelected("")

	bar := container.NewHBox(hv.pauseBtn, hv.editBtn, hv.followBtn, widget.NewSeparator(), hv.probeBtn, hv.resetBtn, hv.tripBtn)
	top := container.NewBorder(nil, nil, nil, bar, hv.selLabel)
	timelineBox := container.NewBorder(widget.NewLabelWithStyle("Event timeline (newest first)", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), nil, nil, nil, hv.timeline)
	chartBox := container.NewBorder(widget.NewLabelWithStyle("Last 3 minutes", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}), chartLegend(), nil, nil, hv.chart)
	details := container.NewHSplit(chartBox, timelineBox)
	details.Offset = 0.55
	// The hint sits below the table's header row, not over it.
	headerGap := widget.NewLabel("Host").MinSize().Height + 2*theme.Padding()
	hint := container.New(layout.NewCustomPaddedLayout(headerGap, 0, 0, 0), hv.empty)
	split := container.NewVSplit(container.NewStack(hv.table, hint), details)
	split.Offset = 0.68
	hv.content = container.NewBorder(top, nil, nil, nil, split)
	return hv
}

func (hv *hostsView) updateHeader(id widget.TableCellID, o fyne.CanvasObject) {
	b := o.(*widget.Button)
	col := id.Col
	if col < 0 || col >= len(hostColumns) {
		b.SetText("")
		return
	}
	b.Text = hostColumns[col].title
	b.Icon = nil
	if col == hv.sort.col {
		b.Icon = theme.MoveUpIcon()
		if hv.sort.desc {
			b.Icon = theme.MoveDownIcon()
		}
	}
	b.Importance = widget.LowImportance
	b.Alignment = widget.ButtonAlignLeading
	b.IconPlacement = widget.ButtonIconTrailingText
	b.OnTapped = func() { hv.sortBy(col) }
	b.Refresh()
}

// sortBy sorts by col; a second click on the same column reverses.
func (hv *hostsView) sortBy(col int) {
	if hv.sort.col == col {
		hv.sort.desc = !hv.sort.desc
	} else {
		hv.sort = sortSpec{col: col}
	}
	hv.w.poll.setView(hv.sort, hv.selected)
	hv.model.order = sortRows(hv.model.snap, hv.model.counts, hv.sort)
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
		name := s.Host
		if s.OwnTunables {
			name += " (custom)"
		}
		c.setText(name, false)
	case colState:
		txt, col := hostState(s)
		if calmState(s) {
			c.setSoftBadge(txt, col)
		} else {
			c.setBadge(txt, col)
		}
	case colTokens:
		frac := 0.0
		if s.Burst > 0 {
			frac = s.Tokens / float64(s.Burst)
		}
		c.setBar(frac, colRunning, strconv.FormatFloat(s.Tokens, 'f', 1, 64)+" / "+strconv.Itoa(s.Burst))
	case colRate:
		c.setText(fmtRate(s.RatePerMin), false)
	case colBackoff:
		c.setText(backoffText(s), s.Level == 0 && s.GateIn <= 0)
	case colBreaker:
		txt, col := breakerBadge(s)
		if s.Breaker == engine.Closed && s.Failures == 0 {
			c.setSoftBadge(txt, col)
		} else {
			c.setBadge(txt, col)
		}
	case colInflight:
		c.setText(strconv.Itoa(s.Inflight)+" / "+strconv.Itoa(s.MaxInflight), s.Inflight == 0)
	case colJobs:
		n := hv.model.counts[s.Host]
		c.setText(fmt.Sprintf("%d / %d / %d", n.Queued, n.Done, n.Failed), false)
	case colLast:
		if s.LastStatus == 0 {
			c.setText("—", true)
		} else {
			c.setText(strconv.Itoa(s.LastStatus), false)
		}
	}
}

// apply shows a tick's update: a full table refresh when rows moved,
// else only the cells on screen whose host changed (U2).
func (hv *hostsView) apply(u hostUpdate) {
	old := hv.model
	// Keep the sort chosen on this thread if the poller had not seen it.
	if spec, _ := hv.w.poll.getView(); spec != hv.sort {
		u.order = sortRows(u.snap, u.counts, hv.sort)
	}
	hv.model = u
	hv.empty.Hidden = len(u.snap) > 0
	if len(old.order) != len(u.order) || !slicesEqual(old.order, u.order) {
		hv.empty.Refresh()
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
		if len(u.events) > 0 {
			hv.addEvents(u.events)
		}
	}
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
	state, _ := hostState(&s)
	br, _ := breakerBadge(&s)
	text := s.Host + " — " + state + ", breaker " + br
	if rank := stateRank(&s); rank == stOpen || rank == stHalfOpen {
		text = s.Host + " — breaker " + br // the state says no more than the breaker
	}
	if s.Paused && s.PauseReason != "" {
		text += " — " + s.PauseReason
	}
	hv.selLabel.SetText(text)
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
	hv.w.showTunables("Settings of "+host, t, func(nt engine.Tunables) error {
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
