package ui

import (
	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"heed/engine"
	"heed/engine/crawl"
)

// scopes are the Crawl… dialog's scope choices (W1), in the words of
// heed crawl --scope, each with what it means.
var scopes = []struct{ word, label string }{
	{"host", "host — only the seed's host"},
	{"domain", "domain — the seed's whole domain, its subdomains too"},
	{"prefix", "prefix — only under the seed's folder (like wget --no-parent)"},
}

// crawlDialog is the Crawl… dialog (SPEC §10): the seeds, the scope, the
// depth, the most pages, whether to obey robots.txt, and under More
// options the patterns URLs must or must not match. Start stores the crawl
// off the Fyne thread; a reason the engine refuses it shows in the dialog,
// which stays open to fix it.
type crawlDialog struct {
	seeds    *widget.Entry
	scope    *widget.RadioGroup
	depth    *widget.Entry
	maxPages *widget.Entry
	robots   *widget.Check
	include  *widget.Entry
	exclude  *widget.Entry
	more     *widget.Accordion
	errLabel *widget.Label
	start    *widget.Button
	cancel   *widget.Button
	dlg      dialog.Dialog
}

// showCrawl opens the Crawl… dialog with seeds in it (one URL a line).
func (w *Window) showCrawl(seeds string) *crawlDialog {
	d := &crawlDialog{}
	d.seeds = widget.NewMultiLineEntry()
	d.seeds.SetPlaceHolder("The URLs to start from, one per line: https://example.com/docs/")
	d.seeds.Wrapping = fyne.TextWrapOff
	d.seeds.SetMinRowsVisible(3)
	d.seeds.SetText(seeds)
	labels := make([]string, len(scopes))
	for i, s := range scopes {
		labels[i] = s.label
	}
	d.scope = widget.NewRadioGroup(labels, nil)
	d.scope.Required = true
	d.scope.SetSelected(scopes[0].label)
	d.depth = widget.NewEntry()
	d.depth.SetText(strconv.Itoa(crawl.DefaultDepth))
	d.maxPages = widget.NewEntry()
	d.maxPages.SetPlaceHolder("no limit")
	d.robots = widget.NewCheck("Obey robots.txt: skip what the site asks crawlers not to fetch, and wait its crawl-delay", nil)
	d.robots.SetChecked(true)
	d.include = widget.NewMultiLineEntry()
	d.include.SetPlaceHolder(`e.g. /docs/ or \.html$`)
	d.include.SetMinRowsVisible(2)
	d.exclude = widget.NewMultiLineEntry()
	d.exclude.SetPlaceHolder(`e.g. \?sort= or /print/`)
	d.exclude.SetMinRowsVisible(2)
	hint := widget.NewLabel("Regular expressions on the whole URL, one per line: a URL is crawled when it matches " +
		"one of Include (if any) and none of Exclude; the others are counted, never fetched.")
	hint.Wrapping = fyne.TextWrapWord
	hint.SizeName = theme.SizeNameCaptionText
	patterns := container.NewBorder(nil, hint, nil, nil, container.NewGridWithColumns(2,
		container.NewBorder(widget.NewLabel("Include"), nil, nil, nil, d.include),
		container.NewBorder(widget.NewLabel("Exclude"), nil, nil, nil, d.exclude)))
	d.more = widget.NewAccordion(widget.NewAccordionItem("More options: include and exclude patterns", patterns))
	form := widget.NewForm(
		&widget.FormItem{Text: "Seeds", Widget: d.seeds},
		&widget.FormItem{Text: "Scope", Widget: d.scope, HintText: "links elsewhere are counted, never fetched"},
		&widget.FormItem{Text: "Depth", Widget: d.depth, HintText: "links away from a seed; 0 fetches the seeds only"},
		&widget.FormItem{Text: "Max pages", Widget: d.maxPages, HintText: "the most URLs the crawl may queue; empty for no limit"},
		&widget.FormItem{Text: "robots.txt", Widget: d.robots},
	)
	d.errLabel = widget.NewLabel("")
	d.errLabel.Importance = widget.DangerImportance
	d.errLabel.Wrapping = fyne.TextWrapWord
	d.errLabel.Hide()
	d.cancel = widget.NewButton("Cancel", func() { d.dlg.Hide() })
	d.start = widget.NewButtonWithIcon("Start crawl", theme.MediaPlayIcon(), func() { w.onCrawlStart(d) })
	d.start.Importance = widget.HighImportance
	bottom := container.NewVBox(d.errLabel, container.NewHBox(layoutSpacer(), d.cancel, d.start))
	content := container.NewBorder(nil, bottom, nil, nil, container.NewVScroll(container.NewVBox(form, d.more)))
	d.dlg = dialog.NewCustomWithoutButtons("Crawl a site", content, w.win)
	d.dlg.Resize(fyne.NewSize(min(760, w.win.Canvas().Size().Width-40), min(700, w.win.Canvas().Size().Height-40)))
	d.dlg.Show()
	w.win.Canvas().Focus(d.seeds)
	w.crawlDlg = d
	return d
}

