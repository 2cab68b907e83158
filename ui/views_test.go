package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage"
)

// finish records how an attempt leaves its job (Store.Finish), for tests
// that put jobs in their states: the one place that knows its signature.
func finish(t *testing.T, db *storage.DB, end engine.End) {
	t.Helper()
	_, err := db.Finish(context.Background(), end)
	require.NoError(t, err)
}

// spendBurst answers host's requests with 200 until it has to wait for a
// token (G2), and returns the instant it does.
func spendBurst(t *testing.T, core *engine.Core, host string, now time.Time) time.Time {
	t.Helper()
	for range 20 {
		if s, _ := core.HostSnapshot(host); s.Waiting == engine.WaitToken {
			return now
		}
		snap := core.SnapshotInto(nil, now)
		for _, s := range snap {
			if s.Host == host && s.Waiting == engine.WaitToken {
				return now
			}
		}
		d, ok, wake := core.Next(now)
		if !ok {
			require.False(t, wake.IsZero(), "nothing to wait for")
			now = wake
			continue
		}
		core.Observe(d, engine.Outcome{Status: 200, Attempts: 1}, now)
	}
	require.Fail(t, "the host never waited for a token")
	return now
}

// U1, G2, G11: a host that spent its burst says when its next request goes
// and at what rate, counting down; its tokens show rounded down, the part
// of the next one as a paler stretch of the bar.
func TestHosts_U1_NextRequestCountsDownAndTokensRoundDown(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://tok.example/1 https://tok.example/2 https://tok.example/3 https://tok.example/4 "+
		"https://tok.example/5 https://tok.example/6 https://tok.example/7")
	core := h.eng.Core()
	at := spendBurst(t, core, "tok.example", time.Now())
	h.w.tickNow(at)
	state := h.cellAt(t, "tok.example", colState)
	re := regexp.MustCompile(`^next request in (\d(?:\.\d)?) s \(60/min\)$`)
	first := re.FindStringSubmatch(state.full)
	require.NotNil(t, first, state.full)
	assert.Equal(t, pale(paintWorking), state.bg.FillColor, "pacing is calm: a pale badge")

	h.w.tickNow(at.Add(300 * time.Millisecond))
	second := re.FindStringSubmatch(h.cellAt(t, "tok.example", colState).full)
	require.NotNil(t, second, h.cellAt(t, "tok.example", colState).full)
	assert.NotEqual(t, first[1], second[1], "the countdown runs")

	s, _ := core.HostSnapshot("tok.example")
	tokens := h.cellAt(t, "tok.example", colTokens)
	assert.Equal(t, fmt.Sprintf("%d / 4", int(s.Tokens)), tokens.text.Text)
	assert.Equal(t, "0 / 4", tokens.text.Text, "less than a token is none: it cannot be spent")
	assert.Zero(t, tokens.frac, "no solid bar for a token that cannot be spent")
}

// U1: a healthy breaker that counted a failure is calm plain text, not the
// brightest badge on the screen; an open one is a badge.
func TestHosts_U1_ClosedBreakerWithAFailureIsCalm(t *testing.T) {
	h := newHarness(t)
	now := time.Now()
	throttle(t, h.eng.Core(), 1, "calm.example", now)
	h.w.tickNow(now)
	br := h.cellAt(t, "calm.example", colBreaker)
	assert.Equal(t, "closed · 1 failed", br.full)
	assert.Equal(t, modeText, br.mode, "no badge")
	h.eng.Core().TripBreaker("calm.example")
	h.w.tickNow(now)
	br = h.cellAt(t, "calm.example", colBreaker)
	assert.Equal(t, modeBadge, br.mode)
	assert.Equal(t, paintFailing, br.bg.FillColor)
}

