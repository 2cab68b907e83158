package engine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"heed/engine/fetch"
	"heed/engine/quota"
	"heed/engine/robots"
)

// robots.txt (W4, W5). Before a crawl's first request to a host, the
// attempt that would make it fetches the host's /robots.txt instead,
// through the host's governor like any request, and then, when the rules
// allow its URL, goes on through the governor again. Each host's verdict
// is kept here and in the Store, so a restart does not fetch it again
// within a day.

const (
	robotsAgent = "heed"              // the product token groups are matched on
	robotsFresh = 24 * time.Hour      // a fetched robots.txt is used this long
	robotsStale = 30 * 24 * time.Hour // a copy this young stands in while the file is unreachable
	robotsHops  = 5                   // redirects followed for a robots.txt
)

// robotsCache holds each crawled host's robots.txt verdict.
type robotsCache struct {
	mu    sync.Mutex
	hosts map[string]*hostRobots
}

// hostRobots is what Heed knows of one host's robots.txt.
type hostRobots struct {
	loaded bool          // the Store was asked
	file   RobotsFile    // the last fetch whose verdict stands (2xx, 4xx); Fetched zero: none
	rules  *robots.Rules // what file says to Heed
	// failed says how the last fetch failed for now (429, 5xx, no answer),
	// "" when it did not; the file is fetched again from retryAt.
	failed   string
	retryAt  time.Time
	fetching chan struct{} // closed when the fetch in progress ends; nil when none
}

// robotsAnswer is what an attempt does about its host's robots.txt.
type robotsAnswer struct {
	rules *robots.Rules   // the rules in force; nil with fetch or wait
	fetch bool            // this attempt fetches the file, and calls done after
	wait  <-chan struct{} // another attempt fetches it: wait, then ask again
	until time.Time       // the file is unreachable and no copy stands in: nothing but it is fetched until then
	why   string          // with until: how the fetch failed
}

func (c *robotsCache) entry(host string) *hostRobots {
	h := c.hosts[host]
	if h == nil {
		h = &hostRobots{}
		c.hosts[host] = h
	}
	return h
}

// usable is the rules of the file kept that stand at now: fetched within a
// day, or, while the file is unreachable, within 30 days; nil when none.
func (h *hostRobots) usable(now time.Time) *robots.Rules {
	age := now.Sub(h.file.Fetched)
	switch {
	case h.file.Fetched.IsZero():
		return nil
	case h.failed == "" && age < robotsFresh, h.failed != "" && age < robotsStale:
		return h.rules
	}
	return nil
}

// due says whether the file is to be fetched at now: never fetched, kept
// over a day, or unreachable when last asked and its backoff over.
func (h *hostRobots) due(now time.Time) bool {
	if h.failed != "" {
		return !now.Before(h.retryAt)
	}
	return h.file.Fetched.IsZero() || now.Sub(h.file.Fetched) >= robotsFresh
}

// known returns the rules in force for host when they are known now, nil
// when not (never fetched, not loaded, or due again): a link to such a
// host is checked when its job is dispatched.
func (c *robotsCache) known(host string) *robots.Rules {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := c.hosts[host]; h != nil && h.fetching == nil {
		if now := time.Now(); !h.due(now) {
			return h.usable(now)
		}
	}
	return nil
}

// ask says what an attempt on host does about its robots.txt at now,
// loading the stored copy the first time.
func (e *Engine) askRobots(ctx context.Context, host string, now time.Time) robotsAnswer {
	c := &e.robots
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.entry(host)
	if !h.loaded {
		h.loaded = true
		f, ok, err := e.store.Robots(ctx, host)
		switch {
		case err != nil:
			e.log.Error("loading a host's robots.txt", "host", host, "err", err)
		case ok:
			h.file = f
			h.rules, _ = robots.Verdict(f.Status, f.Body, robotsAgent)
			if d, ok := h.rules.CrawlDelay(); ok {
				e.core.SetCrawlDelay(host, d)
			}
		}
	}
	if h.fetching != nil {
		return robotsAnswer{wait: h.fetching}
	}
	if !h.due(now) {
		if r := h.usable(now); r != nil {
			return robotsAnswer{rules: r}
		}
		return robotsAnswer{rules: robots.DisallowAll(), until: h.retryAt, why: h.failed}
	}
	h.fetching = make(chan struct{})
	return robotsAnswer{fetch: true}
}

