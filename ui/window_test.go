package ui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	fstorage "fyne.io/fyne/v2/storage"
	"fyne.io/fyne/v2/test"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage"
)

// harness is a window over a real engine and a real database in a
// temporary folder. The engine's Run loop is not started: tests drive the
// politeness core directly, so nothing touches the network.
type harness struct {
	app  fyne.App
	eng  *engine.Engine
	db   *storage.DB
	feed *Feed
	w    *Window
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessOver(t, func(s engine.Store) engine.Store { return s })
}

// newHarnessOver is newHarness with the engine's store wrapped by wrap.
func newHarnessOver(t *testing.T, wrap func(engine.Store) engine.Store) *harness {
	t.Helper()
	a := test.NewTempApp(t)
	dir := t.TempDir()
	db, err := storage.Open(filepath.Join(dir, "heed.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	feed := NewFeed()
	eng, err := engine.New(context.Background(), wrap(db),
		engine.Options{Dir: filepath.Join(dir, "dl"), Version: "test", OnJob: feed.Job, OnEvent: feed.Event})
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	w := New(a, eng, Options{Version: "test", DBPath: db.Path(), Dir: filepath.Join(dir, "dl"), Feed: feed})
	w.inline = true
	w.win.Resize(fyne.NewSize(1240, 760))
	w.win.Show()
	t.Cleanup(func() { w.bg.Wait(); w.Stop() })
	return &harness{app: a, eng: eng, db: db, feed: feed, w: w}
}

// add queues urls through the engine (as a paste would) and shows them.
func (h *harness) add(t *testing.T, text string) engine.AddReport {
	t.Helper()
	rep, err := h.eng.Add(context.Background(), text)
	require.NoError(t, err)
	h.w.tickNow(time.Now())
	return rep
}

// cellAt returns the on-screen cell of the hosts table for host and column.
func (h *harness) cellAt(t *testing.T, host string, col int) *cell {
	t.Helper()
	for c, id := range h.w.hosts.bound {
		if s := h.w.hosts.row(id.Row); s != nil && s.Host == host && id.Col == col && c.Visible() {
			return c
		}
	}
	require.Failf(t, "no cell on screen", "host %s column %d", host, col)
	return nil
}

func TestNew_TitleAndStatus(t *testing.T) {
	a := test.NewTempApp(t)
	w := New(a, nil, Options{Version: "0.1.0", DBPath: "/tmp/heed.db", Dir: "/tmp/dl"})
	require.NotNil(t, w.Window())
	assert.Equal(t, "Heed", w.Window().Title())
	assert.Contains(t, w.status.Text, "0.1.0")
	assert.Contains(t, w.status.Text, "/tmp/heed.db")
	assert.Contains(t, w.status.Text, "/tmp/dl")
}

func TestPaste_U4_QueuesInEngineAndReports(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://dup.example/a")
	p := h.w.showPaste("https://one.example/x\nhttps://one.example/y\nhttps://dup.example/a\nftp://old.example/f\n")
	test.Tap(p.add)
	h.w.bg.Wait()

	jobs, err := h.db.Jobs(context.Background(), engine.JobQuery{Host: "one.example"})
	require.NoError(t, err)
	assert.Len(t, jobs, 2, "both new URLs are queued in the engine")
	assert.Len(t, p.report.Queued, 2)
	assert.Len(t, p.report.Duplicates, 1)
	require.Len(t, p.report.Rejected, 1)
	assert.Contains(t, p.result.Text, "2 queued")
	assert.Contains(t, p.result.Text, "1 already known")
	assert.Contains(t, p.result.Text, "1 line rejected")
	assert.Contains(t, p.details.Text, "ftp://old.example/f", "the rejected line is listed")
	assert.Contains(t, p.details.Text, p.report.Rejected[0].Reason, "with its reason")
	h.w.tickNow(time.Now())
	assert.NotNil(t, h.w.hosts.row(0), "the new host has a row")
}

// failingEnqueue is a store whose Enqueue call number failAt (1 for the
// first) fails, as a full disk would.
type failingEnqueue struct {
	engine.Store
	calls, failAt int
}

func (s *failingEnqueue) Enqueue(ctx context.Context, jobs []engine.NewJob, againBelow int64) ([]engine.Enqueued, error) {
	if s.calls++; s.calls == s.failAt {
		return nil, errors.New("database or disk is full")
	}
	return s.Store.Enqueue(ctx, jobs, againBelow)
}

// U4, S2: a long paste is stored in parts; when a later part cannot be
// stored, the dialog says how many the parts before it queued (they stay
// queued) and why the rest was not; when the first cannot, that nothing was.
func TestPaste_U4_StoreFailingPartWaySaysWhatWasQueued(t *testing.T) {
	var list strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&list, "https://many.example/%d\n", i)
	}
	for _, c := range []struct {
		failAt int
		want   string
	}{
		{2, "; the rest was not queued: database or disk is full"},
		{1, "Nothing was queued: database or disk is full"},
	} {
		t.Run(fmt.Sprintf("part %d fails", c.failAt), func(t *testing.T) {
			h := newHarnessOver(t, func(s engine.Store) engine.Store { return &failingEnqueue{Store: s, failAt: c.failAt} })
			p := h.w.showPaste(list.String())
			test.Tap(p.add)
			h.w.bg.Wait()

			jobs, err := h.db.Jobs(context.Background(), engine.JobQuery{Host: "many.example"})
			require.NoError(t, err)
			assert.Len(t, p.report.Queued, len(jobs), "the report counts what is queued")
			if c.failAt == 1 {
				assert.Empty(t, jobs)
			} else {
				assert.NotEmpty(t, jobs, "the first part stays queued")
				assert.Less(t, len(jobs), 2000)
				assert.True(t, strings.HasPrefix(p.result.Text, fmtInt(int64(len(jobs)))+" queued"), p.result.Text)
			}
			assert.Contains(t, p.result.Text, c.want)
			assert.False(t, p.add.Disabled(), "the person may try again")
		})
	}
}

