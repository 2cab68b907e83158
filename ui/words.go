package ui

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"heed/engine"
	"heed/engine/fetch"
)

// This file says what the window shows in words a person uses: how long a
// wait lasts, why a host waits, how many tokens it can spend. Every
// function here is pure, so the tests read like the screen.

// fmtDur shows a countdown or a length of time: "0.4 s", "9.5 s", "49 s",
// "3 min 12 s", "2 h 05 min", "3 d 4 h". A countdown is rounded up, so it
// never reads 0 while the wait is not over.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0 s"
	case d < 10*time.Second:
		tenths := (d + 100*time.Millisecond - 1) / (100 * time.Millisecond)
		if tenths%10 == 0 {
			return strconv.Itoa(int(tenths/10)) + " s"
		}
		return strconv.FormatFloat(float64(tenths)/10, 'f', 1, 64) + " s"
	}
	s := int64((d + time.Second - 1) / time.Second)
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + " s"
	case s < 3600:
		if s%60 == 0 {
			return strconv.FormatInt(s/60, 10) + " min"
		}
		return fmt.Sprintf("%d min %d s", s/60, s%60)
	case s < 48*3600:
		if s%3600/60 == 0 {
			return fmt.Sprintf("%d h", s/3600)
		}
		return fmt.Sprintf("%d h %02d min", s/3600, s%3600/60)
	case s%86400/3600 == 0:
		return fmt.Sprintf("%d d", s/86400)
	}
	return fmt.Sprintf("%d d %d h", s/86400, s%86400/3600)
}

// fmtSetting shows a tunable duration the way a person types it: "250 ms",
// "1.5 s", "30 s", "1 min", "1 min 30 s", "24 h", "0 s". parseSetting
// reads it back.
func fmtSetting(d time.Duration) string {
	switch {
	case d == 0:
		return "0 s"
	case d < 0 || d%time.Millisecond != 0:
		return d.String() // never a tunable: Go's form is exact
	case d < time.Second:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + " ms"
	}
	var parts []string
	if h := d / time.Hour; h > 0 {
		parts = append(parts, strconv.FormatInt(int64(h), 10)+" h")
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		parts = append(parts, strconv.FormatInt(int64(m), 10)+" min")
		d -= m * time.Minute
	}
	if d > 0 {
		parts = append(parts, strconv.FormatFloat(d.Seconds(), 'f', -1, 64)+" s")
	}
	return strings.Join(parts, " ")
}

// unitWords maps the unit words parseSetting accepts to Go's units.
var unitWords = map[string]string{
	"ns": "ns", "us": "us", "µs": "µs",
	"ms": "ms", "msec": "ms", "millisecond": "ms", "milliseconds": "ms",
	"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
	"m": "m", "min": "m", "mins": "m", "minute": "m", "minutes": "m",
	"h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
	"d": "d", "day": "d", "days": "d",
}

