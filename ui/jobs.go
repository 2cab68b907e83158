package ui

import (
	"context"
	"fmt"
	"image/color"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// jobsPage is how many jobs the Jobs tab shows per page; pages are read
// by key (JobQuery.BeforeID, newest first), so page 1,000 costs what page 1
// does.
const jobsPage = 200

// jobRow is one line of the Jobs tab, computed off the Fyne thread.
type jobRow struct {
	rec      engine.Job
	url      string  // rec.URL with its password masked
	progress float64 // 0…1, or -1 when unknown
	bytes    string
	speed    string
	when     string // running: time left; done: when it finished
	why      wording
}

// Columns of the Jobs tab.
const (
	jcID = iota
	jcURL
	jcHost
	jcState
	jcProgress
	jcSpeed
	jcWhen
	jcTries
	jcWhy
)

var jobColumns = []column{
	jcID:       {title: "ID", width: 50, min: 44},
	jcURL:      {title: "URL", width: 300, min: 200},
	jcHost:     {title: "Host", width: 120, min: 90},
	jcState:    {title: "State", width: 86, min: 80},
	jcProgress: {title: "Progress", width: 150, min: 120},
	jcSpeed:    {title: "Speed", width: 86, min: 76},
	jcWhen:     {title: "Left / done at", short: "Left / at", width: 114, min: 84},
	jcTries:    {title: "Tries", width: 60, min: 50},
	jcWhy:      {title: "Why waiting / result", short: "Why / result", width: 300, min: 240, grow: 1},
}

// Which job states each action moves a job from (the engine's own rules,
// engine/commands.go): only those buttons are on for the selected job.
var (
	pausableStates  = []engine.JobState{engine.JobQueued, engine.JobActive}
	resumableStates = []engine.JobState{engine.JobPaused}
	cancelStates    = []engine.JobState{engine.JobQueued, engine.JobActive, engine.JobPaused}
	retryStates     = []engine.JobState{engine.JobDone, engine.JobFailed, engine.JobCancelled, engine.JobSkipped}
)

// jobsView is the Jobs tab (U5): jobs newest first, their progress, size,
// speed and time left or when they finished, why each one waits, and the
// actions that make sense for the selected one.
type jobsView struct {
	w      *Window
	pt     *pagedTable[jobRow]
	table  *fitTable
	state  *widget.Select
	host   *widget.Entry
	pause  *widget.Button
	resume *widget.Button
	cancel *widget.Button
	retry  *widget.Button
	folder *widget.Button
	// importBtn and exportBtn read and write the queue as heed import and heed
	// export do (queuefile.go).
	importBtn, exportBtn *widget.Button
	detail               *widget.Label // the selected job's URL and why, whole
	selected             int64
	speeds               *speedCache
	content              fyne.CanvasObject
}

func newJobsView(w *Window) *jobsView {
	jv := &jobsView{w: w, speeds: &speedCache{m: map[int64]string{}}}
	jv.pt = newPagedTable(w, "jobs", jobsPage, jobColumns, func(r *jobRow) int64 { return r.rec.ID }, jv.updateCell)
	jv.pt.query = jv.query
	jv.pt.total = jv.total
	jv.pt.loaded = jv.enableActions
	jv.pt.setEmpty("No jobs yet. Add URLs (the button above, Ctrl+V, or drop a text file on the window): each URL is a job here, newest first.")
	jv.table = jv.pt.table
	jv.table.OnSelected = func(id widget.TableCellID) {
		if id.Row >= 0 && id.Row < len(jv.pt.rows) {
			jv.selected = jv.pt.rows[id.Row].rec.ID
			jv.enableActions()
		}
		// The selection is the job, drawn by updateCell on its row wherever
		// it moves; the table's own highlight would stay on a row number.
		jv.table.UnselectAll()
		jv.table.Refresh()
	}
	states := []string{"all"}
	for _, s := range engine.JobStates {
		states = append(states, string(s))
	}
	jv.state = widget.NewSelect(states, nil)
	jv.state.SetSelected("all")
	jv.state.OnChanged = func(string) { jv.pt.firstPage() }
	jv.host = widget.NewEntry()
	jv.host.SetPlaceHolder("host filter, e.g. example.com (Enter)")
	jv.host.OnSubmitted = func(string) { jv.pt.firstPage() }
	jv.pause = widget.NewButtonWithIcon("Pause", theme.MediaPauseIcon(), func() { jv.act(w.eng.PauseJobs) })
	jv.resume = widget.NewButtonWithIcon("Resume", theme.MediaPlayIcon(), func() { jv.act(w.eng.ResumeJobs) })
	jv.cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { jv.act(w.eng.CancelJobs) })
	jv.retry = widget.NewButtonWithIcon("Retry", theme.ViewRefreshIcon(), func() { jv.act(w.eng.RetryJobs) })
	jv.folder = widget.NewButtonWithIcon("Open folder", theme.FolderOpenIcon(), w.openFolder)
	filters := container.NewBorder(nil, nil, container.NewHBox(widget.NewLabel("State"), jv.state),
		jv.pt.nav(), jv.host)
	jv.importBtn = widget.NewButtonWithIcon("Import…", theme.FolderOpenIcon(), w.onImportQueue)
	jv.exportBtn = widget.NewButtonWithIcon("Export…", theme.DocumentSaveIcon(), w.onExportQueue)
	actions := container.NewHBox(jv.pause, jv.resume, jv.cancel, jv.retry, layoutSpacer(), jv.importBtn, jv.exportBtn, jv.folder)
	jv.detail = widget.NewLabel("Select a job to act on it.")
	jv.detail.Wrapping = fyne.TextWrapWord
	jv.detail.Selectable = true // to copy a URL, a reason or a SHA-256
	jv.content = container.NewBorder(container.NewVBox(filters, actions), jv.detail, nil, nil, jv.pt.box)
	jv.enableActions()
	return jv
}

