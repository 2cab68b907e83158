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
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
)

// jobsPage is how many jobs the Jobs tab shows per page; pages are read
// with keyset paging (JobQuery.AfterID), so page 1,000 costs what page 1 does.
const jobsPage = 200

// jobRow is one line of the Jobs tab, computed off the Fyne thread.
type jobRow struct {
	rec      engine.Job
	progress float64 // 0…1, or -1 when unknown
	bytes    string
	speed    string
	why      string
}

var jobColumns = []struct {
	title string
	width float32
}{
	{"ID", 70}, {"URL", 330}, {"Host", 160}, {"State", 90}, {"Progress", 170}, {"Speed", 90},
	{"Attempts", 130}, {"Why waiting / result", 480},
}

// jobsView is the Jobs tab (U5): a page of jobs with their progress and
// why each one waits, and actions on the selected job.
type jobsView struct {
	w        *Window
	table    *widget.Table
	rows     []jobRow
	state    *widget.Select
	host     *widget.Entry
	pageInfo *widget.Label
	prev     *widget.Button
	next     *widget.Button
	pause    *widget.Button
	resume   *widget.Button
	cancel   *widget.Button
	retry    *widget.Button
	folder   *widget.Button
	detail   *widget.Label // the selected job's URL and why, whole
	selected int64
	pages    []int64 // AfterID of each page before the current one
	after    int64   // AfterID of the current page
	loading  bool
	content  fyne.CanvasObject
}

func newJobsView(w *Window) *jobsView {
	jv := &jobsView{w: w}
	jv.table = widget.NewTable(func() (int, int) { return len(jv.rows), len(jobColumns) },
		func() fyne.CanvasObject { return newCell() }, jv.updateCell)
	jv.table.ShowHeaderRow = true
	jv.table.CreateHeader = func() fyne.CanvasObject { return widget.NewLabel("") }
	jv.table.UpdateHeader = func(id widget.TableCellID, o fyne.CanvasObject) {
		l := o.(*widget.Label)
		l.TextStyle.Bold = true
		if id.Col >= 0 && id.Col < len(jobColumns) {
			l.SetText(jobColumns[id.Col].title)
		} else {
			l.SetText("")
		}
	}
	for i, c := range jobColumns {
		jv.table.SetColumnWidth(i, c.width)
	}
	jv.table.OnSelected = func(id widget.TableCellID) {
		if id.Row >= 0 && id.Row < len(jv.rows) {
			jv.selected = jv.rows[id.Row].rec.ID
			jv.enableActions()
		}
		// The selection is the job, drawn by updateCell on its row wherever
		// it moves; the table's own highlight would stay on a row number.
		jv.table.UnselectAll()
		jv.table.Refresh()
	}
	jv.state = widget.NewSelect([]string{"all", "queued", "active", "paused", "done", "failed", "cancelled"}, nil)
	jv.state.SetSelected("all")
	jv.state.OnChanged = func(string) { jv.firstPage() }
	jv.host = widget.NewEntry()
	jv.host.SetPlaceHolder("host filter, e.g. example.com")
	jv.host.OnSubmitted = func(string) { jv.firstPage() }
	jv.pageInfo = widget.NewLabel("")
	jv.prev = widget.NewButtonWithIcon("", theme.NavigateBackIcon(), jv.prevPage)
	jv.next = widget.NewButtonWithIcon("", theme.NavigateNextIcon(), jv.nextPage)
	jv.pause = widget.NewButtonWithIcon("Pause", theme.MediaPauseIcon(), func() { jv.act(w.eng.PauseJobs) })
	jv.resume = widget.NewButtonWithIcon("Resume", theme.MediaPlayIcon(), func() { jv.act(w.eng.ResumeJobs) })
	jv.cancel = widget.NewButtonWithIcon("Cancel", theme.CancelIcon(), func() { jv.act(w.eng.CancelJobs) })
	jv.retry = widget.NewButtonWithIcon("Retry", theme.ViewRefreshIcon(), func() { jv.act(w.eng.RetryJobs) })
	jv.folder = widget.NewButtonWithIcon("Open folder", theme.FolderOpenIcon(), w.openFolder)
	filters := container.NewBorder(nil, nil, container.NewHBox(widget.NewLabel("State"), jv.state),
		container.NewHBox(jv.prev, jv.pageInfo, jv.next), jv.host)
	actions := container.NewHBox(jv.pause, jv.resume, jv.cancel, jv.retry, layoutSpacer(), jv.folder)
	jv.detail = widget.NewLabel("")
	jv.detail.Wrapping = fyne.TextWrapWord
	jv.detail.Selectable = true // to copy a URL, a reason or a SHA-256
	jv.content = container.NewBorder(container.NewVBox(filters, actions), jv.detail, nil, nil, jv.table)
	jv.enableActions()
	return jv
}