// U1: while the pointer is over the table (or one of its rows' buttons)
// the rows hold their places, and otherwise re-sort at most every few
// seconds: a row does not slide away as it is read or clicked. The values
// themselves stay live.
func TestHosts_U1_RowsHoldStillUnderThePointer(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://a.example/1 https://b.example/1")
	hv := h.w.hosts
	core := h.eng.Core()
	names := func() []string {
		var out []string
		for r := range hv.model.order {
			out = append(out, hv.row(r).Host)
		}
		return out
	}
	now := time.Now()
	hv.sortBy(colState) // paused hosts sort last
	h.w.tickNow(now)
	require.Equal(t, []string{"a.example", "b.example"}, names())

	hv.table.MouseIn(&desktop.MouseEvent{})
	core.PauseHost("a.example", "paused from the window")
	h.w.tickNow(now.Add(5 * time.Second))
	assert.Equal(t, []string{"a.example", "b.example"}, names(), "held under the pointer")
	assert.Equal(t, "paused by you", h.cellAt(t, "a.example", colState).full, "the values are live")
	hv.table.MouseOut()
	h.w.tickNow(now.Add(6 * time.Second))
	assert.Equal(t, []string{"b.example", "a.example"}, names(), "re-sorted once the pointer left")

	core.ResumeHost("a.example")
	h.w.tickNow(now.Add(6500 * time.Millisecond))
	assert.Equal(t, []string{"b.example", "a.example"}, names(), "not re-sorted again within "+resortEvery.String())
	h.w.tickNow(now.Add(9 * time.Second))
	assert.Equal(t, []string{"a.example", "b.example"}, names())

	// The row's own Pause button holds the rows too.
	btn := h.cellAt(t, "a.example", colAction).button
	btn.MouseIn(&desktop.MouseEvent{})
	core.PauseHost("a.example", "paused from the window")
	h.w.tickNow(now.Add(20 * time.Second))
	assert.Equal(t, []string{"a.example", "b.example"}, names())
	btn.MouseOut()
	h.w.tickNow(now.Add(30 * time.Second))
	assert.Equal(t, []string{"b.example", "a.example"}, names())
}

// U1: the hosts table's columns fit the window, at the default size, at
// 1,100 px and at 900 px, and the State column takes the spare width.
func TestHosts_U1_ColumnsFitTheWindow(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://fit.example/1")
	var stateAt []float32
	for _, width := range []float32{1240, 1100, 900} {
		h.w.win.Resize(fyne.NewSize(width, 600))
		tb := h.w.hosts.table
		require.Len(t, tb.widths, len(hostColumns)-1, "no Robots column: no crawl needed a robots.txt")
		var sum float32
		for _, w := range tb.widths {
			sum += w + 4 // each column has the table's padding beside it
		}
		assert.LessOrEqual(t, sum, tb.Size().Width, "all columns fit at %v px", width)
		stateAt = append(stateAt, tb.widths[colState])
	}
	assert.GreaterOrEqual(t, stateAt[0], hostColumns[colState].width, "State keeps its width while others can give")
	assert.GreaterOrEqual(t, stateAt[1], hostColumns[colState].width)
	assert.GreaterOrEqual(t, stateAt[2], hostColumns[colState].min)
	h.w.win.Resize(fyne.NewSize(1600, 760))
	assert.Greater(t, h.w.hosts.table.widths[colState], hostColumns[colState].width, "the spare width goes to State")
}

// U1: the sort arrow sits inside its column's header, which shortens its
// title rather than draw over the next one.
func TestHosts_U1_SortArrowStaysInItsHeader(t *testing.T) {
	test.NewTempApp(t)
	hc := newHeaderCell()
	hc.set("Queued / done / failed", "Jobs q / d / f", -1, func() {})
	test.WidgetRenderer(hc)
	short := fyne.MeasureText("Jobs q / d / f", theme.TextSize(), fyne.TextStyle{Bold: true}).Width
	hc.Resize(fyne.NewSize(short+theme.IconInlineSize()+2*theme.Padding()+4, 36))
	assert.Equal(t, "Jobs q / d / f", hc.text.Text, "the short title where the long one does not fit")
	assert.True(t, hc.icon.Visible())
	assert.LessOrEqual(t, hc.icon.Position().X+hc.icon.Size().Width, hc.Size().Width)
	assert.LessOrEqual(t, hc.text.Position().X+hc.text.Size().Width, hc.icon.Position().X)
	hc.Resize(fyne.NewSize(300, 36))
	assert.Equal(t, "Queued / done / failed", hc.text.Text)
}

