package engine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"heed/engine/fetch"
	"heed/engine/quota"
)

// errUserStop is the cancellation cause when a person paused or cancelled a job.
var errUserStop = errors.New("stopped by the user")

// maxPieces is how many short ranges (fetch.MoreRanges) one attempt asks
// the rest after before it counts as a cut body.
const maxPieces = 1000

// attempt runs one attempt of the job d dispatched: it records the start
// (J3), makes the exchanges (redirect hops, resumes), and moves the job to
// its next state.
func (e *Engine) attempt(ctx context.Context, d Dispatch) {
	defer e.finished()
	if e.fleet != nil {
		e.fleet.requests.Add(1)
	}
	job, a, jctx, ok := e.start(ctx, d)
	if !ok {
		return
	}
	e.core.Sent(d, time.Now())
	at := &try{e: e, job: job, d: d, a: a, ctx: jctx}
	defer func() {
		e.unclaim(job, a)
		e.release(at.job.Part)
	}()
	at.run()
}

// start claims the attempt of d's job and records its start: the job
// active, its attempt counted and its part name chosen, before any request
// (J3) and before the part exists (F4). A job paused or cancelled since it
// was queued is handed back to the core.
func (e *Engine) start(ctx context.Context, d Dispatch) (Job, *activeJob, context.Context, bool) {
	// Claimed before the start is recorded, so that a pause or cancel the
	// store applies from then on finds the attempt and stops it (hold).
	a := &activeJob{}
	jctx, cancel := context.WithCancelCause(ctx)
	a.cancel = cancel
	e.mu.Lock()
	e.active[d.JobID] = a
	e.mu.Unlock()
	giveUp := func() (Job, *activeJob, context.Context, bool) {
		cancel(nil)
		e.mu.Lock()
		delete(e.active, d.JobID)
		e.mu.Unlock()
		e.core.Observe(d, Outcome{Class: ClassCanceled}, time.Now())
		return Job{}, nil, nil, false
	}
	cur, err := e.store.Job(ctx, d.JobID)
	if err != nil {
		return giveUp()
	}
	part, chosen := cur.Part, ""
	var skip []string // part names another job has recorded
	for {
		if cur.Part == "" {
			part = e.choosePart(cur, skip)
			chosen = part
		}
		job, err := e.store.Start(context.WithoutCancel(ctx), d.JobID, part)
		switch {
		case err == nil:
			if chosen == "" {
				e.reserve(job.Part) // recorded before: no other attempt takes it meanwhile
			}
			return job, a, jctx, true
		case errors.Is(err, ErrPartTaken) && cur.Part == "" && len(skip) < maxPartTries:
			e.release(chosen)
			skip = append(skip, chosen)
			continue
		case errors.Is(err, ErrPartTaken):
			// Nothing lost: the job stays queued and its next dispatch tries again.
			e.log.Error("no free part name for a download", "job", d.JobID, "tried", skip)
		case stolen(err), errors.Is(err, ErrNotFound):
		default:
			e.breaks(fmt.Errorf("%w that a download starts: %w", ErrNotRecorded, err))
		}
		e.release(chosen)
		return giveUp()
	}
}

// maxPartTries is how many part names an attempt tries before it gives up
// for now; from the third on, the names carry the job's id (PartForJob).
const maxPartTries = 8

// choosePart picks a free part name for a download of job, reserved for
// this attempt until it ends: for a crawl's file, in its place in the tree
// (W9). Once two names it chose were taken in the database by other jobs,
// and from the first try in a fleet, whose other workers record theirs
// there too, the names carry the job's id, which no other job's do.
func (e *Engine) choosePart(job Job, skip []string) string {
	u, _ := url.Parse(job.URL)
	taken := func(n string) bool { return e.reserved(n) || slices.Contains(skip, n) }
	for {
		p := ""
		if job.CrawlID != 0 {
			var err error
			if p, err = e.fetch.TreePartFor(fetch.TreePath(u), taken); err != nil {
				e.log.Error("making a crawl's folders", "job", job.ID, "err", err)
				p = ""
			}
		}
		switch {
		case p == "" && (len(skip) >= 2 || e.fleet != nil):
			p = e.fetch.PartForJob(u, job.ID, taken)
		case p == "":
			p = e.fetch.PartFor(u, taken)
		}
		if e.reserve(p) {
			return p
		}
	}
}

