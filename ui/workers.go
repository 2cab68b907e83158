package ui

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// The Workers tab (SPEC M4): on a PostgreSQL queue shared by several heed
// worker processes, each worker with its figures, and each host with the
// worker that holds it. It reads the database every workersEvery while
// shown.

const (
	tabWorkers   = "Workers"
	workersEvery = 2 * time.Second
)

// Columns of the workers table.
const (
	wcName = iota
	wcMachine
	wcState
	wcHosts
	wcInflight
	wcRate
	wcRequests
	wcHeartbeat
)

var workerColumns = []column{
	wcName:      {title: "Worker", width: 160, min: 100, grow: 1},
	wcMachine:   {title: "Machine", width: 140, min: 80},
	wcState:     {title: "State", width: 90, min: 70},
	wcHosts:     {title: "Hosts held", short: "Hosts", width: 90, min: 60},
	wcInflight:  {title: "In flight", width: 80, min: 60},
	wcRate:      {title: "Requests/s", width: 100, min: 70},
	wcRequests:  {title: "Requests", width: 90, min: 70},
	wcHeartbeat: {title: "Last heartbeat", short: "Heartbeat", width: 130, min: 90},
}

// Columns of the fleet's hosts table.
const (
	fcHost = iota
	fcOwner
	fcLease
	fcQueued
	fcActive
	fcDone
	fcFailed
)

var fleetHostColumns = []column{
	fcHost:   {title: "Host", width: 220, min: 120, grow: 1},
	fcOwner:  {title: "Held by", width: 160, min: 90},
	fcLease:  {title: "Lease", width: 110, min: 80},
	fcQueued: {title: "Queued", width: 70, min: 56},
	fcActive: {title: "Active", width: 66, min: 56},
	fcDone:   {title: "Done", width: 66, min: 50},
	fcFailed: {title: "Failed", width: 66, min: 50},
}

// workersView is the Workers tab.
type workersView struct {
	w       *Window
	fleet   engine.FleetReader
	workers []engine.Worker
	hosts   []engine.HostState
	at      time.Time // when they were read
	err     error
	loading bool

	wt, ht  *fitTable
	summary *widget.Label
	content fyne.CanvasObject
}

// newWorkersView returns the Workers tab of a window over a fleet's
// database, nil over one machine's.
func newWorkersView(w *Window) *workersView {
	if w.eng == nil {
		return nil
	}
	fr, ok := w.eng.Reader().(engine.FleetReader)
	if !ok {
		return nil
	}
	v := &workersView{w: w, fleet: fr}
	v.wt = newFitTable(workerColumns, func() int { return len(v.workers) },
		func() fyne.CanvasObject { return newCell() }, v.workerCell)
	v.ht = newFitTable(fleetHostColumns, func() int { return len(v.hosts) },
		func() fyne.CanvasObject { return newCell() }, v.hostCell)
	v.summary = widget.NewLabel("Reading the fleet…")
	v.summary.Wrapping = fyne.TextWrapWord
	split := container.NewVSplit(v.wt, v.ht)
	split.Offset = 0.4
	v.content = container.NewBorder(v.summary, nil, nil, nil, split)
	return v
}

// reload reads the workers and the hosts' owners off the Fyne thread.
func (v *workersView) reload() {
	if v == nil || v.loading {
		return
	}
	v.loading = true
	eng := v.w.eng
	v.w.background(func() {
		ws, err := v.fleet.Workers(bgCtx)
		var hosts []engine.HostState
		if err == nil {
			hosts, err = eng.Reader().Hosts(bgCtx)
		}
		now := time.Now()
		// Hosts with work or an owner first, the busiest on top.
		sort.SliceStable(hosts, func(i, j int) bool {
			a, b := hosts[i], hosts[j]
			return a.Counts.Queued+a.Counts.Active > b.Counts.Queued+b.Counts.Active
		})
		fyne.Do(func() {
			v.loading = false
			v.err = err
			if err == nil {
				v.workers, v.hosts, v.at = ws, hosts, now
			}
			v.wt.Refresh()
			v.ht.Refresh()
			v.show()
		})
	})
}

// show sums the fleet up in the line above the tables.
func (v *workersView) show() {
	if v.err != nil {
		v.summary.SetText("Cannot read the fleet: " + v.err.Error())
		return
	}
	alive, rate := 0, 0.0
	for _, w := range v.workers {
		if w.Alive {
			alive++
			rate += w.Rate
		}
	}
	held := 0
	for _, h := range v.hosts {
		if h.Owner != "" && h.LeaseUntil.After(v.at) {
			held++
		}
	}
	v.summary.SetText(fmt.Sprintf("%s alive of %d · %s held of %d · %.1f requests a second over the fleet. "+
		"Each host is run by one worker at a time; one that stops loses its hosts when their leases expire, "+
		"and another takes them over with their state.",
		plural(alive, "worker", "workers"), len(v.workers), plural(held, "host", "hosts"), len(v.hosts), rate))
}

func (v *workersView) workerCell(id widget.TableCellID, o fyne.CanvasObject) {
	c := o.(*cell)
	c.selected = false
	if id.Row < 0 || id.Row >= len(v.workers) {
		c.setText("", false)
		return
	}
	w := v.workers[id.Row]
	switch id.Col {
	case wcName:
		c.setText(w.Name, false)
	case wcMachine:
		c.setText(w.Machine, false)
	case wcState:
		switch {
		case w.Alive:
			c.setSoftBadge(say("working"), paintWorking)
		case w.Stopped:
			c.setSoftBadge(say("stopped"), paintPaused)
		default:
			c.setBadges(say("gone", "gone"), paintFailing) // no heartbeat: its leases expire
		}
	case wcHosts:
		c.setText(strconv.Itoa(w.Hosts), w.Hosts == 0)
	case wcInflight:
		c.setText(strconv.Itoa(w.Inflight), w.Inflight == 0)
	case wcRate:
		c.setText(strconv.FormatFloat(w.Rate, 'f', 1, 64), w.Rate == 0)
	case wcRequests:
		c.setText(fmtInt(w.Requests), w.Requests == 0)
	case wcHeartbeat:
		c.setText(ago(v.at.Sub(w.Heartbeat)), false)
	}
}

func (v *workersView) hostCell(id widget.TableCellID, o fyne.CanvasObject) {
	c := o.(*cell)
	c.selected = false
	if id.Row < 0 || id.Row >= len(v.hosts) {
		c.setText("", false)
		return
	}
	h := v.hosts[id.Row]
	live := h.Owner != "" && h.LeaseUntil.After(v.at)
	switch id.Col {
	case fcHost:
		c.setTexts(say(v.w.hostName(h.Host), v.w.opt.HostLabels[h.Host]), false)
	case fcOwner:
		if live {
			c.setText(h.Owner, false)
		} else {
			c.setText("nobody", true)
		}
	case fcLease:
		if live {
			c.setText("for "+ago(h.LeaseUntil.Sub(v.at)), false)
		} else {
			c.setText("—", true)
		}
	case fcQueued:
		c.setText(fmtInt(h.Counts.Queued), h.Counts.Queued == 0)
	case fcActive:
		c.setText(fmtInt(h.Counts.Active), h.Counts.Active == 0)
	case fcDone:
		c.setText(fmtInt(h.Counts.Done), h.Counts.Done == 0)
	case fcFailed:
		c.setText(fmtInt(h.Counts.Failed), h.Counts.Failed == 0)
	}
}

// ago is a duration in short words: "3 s", "2 min".
func ago(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + " min"
	}
	return strconv.Itoa(int(d.Hours())) + " h"
}