// U1: the empty table's hint is drawn on the window's background, so that
// the column lines do not run through it.
func TestHosts_U1_EmptyHintHidesTheColumnLines(t *testing.T) {
	h := newHarness(t)
	box := h.w.hosts.emptyBox
	require.True(t, box.Visible())
	assert.GreaterOrEqual(t, box.Size().Width, h.w.hosts.table.Size().Width-1, "as wide as the table")
	stack := box.Objects[0].(*fyne.Container)
	bg, ok := stack.Objects[0].(*canvas.Rectangle)
	require.True(t, ok, "a rectangle under the hint")
	assert.Equal(t, theme.Color(theme.ColorNameBackground), bg.FillColor, "of the window's background")
	assert.Equal(t, stack.Size(), bg.Size(), "over the whole table body")
}

// U3: the chart says what its tallest bar is worth above the bars, not
// over them, and has a time axis.
func TestChart_U3_TimeAxisAndPeakLabelOutsideTheBars(t *testing.T) {
	h := newHarness(t)
	h.w.hosts.setSelected("c.example")
	c := h.w.hosts.chart
	r := test.WidgetRenderer(c).(*chartRenderer)
	c.Resize(fyne.NewSize(540, 160))
	var ticks []string
	for _, tk := range r.ticks {
		ticks = append(ticks, tk.Text)
		assert.GreaterOrEqual(t, tk.Position().Y, r.bg.Position().Y+r.bg.Size().Height, "below the plot")
	}
	assert.Equal(t, []string{"−3 min", "−2 min", "−1 min", "now"}, ticks)
	assert.LessOrEqual(t, r.label.Position().Y+r.label.MinSize().Height, r.bg.Position().Y+1, "above the plot")
	assert.Contains(t, r.label.Text, "tallest bar")
}

// U5: only the actions that make sense for the selected job's state are
// on: pause for queued and active, resume for paused, cancel for queued,
// active and paused, retry for ended jobs.
func TestJobs_U5_OnlyTheActionsOfTheSelectedJobsStateAreOn(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	states := []engine.JobState{engine.JobQueued, engine.JobActive, engine.JobPaused, engine.JobDone,
		engine.JobFailed, engine.JobCancelled, engine.JobSkipped}
	var urls []string
	for _, s := range states {
		urls = append(urls, "https://st.example/"+string(s))
	}
	rep := h.add(t, strings.Join(urls, " "))
	id := map[engine.JobState]int64{}
	for i, s := range states {
		id[s] = rep.Queued[i]
	}
	core := h.eng.Core()
	for _, s := range []engine.JobState{engine.JobActive, engine.JobDone, engine.JobFailed} {
		_, err := h.db.Start(ctx, id[s], string(s)+".part")
		require.NoError(t, err)
		core.Remove(id[s], "st.example")
	}
	finish(t, h.db, engine.End{JobID: id[engine.JobDone], State: engine.JobDone, File: "done.bin", SHA256: "ab12"})
	finish(t, h.db, engine.End{JobID: id[engine.JobFailed], State: engine.JobFailed, Error: "HTTP 404", Status: 404})
	_, err := h.eng.PauseJobs(ctx, []int64{id[engine.JobPaused]})
	require.NoError(t, err)
	_, err = h.eng.CancelJobs(ctx, []int64{id[engine.JobCancelled]})
	require.NoError(t, err)
	_, err = h.db.SetState(ctx, []int64{id[engine.JobSkipped]}, []engine.JobState{engine.JobQueued}, engine.JobSkipped)
	require.NoError(t, err)
	core.Remove(id[engine.JobSkipped], "st.example")

	jv := h.w.jobs
	jv.reload()
	h.w.bg.Wait()
	require.Len(t, jv.rows(), len(states))
	assert.Equal(t, id[engine.JobSkipped], jv.rows()[0].rec.ID, "newest first")
	on := func() (out []string) {
		for _, b := range []*widget.Button{jv.pause, jv.resume, jv.cancel, jv.retry} {
			if !b.Disabled() {
				out = append(out, b.Text)
			}
		}
		return out
	}
	assert.Empty(t, on(), "nothing selected")
	want := map[engine.JobState][]string{
		engine.JobQueued: {"Pause", "Cancel"}, engine.JobActive: {"Pause", "Cancel"},
		engine.JobPaused: {"Resume", "Cancel"}, engine.JobDone: {"Retry"}, engine.JobFailed: {"Retry"},
		engine.JobCancelled: {"Retry"}, engine.JobSkipped: {"Retry"},
	}
	for row, r := range jv.rows() {
		jv.table.Select(widget.TableCellID{Row: row, Col: jcURL})
		assert.Equal(t, want[r.rec.State], on(), "a %s job", r.rec.State)
	}
}

