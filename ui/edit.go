package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
	"heed/engine/fetch"
)

// tunableField is one text field of the tunables form: its JSON name (as
// engine.Tunables.Validate names it), its label, a hint, and how it reads
// from and writes into a Tunables.
type tunableField struct {
	name, label, hint string
	get               func(t *engine.Tunables) string
	set               func(t *engine.Tunables, s string) error
	lines             bool // a field of several lines
}

func durField(name, label, hint string, p func(t *engine.Tunables) *time.Duration) tunableField {
	return tunableField{name: name, label: label, hint: hint,
		get: func(t *engine.Tunables) string { return fmtSetting(*p(t)) },
		set: func(t *engine.Tunables, s string) error {
			d, err := parseSetting(s)
			if err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			*p(t) = d
			return nil
		}}
}

func intField(name, label, hint string, p func(t *engine.Tunables) *int) tunableField {
	return tunableField{name: name, label: label, hint: hint,
		get: func(t *engine.Tunables) string { return strconv.Itoa(*p(t)) },
		set: func(t *engine.Tunables, s string) error {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return fmt.Errorf("%s: %q is not a whole number", name, s)
			}
			*p(t) = n
			return nil
		}}
}

// tunableFields covers every tunable of SPEC §2–§4 that is typed in; the
// retry strategy and jitter are a select and a check box.
var tunableFields = []tunableField{
	{name: "rate_per_min", label: "Rate (requests per minute)", hint: "0.01 … 600000 requests a minute to this host",
		get: func(t *engine.Tunables) string { return strconv.FormatFloat(t.RatePerMin, 'g', -1, 64) },
		set: func(t *engine.Tunables, s string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return fmt.Errorf("rate_per_min: %q is not a number", s)
			}
			t.RatePerMin = f
			return nil
		}},
	intField("burst", "Burst", "1 … 10000 requests back to back (its tokens)", func(t *engine.Tunables) *int { return &t.Burst }),
	intField("max_inflight", "Max in flight", "1 … 256 requests at once", func(t *engine.Tunables) *int { return &t.MaxInflight }),
	durField("jitter_min", "Spacing min", "a random pause between requests, 0 s … 10 min", func(t *engine.Tunables) *time.Duration { return &t.JitterMin }),
	durField("jitter_max", "Spacing max", "e.g. 250 ms; raised to the min if below", func(t *engine.Tunables) *time.Duration { return &t.JitterMax }),
	durField("backoff_base", "Backoff base", "first wait after a 429 or 503, e.g. 1 s; it doubles", func(t *engine.Tunables) *time.Duration { return &t.BackoffBase }),
	durField("backoff_max", "Backoff max", "the longest such wait, e.g. 1 min", func(t *engine.Tunables) *time.Duration { return &t.BackoffMax }),
	intField("decay_after", "Decay after (successes)", "1 … 1000 good answers in a row undo a doubling", func(t *engine.Tunables) *int { return &t.DecayAfter }),
	{name: "throttle_statuses", label: "Throttle statuses", hint: "4xx/5xx, comma separated",
		get: func(t *engine.Tunables) string {
			s := make([]string, len(t.ThrottleStatuses))
			for i, v := range t.ThrottleStatuses {
				s[i] = strconv.Itoa(v)
			}
			return strings.Join(s, ", ")
		},
		set: func(t *engine.Tunables, s string) error {
			t.ThrottleStatuses = nil
			for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
				n, err := strconv.Atoi(f)
				if err != nil {
					return fmt.Errorf("throttle_statuses: %q is not a status code", f)
				}
				t.ThrottleStatuses = append(t.ThrottleStatuses, n)
			}
			return nil
		}},
	durField("max_retry_after", "Max Retry-After", "at least 1 s; asked for longer, the host pauses", func(t *engine.Tunables) *time.Duration { return &t.MaxRetryAfter }),
	durField("max_crawl_delay", "Max crawl-delay", "at least 1 s; a robots.txt asking for longer pauses the host", func(t *engine.Tunables) *time.Duration { return &t.MaxCrawlDelay }),
	intField("failure_threshold", "Breaker: failures to open", "1 … 255 failures in a row stop requests", func(t *engine.Tunables) *int { return &t.FailureThreshold }),
	durField("recovery_timeout", "Breaker: wait before probing", "1 ms … 24 h, then one request probes", func(t *engine.Tunables) *time.Duration { return &t.RecoveryTimeout }),
	intField("retry.max_attempts", "Retry: max attempts", "1 … 255 tries per URL (throttled ones are free)", func(t *engine.Tunables) *int { return &t.Retry.MaxAttempts }),
	durField("retry.base", "Retry: base delay", "the wait before the second try, e.g. 2 s", func(t *engine.Tunables) *time.Duration { return &t.Retry.Base }),
	durField("retry.max", "Retry: max delay", "the longest wait between tries (0 s: no cap)", func(t *engine.Tunables) *time.Duration { return &t.Retry.Max }),
}