// robotsDone ends the fetch askRobots asked for: f is what it got, rules
// its verdict, failed how it failed for now ("" when the verdict stands),
// retryAt when to fetch again then. It returns the answer that follows.
func (e *Engine) robotsDone(host string, f RobotsFile, rules *robots.Rules, failed string, retryAt time.Time) robotsAnswer {
	c := &e.robots
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.entry(host)
	if h.fetching != nil {
		close(h.fetching)
		h.fetching = nil
	}
	if failed == "" {
		h.file, h.rules, h.failed = f, rules, ""
		if err := e.store.SaveRobots(f); err != nil {
			e.log.Error("keeping a host's robots.txt", "host", host, "err", err)
		}
		d, _ := rules.CrawlDelay()
		e.core.SetCrawlDelay(host, d)
		return robotsAnswer{rules: rules}
	}
	h.failed, h.retryAt = failed, retryAt
	if r := h.usable(f.Fetched); r != nil {
		return robotsAnswer{rules: r} // a copy younger than 30 days stands in (W4)
	}
	return robotsAnswer{rules: robots.DisallowAll(), until: retryAt, why: failed}
}

// RobotsView is a host's robots.txt as the window and heed hosts show it (W10).
type RobotsView struct {
	// State is "ok", "allow all (HTTP 404)", "disallow all (HTTP 503)",
	// "fetching", or "copy of 2 Dec 15:04, HTTP 503 now"; "" when Heed has
	// not needed it.
	State   string
	Rules   string // the rules in force in short: "3 rules for heed, crawl-delay 5s"
	Fetched time.Time
	Status  int
	Retry   time.Time // unreachable: when it is fetched again
}

// String is the view in one line: "robots: ok, crawl-delay 5s".
func (v RobotsView) String() string {
	if v.State == "" {
		return ""
	}
	return "robots: " + v.State
}

// Robots returns what Heed knows of host's robots.txt; ok is false when no
// crawl has needed it since Heed started.
func (e *Engine) Robots(host string) (v RobotsView, ok bool) {
	c := &e.robots
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.hosts[host]
	if h == nil || (!h.loaded && h.fetching == nil) {
		return v, false
	}
	v.Fetched, v.Status = h.file.Fetched, h.file.Status
	v.Rules = h.rules.String()
	switch {
	case h.fetching != nil:
		v.State = "fetching"
	case h.failed != "" && h.usable(time.Now()) != nil:
		v.State = fmt.Sprintf("copy of %s, %s now", h.file.Fetched.Local().Format("2 Jan 15:04"), h.failed)
		v.Retry = h.retryAt
	case h.failed != "":
		v.State, v.Rules, v.Retry = "disallow all ("+h.failed+")", "disallow all", h.retryAt
	case h.file.Fetched.IsZero():
		return v, false
	case 200 <= h.file.Status && h.file.Status <= 299:
		v.State = "ok"
	default:
		v.State = fmt.Sprintf("allow all (HTTP %d)", h.file.Status)
	}
	if d, ok := h.rules.CrawlDelay(); ok && h.failed == "" {
		v.State += fmt.Sprintf(", crawl-delay %v", d)
	}
	return v, true
}

