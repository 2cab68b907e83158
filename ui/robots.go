package ui

import (
	"image/color"
	"regexp"
	"strconv"
	"strings"
	"time"

	"fyne.io/fyne/v2"

	"heed/engine"
)

// A host's robots.txt as the window says it (W4, W5, W10): in the hosts
// table's Robots column, and in the selected host's details.

// robotsState splits the engine's robots state ("ok, crawl-delay 2s") into
// its verdict ("ok") and its Crawl-delay (0 when none).
func robotsState(v engine.RobotsView) (verdict string, delay time.Duration) {
	verdict, d, ok := strings.Cut(v.State, ", crawl-delay ")
	if ok {
		delay, _ = time.ParseDuration(d)
	}
	return verdict, delay
}

// robotsShort is the Robots column: the verdict, with the Crawl-delay when
// there is one; then fewer words. A host no crawl has needed shows a dash.
func robotsShort(v engine.RobotsView, known bool) wording {
	verdict, delay := robotsState(v)
	if !known || verdict == "" {
		return say("—")
	}
	short := verdict
	switch {
	case strings.HasPrefix(verdict, "copy of "):
		short = "old copy"
	case strings.HasPrefix(verdict, "disallow all"):
		short = "disallow all"
	case strings.HasPrefix(verdict, "allow all"):
		short = "allow all"
	}
	if delay > 0 {
		d := fmtDur(delay)
		return say(verdict+", crawl-delay "+d, short+", crawl-delay "+d, short+" · delay "+d, short+" · "+d, short)
	}
	return say(verdict, short)
}

// robotsLook is how the Robots column draws a state: a verdict that holds
// the host back is a badge — strong (orange: the server said wait) when it
// keeps everything out for now, pale when an old copy stands in — and the
// others are plain text.
func robotsLook(v engine.RobotsView) (c color.NRGBA, strong, badge bool) {
	verdict, _ := robotsState(v)
	switch {
	case strings.HasPrefix(verdict, "disallow all"):
		return paintBackoff, true, true
	case strings.HasPrefix(verdict, "copy of "):
		return paintBackoff, false, true
	case verdict == "fetching":
		return paintWorking, false, true
	}
	return paintPaused, false, false
}

// robotsRank orders the Robots column: none, ok, allow all, fetching, an
// old copy, disallow all.
func robotsRank(v engine.RobotsView, known bool) float64 {
	verdict, delay := robotsState(v)
	rank := 0.0
	switch {
	case !known || verdict == "":
		return 0
	case verdict == "ok":
		rank = 1
	case strings.HasPrefix(verdict, "allow all"):
		rank = 2
	case verdict == "fetching":
		rank = 3
	case strings.HasPrefix(verdict, "copy of "):
		rank = 4
	default:
		rank = 5
	}
	return rank*1e6 + delay.Seconds()
}

var goDelay = regexp.MustCompile(`crawl-delay (\S+)`)

// plainDelays writes the Go durations of "crawl-delay 2s" as the window
// writes times: "crawl-delay 2 s".
func plainDelays(s string) string {
	return goDelay.ReplaceAllStringFunc(s, func(m string) string {
		d, err := time.ParseDuration(strings.TrimPrefix(m, "crawl-delay "))
		if err != nil {
			return m
		}
		return "crawl-delay " + fmtDur(d)
	})
}

// robotsDetail is the selected host's robots.txt in full: its verdict,
// when it was fetched and with what status, the rules in force and what
// its Crawl-delay does, and when it is read again; "" for a host no crawl
// has needed.
func robotsDetail(v engine.RobotsView, known bool, now time.Time) string {
	verdict, delay := robotsState(v)
	if !known || verdict == "" {
		return ""
	}
	parts := []string{"robots.txt: " + verdict}
	if !v.Fetched.IsZero() && !strings.HasPrefix(verdict, "copy of ") {
		fetched := "fetched " + fmtWhen(v.Fetched, now)
		if v.Status > 0 && !strings.Contains(verdict, "HTTP") {
			fetched = "HTTP " + strconv.Itoa(v.Status) + ", " + fetched
		}
		parts[0] += " (" + fetched + ")"
	}
	if v.Rules != "" && !strings.HasPrefix(verdict, v.Rules) {
		rules := plainDelays(v.Rules)
		if delay > 0 {
			rules += ": a request every " + fmtDur(delay) + " at most"
		}
		parts = append(parts, rules)
	}
	if v.Retry.After(now) {
		parts = append(parts, "read again in "+fmtDur(v.Retry.Sub(now)))
	}
	return strings.Join(parts, " · ")
}

// keptOut tallies the robots.txt rules that kept a host's URLs out, from
// its skipped jobs: "Disallow: /private/ (11 URLs)"; "" when none did.
func keptOut(jobs []engine.Job) string {
	var rules []string
	n := map[string]int{}
	for _, j := range jobs {
		rule, ok := strings.CutPrefix(j.LastError, "robots.txt: ")
		if !ok {
			continue
		}
		if n[rule] == 0 {
			rules = append(rules, rule)
		}
		n[rule]++
	}
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r + " (" + plural(n[r], "URL", "URLs") + ")"
	}
	return strings.Join(out, ", ")
}

// skips is what the selected host's skipped jobs say of its robots.txt:
// the rules that kept URLs out, read when its count of skipped jobs changes.
type skips struct {
	host    string
	n       int64 // the host's skipped jobs when read
	text    string
	loading bool
}

// loadSkips reads host's skipped jobs off the Fyne thread, for the rules
// that kept them out (the engine says how many rules are in force, not
// which).
func (hv *hostsView) loadSkips(host string, n int64) {
	hv.skips.loading = true
	eng := hv.w.eng
	hv.w.background(func() {
		jobs, err := eng.Reader().Jobs(bgCtx, engine.JobQuery{Host: host, State: engine.JobSkipped, Limit: 1000})
		text := keptOut(jobs)
		fyne.Do(func() {
			hv.skips = skips{host: host, n: n, text: text}
			if err != nil {
				hv.skips.text = "" // said nowhere else: the rules in force still show
			}
			if hv.selected == host {
				hv.updateRobots()
			}
		})
	})
}