// rows are the jobs on the page shown.
func (jv *jobsView) rows() []jobRow { return jv.pt.rows }

func (jv *jobsView) reload()    { jv.pt.reload() }
func (jv *jobsView) firstPage() { jv.pt.firstPage() }

// selectedRow is the selected job's row, nil when none is on the page.
func (jv *jobsView) selectedRow() *jobRow {
	for i := range jv.pt.rows {
		if jv.pt.rows[i].rec.ID == jv.selected {
			return &jv.pt.rows[i]
		}
	}
	return nil
}

// enableActions shows the selected job's URL and why it waits (or its
// result) whole, below the table, where its cells may cut them, and enables
// only the actions that apply to the job's state. A selected job the page no
// longer shows (cancelled out of the filter, another page) is selected no
// more: the actions act on the job the highlight is on (updateCell draws it
// on its row wherever it moves), never on one off screen. It neither
// selects nor scrolls the table, which reloads every second.
func (jv *jobsView) enableActions() {
	r := jv.selectedRow()
	if r == nil {
		jv.selected = 0
		jv.detail.SetText("Select a job to act on it.")
	} else if r.rec.State == engine.JobDone {
		jv.detail.SetText(fmt.Sprintf("Job %d: %s → %s, sha256 %s", r.rec.ID, r.url, r.rec.File, r.rec.SHA256) + crawlOrigin(r.rec))
	} else {
		jv.detail.SetText(fmt.Sprintf("Job %d: %s — %s", r.rec.ID, r.url, r.why[0]) + crawlOrigin(r.rec))
	}
	for _, b := range []struct {
		btn  *widget.Button
		from []engine.JobState
	}{{jv.pause, pausableStates}, {jv.resume, resumableStates}, {jv.cancel, cancelStates}, {jv.retry, retryStates}} {
		if r != nil && slices.Contains(b.from, r.rec.State) {
			b.btn.Enable()
		} else {
			b.btn.Disable()
		}
	}
}