// enableActions shows the selected job's URL and why it waits (or its
// result) whole, below the table, where its cells may cut them, and enables
// the job actions while a job is selected. A selected job the page no
// longer shows (cancelled out of the filter, another page) is selected no
// more: the actions act on the job the highlight is on (updateCell draws it
// on its row wherever it moves), never on one off screen. It neither
// selects nor scrolls the table, which reloads every second.
func (jv *jobsView) enableActions() {
	jv.detail.SetText("")
	found := false
	for i := range jv.rows {
		if r := &jv.rows[i]; r.rec.ID == jv.selected {
			found = true
			text := fmt.Sprintf("Job %d: %s — %s", r.rec.ID, r.rec.URL, r.why)
			if r.rec.State == engine.JobDone {
				text = fmt.Sprintf("Job %d: %s → %s, sha256 %s", r.rec.ID, r.rec.URL, r.rec.File, r.rec.SHA256)
			}
			jv.detail.SetText(text)
		}
	}
	if !found {
		jv.selected = 0
	}
	for _, b := range []*widget.Button{jv.pause, jv.resume, jv.cancel, jv.retry} {
		if jv.selected == 0 {
			b.Disable()
		} else {
			b.Enable()
		}
	}
}

func (jv *jobsView) updateCell(id widget.TableCellID, o fyne.CanvasObject) {
	c := o.(*cell)
	c.selected = false
	if id.Row < 0 || id.Row >= len(jv.rows) {
		c.setText("", false)
		return
	}
	r := &jv.rows[id.Row]
	c.selected = r.rec.ID == jv.selected
	switch id.Col {
	case 0:
		c.setText(strconv.FormatInt(r.rec.ID, 10), true)
	case 1:
		c.setText(r.rec.URL, false)
	case 2:
		c.setText(r.rec.Host, false)
	case 3:
		c.setBadge(string(r.rec.State), jobStateColour(r.rec.State))
	case 4:
		if r.progress >= 0 {
			c.setBar(r.progress, colRunning, r.bytes)
		} else {
			c.setText(r.bytes, true)
		}
	case 5:
		c.setText(r.speed, r.speed == "")
	case 6:
		txt := strconv.Itoa(r.rec.Attempts)
		if r.rec.Throttled > 0 {
			txt += fmt.Sprintf(" (+%d throttled)", r.rec.Throttled)
		}
		c.setText(txt, false)
	case 7:
		c.setText(r.why, r.rec.State == engine.JobDone)
	}
}

func jobStateColour(s engine.JobState) color.NRGBA {
	switch s {
	case engine.JobActive:
		return colRunning
	case engine.JobQueued:
		return colWaiting
	case engine.JobPaused, engine.JobCancelled:
		return colPaused
	case engine.JobFailed:
		return colOpen
	case engine.JobDone:
		return colClosed
	}
	return colPaused
}

func (jv *jobsView) query() engine.JobQuery {
	q := engine.JobQuery{Host: strings.TrimSpace(strings.ToLower(jv.host.Text)), AfterID: jv.after, Limit: jobsPage}
	if s := jv.state.Selected; s != "" && s != "all" {
		q.State = engine.JobState(s)
	}
	return q
}

func (jv *jobsView) firstPage() {
	jv.pages, jv.after = nil, 0
	jv.reload()
}