// J2, U4: a pasted URL whose job ended is not fetched again unless asked:
// the dialog offers to, as heed get --again does. One still queued is not.
func TestPaste_J2_DownloadEndedURLsAgain(t *testing.T) {
	h := newHarness(t)
	rep := h.add(t, "https://again.example/a https://again.example/b")
	_, err := h.eng.CancelJobs(context.Background(), rep.Queued[:1])
	require.NoError(t, err)
	p := h.w.showPaste("https://again.example/a https://again.example/b")
	test.Tap(p.add)
	h.w.bg.Wait()
	require.True(t, p.again.Visible(), "the cancelled URL can be downloaded again")
	assert.Equal(t, "Download 1 finished URL again", p.again.Text)
	test.Tap(p.again)
	h.w.bg.Wait()
	assert.False(t, p.again.Visible())
	assert.Contains(t, p.result.Text, "1 URL queued again")
	jobs, err := h.db.Jobs(context.Background(), engine.JobQuery{State: engine.JobQueued})
	require.NoError(t, err)
	assert.Len(t, jobs, 2)

	p = h.w.showPaste("https://again.example/b")
	test.Tap(p.add)
	h.w.bg.Wait()
	assert.False(t, p.again.Visible(), "a queued URL needs nothing")
}

func TestPaste_U4_CtrlVOpensDialogWithClipboard(t *testing.T) {
	h := newHarness(t)
	h.app.Clipboard().SetContent("https://clip.example/1")
	h.w.win.Canvas().(fyne.Shortcutable).TypedShortcut(&fyne.ShortcutPaste{Clipboard: h.app.Clipboard()})
	require.NotNil(t, h.w.paste)
	assert.Equal(t, "https://clip.example/1", h.w.paste.entry.Text)
	test.Tap(h.w.paste.add)
	h.w.bg.Wait()
	jobs, err := h.db.Jobs(context.Background(), engine.JobQuery{Host: "clip.example"})
	require.NoError(t, err)
	assert.Len(t, jobs, 1)
}

// U4: dropping a text file and a link on the window opens the Add URLs dialog with the file's
// lines and the link; a file that cannot be read is named there.
func TestPaste_U4_DropFileAndLink(t *testing.T) {
	h := newHarness(t)
	list := filepath.Join(t.TempDir(), "urls.txt")
	require.NoError(t, os.WriteFile(list, []byte("https://drop.example/1\nhttps://drop.example/2\n"), 0o644))
	link, err := fstorage.ParseURI("https://drop.example/3")
	require.NoError(t, err)
	missing := fstorage.NewFileURI(filepath.Join(t.TempDir(), "gone.txt"))
	h.w.onDropped(fyne.NewPos(10, 10), []fyne.URI{fstorage.NewFileURI(list), link, missing})
	h.w.bg.Wait()
	require.NotNil(t, h.w.paste)
	assert.Contains(t, h.w.paste.result.Text, "Could not read")
	assert.Contains(t, h.w.paste.result.Text, "gone.txt")
	test.Tap(h.w.paste.add)
	h.w.bg.Wait()
	jobs, err := h.db.Jobs(context.Background(), engine.JobQuery{Host: "drop.example"})
	require.NoError(t, err)
	assert.Len(t, jobs, 3)
}

func TestHosts_U3_PauseButtonPausesHostInEngine(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://p.example/1 https://q.example/1")
	core := h.eng.Core()

	// The toolbar acts on the selected host.
	h.w.hosts.setSelected("p.example")
	test.Tap(h.w.hosts.pauseBtn)
	s, ok := core.HostSnapshot("p.example")
	require.True(t, ok)
	assert.True(t, s.Paused, "one click pauses the host in the engine")
	assert.Equal(t, "Resume", h.w.hosts.pauseBtn.Text)
	q, _ := core.HostSnapshot("q.example")
	assert.False(t, q.Paused, "other hosts are untouched")

	// The row's own button resumes it.
	h.w.tickNow(time.Now())
	c := h.cellAt(t, "p.example", colAction)
	btn := c.button
	assert.Equal(t, "Resume", c.btnText)
	assert.Equal(t, theme.MediaPlayIcon(), btn.Icon, "a narrow column shows the ▶ alone")
	test.Tap(btn)
	s, _ = core.HostSnapshot("p.example")
	assert.False(t, s.Paused, "the row button resumes the host")
	h.w.tickNow(time.Now())
	state := h.cellAt(t, "p.example", colState)
	assert.NotContains(t, state.text.Text, "paused")
}