func (jv *jobsView) updateCell(r *jobRow, col int, c *cell) {
	c.selected = r.rec.ID == jv.selected
	switch col {
	case jcID:
		c.setText(strconv.FormatInt(r.rec.ID, 10), true)
	case jcURL:
		c.setURL(r.url)
	case jcHost:
		c.setTexts(say(jv.w.hostName(r.rec.Host), jv.w.opt.HostLabels[r.rec.Host]), false)
	case jcState:
		st, col, strong := jobStateLook(r.rec.State)
		if strong {
			c.setBadge(st, col)
		} else {
			c.setSoftBadge(say(st), col)
		}
	case jcProgress:
		switch {
		case r.progress >= 0 && r.rec.State == engine.JobDone:
			c.setBar2(0, 1, paintDone, r.bytes) // whole, and pale: nothing to watch
			c.text.TextStyle = fyne.TextStyle{}
		case r.progress >= 0:
			c.setBar(r.progress, paintWorking, r.bytes)
		default:
			c.setText(r.bytes, true)
		}
	case jcSpeed:
		c.setText(r.speed, r.rec.State != engine.JobActive)
	case jcWhen:
		c.setText(r.when, r.rec.State != engine.JobActive)
	case jcTries:
		txt := strconv.Itoa(r.rec.Attempts)
		if r.rec.Throttled > 0 {
			txt += fmt.Sprintf(" (+%d throttled)", r.rec.Throttled)
		}
		c.setTexts(say(txt, fmt.Sprintf("%d+%d", r.rec.Attempts, r.rec.Throttled)), r.rec.Attempts == 0 && r.rec.Throttled == 0)
	case jcWhy:
		c.setTexts(r.why, r.rec.State == engine.JobDone)
	}
}

// jobStateLook is how a job state shows: its word, its colour, and whether
// it needs attention (a strong badge) or not (a pale one).
func jobStateLook(s engine.JobState) (string, color.NRGBA, bool) {
	switch s {
	case engine.JobActive:
		return "active", paintWorking, true
	case engine.JobQueued:
		return "queued", paintPaused, false
	case engine.JobPaused:
		return "paused", paintPaused, true
	case engine.JobFailed:
		return "failed", paintFailing, true
	case engine.JobDone:
		return "done", paintDone, false // the ordinary end: calm
	case engine.JobCancelled:
		return "cancelled", paintPaused, false
	case engine.JobSkipped:
		return "skipped", paintPaused, false // not fetched, on purpose: its Why says why
	}
	return string(s), paintPaused, false
}

// total is how many jobs the filters select, from the hosts' job counts
// (the database keeps them with every transition: no job is counted).
func (jv *jobsView) total() (int64, bool) {
	counts := jv.w.hosts.model.counts
	if counts == nil {
		return 0, false
	}
	host := strings.TrimSpace(strings.ToLower(jv.host.Text))
	state := engine.JobState(jv.state.Selected)
	var n int64
	for h, c := range counts {
		if host != "" && h != host {
			continue
		}
		if state == "" || state == "all" {
			for _, s := range engine.JobStates {
				n += c.Of(s)
			}
		} else {
			n += c.Of(state)
		}
	}
	return n, true
}

// query is the read of the page before id before, with the filters as they
// are now.
func (jv *jobsView) query(before int64) func(context.Context) ([]jobRow, error) {
	q := engine.JobQuery{Host: strings.TrimSpace(strings.ToLower(jv.host.Text)), BeforeID: before, Newest: true, Limit: jobsPage}
	if s := jv.state.Selected; s != "" && s != "all" {
		q.State = engine.JobState(s)
	}
	eng, facts, speeds := jv.w.eng, jv.w.hosts.model.facts, jv.speeds
	return func(ctx context.Context) ([]jobRow, error) {
		return loadJobRows(ctx, eng, q, time.Now(), facts, speeds)
	}
}