// U5: jobs come newest first, with their total and the page count from the
// hosts' job counts; a done job shows its size, when it finished, and how
// fast it came.
func TestJobs_U5_NewestFirstWithTotalAndDoneJobsDetails(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	rep := h.add(t, "https://n.example/a https://n.example/b https://n.example/c")
	_, err := h.db.Start(ctx, rep.Queued[0], "a.part")
	require.NoError(t, err)
	h.eng.Core().Remove(rep.Queued[0], "n.example")
	require.NoError(t, h.db.RecordAttempt(engine.Attempt{JobID: rep.Queued[0], URL: "https://n.example/a", Host: "n.example",
		Attempt: 1, StartedAt: time.Now().Add(-2 * time.Second), Duration: 2 * time.Second, Status: 200, Outcome: "ok", Bytes: 2 << 20}))
	finish(t, h.db, engine.End{JobID: rep.Queued[0], State: engine.JobDone, File: "a", SHA256: "ff",
		Resume: engine.Resume{Bytes: 2 << 20, Size: 2 << 20}})
	require.NoError(t, h.db.Flush(ctx))
	h.w.poll.loadCounts()
	h.w.tickNow(time.Now())
	jv := h.w.jobs
	jv.reload()
	h.w.bg.Wait()
	var ids []int64
	for _, r := range jv.rows() {
		ids = append(ids, r.rec.ID)
	}
	assert.Equal(t, []int64{rep.Queued[2], rep.Queued[1], rep.Queued[0]}, ids)
	assert.Equal(t, "page 1 of 1 · 3 jobs", jv.pt.info.Text)
	done := jv.rows()[2]
	require.Equal(t, engine.JobDone, done.rec.State)
	assert.Equal(t, "2.0 MiB", done.bytes, "its size")
	assert.Equal(t, "1.0 MiB/s", done.speed, "how fast its last exchange came")
	assert.Regexp(t, `^\d\d:\d\d:\d\d$`, done.when, "when it finished, today")
	jv.state.SetSelected("queued")
	h.w.bg.Wait()
	assert.Equal(t, "page 1 of 1 · 2 jobs", jv.pt.info.Text, "the total follows the filter")
}

// G44, U5: a job's URL shows its password masked, in the table and below it.
func TestJobs_G44_PasswordsMasked(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://ann:s3cret@pw.example/f.bin")
	jv := h.w.jobs
	jv.reload()
	h.w.bg.Wait()
	require.Len(t, jv.rows(), 1)
	assert.Equal(t, "https://ann:***@pw.example/f.bin", jv.rows()[0].url)
	jv.table.Select(widget.TableCellID{Row: 0, Col: jcURL})
	assert.NotContains(t, jv.detail.Text, "s3cret")
	assert.Contains(t, jv.detail.Text, "ann:***@pw.example")
}