// requestFields are what a host's requests carry beside politeness; the
// form shows them last, after the retry strategy and jitter.
var requestFields = []tunableField{
	{name: "bytes_per_sec", label: "Bandwidth cap (bytes a second)", hint: "its downloads together; 0: no cap of its own",
		get: func(t *engine.Tunables) string { return strconv.FormatInt(t.BytesPerSec, 10) },
		set: func(t *engine.Tunables, s string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return fmt.Errorf("bytes_per_sec: %q is not a whole number", s)
			}
			t.BytesPerSec = n
			return nil
		}},
	// The proxy and the headers are shown with their secrets masked; a
	// masked value left as it is keeps the secret it stands for.
	{name: "proxy", label: "Proxy", hint: `e.g. socks5://HOST:PORT; "direct"; empty: HTTP_PROXY`,
		get: func(t *engine.Tunables) string { return fetch.Redact(t.Proxy) },
		set: func(t *engine.Tunables, s string) error {
			if s = strings.TrimSpace(s); s != fetch.Redact(t.Proxy) {
				t.Proxy = s
			}
			return nil
		}},
	{name: "headers", label: "Extra headers", hint: "one Name: value a line", lines: true,
		get: func(t *engine.Tunables) string {
			shown := make([]string, len(t.Headers))
			for i, h := range t.Headers {
				shown[i] = fetch.RedactHeader(h)
			}
			return strings.Join(shown, "\n")
		},
		set: func(t *engine.Tunables, s string) error {
			secret := map[string]string{} // masked line → the line it masks
			for _, h := range t.Headers {
				secret[fetch.RedactHeader(h)] = h
			}
			t.Headers = nil
			for _, line := range strings.Split(s, "\n") {
				if line = strings.TrimSpace(line); line == "" {
					continue
				}
				if h, ok := secret[line]; ok {
					line = h
				}
				t.Headers = append(t.Headers, line)
			}
			return nil
		}},
}

// tunablesForm edits a full engine.Tunables (U3, U7). Save refuses any
// invalid value with the engine's message and changes nothing.
type tunablesForm struct {
	entries  map[string]*widget.Entry
	strategy *widget.Select
	jitter   *widget.Check
	errLabel *widget.Label
	save     *widget.Button
	cancel   *widget.Button
	dlg      dialog.Dialog
	scroll   *container.Scroll
	base     engine.Tunables
}

// read parses the form over a copy of base; the first unparsable field is
// an error named like engine.Tunables.Validate names fields.
func (f *tunablesForm) read() (engine.Tunables, error) {
	t := f.base
	t.ThrottleStatuses = append([]int(nil), f.base.ThrottleStatuses...)
	t.Headers = slices.Clone(f.base.Headers)
	for _, fd := range slices.Concat(tunableFields, requestFields) {
		if err := fd.set(&t, f.entries[fd.name].Text); err != nil {
			return f.base, err
		}
	}
	st, err := engine.ParseStrategy(f.strategy.Selected)
	if err != nil {
		return f.base, err
	}
	t.Retry.Strategy = st
	t.Retry.Jitter = f.jitter.Checked
	t = t.Normalize()
	if err := t.Validate(); err != nil {
		return f.base, err
	}
	return t, nil
}