// speedCache keeps the speed of done jobs, read once each from their last
// history row: a done job's speed does not change.
type speedCache struct {
	mu sync.Mutex
	m  map[int64]string
}

// get returns the speed of done job id, reading it when it is not kept.
func (c *speedCache) get(ctx context.Context, r engine.Reader, id int64) string {
	c.mu.Lock()
	s, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return s
	}
	as, err := r.History(ctx, engine.HistoryQuery{JobID: id, Limit: 1})
	if err != nil {
		return ""
	}
	if len(as) == 1 && as[0].Duration > 0 && as[0].Bytes > 0 {
		s = fmtBytes(int64(float64(as[0].Bytes)/as[0].Duration.Seconds())) + "/s"
	}
	c.mu.Lock()
	if len(c.m) > 100000 {
		clear(c.m)
	}
	c.m[id] = s
	c.mu.Unlock()
	return s
}

// loadJobRows reads a page of jobs and works out progress, speed, time
// left and why each queued job waits: its own retry delay, else its host's
// reason (R4), in the words of the Hosts tab.
func loadJobRows(ctx context.Context, eng *engine.Engine, q engine.JobQuery, now time.Time,
	facts map[string]hostFacts, speeds *speedCache) ([]jobRow, error) {
	recs, err := eng.Reader().Jobs(ctx, q)
	if err != nil {
		return nil, err
	}
	active := map[int64]engine.Active{}
	for _, a := range eng.Active() {
		active[a.JobID] = a
	}
	hosts := map[string]engine.HostSnapshot{}
	rows := make([]jobRow, len(recs))
	for i, r := range recs {
		row := jobRow{rec: r, url: maskURL(r.URL), progress: -1}
		size, got := r.Size, r.Bytes
		if a, ok := active[r.ID]; ok {
			size, got = a.Size, a.Bytes
			if el := now.Sub(a.Started).Seconds(); el > 0.2 && a.Bytes > a.StartBytes {
				bps := float64(a.Bytes-a.StartBytes) / el
				row.speed = fmtBytes(int64(bps)) + "/s"
				if a.Size > 0 && bps > 0 {
					row.when = fmtDur(time.Duration(float64(a.Size-a.Bytes)/bps*float64(time.Second))) + " left"
				}
			}
		}
		switch {
		case r.State == engine.JobDone:
			size = max(r.Size, r.Bytes)
			row.progress = 1
			row.bytes = fmtBytes(size)
			row.when = fmtWhen(r.UpdatedAt, now)
			if speeds != nil {
				row.speed = speeds.get(ctx, eng.Reader(), r.ID)
			}
		case size > 0:
			row.progress = float64(got) / float64(size)
			row.bytes = fmtProgress(got, size)
		case got > 0:
			row.bytes = fmtBytes(got)
		default:
			row.bytes = "—"
		}
		switch r.State {
		case engine.JobQueued:
			row.why = queuedWhy(eng, r, now, hosts, facts)
		case engine.JobActive:
			row.why = say("downloading")
			if row.when == "" && row.speed == "" {
				row.why = say("starting")
			}
		case engine.JobPaused:
			row.why = say("paused by you")
		case engine.JobCancelled:
			row.why = say("cancelled by you"+prefixed(" — last: ", r.LastError), "cancelled by you")
		case engine.JobSkipped:
			row.why = skipWhy(r.LastError)
		case engine.JobDone:
			sum := ""
			if r.SHA256 != "" {
				sum = " · sha256 " + r.SHA256[:min(12, len(r.SHA256))] + "…"
			}
			row.why = say(r.File+sum, r.File)
		default:
			row.why = say(r.LastError)
		}
		rows[i] = row
	}
	return rows, nil
}

