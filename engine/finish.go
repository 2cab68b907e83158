package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"time"

	"heed/engine/fetch"
)

// againNextStart ends the reason of a job whose end the database could not
// record.
const againNextStart = "it is queued again when Heed next starts"

// complete finishes a download whose whole body is synced in its part (F4):
// it records the job done, with its final name and its last history row,
// in one commit (J3, S3), and only then gives the part that name (F3). A
// crash in between leaves a done job whose part the next start names (see
// nameLeftovers); a file under its final name is always one the database
// records, complete.
func (e *Engine) complete(t *try, res fetch.Result, row Attempt) {
	ctx := context.Background() // the transition must land even while stopping
	job := t.job
	final, err := e.pickName(finalBase(job, res))
	if err != nil {
		e.end(t, Decision{Fail: true, Reason: "finishing the download: " + err.Error()}, res, &row, "failed")
		return
	}
	defer func() { e.release(final) }()
	end := End{JobID: job.ID, State: JobDone, Attempt: &row, Resume: resumeOf(res),
		File: final, SHA256: res.SHA256, Status: res.Status, Found: t.found}
	if job.CrawlID != 0 {
		// Its links, read from the synced part, are stored with its done (W8).
		fd := e.discover(job, res, t.req.URL)
		end.Found, end.OutOfScope, end.Error = append(end.Found, fd.jobs...), fd.outOfScope, fd.note
	}
	got, err := e.store.Finish(ctx, end)
	switch {
	case stolen(err):
		// Paused or cancelled while it finished: its complete part stays,
		// recorded for the resume, which finds it whole (C20).
		e.report(job, JobEnd{Outcome: "canceled", Bytes: res.Bytes, Err: stoppedWhy(err)})
		return
	case err != nil:
		err = fmt.Errorf("%w a finished download: %w", ErrNotRecorded, err)
		e.breaks(err)
		e.report(job, JobEnd{Outcome: "canceled", Bytes: res.Bytes, Err: err.Error() + "; " + againNextStart})
		return
	}
	e.queueFound(end.Found, got)
	for {
		err = e.fetch.Rename(res.Part, final)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
		// Taken since it was chosen: the next free name, recorded first.
		e.release(final)
		if final, err = e.pickName(finalBase(job, res)); err != nil {
			break
		}
		if err = e.store.Rename(ctx, job.ID, final); err != nil {
			e.breaks(fmt.Errorf("%w the final name of a download: %w", ErrNotRecorded, err))
			break
		}
	}
	if err != nil {
		// Recorded done, still under its part name: the next start tries again.
		e.log.Error("naming a finished download", "job", job.ID, "part", res.Part, "file", final, "err", err)
		e.report(job, JobEnd{Outcome: "failed", Bytes: res.Bytes, Err: "naming the finished file: " + err.Error()})
		return
	}
	if err := e.store.Named(job.ID); err != nil {
		e.log.Error("recording a final name", "job", job.ID, "err", err)
	}
	e.report(job, JobEnd{Outcome: "ok", File: final, Bytes: res.Bytes, SHA256: res.SHA256})
}

// finalBase is the name a finished download would have if free: F2's
// name, or for a crawl's file its place in the tree (W9), in the folder its
// part is in.
func finalBase(job Job, res fetch.Result) string {
	if job.CrawlID == 0 {
		return res.Name
	}
	u, err := url.Parse(job.URL)
	if err != nil {
		return res.Name
	}
	return path.Join(path.Dir(res.Part), path.Base(fetch.TreePath(u)))
}

// queueFound gives the core the jobs Finish queued of those a crawled page
// found (W8).
func (e *Engine) queueFound(jobs []NewJob, got []Enqueued) {
	for i, it := range got {
		if it.ID > 0 && it.State == JobQueued && i < len(jobs) {
			e.core.Add(it.ID, jobs[i].Host, it.NotBefore)
		}
	}
}

// finishWithout ends an attempt that made no request of its own (see
// obeyRobots) as end says, reported as outcome.
func (e *Engine) finishWithout(t *try, end End, outcome string) {
	job := t.job
	got, err := e.store.Finish(context.Background(), end)
	je := JobEnd{Outcome: outcome, Err: end.Error}
	switch {
	case stolen(err):
		je.Outcome, je.Err = "canceled", stoppedWhy(err)
	case err != nil:
		err = fmt.Errorf("%w how a download ended: %w", ErrNotRecorded, err)
		e.breaks(err)
		je.Outcome, je.Err = "canceled", err.Error()+"; "+againNextStart
	default:
		e.queueFound(end.Found, got)
		if end.State == JobQueued {
			e.core.Add(job.ID, job.Host, end.NotBefore)
			je.NotBefore = end.NotBefore
		}
	}
	e.report(job, je)
}

// pickName chooses the final name of a finished download: base, or the
// first free name after it (F3), reserved until the attempt ends.
func (e *Engine) pickName(base string) (string, error) {
	for {
		name, err := e.fetch.FreeName(base, e.reserved)
		if err != nil {
			return "", err
		}
		if e.reserve(name) {
			return name, nil
		}
	}
}