// U5: a URL too wide for its cell is cut in its middle: its host and file
// name stay.
func TestCell_U5_URLCutInTheMiddle(t *testing.T) {
	test.NewTempApp(t)
	c := newCell()
	test.WidgetRenderer(c)
	u := "https://downloads.example.com/archive/2024/reports/file-0042.bin"
	c.setURL(u)
	c.Resize(fyne.NewSize(340, 30))
	assert.Equal(t, "https://downloads.example.com/…/file-0042.bin", c.text.Text)
	c.Resize(fyne.NewSize(280, 30))
	assert.Equal(t, "downloads.example.com/…/file-0042.bin", c.text.Text, "narrower, the scheme goes first")
	c.Resize(fyne.NewSize(1000, 30))
	assert.Equal(t, u, c.text.Text)
}

// U6, R3: History numbers a job's throttled tries apart, and calls an
// attempt cut off "stopped" (a cancelled job is another thing).
func TestHistory_R3_ThrottledTriesNumberedAndStoppedNamed(t *testing.T) {
	h := newHarness(t)
	rep := h.add(t, "https://thr.example/f")
	t0 := time.Now().Add(-time.Minute)
	for i, a := range []engine.Attempt{
		{Attempt: 1, Throttled: 0, Status: 429, Outcome: "throttled", RetryAfter: 2 * time.Second},
		{Attempt: 1, Throttled: 1, Status: 429, Outcome: "throttled"},
		{Attempt: 1, Throttled: 2, Outcome: "canceled", Error: "stopped by the user"},
		{Attempt: 2, Throttled: 2, Status: 200, Outcome: "ok"},
	} {
		a.JobID, a.URL, a.Host, a.StartedAt = rep.Queued[0], "https://thr.example/f", "thr.example", t0.Add(time.Duration(i)*time.Second)
		require.NoError(t, h.db.RecordAttempt(a))
	}
	require.NoError(t, h.db.Flush(context.Background()))
	hv := h.w.history
	hv.firstPage()
	h.w.bg.Wait()
	require.Len(t, hv.rows(), 4)
	text := func(a *engine.Attempt, col int) string {
		c := newCell()
		hv.updateCell(a, col, c)
		return c.full
	}
	var tries, outcomes []string
	for i := range hv.rows() {
		tries = append(tries, text(&hv.rows()[i], hcTry))
		outcomes = append(outcomes, text(&hv.rows()[i], hcOutcome))
	}
	assert.Equal(t, []string{"2 (after 2 throttled)", "1 (after 2 throttled)", "1 (after 1 throttled)", "1"}, tries)
	assert.Equal(t, []string{"ok", "stopped", "throttled", "throttled"}, outcomes)
	assert.Equal(t, "server asked to wait 2 s (Retry-After)", text(&hv.rows()[3], hcError))
	hv.outcome.SetSelected("stopped")
	h.w.bg.Wait()
	require.Len(t, hv.rows(), 1)
	assert.Equal(t, "canceled", hv.rows()[0].Outcome, "the filter finds what the engine stores")
}

// U4: a paste of prose is one rejected line with one reason, and the text
// box keeps it as typed (it was rewritten one word per line).
func TestPaste_U4_ProseIsOneRejectedLineKeptAsTyped(t *testing.T) {
	h := newHarness(t)
	prose := "Please get these files for me today"
	p := h.w.showPaste("https://ok.example/a\n" + prose + "\nftp://x.example/f\nhttps://ok.example/b see this\n")
	test.Tap(p.add)
	h.w.bg.Wait()
	assert.Equal(t, prose+"\nftp://x.example/f\nhttps://ok.example/b see this", p.entry.Text,
		"the lines that need fixing, as typed; the line wholly taken went")
	assert.Equal(t, 1, strings.Count(p.details.Text, prose), p.details.Text)
	assert.Contains(t, p.details.Text, "line 2: “"+prose+"” — no URL in its 7 words: ")
	assert.Contains(t, p.details.Text, "line 4: “https://ok.example/b see this” — 2 of its words are not URLs: ")
	assert.Contains(t, p.result.Text, "2 queued")
	assert.Contains(t, p.result.Text, "3 lines rejected")
	require.True(t, p.show.Visible(), "the new jobs can be shown")
	test.Tap(p.show)
	assert.Equal(t, "Jobs", h.w.tabs.Selected().Text)
}