// queuedWhy says why a queued job waits.
func queuedWhy(eng *engine.Engine, r engine.Job, now time.Time, hosts map[string]engine.HostSnapshot,
	facts map[string]hostFacts) wording {
	last := prefixed(" — last: ", r.LastError)
	if r.NotBefore.After(now) {
		in := fmtDur(r.NotBefore.Sub(now))
		return say("next try in "+in+last, "next try in "+in)
	}
	s, ok := hosts[r.Host]
	if !ok {
		s, ok = eng.Core().HostSnapshot(r.Host)
		hosts[r.Host] = s
	}
	if !ok {
		return say("waiting its turn"+last, "waiting")
	}
	switch {
	case s.Waiting == engine.WaitReady:
		return say("next in line"+last, "next in line")
	case s.Waiting == engine.WaitEmpty:
		return say("waiting its turn"+last, "waiting")
	case stateRank(&s) == stRunning || s.Waiting == engine.WaitInflightCap:
		if s.Inflight >= s.MaxInflight {
			return say("waiting its turn: the host takes "+plural(s.MaxInflight, "request", "requests")+" at a time"+last,
				"waiting its turn", "in line")
		}
		s.Inflight = 0 // what it waits for besides the downloads running
	}
	hw := hostSentence(&s, facts[r.Host])
	out := wording{"host: " + hw[0] + last}
	for _, f := range hw {
		out = append(out, "host: "+f)
	}
	return out
}

// fmtProgress is "140.0 / 283.5 KiB", or "980.0 KiB / 1.2 MiB" across units.
func fmtProgress(got, size int64) string {
	g, s := fmtBytes(got), fmtBytes(size)
	if gi, si := strings.LastIndexByte(g, ' '), strings.LastIndexByte(s, ' '); g[gi:] == s[si:] {
		return g[:gi] + " / " + s
	}
	return g + " / " + s
}

// fmtWhen is when something finished: the time today, else the date too.
func fmtWhen(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	t, now = t.Local(), now.Local()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	if t.Year() == now.Year() {
		return t.Format("Jan 2 15:04")
	}
	return t.Format("2006-01-02")
}

// act applies a job command to the selected job, off the Fyne thread.
func (jv *jobsView) act(f func(context.Context, []int64) ([]int64, error)) {
	if jv.selected == 0 {
		return
	}
	id := jv.selected
	jv.w.background(func() {
		_, err := f(bgCtx, []int64{id})
		fyne.Do(func() {
			if err != nil {
				jv.w.showProblem("The job could not be changed", err)
			}
			jv.pt.reload()
			jv.w.refreshSoon()
		})
	})
}

// fmtBytes shows a byte count in B, KiB, MiB or GiB.
func fmtBytes(n int64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " B"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<30), 'f', 2, 64) + " GiB"
}

// skipWhy says why a crawl skipped a URL (W6), from the rule the engine
// names: "robots.txt: Disallow: /private/", "crawler trap: …".
func skipWhy(reason string) wording {
	if rule, ok := strings.CutPrefix(reason, "robots.txt: "); ok {
		return say("skipped: the site's robots.txt keeps crawlers out ("+rule+")",
			"skipped: robots.txt "+rule, "robots.txt "+rule, "robots.txt")
	}
	if rule, ok := strings.CutPrefix(reason, "crawler trap: "); ok {
		return say("skipped: a crawler trap ("+rule+")", "skipped: crawler trap", "crawler trap")
	}
	if reason == "" {
		return say("skipped")
	}
	return say("skipped: "+reason, reason)
}

// crawlOrigin is where a crawl found a job (W10), for its detail line:
// " · crawl 2, depth 3, found on http://…/books/"; "" for a URL a person
// gave.
func crawlOrigin(j engine.Job) string {
	if j.CrawlID == 0 {
		return ""
	}
	s := fmt.Sprintf(" · crawl %d, ", j.CrawlID)
	switch {
	case j.Kind == engine.KindSitemap:
		s += "a sitemap"
	case j.Depth == 0 && j.FoundOn == "":
		return s + "a seed"
	default:
		s += "depth " + strconv.Itoa(j.Depth)
	}
	if j.FoundOn != "" {
		s += ", found on " + maskURL(j.FoundOn)
	}
	return s
}