// end moves the job to the state its attempt earned and, for a retry,
// queues it again behind its delay and its host's gate (R4).
func (e *Engine) end(t *try, dec Decision, res fetch.Result, row *Attempt, outcome string) {
	ctx := context.Background() // the transition must land even while stopping
	job := t.job
	now := time.Now()
	resume := resumeOf(res)
	end := End{JobID: job.ID, Attempt: row, Resume: resume, Status: res.Status}
	switch outcome {
	case "canceled":
		// Heed is stopping, or a redirect's host is paused at the end of a
		// run: the job waits for the next run, its part kept and its
		// attempt given back (G42). Or the person paused or cancelled it
		// (its state is set already): only the part is recorded.
		end.State, end.NotBefore, end.GiveBack = JobQueued, now, true
		end.Error = "interrupted"
		if dec.Reason != "" {
			end.Error = dec.Reason
		}
		if row != nil {
			row.Error = end.Error
		}
	case "retry", "throttled":
		end.State, end.NotBefore, end.Error = JobQueued, dec.NotBefore, dec.Reason
		end.GiveBack, end.Throttled = dec.Throttled, dec.Throttled
	default:
		end.State, end.Error = JobFailed, dec.Reason
		if end.Error == "" {
			end.Error = fmt.Sprintf("download of %s did not complete (%s)", fetch.Redact(t.req.URL.String()), res.Class)
		}
		if resume.Part != "" && resume.Bytes == 0 {
			// A failed job whose part is empty leaves none behind. The
			// part is looked at, not the attempt's count: one that failed
			// to open its part reports no bytes of a part that has some.
			if gone, err := e.fetch.RemoveEmptyPart(resume.Part); err != nil {
				e.log.Error("removing the empty part of a failed download", "part", resume.Part, "err", err)
			} else if gone {
				end.Resume = Resume{Size: -1}
			}
		}
	}
	end.Found = t.found
	got, err := e.store.Finish(ctx, end)
	if err == nil {
		e.queueFound(end.Found, got)
	}
	switch {
	case err == nil && end.State == JobQueued:
		e.core.Add(job.ID, job.Host, end.NotBefore)
	case stolen(err): // the person paused or cancelled it meanwhile
		outcome, dec.Reason = "canceled", stoppedWhy(err)
	case err != nil:
		err = fmt.Errorf("%w how a download ended: %w", ErrNotRecorded, err)
		e.breaks(err)
		// Still active in the database: the next start queues it again.
		outcome, dec.Reason, dec.NextTry, dec.Held = "canceled", err.Error()+"; "+againNextStart, time.Time{}, false
	}
	je := JobEnd{Outcome: outcome, Bytes: res.Bytes, NotBefore: dec.NextTry, Held: dec.Held, Err: end.Error}
	if outcome == "canceled" && dec.Reason != "" {
		je.Err = dec.Reason
	}
	if je.Err == "" && res.Err != nil {
		je.Err = res.Err.Error()
	}
	e.report(job, je)
}

// report tells OnJob how an attempt of job ended.
func (e *Engine) report(job Job, end JobEnd) {
	if e.opt.OnJob == nil {
		return
	}
	end.ID, end.URL, end.Host = job.ID, fetch.Redact(job.URL), job.Host
	e.opt.OnJob(end)
}

// nameLeftovers gives their final names to the parts of downloads a crash
// left recorded done but not yet renamed (see complete), before any new
// download can take a name. A part is only ever renamed to the name
// recorded for it, so a part that is gone while its final name is there
// took that name before the crash. A download neither of whose names is in
// this download folder (Heed ran with another since) stays listed for a
// start in its own.
func (e *Engine) nameLeftovers(ctx context.Context) error {
	jobs, err := e.store.Unnamed(ctx)
	if err != nil {
		return fmt.Errorf("loading unnamed downloads: %w", err)
	}
	for _, j := range jobs {
		part, perr := e.fetch.Exists(j.Part)
		file, ferr := e.fetch.Exists(j.File)
		switch {
		case perr != nil || ferr != nil:
			e.log.Error("looking for a finished download", "job", j.ID, "err", errors.Join(perr, ferr))
			continue
		case !part && !file:
			e.log.Info("a download finished before a crash is not in this folder", "job", j.ID, "file", j.File)
			continue
		case part:
			if err := e.nameLeftover(ctx, j); err != nil {
				e.log.Error("naming a finished download", "job", j.ID, "part", j.Part, "err", err)
				continue
			}
		}
		if err := e.store.Named(j.ID); err != nil {
			return fmt.Errorf("recording final names: %w", err)
		}
	}
	return e.store.Flush(ctx)
}

// nameLeftover renames the part of j to its recorded name, or, when that
// was taken since, to the next free one, recorded first (F3).
func (e *Engine) nameLeftover(ctx context.Context, j Job) error {
	final := j.File
	for {
		err := e.fetch.Rename(j.Part, final)
		if !errors.Is(err, fs.ErrExist) {
			if err == nil && final != j.File {
				e.log.Info("a download finished before a crash has its name", "job", j.ID, "file", final)
			}
			return err
		}
		if final, err = e.fetch.FreeName(j.File, nil); err != nil {
			return err
		}
		if err := e.store.Rename(ctx, j.ID, final); err != nil {
			return err
		}
	}
}