func TestEdit_U3_InvalidValueRefusedNothingChanges(t *testing.T) {
	cases := []struct {
		name, field, value, msg string
	}{
		{"zero rate", "rate_per_min", "0", "“Rate (requests per minute)”: 0 is out of range"},
		{"rate not a number", "rate_per_min", "fast", "“Rate (requests per minute)”"},
		{"rate above bound", "rate_per_min", "700000", "“Rate (requests per minute)”"},
		{"burst zero", "burst", "0", "“Burst”"},
		{"bad duration", "backoff_base", "soon", "“Backoff base”"},
		{"backoff max below base", "backoff_max", "10ms", "“Backoff max”: 10ms is below “Backoff base”"},
		{"status out of range", "throttle_statuses", "429, 200", "“Throttle statuses”"},
		{"attempts out of range", "retry.max_attempts", "300", "“Retry: max attempts”: 300 is out of range"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.add(t, "https://e.example/1")
			h.w.hosts.setSelected("e.example")
			test.Tap(h.w.hosts.editBtn)
			f := h.w.form
			require.NotNil(t, f)
			f.entries[tc.field].SetText(tc.value)
			test.Tap(f.save)
			assert.True(t, f.errLabel.Visible(), "a message is shown")
			assert.Contains(t, f.errLabel.Text, tc.msg, "the message names the field")
			got, own := h.eng.Core().HostTunables("e.example")
			assert.False(t, own, "the host did not get tunables of its own")
			assert.Equal(t, engine.DefaultTunables(), got, "nothing changed")
		})
	}
}

func TestEdit_U3_ValidValuesApplyAtOnce(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://e.example/1")
	h.w.hosts.setSelected("e.example")
	test.Tap(h.w.hosts.editBtn)
	f := h.w.form
	f.entries["rate_per_min"].SetText("120")
	f.entries["burst"].SetText("9")
	f.entries["retry.max_attempts"].SetText("7")
	f.strategy.SetSelected("linear")
	test.Tap(f.save)
	assert.False(t, f.errLabel.Visible())
	got, own := h.eng.Core().HostTunables("e.example")
	require.True(t, own)
	assert.Equal(t, 120.0, got.RatePerMin)
	assert.Equal(t, 9, got.Burst)
	assert.Equal(t, 7, got.Retry.MaxAttempts)
	assert.Equal(t, engine.Linear, got.Retry.Strategy)
	h.w.tickNow(time.Now())
	assert.Equal(t, "120/min", h.cellAt(t, "e.example", colRate).text.Text)

	test.Tap(h.w.hosts.followBtn)
	_, own = h.eng.Core().HostTunables("e.example")
	assert.False(t, own, "Use defaults drops the host's own settings")
}

func TestSettings_U7_DefaultsFormSavesThroughEngine(t *testing.T) {
	h := newHarness(t)
	test.Tap(h.w.settings.defaultsBtn)
	f := h.w.form
	f.entries["rate_per_min"].SetText("30")
	test.Tap(f.save)
	h.w.bg.Wait()
	assert.Equal(t, 30.0, h.eng.Core().Defaults().RatePerMin)

	test.Tap(h.w.settings.defaultsBtn)
	f = h.w.form
	f.entries["rate_per_min"].SetText("-1")
	test.Tap(f.save)
	h.w.bg.Wait()
	assert.Contains(t, f.errLabel.Text, "“Rate (requests per minute)”")
	assert.Equal(t, 30.0, h.eng.Core().Defaults().RatePerMin, "an invalid default changes nothing")
}

// L2, U7: the global limits apply through the engine at once and are checked first; the
// download folder chosen in the window is remembered for the next start.
func TestSettings_U7_LimitsAndFolder(t *testing.T) {
	h := newHarness(t)
	sv := h.w.settings
	assert.Equal(t, "0", sv.rateCap.Text, "no caps to begin with")
	for _, bad := range [][2]string{{"abc", "0"}, {"-1", "0"}, {"5", "fast"}} {
		sv.rateCap.SetText(bad[0])
		sv.speedCap.SetText(bad[1])
		test.Tap(sv.limitsBtn)
		h.w.bg.Wait()
		assert.Contains(t, sv.limitsMsg.Text, "Not applied", "%v", bad)
		assert.Equal(t, engine.Limits{}, h.eng.Limits(), "%v changes nothing", bad)
	}
	sv.rateCap.SetText("5")
	sv.speedCap.SetText("128")
	test.Tap(sv.limitsBtn)
	h.w.bg.Wait()
	assert.Equal(t, engine.Limits{RatePerSec: 5, BytesPerSec: 128 << 10}, h.eng.Limits())
	assert.NotContains(t, sv.limitsMsg.Text, "Not applied")

	next := t.TempDir()
	sv.setFolder(next)
	assert.Equal(t, next, h.app.Preferences().String(PrefFolder))
	assert.Contains(t, sv.folderMsg.Text, "next start")
	assert.Contains(t, sv.folderMsg.Text, next)
}

// throttle makes host answer one request with 429 and Retry-After: 30,
// and queues the job again.
func throttle(t *testing.T, core *engine.Core, id int64, host string, now time.Time) {
	t.Helper()
	core.Add(id, host, now)
	d, ok, wake := core.Next(now.Add(time.Millisecond)) // a new host may be due a few ns after now
	if !ok && !wake.IsZero() && wake.Sub(now) < time.Second {
		// The core measures on its own clock too; a few ms of real time
		// spent by the test may separate the two. Ask again when it says.
		d, ok, wake = core.Next(wake)
	}
	require.True(t, ok, "not due before %v", wake.Sub(now))
	require.Equal(t, host, d.Host)
	dec := core.Observe(d, engine.Outcome{Status: 429, RetryAfter: "30", Attempts: 1}, now)
	require.True(t, dec.Throttled)
	core.Add(id, host, dec.NotBefore) // requeued behind the gate, as the engine does
}