// J2, F3, U4: downloading a done URL again says where the new copy goes:
// beside the file you have, never over it.
func TestPaste_F3_DownloadAgainSaysItKeepsTheFile(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	rep := h.add(t, "https://again.example/docs/report.pdf")
	_, err := h.db.Start(ctx, rep.Queued[0], "report.pdf.part")
	require.NoError(t, err)
	h.eng.Core().Remove(rep.Queued[0], "again.example")
	finish(t, h.db, engine.End{JobID: rep.Queued[0], State: engine.JobDone, File: "report.pdf", SHA256: "ab"})
	require.NoError(t, os.MkdirAll(h.w.opt.Dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(h.w.opt.Dir, "report.pdf"), []byte("x"), 0o644))
	p := h.w.showPaste("https://again.example/docs/report.pdf")
	test.Tap(p.add)
	h.w.bg.Wait()
	require.True(t, p.again.Visible())
	require.True(t, p.againNote.Visible())
	assert.Equal(t, "Downloading it again saves it as “report (1).pdf” beside the “report.pdf” you have; nothing is replaced.",
		p.againNote.Text)
}

// One app: closing the window while downloads run asks first, with how
// many and what becomes of them; "Keep downloading" keeps the window, Quit
// closes it. With nothing running it closes at once. A running download
// shows its speed and time left in the Jobs tab.
func TestWindow_ClosingWhileDownloadingAsksFirst(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(10<<20))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(make([]byte, 64<<10))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = h.eng.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	_, err := h.eng.Add(context.Background(), srv.URL+"/big.iso")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		a := h.eng.Active()
		return len(a) == 1 && a[0].Bytes >= 64<<10
	}, 10*time.Second, 20*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // long enough for a speed

	h.w.jobs.reload()
	h.w.bg.Wait()
	require.Len(t, h.w.jobs.rows(), 1)
	row := h.w.jobs.rows()[0]
	assert.Equal(t, engine.JobActive, row.rec.State)
	assert.Regexp(t, `/s$`, row.speed)
	assert.Regexp(t, ` left$`, row.when, "a running download shows its time left")

	h.w.onCloseRequest()
	require.NotNil(t, h.w.quit, "asked first")
	assert.Equal(t, "1 download is running; it stops and resumes next time. Quit?", h.w.quit.msg.Text)
	test.Tap(h.w.quit.stay)
	assert.False(t, h.w.closed)
	assert.Nil(t, h.w.quit)
	h.w.onCloseRequest()
	require.NotNil(t, h.w.quit)
	test.Tap(h.w.quit.quit)
	assert.True(t, h.w.closed, "Quit closes the window")

	assert.Equal(t, "3 downloads are running; they stop and resume next time. Quit?", quitQuestion(3))
}

func TestWindow_ClosingWithNothingRunningClosesAtOnce(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://idle.example/1")
	h.w.onCloseRequest()
	assert.Nil(t, h.w.quit)
	assert.True(t, h.w.closed)
}

// One app: an error the window's own action meets shows in the window, not
// on stderr: here, opening the download folder with no file manager.
func TestWindow_OpenFolderErrorShowsInTheWindow(t *testing.T) {
	h := newHarness(t)
	h.w.openPath = func(string) error {
		return errors.New("xdg-open: no method available for opening '/x' (exit status 3)")
	}
	require.Nil(t, h.w.win.Canvas().Overlays().Top())
	test.Tap(h.w.jobs.folder)
	h.w.bg.Wait()
	top := h.w.win.Canvas().Overlays().Top()
	require.NotNil(t, top, "a dialog says so")
	var texts []string
	collectTexts(top, &texts)
	assert.Contains(t, strings.Join(texts, " "), "no method available")
	assert.Contains(t, strings.Join(texts, " "), h.w.opt.Dir, "and where the folder is")
	h.w.tickNow(time.Now())
	assert.Contains(t, h.w.status.Text, "cannot open "+h.w.opt.Dir)
}