// unclaim ends what start began.
func (e *Engine) unclaim(job Job, a *activeJob) {
	a.cancel(nil)
	e.mu.Lock()
	if e.active[job.ID] == a {
		delete(e.active, job.ID)
	}
	e.mu.Unlock()
}

// try is one attempt of a job, from its start to its end.
type try struct {
	e   *Engine
	job Job
	d   Dispatch // the request in flight: the job's, or a redirect hop's
	a   *activeJob
	ctx context.Context // cancelled by hold when the person pauses or cancels the job
	req fetch.Request
	// found are jobs the attempt found before its end, stored with it
	// (a crawled host's sitemaps, W7).
	found []NewJob
}

func (t *try) run() {
	e, job := t.e, t.job
	userURL, err := url.Parse(job.URL)
	if err != nil { // cannot happen for a URL that was accepted at input
		e.core.Observe(t.d, Outcome{Class: ClassRefused, Err: err}, time.Now())
		e.end(t, Decision{Fail: true, Reason: err.Error()}, fetch.Result{Part: job.Part}, nil, "failed")
		return
	}
	t.a.bytes.Store(job.Bytes)
	t.a.size.Store(job.Size)
	e.mu.Lock()
	t.a.info = Active{JobID: job.ID, URL: fetch.Redact(job.URL), Host: job.Host, Attempt: job.Attempts,
		Started: time.Now(), StartBytes: job.Bytes, Size: job.Size}
	e.mu.Unlock()

	t.req = fetch.Request{URL: userURL, UserURL: userURL, Part: job.Part, ETag: job.ETag,
		LastModified: job.LastModified, Size: job.Size, Name: job.Name,
		NewPart: t.newPart, Started: t.started, Resend: t.resend}
	if job.Bytes == 0 {
		t.req.Size = -1
	}
	if job.CrawlID != 0 && !t.obeyRobots(userURL) {
		return
	}
	pieces := 0 // short ranges in a row (fetch.MoreRanges)
	for {
		t.req.Header, t.req.Bandwidth = e.core.HostRequest(t.d.Host)
		start := time.Now()
		res := e.fetch.Do(t.ctx, t.req, t.progress)
		end := time.Now()
		if res.Class == fetch.MoreRanges {
			if pieces++; pieces > maxPieces {
				// A server that dribbles its file: the attempt ends as a
				// cut body would, its part kept, its retry delay and budget
				// applying.
				res.Class, res.Digest = fetch.Truncated, nil
				res.Err = fmt.Errorf("the server sent the file in more than %d pieces: %w", maxPieces, res.Err)
			}
		}
		o := Outcome{Status: res.Status, RetryAfter: res.RetryAfter, Class: classOf(res), Err: res.Err, Attempts: job.Attempts}
		if st, ok := quota.Parse(res.Header, end); ok {
			o.Quota = &st // G12
		}
		dec := e.core.Observe(t.d, o, end)
		row := t.row(start, end, res, dec)
		if next, label := t.next(res); next != nil {
			row.Outcome = label
			if label == "redirect" {
				row.Error = ""
			}
			e.record(row)
			hop, err := e.acquireHop(t.ctx, next)
			if err != nil {
				var dec Decision
				if errors.Is(err, errHeld) {
					dec.Reason = err.Error()
				}
				e.end(t, dec, res, nil, "canceled")
				return
			}
			t.d = hop
			if next != t.req.URL {
				t.req.Hop++
			}
			t.req.URL = next
			t.req.Part, t.req.ETag, t.req.LastModified, t.req.Size = res.Part, res.ETag, res.LastModified, res.Size
			t.req.Digest = res.Digest
			if res.Name != "" {
				t.req.Name = res.Name
			}
			continue
		}
		outcome := "failed"
		switch {
		case res.Done:
			outcome = "ok"
		case t.ctx.Err() != nil:
			outcome, dec.Reason = "canceled", "" // Heed or the person cut it off: see end
		case dec.Throttled:
			outcome = "throttled"
		case dec.Retry:
			outcome = "retry"
		}
		row.Outcome = outcome
		if outcome == "ok" {
			row.Error = ""
			e.complete(t, res, row)
			return
		}
		e.end(t, dec, res, &row, outcome)
		return
	}
}