func TestHosts_U1_ThrottledHostShowsLevelCountdownAndBreaker(t *testing.T) {
	h := newHarness(t)
	core := h.eng.Core()
	now := time.Now()
	throttle(t, core, 1001, "slow.example", now)
	core.Add(1002, "down.example", now)
	core.TripBreaker("down.example")

	h.w.tickNow(now.Add(2 * time.Second))

	backoff := h.cellAt(t, "slow.example", colBackoff).text.Text
	assert.Equal(t, "level 1", backoff, "the level; the countdown is in State, once")
	state := h.cellAt(t, "slow.example", colState)
	assert.Regexp(t, `^backing off 2\d s after 1 throttle \(server asked 30 s\)$`, state.full,
		"in plain words, with the countdown and what the server asked")
	assert.Equal(t, paintBackoff, state.bg.FillColor, "state in colour too")
	br := h.cellAt(t, "slow.example", colBreaker)
	assert.Equal(t, "closed · 1 failed", br.text.Text, "a 429 counts as a failure for the breaker")
	assert.Equal(t, "429", h.cellAt(t, "slow.example", colLast).text.Text)

	open := h.cellAt(t, "down.example", colBreaker)
	assert.Regexp(t, regexp.MustCompile(`^open · probe in 2\d s$`), open.full)
	assert.Equal(t, paintFailing, open.bg.FillColor)
	assert.Regexp(t, `^breaker open \(tripped by hand\), probe in 2\d s$`, h.cellAt(t, "down.example", colState).full)

	// The countdown runs on with the next tick.
	h.w.tickNow(now.Add(12 * time.Second))
	assert.Regexp(t, `^backing off 1\d s after`, h.cellAt(t, "slow.example", colState).full)
}

// U1: the tokens bar out of the burst, in flight out of the cap, and the host's queued / done /
// failed jobs from the database.
func TestHosts_U1_TokensInflightAndJobCounts(t *testing.T) {
	h := newHarness(t)
	rep := h.add(t, "https://busy.example/1 https://busy.example/2 https://busy.example/3")
	// One job failed in an earlier run, as the database has it.
	_, err := h.db.Start(context.Background(), rep.Queued[2], "3.part")
	require.NoError(t, err)
	finish(t, h.db, engine.End{JobID: rep.Queued[2], State: engine.JobFailed,
		Error: "HTTP 404", Status: 404})
	h.eng.Core().Remove(rep.Queued[2], "busy.example")
	core := h.eng.Core()
	now := time.Now()
	d, ok, _ := core.Next(now.Add(time.Millisecond))
	require.True(t, ok)
	require.Equal(t, "busy.example", d.Host)
	h.w.poll.loadCounts()
	h.w.tickNow(now.Add(time.Millisecond))

	tokens := h.cellAt(t, "busy.example", colTokens)
	assert.Equal(t, "3 / 4", tokens.text.Text, "one of the burst's four tokens spent")
	assert.InDelta(t, 0.75, tokens.frac, 0.01, "the bar")
	assert.Equal(t, "1 / 1", h.cellAt(t, "busy.example", colInflight).text.Text, "in flight / max_inflight")
	assert.Equal(t, "2", h.cellAt(t, "busy.example", colQueued).text.Text, "queued")
	assert.Equal(t, "0", h.cellAt(t, "busy.example", colDone).text.Text, "done")
	assert.Equal(t, "1", h.cellAt(t, "busy.example", colFailed).text.Text, "failed")
}

func TestHosts_U3_BreakerActionsAndTimeline(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://b.example/1")
	h.w.hosts.setSelected("b.example")
	test.Tap(h.w.hosts.tripBtn)
	s, _ := h.eng.Core().HostSnapshot("b.example")
	assert.Equal(t, engine.Open, s.Breaker)
	test.Tap(h.w.hosts.probeBtn)
	s, _ = h.eng.Core().HostSnapshot("b.example")
	assert.Equal(t, engine.HalfOpen, s.Breaker)
	test.Tap(h.w.hosts.resetBtn)
	s, _ = h.eng.Core().HostSnapshot("b.example")
	assert.Equal(t, engine.Closed, s.Breaker)

	// The timeline shows the three actions once they are stored.
	require.NoError(t, h.db.Flush(context.Background()))
	h.w.hosts.loadEvents()
	h.w.bg.Wait()
	var kinds []string
	for _, e := range h.w.hosts.events {
		kinds = append(kinds, e.Kind.String())
	}
	assert.Subset(t, kinds, []string{"trip", "probe-now", "reset"})
	assert.Equal(t, len(h.w.hosts.events), h.w.hosts.timeline.Length())
}

// B5, U3: each breaker control is on only where it does something, and the
// label says the breaker's state once.
func TestHosts_B5_BreakerControlsOnlyWhereTheyAct(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://c.example/1")
	h.w.hosts.setSelected("c.example")
	hv := h.w.hosts
	assert.True(t, hv.probeBtn.Disabled(), "closed: nothing to probe")
	assert.True(t, hv.resetBtn.Disabled(), "closed: nothing to reset")
	assert.False(t, hv.tripBtn.Disabled())
	test.Tap(hv.tripBtn)
	assert.False(t, hv.probeBtn.Disabled())
	assert.False(t, hv.resetBtn.Disabled())
	assert.True(t, hv.tripBtn.Disabled(), "open already")
	assert.Regexp(t, `^c\.example — breaker open \(tripped by hand\), probe in \d+(\.\d)? s$`, hv.selLabel.Text)
	test.Tap(hv.probeBtn)
	assert.Contains(t, hv.selLabel.Text, "half-open")
}