// obeyRobots is the robots.txt step of a crawl's attempt (W4): it reports
// whether the attempt goes on to its URL u, with t.d a dispatch for it. It
// does not when robots.txt disallows u (the job is skipped, W6), when the
// file is unreachable (the job waits), or when the attempt was stopped.
func (t *try) obeyRobots(u *url.URL) bool {
	e, job := t.e, t.job
	cr := e.crawlOf(job.CrawlID)
	if cr == nil || !cr.Robots || isRobotsTxt(u) {
		return true
	}
	fetched := false // this attempt fetched the file: its dispatch is spent
	for {
		ans := e.askRobots(t.ctx, t.d.Host, time.Now())
		if ans.wait != nil {
			select {
			case <-ans.wait:
				continue
			case <-t.ctx.Done():
				t.giveBack(fetched, "")
				return false
			}
		}
		if ans.fetch {
			var ok bool
			if ans, ok = t.fetchRobots(u); !ok {
				return false
			}
			fetched = true
		}
		if !ans.until.IsZero() {
			// Unreachable, no copy: the job waits for the next fetch.
			t.giveBack(fetched, fmt.Sprintf("robots.txt: %s, so nothing else is fetched for now (W4)", ans.why), ans.until)
			return false
		}
		if ok, rule := ans.rules.Allowed(u.RequestURI()); !ok {
			t.skip(fetched, robotsSkip(rule))
			return false
		}
		if !fetched {
			return true
		}
		// The file took this attempt's request: the URL's own goes through
		// the governor again.
		d, err := e.acquireHop(t.ctx, u)
		if err != nil {
			e.end(t, Decision{Reason: heldReason(err)}, fetch.Result{Part: job.Part}, nil, "canceled")
			return false
		}
		t.d = d
		return true
	}
}

// heldReason is the reason of an attempt stopped while it waited for its
// host: set when a paused host holds it, "" when Heed or the person
// stopped it.
func heldReason(err error) string {
	if errors.Is(err, errHeld) {
		return err.Error()
	}
	return ""
}

// fetchRobots fetches the robots.txt of u's host through the host's
// governor (t.d is a dispatch for it), following up to robotsHops
// redirects, each in history with outcome "robots" (W4). ok is false when
// the attempt ended here: stopped, or the file unreachable and the job
// given its retry decision.
func (t *try) fetchRobots(u *url.URL) (robotsAnswer, bool) {
	e, job := t.e, t.job
	host := t.d.Host
	target := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}
	robotsURL := target.String()
	d := t.d
	var (
		res  fetch.Result
		body []byte
		dec  Decision
		row  Attempt
	)
	for hop := 0; ; hop++ {
		start := time.Now()
		res, body = e.fetch.Get(t.ctx, target, robots.MaxSize)
		end := time.Now()
		o := Outcome{Status: res.Status, RetryAfter: res.RetryAfter, Class: classOf(res), Err: res.Err, Attempts: job.Attempts}
		if st, ok := quota.Parse(res.Header, end); ok {
			o.Quota = &st
		}
		dec = e.core.Observe(d, o, end)
		ra, _ := ParseRetryAfter(res.RetryAfter, end)
		row = Attempt{JobID: job.ID, URL: fetch.Redact(target.String()), Host: d.Host, Attempt: job.Attempts,
			Throttled: job.Throttled, StartedAt: start, Duration: end.Sub(start), Status: res.Status,
			Bytes: res.Received, RetryAfter: ra, Level: dec.Level, Breaker: dec.Breaker, Outcome: "robots"}
		if res.Err != nil {
			row.Error = res.Err.Error()
		}
		if t.ctx.Err() != nil {
			e.robotsDone(host, RobotsFile{}, nil, "not fetched: stopped", time.Now())
			e.end(t, Decision{}, fetch.Result{Part: job.Part}, &row, "canceled")
			return robotsAnswer{}, false
		}
		if res.Redirect == nil || res.Class != fetch.OK || hop >= robotsHops {
			break
		}
		e.record(row)
		next, err := e.acquireHop(t.ctx, res.Redirect)
		if err != nil {
			e.robotsDone(host, RobotsFile{}, nil, "not fetched: stopped", time.Now())
			e.end(t, Decision{Reason: heldReason(err)}, fetch.Result{Part: job.Part}, nil, "canceled")
			return robotsAnswer{}, false
		}
		d, target = next, res.Redirect
	}
	now := time.Now()
	status := res.Status
	loop := res.Redirect != nil && res.Class == fetch.OK // still redirected after robotsHops
	if loop || res.Class != fetch.OK && res.Class != fetch.HTTPStatus || status >= 200 && status <= 299 && !res.Done {
		// No answer, a body cut short, or redirects without end: the file
		// is unreachable, not unavailable — never "allow all" on an error
		// (RELIABILITY 46).
		status = 0
	}
	rules, temporary := robots.Verdict(status, body, robotsAgent)
	f := RobotsFile{Host: host, Fetched: now, Status: status, Body: body}
	if !temporary {
		e.record(row)
		ans := e.robotsDone(host, f, rules, "", time.Time{})
		if status >= 200 && status <= 299 {
			t.found = append(t.found, e.sitemapJobs(job, robotsURL, rules)...)
		}
		return ans, true
	}
	failed := fmt.Sprintf("HTTP %d", status)
	switch {
	case loop:
		failed = fmt.Sprintf("more than %d redirects", robotsHops)
	case status == 0 && res.Err != nil:
		failed = "no answer: " + res.Err.Error()
	case status == 0:
		failed = "no answer"
	}
	retryAt := dec.NextTry
	if retryAt.IsZero() {
		retryAt = dec.NotBefore
	}
	if retryAt.Before(now) {
		retryAt = now.Add(time.Minute)
	}
	ans := e.robotsDone(host, f, nil, failed, retryAt)
	if ans.until.IsZero() {
		e.record(row) // a copy stands in: the URL goes on
		return ans, true
	}
	// Disallow all for now: the job takes the decision the failed fetch
	// earned, as its own request would have (R1–R5, R3 for a 429).
	outcome := "failed"
	switch {
	case dec.Throttled:
		outcome = "throttled"
	case dec.Retry:
		outcome = "retry"
	}
	dec.Reason = fmt.Sprintf("robots.txt: %s, so nothing else is fetched for now (W4)", failed)
	if outcome == "failed" {
		dec.Fail = true
		dec.Reason = fmt.Sprintf("robots.txt could not be fetched (%s) within %s: nothing else may be fetched (W4)",
			failed, plural(job.Attempts, "attempt"))
	}
	row.Error = dec.Reason
	e.end(t, dec, fetch.Result{Part: job.Part, Status: res.Status}, &row, outcome)
	return robotsAnswer{}, false
}