// read is the crawl the dialog describes, or why it is not one yet.
func (d *crawlDialog) read() (engine.Crawl, error) {
	c := engine.Crawl{Seeds: lines(d.seeds.Text), Robots: d.robots.Checked,
		Include: lines(d.include.Text), Exclude: lines(d.exclude.Text)}
	if len(c.Seeds) == 0 {
		return c, fmt.Errorf("give at least one URL to start from")
	}
	for _, s := range scopes {
		if s.label == d.scope.Selected {
			c.Scope = s.word
		}
	}
	var err error
	if c.Depth, err = wholeNumber(d.depth.Text, crawl.DefaultDepth); err != nil {
		return c, fmt.Errorf("depth: %v", err)
	}
	if c.MaxPages, err = wholeNumber(d.maxPages.Text, 0); err != nil {
		return c, fmt.Errorf("max pages: %v", err)
	}
	return c, nil
}

// wholeNumber reads a count of 0 or more; empty is def.
func wholeNumber(s string, def int) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a whole number of 0 or more", s)
	}
	return n, nil
}

// lines are the lines of s that are not blank, trimmed.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// onCrawlStart stores the crawl the dialog describes (Engine.StartCrawl)
// off the Fyne thread. Started, the dialog closes and the Crawls tab shows
// the crawl; refused, the dialog says why and stays.
func (w *Window) onCrawlStart(d *crawlDialog) {
	c, err := d.read()
	if err != nil {
		d.fail(err)
		return
	}
	d.start.Disable()
	d.errLabel.Hide()
	w.background(func() {
		id, rep, err := w.eng.StartCrawl(bgCtx, c)
		fyne.Do(func() {
			d.start.Enable()
			if err != nil {
				d.fail(err)
				return
			}
			d.dlg.Hide()
			w.note(crawlStarted(id, rep))
			w.selectTab(tabCrawls)
			w.crawls.selected = id
			w.crawls.reload()
			if len(rep.Queued) == 0 {
				dialog.ShowInformation(fmt.Sprintf("Crawl %d fetches nothing", id),
					"Every seed was known already, so none is fetched again, and no link is followed from it.\n"+
						"Cancel the crawl, or start it from another URL.", w.win)
			}
			w.refreshSoon()
		})
	})
}

// crawlStarted is the status line's note for a crawl just started.
func crawlStarted(id int64, rep engine.AddReport) string {
	s := fmt.Sprintf("crawl %d started: %s queued", id, plural(len(rep.Queued), "seed", "seeds"))
	if n := len(rep.Duplicates); n > 0 {
		s += fmt.Sprintf(", %s known already", plural(n, "seed", "seeds"))
	}
	return s
}

// fail shows why the crawl was not started; nothing was stored.
func (d *crawlDialog) fail(err error) {
	d.errLabel.SetText("Not started — " + err.Error())
	d.errLabel.Show()
}