// U3: the person's own actions show in the timeline with the next update,
// before the database has them (a read right after the click missed them,
// and a host with nothing else going on never showed them).
func TestHosts_U3_OwnActionsShowAtOnce(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://idle.example/1")
	h.w.hosts.setSelected("idle.example")
	h.w.bg.Wait()
	before := len(h.w.hosts.events)
	test.Tap(h.w.hosts.tripBtn)
	test.Tap(h.w.hosts.pauseBtn)
	h.w.tickNow(time.Now())
	require.Len(t, h.w.hosts.events, before+2)
	assert.Equal(t, "pause", h.w.hosts.events[0].Kind.String(), "newest first")
	assert.Equal(t, "trip", h.w.hosts.events[1].Kind.String())
	assert.Equal(t, len(h.w.hosts.events), h.w.hosts.timeline.Length())
}

// U3: an event both stored and still in the engine's report shows once.
func TestHosts_U3_TimelineShowsAnEventOnce(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://once.example/1")
	h.eng.Core().PauseHost("once.example", "user")
	require.NoError(t, h.db.Flush(context.Background()))
	h.w.hosts.setSelected("once.example")
	h.w.bg.Wait()
	h.w.tickNow(time.Now())
	pauses := 0
	for _, e := range h.w.hosts.events {
		if e.Kind == engine.EventPause {
			pauses++
		}
	}
	assert.Equal(t, 1, pauses)
}

func TestChart_U3_RecordsStartsThrottlesAndGate(t *testing.T) {
	h := newHarness(t)
	core := h.eng.Core()
	now := time.Now()
	h.w.hosts.setSelected("c.example")
	throttle(t, core, 7, "c.example", now)
	h.w.tickNow(now) // first sight of the host
	throttle(t, core, 8, "c.example", now.Add(40*time.Second))
	h.feed.Job(engine.JobEnd{ID: 8, Host: "c.example", Outcome: "throttled"})
	h.w.tickNow(now.Add(40 * time.Second))

	s := h.w.hosts.chart.s
	require.Equal(t, "c.example", s.host)
	last := s.b[chartSeconds-1]
	assert.Equal(t, uint16(1), last.started, "a request seen only through the feed still counts")
	assert.Equal(t, uint16(1), last.throttles)
	assert.NotZero(t, last.flags&flagGate, "the gate period is shaded")
	assert.NotZero(t, s.b[chartSeconds-41].flags&flagGate, "40 s ago the host was behind its gate too")
}

// failUntilOpen answers host's requests with 500 until its breaker opens
// (B1), from now on, and returns the instant it did.
func failUntilOpen(t *testing.T, core *engine.Core, host string, now time.Time) time.Time {
	t.Helper()
	for i := range 20 {
		core.Add(int64(9000+i), host, now)
		d, ok, wake := core.Next(now)
		if !ok && !wake.IsZero() {
			now = wake
			d, ok, _ = core.Next(now)
		}
		require.True(t, ok)
		core.Observe(d, engine.Outcome{Status: 500, Attempts: 1}, now)
		if s, _ := core.HostSnapshot(host); s.Breaker == engine.Open {
			return now
		}
		now = now.Add(2 * time.Second)
	}
	require.Fail(t, "the breaker did not open")
	return now
}

// U7: a breaker that failures open is a notification (where the desktop
// has none, a line in the status bar); one the person trips is not, and
// the setting turns them off.
func TestNotify_U7_BreakerOpenAndSetting(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://n.example/1")
	core := h.eng.Core()
	test.AssertNotificationSent(t, nil, func() {
		core.TripBreaker("n.example")
		h.w.tickNow(time.Now())
	})
	core.ResetBreaker("n.example")
	h.w.tickNow(time.Now())
	test.AssertNotificationSent(t, &fyne.Notification{Title: "Circuit breaker open",
		Content: "Heed stopped sending requests to n.example after repeated failures."}, func() {
		h.w.tickNow(failUntilOpen(t, core, "n.example", time.Now()))
	})
	core.ResetBreaker("n.example")
	h.w.tickNow(time.Now())
	h.w.settings.notifyBreaker.SetChecked(false)
	test.AssertNotificationSent(t, nil, func() {
		h.w.tickNow(failUntilOpen(t, core, "n.example", time.Now()))
	})

	// Without a notification service the status line says it.
	h.w.settings.notifyBreaker.SetChecked(true)
	h.w.canNotify = false
	core.ResetBreaker("n.example")
	h.w.tickNow(time.Now())
	test.AssertNotificationSent(t, nil, func() {
		h.w.tickNow(failUntilOpen(t, core, "n.example", time.Now()))
	})
	assert.True(t, strings.HasPrefix(h.w.status.Text,
		"Circuit breaker open: Heed stopped sending requests to n.example after repeated failures. · "), h.w.status.Text)
}