// giveBack hands the job back to its host's queue without a request of
// its own, due at until (now when zero), its attempt not counted (G42);
// spent says the dispatch was used (by a robots.txt fetch) and observed.
func (t *try) giveBack(spent bool, reason string, until ...time.Time) {
	if !spent {
		t.e.core.Observe(t.d, Outcome{Class: ClassCanceled}, time.Now())
	}
	end := End{JobID: t.job.ID, State: JobQueued, NotBefore: time.Now(), GiveBack: true,
		Resume: Resume{Part: t.job.Part, Bytes: t.job.Bytes, Size: t.job.Size, ETag: t.job.ETag,
			LastModified: t.job.LastModified, Name: t.job.Name}, Error: reason, Found: t.found}
	if len(until) > 0 && !until[0].IsZero() {
		end.NotBefore = until[0]
	}
	t.e.finishWithout(t, end, "retry")
}

// skip ends the job skipped, with why (W6), without a request.
func (t *try) skip(spent bool, why string) {
	if !spent {
		t.e.core.Observe(t.d, Outcome{Class: ClassCanceled}, time.Now())
	}
	end := End{JobID: t.job.ID, State: JobSkipped, GiveBack: true, Error: why, Found: t.found,
		Resume: Resume{Size: -1}}
	if t.job.Bytes > 0 { // a part from an earlier run stays, recorded
		end.Resume = Resume{Part: t.job.Part, Bytes: t.job.Bytes, Size: t.job.Size, ETag: t.job.ETag,
			LastModified: t.job.LastModified, Name: t.job.Name}
	} else {
		t.e.fetch.PruneDirs(t.job.Part) // the folders chosen for it, if nothing else is in them
	}
	t.e.finishWithout(t, end, "skipped")
}