var settingToken = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Zµ]+)`)

// parseSetting reads a duration as a person writes it — "1 min", "30 s",
// "250 ms", "1 min 30 s", "1.5 s", "2 hours" — or in Go's syntax ("1m30s",
// "250ms"). A number needs its unit: "30" alone is refused, since 30 ms
// and 30 s are both plausible.
func parseSetting(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty")
	}
	if d, err := time.ParseDuration(in); err == nil {
		return d, nil
	}
	neg := strings.HasPrefix(in, "-")
	rest := strings.TrimPrefix(in, "-")
	var total float64
	for strings.TrimSpace(rest) != "" {
		m := settingToken.FindStringSubmatch(rest)
		if m == nil {
			if _, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
				return 0, fmt.Errorf("%q needs a unit, such as %s s or %s ms", s, strings.TrimSpace(rest), strings.TrimSpace(rest))
			}
			return 0, fmt.Errorf("%q is not a duration like 250 ms, 30 s or 2 min", s)
		}
		unit, ok := unitWords[strings.ToLower(m[2])]
		if !ok {
			return 0, fmt.Errorf("%q: unknown unit %q (use ms, s, min or h)", s, m[2])
		}
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration like 250 ms, 30 s or 2 min", s)
		}
		var per time.Duration
		switch unit {
		case "ns":
			per = time.Nanosecond
		case "us", "µs":
			per = time.Microsecond
		case "ms":
			per = time.Millisecond
		case "s":
			per = time.Second
		case "m":
			per = time.Minute
		case "h":
			per = time.Hour
		case "d":
			per = 24 * time.Hour
		}
		total += n * float64(per)
		rest = rest[len(m[0]):]
		rest = strings.TrimLeft(rest, " ,")
	}
	if total > math.MaxInt64 {
		return 0, fmt.Errorf("%q is too long", s)
	}
	d := time.Duration(math.Round(total))
	if neg {
		d = -d
	}
	return d, nil
}

// fmtRate shows requests per minute compactly: "60/min", "0.5/min".
func fmtRate(r float64) string {
	switch {
	case r >= 100:
		return strconv.FormatFloat(r, 'f', 0, 64) + "/min"
	case r >= 1:
		return strconv.FormatFloat(r, 'g', 3, 64) + "/min"
	}
	return strconv.FormatFloat(r, 'g', 2, 64) + "/min"
}

// spendable is how many whole tokens a host can spend now: a part of a
// token buys no request, so 2.97 of 4 is 2.
func spendable(tokens float64) int {
	if tokens <= 0 || math.IsNaN(tokens) {
		return 0
	}
	// A bucket refilled to the brim can read 3.9999999 in floating point.
	return int(math.Floor(tokens + 1e-9))
}

// tokensText is the Tokens column: whole tokens out of the burst, "2 / 4".
func tokensText(s *engine.HostSnapshot) string {
	return strconv.Itoa(min(spendable(s.Tokens), s.Burst)) + " / " + strconv.Itoa(s.Burst)
}

// plural is "1 URL", "3 URLs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmtInt(int64(n)) + " " + many
}

// hostFacts is what the window knows of a host beyond its snapshot: the
// last Retry-After it sent (from its timeline), 0 when none is known.
type hostFacts struct {
	retryAfter time.Duration
}

// dueIn is how long until the host may dispatch, from its snapshot.
func dueIn(s *engine.HostSnapshot) time.Duration {
	if s.NextDue.IsZero() || s.At.IsZero() {
		return 0
	}
	return max(s.NextDue.Sub(s.At), 0)
}

// hostSentence says what a host is doing and, for a wait, how long it
// lasts and why, as a person would: "next request in 0.4 s (60/min)",
// "backing off 49 s after 7 throttles (server asked 1 s)", "breaker open:
// 5 failures in a row, probe in 28 s"; then the same in fewer words, for a
// narrower column.
func hostSentence(s *engine.HostSnapshot, f hostFacts) wording {
	switch stateRank(s) {
	case stOpen:
		probe := "probe in " + fmtDur(s.HalfOpenIn)
		if s.HalfOpenIn <= 0 {
			probe = "probe due now"
		}
		if s.Failures > 0 {
			return say(fmt.Sprintf("breaker open: %s in a row, %s", plural(s.Failures, "failure", "failures"), probe),
				fmt.Sprintf("breaker open: %s, %s", plural(s.Failures, "failure", "failures"), probe),
				"breaker open · "+probe, "open · "+probe)
		}
		return say("breaker open (tripped by hand), "+probe, "breaker open (by hand), "+probe, "breaker open · "+probe,
			"open · "+probe)
	case stPaused:
		if !s.Paused {
			return say("paused: everything is paused (Resume all)", "paused (all)")
		}
		if why, asked, ok := retryAfterPause(s.PauseReason); ok {
			return say("paused: "+why, "paused: the server asked to wait "+asked, "paused (Retry-After)")
		}
		switch s.PauseReason {
		case "", "user", "paused from the window", "paused from the command line":
			return say("paused by you")
		}
		return say("paused: "+s.PauseReason, "paused")
	case stRunning:
		long := "downloading: " + plural(s.Inflight, "request", "requests") + " in flight"
		if s.GateIn > 0 {
			return say(long+", then backing off "+fmtDur(s.GateIn), fmt.Sprintf("downloading (%d), then backing off", s.Inflight),
				fmt.Sprintf("downloading (%d)", s.Inflight))
		}
		return say(long, fmt.Sprintf("downloading (%d)", s.Inflight))
	case stHalfOpen:
		if s.ProbeOut {
			return say("probing: one request decides whether the breaker closes", "probing the breaker", "probing")
		}
		return say("half-open: the next request is a probe", "half-open")
	case stIdle:
		return say("idle: nothing queued", "idle")
	case stReady:
		return say("ready: the next request starts now", "ready")
	}
	switch s.Waiting {
	case engine.WaitGate:
		in := fmtDur(s.GateIn)
		asked := ""
		if f.retryAfter > 0 {
			asked = " (server asked " + fmtDur(f.retryAfter) + ")"
		}
		if s.Level > 0 {
			return say("backing off "+in+" after "+plural(s.Level, "throttle", "throttles")+asked,
				"backing off "+in+asked, "backing off "+in)
		}
		return say("waiting "+in+" as the server asked", "waiting "+in)
	case engine.WaitToken:
		return say("next request in "+fmtDur(dueIn(s))+" ("+fmtRate(s.RatePerMin)+")", "next in "+fmtDur(dueIn(s)))
	case engine.WaitJitter:
		return say("next request in "+fmtDur(dueIn(s))+" (random spacing)", "next in "+fmtDur(dueIn(s)))
	case engine.WaitBreaker:
		return say("waiting for the probe's answer", "probing")
	case engine.WaitInflightCap:
		return say("at its limit of "+plural(s.MaxInflight, "request", "requests")+" at once", "at its limit")
	case engine.WaitGlobalCap:
		return say("waiting for a free slot (limits over all hosts)", "global limit")
	case engine.WaitRetryDelay:
		if d := dueIn(s); d > 0 {
			return say("next try in "+fmtDur(d)+" (retry delay after an error)", "retry in "+fmtDur(d))
		}
		return say("waiting for a retry delay", "retry delay")
	case engine.WaitLoading:
		return say("reading its next jobs from the database", "loading")
	case engine.WaitQuota:
		in := fmtDur(dueIn(s))
		if s.Quota != "" {
			return say("next request in "+in+" (the server's quota: "+s.Quota+")",
				"next request in "+in+" (the server's quota)", "next in "+in+" (quota)", "next in "+in)
		}
		return say("next request in "+in+" (the server's quota)", "next in "+in+" (quota)", "next in "+in)
	case engine.WaitCrawlDelay:
		in := fmtDur(dueIn(s))
		if s.CrawlDelay > 0 {
			delay := fmtDur(s.CrawlDelay)
			return say("next request in "+in+" (robots.txt asks for "+delay+" between requests)",
				"next request in "+in+" (crawl-delay "+delay+")", "next in "+in+" (crawl-delay)", "next in "+in)
		}
		return say("next request in "+in+" (robots.txt crawl-delay)", "next in "+in+" (crawl-delay)", "next in "+in)
	}
	if d := dueIn(s); d > 0 { // a reason this window does not know yet
		return say("next request in "+fmtDur(d)+" ("+s.Waiting.String()+")", "next in "+fmtDur(d))
	}
	return say("waiting ("+s.Waiting.String()+")", "waiting")
}

var retryAfterTooLong = regexp.MustCompile(`^Retry-After (.+) exceeds max_retry_after (\S+)$`)

// retryAfterPause rewrites the engine's reason for pausing a host whose
// Retry-After is longer than it may wait: "the server asked to wait 3 h,
// more than Max Retry-After (24 h): resume it to go on".
func retryAfterPause(reason string) (why, asked string, ok bool) {
	m := retryAfterTooLong.FindStringSubmatch(reason)
	if m == nil {
		return "", "", false
	}
	asked = m[1]
	if d, err := time.ParseDuration(asked); err == nil {
		asked = fmtDur(d)
	}
	limit := m[2]
	if d, err := time.ParseDuration(limit); err == nil {
		limit = fmtDur(d)
	}
	return "the server asked to wait " + asked + ", more than Max Retry-After (" + limit + ")", asked, true
}

var retryAfterDetail = regexp.MustCompile(`Retry-After (\S+)`)

// retryAfterOf returns the Retry-After an event records (its detail says
// "…, Retry-After 2.058s"), or false when it has none.
func retryAfterOf(e engine.Event) (time.Duration, bool) {
	if e.Kind != engine.EventThrottle && e.Kind != engine.EventRetryAfter {
		return 0, false
	}
	m := retryAfterDetail.FindStringSubmatch(e.Detail)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimRight(m[1], ",;"))
	return d, err == nil
}

// outcomeWords is how the window names a history outcome: the engine
// stores "canceled" for an attempt cut off (by the person, or by Heed
// stopping), which the window calls "stopped", not to be confused with a
// cancelled job.
func outcomeWords(o string) string {
	if o == "canceled" {
		return "stopped"
	}
	return o
}

// outcomeOf is outcomeWords backwards, for the filter.
func outcomeOf(words string) string {
	if words == "stopped" {
		return "canceled"
	}
	return words
}

// maskURL is a URL as the window shows it: its password masked
// (fetch.Redact), as "user:***@" rather than Redact's escaped
// "user:%2A%2A%2A@".
func maskURL(raw string) string {
	return strings.Replace(fetch.Redact(raw), ":%2A%2A%2A@", ":***@", 1)
}

// tryText is the History "Try" column: the attempt number, and how many
// throttled tries came before it, which use no attempt (R3): "2 (after 3
// throttled)".
func tryText(a *engine.Attempt) string {
	s := strconv.Itoa(a.Attempt)
	if a.Throttled > 0 {
		s += " (after " + strconv.Itoa(a.Throttled) + " throttled)"
	}
	return s
}

// shortenMiddle cuts s in its middle so that fits(s) holds, keeping its
// start (a URL's host) and its end (where URLs differ: the file name):
// "https://example.com/…/file-0042.bin". A URL keeps its scheme and host
// whole when there is room, then its last path segment.
func shortenMiddle(s string, fits func(string) bool) string {
	if fits(s) {
		return s
	}
	r := []rune(s)
	// Prefer a cut after the host and before the last segment.
	head := 0
	if i := strings.Index(s, "://"); i >= 0 {
		if j := strings.IndexByte(s[i+3:], '/'); j >= 0 {
			head = len([]rune(s[:i+3+j+1]))
		}
	}
	tail := len(r)
	if i := strings.LastIndexByte(s, '/'); i >= 0 && len([]rune(s[:i])) >= head {
		tail = len([]rune(s[:i]))
	}
	if head > 0 && tail < len(r) && tail > head {
		if c := string(r[:head]) + "…" + string(r[tail:]); fits(c) {
			// Give back as many whole segments of the middle as fit, from
			// its end: ".../quarterly/file-0042.bin", never "…terly/".
			best := tail
			for i := tail - 1; i > head; i-- {
				if r[i] != '/' {
					continue
				}
				if !fits(string(r[:head]) + "…" + string(r[i:])) {
					break
				}
				best = i
			}
			return string(r[:head]) + "…" + string(r[best:])
		}
	}
	// Then without the scheme: "example.com/…/file-0042.bin".
	if i := strings.Index(s, "://"); i >= 0 && head > 0 && tail < len(r) && tail > head {
		skip := len([]rune(s[:i+3]))
		if c := string(r[skip:head]) + "…" + string(r[tail:]); fits(c) {
			return c
		}
	}
	// Then the last segment alone: "…/file-0042.bin".
	if tail < len(r) {
		if c := "…" + string(r[tail:]); fits(c) {
			return c
		}
	}
	// Otherwise keep a part of both ends, more of the end.
	lo, hi := 0, len(r) // keeping lo runes fits, hi does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(cutMiddle(r, mid)) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return cutMiddle(r, lo)
}

// cutMiddle keeps keep runes of r: a third from the start, the rest from
// the end, with "…" between.
func cutMiddle(r []rune, keep int) string {
	if keep >= len(r) {
		return string(r)
	}
	front := keep / 3
	back := keep - front
	return strings.TrimRightFunc(string(r[:front]), unicode.IsSpace) + "…" + string(r[len(r)-back:])
}