func TestHosts_U1_SortByClickedColumn(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://a.example/1 https://b.example/1 https://b.example/2 https://c.example/1")
	names := func() []string {
		var out []string
		for r := range h.w.hosts.model.order {
			out = append(out, h.w.hosts.row(r).Host)
		}
		return out
	}
	assert.Equal(t, []string{"a.example", "b.example", "c.example"}, names())
	h.w.hosts.sortBy(colHost)
	assert.Equal(t, []string{"c.example", "b.example", "a.example"}, names(), "a second click reverses")
	h.w.poll.loadCounts() // the hosts' job counts, from the database
	h.w.tickNow(time.Now())
	h.w.hosts.sortBy(colQueued)
	assert.Equal(t, "b.example", names()[2], "by queued jobs, most last")
	assert.Equal(t, colQueued, h.w.prefs.Int(prefSortCol), "the sort is remembered")
}

func TestJobs_U5_PageShowsWhyAndActsOnJob(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://j.example/1 https://j.example/2")
	h.eng.Core().PauseHost("j.example", "user")
	h.w.jobs.reload()
	h.w.bg.Wait()
	require.Len(t, h.w.jobs.rows(), 2)
	assert.Equal(t, "host: paused by you", h.w.jobs.rows()[0].why[0])

	h.w.jobs.table.Select(widget.TableCellID{Row: 1, Col: 1})
	test.Tap(h.w.jobs.pause)
	h.w.bg.Wait()
	j, err := h.db.Jobs(context.Background(), engine.JobQuery{State: engine.JobPaused})
	require.NoError(t, err)
	require.Len(t, j, 1)
	assert.Equal(t, h.w.jobs.rows()[1].rec.ID, j[0].ID)
	assert.Equal(t, "paused by you", h.w.jobs.rows()[1].why[0])
}

// U5: the actions act on the job the highlight is on. A job that leaves the
// page (cancelled out of a "queued" filter) is no longer selected, and the
// actions are off until another is: they never act on a job off screen.
func TestJobs_U5_ActionsFollowTheHighlightedJob(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://s.example/1 https://s.example/2 https://s.example/3")
	h.eng.Core().PauseHost("s.example", "user")
	h.w.jobs.state.SetSelected("queued")
	h.w.bg.Wait()
	require.Len(t, h.w.jobs.rows(), 3)
	assert.True(t, h.w.jobs.cancel.Disabled(), "nothing selected, nothing to act on")
	first := h.w.jobs.rows()[0].rec.ID
	h.w.jobs.table.Select(widget.TableCellID{Row: 0, Col: 1})
	require.False(t, h.w.jobs.cancel.Disabled())
	test.Tap(h.w.jobs.cancel)
	h.w.bg.Wait()
	require.Len(t, h.w.jobs.rows(), 2, "the cancelled job left the queued filter")
	assert.Zero(t, h.w.jobs.selected)
	assert.True(t, h.w.jobs.cancel.Disabled())
	test.Tap(h.w.jobs.cancel) // does nothing: no job is selected
	h.w.bg.Wait()
	left, err := h.db.Jobs(context.Background(), engine.JobQuery{State: engine.JobQueued})
	require.NoError(t, err)
	assert.Len(t, left, 2)

	// A selected job still on the page stays selected at its new row, and
	// its URL and reason are shown whole below the table.
	second := h.w.jobs.rows()[1].rec.ID
	h.w.jobs.table.Select(widget.TableCellID{Row: 1, Col: 1})
	h.w.jobs.state.SetSelected("all")
	h.w.bg.Wait()
	require.Len(t, h.w.jobs.rows(), 3)
	assert.Equal(t, second, h.w.jobs.selected)
	assert.NotEqual(t, first, h.w.jobs.selected)
	assert.Contains(t, h.w.jobs.detail.Text, fmt.Sprintf("Job %d: https://s.example/", second))
	assert.Contains(t, h.w.jobs.detail.Text, "host: paused by you")
}

// Canvas text is cut to its cell, with "…", instead of running over the
// next column.
func TestCell_FitTextCutsToTheWidth(t *testing.T) {
	test.NewTempApp(t)
	size, style := theme.TextSize(), fyne.TextStyle{}
	long := "https://example.com/a/very/long/path/that/does/not/fit/in/a/narrow/column.bin"
	got := fitText(long, 100, size, style)
	assert.True(t, strings.HasSuffix(got, "…"), got)
	assert.True(t, strings.HasPrefix(long, strings.TrimSuffix(got, "…")))
	assert.LessOrEqual(t, fyne.MeasureText(got, size, style).Width, float32(100))
	assert.Equal(t, "short", fitText("short", 100, size, style))

	// A cell cuts its text as it is laid out, and shows it whole once wide enough.
	c := newCell()
	c.setText(long, false)
	c.Resize(fyne.NewSize(100, 30))
	assert.True(t, strings.HasSuffix(c.text.Text, "…"), c.text.Text)
	c.Resize(fyne.NewSize(2000, 30))
	assert.Equal(t, long, c.text.Text)
}

// U5, R5: Resume, Cancel and Retry act on the selected job through the engine.
func TestJobs_U5_ResumeCancelRetrySelected(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://k.example/1")
	h.w.jobs.reload()
	h.w.bg.Wait()
	require.Len(t, h.w.jobs.rows(), 1)
	id := h.w.jobs.rows()[0].rec.ID
	h.w.jobs.table.Select(widget.TableCellID{Row: 0, Col: 1})
	state := func() engine.JobState {
		t.Helper()
		j, err := h.db.Jobs(context.Background(), engine.JobQuery{})
		require.NoError(t, err)
		require.Len(t, j, 1)
		require.Equal(t, id, j[0].ID)
		return j[0].State
	}
	for _, step := range []struct {
		btn  *widget.Button
		want engine.JobState
	}{
		{h.w.jobs.pause, engine.JobPaused},
		{h.w.jobs.resume, engine.JobQueued},
		{h.w.jobs.cancel, engine.JobCancelled},
		{h.w.jobs.retry, engine.JobQueued},
	} {
		test.Tap(step.btn)
		h.w.bg.Wait()
		assert.Equal(t, step.want, state(), step.btn.Text)
	}
}