// One app: the tray's menu carries the totals and Pause all / Resume all.
func TestWindow_TrayMenuTotalsAndPauseAll(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://tray.example/1 https://tray.example/2")
	h.w.poll.loadCounts()
	h.w.tickNow(time.Now())
	h.w.updateTray()
	tr := h.w.tray
	assert.Equal(t, "2 queued · 0 running", tr.totals.Label)
	assert.True(t, tr.totals.Disabled, "a line to read, not an action")
	assert.Equal(t, "Pause all", tr.pause.Label)
	tr.pause.Action()
	h.w.bg.Wait()
	h.w.tickNow(time.Now())
	h.w.updateTray()
	assert.True(t, h.eng.Core().Stats().PausedAll)
	assert.Equal(t, "Resume all", tr.pause.Label)
	assert.Equal(t, "nothing queued", trayTotals(0, 0))
	assert.Equal(t, "12,345 queued · 3 running", trayTotals(12345, 3))
}

// Small things: "1 host", not "1 hosts"; demo hosts by name.
func TestWindow_StatusLineAndHostLabels(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://one.example/1")
	assert.True(t, strings.HasPrefix(h.w.status.Text, "1 host · "), h.w.status.Text)
	h.w.opt.HostLabels = map[string]string{"one.example": "throttling"}
	assert.Equal(t, "throttling · one.example", h.w.hostName("one.example"))
	assert.Equal(t, "two.example", h.w.hostName("two.example"))
}

// U3: the edit form shows durations as a person writes them and takes
// them back in that form or Go's.
func TestEdit_U3_DurationsInPlainForm(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://d.example/1")
	h.w.hosts.setSelected("d.example")
	test.Tap(h.w.hosts.editBtn)
	f := h.w.form
	assert.Equal(t, "1 min", f.entries["backoff_max"].Text)
	assert.Equal(t, "250 ms", f.entries["jitter_max"].Text)
	assert.Equal(t, "30 s", f.entries["recovery_timeout"].Text)
	assert.Equal(t, "5 min", f.entries["retry.max"].Text)
	f.entries["backoff_max"].SetText("1 min 30 s")
	f.entries["recovery_timeout"].SetText("45s")
	test.Tap(f.save)
	require.False(t, f.errLabel.Visible(), f.errLabel.Text)
	got, _ := h.eng.Core().HostTunables("d.example")
	assert.Equal(t, 90*time.Second, got.BackoffMax)
	assert.Equal(t, 45*time.Second, got.RecoveryTimeout)

	test.Tap(h.w.hosts.editBtn)
	f = h.w.form
	f.entries["backoff_base"].SetText("2")
	test.Tap(f.save)
	assert.Contains(t, f.errLabel.Text, "“Backoff base”: \"2\" needs a unit, such as 2 s or 2 ms")
}

// U7, L2: Settings says what the global caps are over and which unit.
func TestSettings_L2_CapsSayTheirUnits(t *testing.T) {
	h := newHarness(t)
	var texts []string
	collectTexts(h.w.settings.content, &texts)
	all := strings.Join(texts, " | ")
	assert.NotContains(t, all, "0 means no cap")
	var hints []string
	for _, it := range h.w.settings.form.Items {
		hints = append(hints, it.Text+": "+it.HintText)
	}
	assert.Contains(t, hints, "Requests per second: over all hosts together (0: no cap); each host's own rate is per minute, in its settings")
	assert.Contains(t, hints, "Download speed, KiB/s: over all hosts together (0: no cap)")
}