// showTunables opens the tunables form over t. apply runs on Save with
// validated tunables; when it fails the form stays open with its message.
// With slow set, apply runs off the Fyne thread (it writes the database).
func (w *Window) showTunables(title string, t engine.Tunables, apply func(engine.Tunables) error, slow bool) *tunablesForm {
	f := &tunablesForm{entries: map[string]*widget.Entry{}, base: t}
	var items []*widget.FormItem
	add := func(fields []tunableField) {
		for _, fd := range fields {
			e := widget.NewEntry()
			if fd.lines {
				e = widget.NewMultiLineEntry()
				e.SetMinRowsVisible(2)
			}
			e.SetText(fd.get(&t))
			f.entries[fd.name] = e
			items = append(items, &widget.FormItem{Text: fd.label, Widget: e, HintText: fd.hint})
		}
	}
	add(tunableFields)
	f.strategy = widget.NewSelect([]string{"exponential", "linear", "fixed"}, nil)
	f.strategy.SetSelected(t.Retry.Strategy.String())
	f.jitter = widget.NewCheck("add a random part to each retry delay", nil)
	f.jitter.SetChecked(t.Retry.Jitter)
	items = append(items,
		&widget.FormItem{Text: "Retry: strategy", Widget: f.strategy},
		&widget.FormItem{Text: "Retry: jitter", Widget: f.jitter})
	add(requestFields)
	form := widget.NewForm(items...)
	f.errLabel = widget.NewLabel("")
	f.errLabel.Importance = widget.DangerImportance
	f.errLabel.Wrapping = fyne.TextWrapWord
	f.errLabel.Hide()
	f.cancel = widget.NewButton("Cancel", func() { f.dlg.Hide() })
	f.save = widget.NewButtonWithIcon("Save", theme.ConfirmIcon(), func() {
		nt, err := f.read()
		if err != nil {
			f.fail(err)
			return
		}
		if !slow {
			if err := apply(nt); err != nil {
				f.fail(err)
				return
			}
			f.dlg.Hide()
			w.refreshSoon()
			return
		}
		f.save.Disable()
		w.background(func() {
			err := apply(nt)
			fyne.Do(func() {
				f.save.Enable()
				if err != nil {
					f.fail(err)
					return
				}
				f.dlg.Hide()
				w.refreshSoon()
			})
		})
	})
	f.save.Importance = widget.HighImportance
	buttons := container.NewHBox(layoutSpacer(), f.cancel, f.save)
	f.scroll = container.NewVScroll(form)
	content := container.NewBorder(nil, container.NewVBox(f.errLabel, buttons), nil, nil, f.scroll)
	f.dlg = dialog.NewCustomWithoutButtons(title, content, w.win)
	f.dlg.Resize(fyne.NewSize(560, min(w.win.Canvas().Size().Height-40, 760)))
	f.dlg.Show()
	w.form = f
	return f
}

// fail shows why Save was refused, naming fields by their labels (the
// engine names them by their settings: rate_per_min …); nothing was changed.
func (f *tunablesForm) fail(err error) {
	f.errLabel.SetText("Not saved — " + fieldLabels.Replace(err.Error()))
	f.errLabel.Show()
}

// fieldLabels renames the settings in an error after the form's labels,
// longest names first, so that retry.max_attempts is not read as retry.max.
var fieldLabels = func() *strings.Replacer {
	fields := slices.Concat(tunableFields, requestFields)
	slices.SortFunc(fields, func(a, b tunableField) int { return len(b.name) - len(a.name) })
	var pairs []string
	for _, fl := range fields {
		pairs = append(pairs, fl.name, "“"+fl.label+"”")
	}
	return strings.NewReplacer(pairs...)
}()