// U7: Pause all pauses everything, and is saved for the next start.
func TestWindow_U7_PauseAllSaved(t *testing.T) {
	h := newHarness(t)
	test.Tap(h.w.pauseAllBtn)
	h.w.bg.Wait()
	assert.True(t, h.eng.Core().Stats().PausedAll)
	v, err := h.db.Setting(context.Background(), "paused_all")
	require.NoError(t, err)
	assert.Equal(t, "true", v)
	h.w.tickNow(time.Now())
	assert.Equal(t, "Resume all", h.w.pauseAllBtn.Text)
	test.Tap(h.w.pauseAllBtn)
	h.w.bg.Wait()
	assert.False(t, h.eng.Core().Stats().PausedAll)
}

func TestWindow_U7_SizeRemembered(t *testing.T) {
	h := newHarness(t)
	h.w.win.Resize(fyne.NewSize(900, 600))
	h.w.onClosed()
	w2 := New(h.app, h.eng, Options{})
	assert.Equal(t, float32(900), w2.win.Canvas().Size().Width)
	assert.Equal(t, float32(600), w2.win.Canvas().Size().Height)
}

func TestHistory_U6_NewestFirstFilteredByHostAndOutcome(t *testing.T) {
	h := newHarness(t)
	rep := h.add(t, "https://a.example/1 https://b.example/1 https://a.example/2 https://a.example/3")
	require.Len(t, rep.Queued, 4)
	id := rep.Queued
	st := h.db
	t0 := time.Now().Add(-time.Minute)
	for i, r := range []struct {
		host, outcome string
		status        int
	}{{"a.example", "ok", 200}, {"b.example", "throttled", 429}, {"a.example", "failed", 404}, {"a.example", "ok", 200}} {
		require.NoError(t, st.RecordAttempt(engine.Attempt{JobID: id[i], URL: "https://" + r.host + "/x",
			Host: r.host, Attempt: 1, StartedAt: t0.Add(time.Duration(i) * time.Second), Status: r.status, Outcome: r.outcome}))
	}
	require.NoError(t, h.db.Flush(context.Background()))

	cases := []struct {
		name, host, outcome string
		want                []int64 // job ids of the attempts, newest first
	}{
		{"all", "", "any", []int64{id[3], id[2], id[1], id[0]}},
		{"by host", "a.example", "any", []int64{id[3], id[2], id[0]}},
		{"by outcome", "", "ok", []int64{id[3], id[0]}},
		{"by both", "a.example", "failed", []int64{id[2]}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.w.history.host.SetText(tc.host)
			h.w.history.outcome.SetSelected(tc.outcome)
			h.w.history.firstPage()
			var got []int64
			for _, a := range h.w.history.rows() {
				got = append(got, a.JobID)
			}
			assert.Equal(t, tc.want, got)
		})
	}

	// Export CSV writes what the filters select, all of it, with a header.
	h.w.history.host.SetText("a.example")
	h.w.history.outcome.SetSelected("any")
	out := filepath.Join(t.TempDir(), "history.csv")
	wc, err := fstorage.Writer(fstorage.NewFileURI(out))
	require.NoError(t, err)
	h.w.history.exportTo(wc)
	h.w.bg.Wait()
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 4, "a header and a.example's three attempts:\n%s", data)
	assert.Contains(t, lines[0], "outcome")
	for _, l := range lines[1:] {
		assert.Contains(t, l, "a.example")
	}
	assert.Equal(t, "exported to "+out, h.w.history.note.Text)
}

// U1: before any URL is added the hosts table says how to add some, below
// its header row (not over the column names); the hint goes once a host
// has a row.
func TestHosts_U1_EmptyHintBelowHeaderUntilAHostArrives(t *testing.T) {
	h := newHarness(t)
	hv := h.w.hosts
	require.True(t, hv.emptyBox.Visible())
	d := h.app.Driver()
	tableTop := d.AbsolutePositionForObject(hv.table).Y
	header := widget.NewLabel("Host").MinSize().Height
	assert.GreaterOrEqual(t, d.AbsolutePositionForObject(hv.empty).Y, tableTop+header,
		"the hint starts below the header row")

	h.add(t, "https://a.example/1")
	assert.False(t, hv.emptyBox.Visible())
}

// RELIABILITY 35: when the engine stops downloading on its own (its
// database cannot record a transition, for instance on a full disk), the
// window says so and why: a dialog, and the reason in the status line.
func TestWindow_RELIABILITY35_EngineStoppedIsShown(t *testing.T) {
	h := newHarness(t)
	require.Nil(t, h.w.win.Canvas().Overlays().Top())
	h.w.EngineStopped(errors.New("the database cannot record that downloads start: database or disk is full"))
	h.w.tickNow(time.Now())

	top := h.w.win.Canvas().Overlays().Top()
	require.NotNil(t, top, "a dialog is shown")
	var texts []string
	collectTexts(top, &texts)
	assert.Contains(t, strings.Join(texts, " "), "database or disk is full")
	assert.Contains(t, h.w.status.Text, "DOWNLOADS STOPPED: the database cannot record that downloads start")
}