// next is where the attempt goes on with another request, and why: a
// redirect (N2), a resume the server refused (the part emptied: from zero,
// F5), or the rest of a short range.
func (t *try) next(res fetch.Result) (*url.URL, string) {
	switch {
	case res.Redirect != nil && res.Class == fetch.OK:
		return withCredentials(res.Redirect, t.req.URL), "redirect"
	case res.Class == fetch.ResumeRejected:
		return t.req.URL, "restart"
	case res.Class == fetch.MoreRanges:
		return t.req.URL, "partial"
	}
	return nil, ""
}

// withCredentials gives a redirect target without user info of its own
// the user info of the URL it came from, when both are of one origin
// (scheme, host and port), as curl does: a password is never sent to
// another origin (G44).
func withCredentials(target, from *url.URL) *url.URL {
	if target.User != nil || from.User == nil || !strings.EqualFold(target.Scheme, from.Scheme) || target.Host != from.Host {
		return target
	}
	u := *target
	u.User = from.User
	return &u
}

// row is the history row of one exchange (S3).
func (t *try) row(start, end time.Time, res fetch.Result, dec Decision) Attempt {
	ra, _ := ParseRetryAfter(res.RetryAfter, end)
	errText := ""
	if res.Err != nil {
		errText = res.Err.Error()
	} else {
		errText = dec.Reason
	}
	return Attempt{JobID: t.job.ID, URL: fetch.Redact(t.req.URL.String()), Host: t.d.Host, Attempt: t.job.Attempts,
		Throttled: t.job.Throttled, StartedAt: start, Duration: end.Sub(start), Status: res.Status,
		Bytes: res.Received, Error: errText, RetryAfter: ra, Level: dec.Level, Breaker: dec.Breaker}
}

// progress is the fetcher's report of the bytes on disk.
func (t *try) progress(n int64) {
	t.a.bytes.Store(n)
	if t.d.Probe { // a half-open probe that moves bytes is alive (B3)
		t.e.core.Heartbeat(t.d, time.Now())
	}
}

// started records where a body's bytes go as it starts, so a crash resumes
// from the part (F5, S2).
func (t *try) started(r fetch.Result) {
	t.a.size.Store(r.Size)
	t.e.mu.Lock()
	t.a.info.bodyStarts(r.Bytes, time.Now())
	t.e.mu.Unlock()
	if err := t.e.store.Note(t.job.ID, resumeOf(r)); err != nil {
		t.e.log.Error("recording a partial file", "job", t.job.ID, "err", err)
	}
}

// newPart chooses and records another part for the job, whose part name
// something took on disk since it was chosen.
func (t *try) newPart() (string, error) {
	p := t.e.choosePart(t.job, nil)
	if err := t.e.store.SetPart(context.WithoutCancel(t.ctx), t.job.ID, p); err != nil {
		t.e.release(p)
		return "", err
	}
	t.e.release(t.job.Part)
	t.job.Part = p
	return p, nil
}