func (jv *jobsView) nextPage() {
	if len(jv.rows) < jobsPage {
		return
	}
	jv.pages = append(jv.pages, jv.after)
	jv.after = jv.rows[len(jv.rows)-1].rec.ID
	jv.reload()
}

func (jv *jobsView) prevPage() {
	if len(jv.pages) == 0 {
		return
	}
	jv.after = jv.pages[len(jv.pages)-1]
	jv.pages = jv.pages[:len(jv.pages)-1]
	jv.reload()
}

// reload reads the current page off the Fyne thread.
func (jv *jobsView) reload() {
	if jv.loading || jv.w.eng == nil {
		return
	}
	jv.loading = true
	q := jv.query()
	page := len(jv.pages) + 1
	eng := jv.w.eng
	jv.w.background(func() {
		rows, err := loadJobRows(bgCtx, eng, q, time.Now())
		fyne.Do(func() {
			jv.loading = false
			if err != nil {
				jv.pageInfo.SetText("cannot read jobs: " + err.Error())
				return
			}
			jv.rows = rows
			jv.enableActions()
			jv.pageInfo.SetText(pageText(page, len(jv.rows), "jobs"))
			jv.table.Refresh()
		})
	})
}

// loadJobRows reads a page of jobs and works out progress, speed and why
// each queued job waits: its own retry delay, else its host's reason (R4).
func loadJobRows(ctx context.Context, eng *engine.Engine, q engine.JobQuery, now time.Time) ([]jobRow, error) {
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
		row := jobRow{rec: r, progress: -1}
		size, got := r.Size, r.Bytes
		if a, ok := active[r.ID]; ok {
			size, got = a.Size, a.Bytes
			if el := now.Sub(a.Started).Seconds(); el > 0.2 {
				row.speed = fmtBytes(int64(float64(a.Bytes-a.StartBytes)/el)) + "/s"
			}
		}
		if r.State == engine.JobDone {
			size, got = max(r.Size, r.Bytes), r.Bytes
			if size <= 0 {
				size, got = 1, 1
			}
		}
		switch {
		case size > 0:
			row.progress = float64(got) / float64(size)
			row.bytes = fmtBytes(got) + " / " + fmtBytes(size)
		case got > 0:
			row.bytes = fmtBytes(got)
		default:
			row.bytes = "—"
		}
		if r.State == engine.JobDone {
			row.bytes = "done"
		}
		switch r.State {
		case engine.JobQueued:
			if r.NotBefore.After(now) {
				row.why = "retry delay · " + fmtDur(r.NotBefore.Sub(now))
				break
			}
			s, ok := hosts[r.Host]
			if !ok {
				s, ok = eng.Core().HostSnapshot(r.Host)
				hosts[r.Host] = s
			}
			switch {
			case !ok:
				row.why = "waiting"
			case s.Waiting == engine.WaitGate:
				row.why = "host's backoff gate · " + fmtDur(s.GateIn)
			case s.Waiting == engine.WaitBreaker && s.Breaker == engine.Open:
				row.why = "host's breaker is open · half-open in " + fmtDur(s.HalfOpenIn)
			case s.Waiting == engine.WaitReady:
				row.why = "next in line"
			default:
				row.why = "host: " + waitWords(s.Waiting)
			}
			if r.LastError != "" {
				row.why += " — last: " + r.LastError
			}
		case engine.JobActive:
			row.why = "downloading"
		case engine.JobPaused:
			row.why = "paused by you"
		case engine.JobDone:
			row.why = r.File
			if r.SHA256 != "" {
				row.why += " · sha256 " + r.SHA256[:min(12, len(r.SHA256))] + "…"
			}
		default:
			row.why = r.LastError
		}
		rows[i] = row
	}
	return rows, nil
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
				jv.pageInfo.SetText(err.Error())
			}
			jv.reload()
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

// pageText is the page label: its number, or that nothing matches the
// filters, so that an empty table is not taken for one still loading.
func pageText(page, rows int, what string) string {
	if rows == 0 {
		if page == 1 {
			return "no " + what + " match"
		}
		return fmt.Sprintf("page %d: no more %s", page, what)
	}
	return fmt.Sprintf("page %d", page)
}