// collectTexts gathers the text of every label and rich text under o.
func collectTexts(o fyne.CanvasObject, out *[]string) {
	switch x := o.(type) {
	case *widget.Label:
		*out = append(*out, x.Text)
	case *widget.RichText:
		*out = append(*out, x.String())
	case fyne.Widget:
		r := test.WidgetRenderer(x)
		for _, c := range r.Objects() {
			collectTexts(c, out)
		}
	case *fyne.Container:
		for _, c := range x.Objects {
			collectTexts(c, out)
		}
	}
}

// U6: a request's time in History is in milliseconds below a second.
func TestHistory_U6_TookInMilliseconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		900 * time.Microsecond:  "0.9 ms",
		37 * time.Millisecond:   "37 ms",
		999 * time.Millisecond:  "999 ms",
		2500 * time.Millisecond: "2.5 s",
	} {
		assert.Equal(t, want, fmtTook(d), d.String())
	}
}

// U5, U6: a filter that matches nothing says so.
func TestJobs_U5_NothingMatchesSaysSo(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://m.example/1")
	h.w.jobs.state.SetSelected("failed")
	h.w.bg.Wait()
	assert.Empty(t, h.w.jobs.rows())
	assert.Equal(t, "no jobs match", h.w.jobs.pt.info.Text)
	h.w.jobs.state.SetSelected("all")
	h.w.bg.Wait()
	assert.Equal(t, "page 1", h.w.jobs.pt.info.Text)
	assert.Equal(t, "page 3: no more attempts", pageText(3, 0, 200, 0, false, "attempts"))
	assert.Equal(t, "page 2 of 62 · 12,345 jobs", pageText(2, 200, 200, 12345, true, "jobs"))
}

// N4, N5, U3: a host's proxy, extra headers and bandwidth cap are edited in
// its form; the secrets among them are shown masked, and a masked value
// left as it is keeps its secret.
func TestEdit_N5_RequestSettingsWithSecretsMasked(t *testing.T) {
	h := newHarness(t)
	h.add(t, "https://e.example/1")
	tun := engine.DefaultTunables()
	tun.Proxy = "socks5://me:s3cret@proxy.example:1080"
	tun.Headers = []string{"X-Team: blue", "Authorization: Bearer s3cret"}
	require.NoError(t, h.eng.Core().SetHostTunables("e.example", tun))
	h.w.hosts.setSelected("e.example")
	test.Tap(h.w.hosts.editBtn)
	f := h.w.form
	require.NotNil(t, f)
	assert.Equal(t, "socks5://me:***@proxy.example:1080", f.entries["proxy"].Text)
	assert.Equal(t, "X-Team: blue\nAuthorization: ***", f.entries["headers"].Text)
	for _, e := range f.entries {
		assert.NotContains(t, e.Text, "s3cret")
	}

	f.entries["headers"].SetText("X-Team: red\nAuthorization: ***\n\nAccept-Language: de")
	f.entries["bytes_per_sec"].SetText("65536")
	test.Tap(f.save)
	require.False(t, f.errLabel.Visible(), f.errLabel.Text)
	got, own := h.eng.Core().HostTunables("e.example")
	require.True(t, own)
	assert.Equal(t, "socks5://me:s3cret@proxy.example:1080", got.Proxy, "the masked proxy kept its password")
	assert.Equal(t, []string{"X-Team: red", "Authorization: Bearer s3cret", "Accept-Language: de"}, got.Headers)
	assert.Equal(t, int64(65536), got.BytesPerSec)

	test.Tap(h.w.hosts.editBtn)
	f = h.w.form
	f.entries["headers"].SetText("Range: bytes=0-")
	test.Tap(f.save)
	assert.True(t, f.errLabel.Visible())
	assert.Contains(t, f.errLabel.Text, "Heed asks for ranges itself to resume")
	f.entries["headers"].SetText("")
	f.entries["proxy"].SetText("direct")
	test.Tap(f.save)
	got, _ = h.eng.Core().HostTunables("e.example")
	assert.Empty(t, got.Headers)
	assert.Equal(t, "direct", got.Proxy)
}

// The Jobs tab's Export… writes heed export's file and Import… queues it into
// another database, with what it did in the status line; a password masked
// by the export is not imported as "***".
func TestJobs_ExportThenImportTheQueue(t *testing.T) {
	from := newHarness(t)
	from.add(t, "https://a.example/1.iso\nhttps://ann:s3cret@b.example/2.iso\nhttps://a.example/3.iso")
	path := filepath.Join(t.TempDir(), "queue.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	from.w.exportQueueTo(f, path)
	from.w.bg.Wait()
	assert.Equal(t, "queue exported to "+path, from.w.notice)
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(written), "\n"))
	assert.NotContains(t, string(written), "s3cret")

	to := newHarness(t)
	in, err := os.Open(path)
	require.NoError(t, err)
	to.w.importQueueFrom(in, path)
	to.w.bg.Wait()
	assert.Contains(t, to.w.notice, "3 queued · 0 already known")
	assert.Contains(t, to.w.notice, "1 URL queued without the password export masked")
	jobs, err := to.db.Jobs(context.Background(), engine.JobQuery{})
	require.NoError(t, err)
	var urls []string
	for _, j := range jobs {
		urls = append(urls, j.URL)
	}
	assert.ElementsMatch(t, []string{"https://a.example/1.iso", "https://ann@b.example/2.iso", "https://a.example/3.iso"}, urls)
}