// resend lets the transport send the request again on a fresh connection,
// after the server dropped a kept-alive one unanswered, if the host's
// bucket holds a token for it; that request is in history then (G40).
func (t *try) resend() bool {
	now := time.Now()
	if !t.e.core.TakeToken(t.d, now) {
		return false
	}
	t.e.record(Attempt{JobID: t.job.ID, URL: fetch.Redact(t.req.URL.String()), Host: t.d.Host,
		Attempt: t.job.Attempts, Throttled: t.job.Throttled, StartedAt: now, Outcome: "resent",
		Error: "the server closed a kept-alive connection without answering; sent again on a fresh connection"})
	return true
}

// bodyStarts notes that a body begins at byte offset: below StartBytes, the
// server would not resume (or the file changed) and the download starts
// over, so its speed is measured from offset and now, not from bytes no
// longer on disk (which made it negative).
func (a *Active) bodyStarts(offset int64, now time.Time) {
	if offset < a.StartBytes {
		a.StartBytes, a.Started = offset, now
	}
}

func resumeOf(r fetch.Result) Resume {
	return Resume{Part: r.Part, Bytes: r.Bytes, Size: r.Size, ETag: r.ETag, LastModified: r.LastModified, Name: r.Name}
}

// record adds an exchange that did not end the attempt to history (S3).
func (e *Engine) record(a Attempt) {
	if err := e.store.RecordAttempt(a); err != nil {
		e.log.Error("recording an attempt", "job", a.JobID, "err", err)
	}
}

// acquireHop waits until the redirect target's host may take a request
// (N2: a hop goes through that host's governor and breaker too).
func (e *Engine) acquireHop(ctx context.Context, target *url.URL) (Dispatch, error) {
	host, err := HostKeyOf(target)
	if err != nil {
		return Dispatch{}, err
	}
	held := false    // counted in e.held: waiting for the host's pause to end
	waiting := false // counted in e.hopWaiting
	defer func() {
		if held {
			e.held.Add(-1)
		}
		if waiting {
			e.hopWaiting.Add(-1)
		}
	}()
	for {
		d, ok, wake := e.core.AcquireHop(host, time.Now())
		if ok {
			return d, nil
		}
		if !waiting {
			waiting = true
			e.hopWaiting.Add(1)
			e.wakeLoop() // a slot it held counts no more
		}
		wait := 250 * time.Millisecond // a paused host: look again now and then
		if !wake.IsZero() {
			wait = max(time.Until(wake), 0)
		}
		if paused := wake.IsZero() && e.core.HostPaused(host); paused != held {
			held = paused
			if held {
				e.held.Add(1)
				e.wakeLoop() // it may be all that is left running
			} else {
				e.held.Add(-1)
			}
		}
		tm := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			tm.Stop()
			if err := context.Cause(ctx); errors.Is(err, errHeld) {
				return Dispatch{}, fmt.Errorf("redirected to %s, whose host %s is paused: it waits for the host to be resumed: %w",
					fetch.Redact(target.String()), host, err)
			}
			return Dispatch{}, context.Cause(ctx)
		case <-tm.C:
		}
	}
}

// classOf maps the fetcher's outcome classes onto the core's (R2, B1).
func classOf(res fetch.Result) ErrClass {
	switch res.Class {
	case fetch.OK, fetch.ResumeRejected, fetch.MoreRanges: // still good responses
		return ClassNone
	case fetch.HTTPStatus:
		return ClassHTTPStatus
	case fetch.Transport:
		return ClassTransport
	case fetch.Timeout:
		return ClassTimeout
	case fetch.TLS:
		return ClassTLS
	case fetch.Refused, fetch.Redirects:
		return ClassRefused
	case fetch.Confinement:
		return ClassConfinement
	case fetch.SizeLimit, fetch.Disk:
		return ClassSizeLimit
	case fetch.Truncated:
		return ClassTruncated
	case fetch.Canceled:
		return ClassCanceled
	}
	return ClassTransport
}
