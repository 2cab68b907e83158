package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"heed/engine"
)

// EngineStore adapts db to the interface the engine defines for what it
// keeps durable (engine.Store): the engine never sees SQL, and storage's
// own types stay free of politeness logic.
func EngineStore(db *DB) engine.Store { return engineStore{db} }

type engineStore struct{ db *DB }

var _ engine.Store = engineStore{}

func (s engineStore) Enqueue(ctx context.Context, jobs []engine.NewJob) ([]engine.Enqueued, error) {
	in := make([]NewJob, len(jobs))
	for i, j := range jobs {
		in[i] = NewJob{URL: j.URL, Host: j.Host}
	}
	res, err := s.db.Enqueue(ctx, in)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Enqueued, len(res.Items))
	for i, it := range res.Items {
		out[i] = engine.Enqueued{ID: it.ID, Duplicate: it.Duplicate, State: engine.JobState(it.State)}
	}
	return out, nil
}

func (s engineStore) Requeue(ctx context.Context, ids []int64) ([]int64, error) {
	return s.db.Requeue(ctx, ids)
}

func (s engineStore) JobIDsByURL(ctx context.Context, urls []string) ([]int64, error) {
	return s.db.JobIDsByURL(ctx, urls)
}

func (s engineStore) ForEachQueued(ctx context.Context, fn func(id int64, host string, notBefore time.Time) error) error {
	return s.db.ForEachQueued(ctx, fn)
}

func (s engineStore) Job(ctx context.Context, id int64) (engine.JobRecord, error) {
	j, err := s.db.Job(ctx, id)
	if err != nil {
		return engine.JobRecord{}, err
	}
	return jobRecord(j), nil
}

func jobRecord(j Job) engine.JobRecord {
	return engine.JobRecord{ID: j.ID, URL: j.URL, Host: j.Host, State: engine.JobState(j.State),
		NotBefore: j.NotBefore, UpdatedAt: j.UpdatedAt, Attempts: j.Attempts, Throttled: j.Throttled,
		Resume: engine.Resume{Part: j.Part, Bytes: j.Bytes, Size: j.Size, ETag: j.ETag, LastModified: j.LastModified},
		File:   j.File, SHA256: j.SHA256, LastError: j.LastError, LastStatus: j.LastStatus}
}

func (s engineStore) Jobs(ctx context.Context, q engine.JobQuery) ([]engine.JobRecord, error) {
	jobs, err := s.db.JobsPage(ctx, JobFilter{State: State(q.State), Host: q.Host, AfterID: q.AfterID, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]engine.JobRecord, len(jobs))
	for i, j := range jobs {
		out[i] = jobRecord(j)
	}
	return out, nil
}

func historyFilter(q engine.HistoryQuery) HistoryFilter {
	return HistoryFilter{Host: q.Host, Outcome: q.Outcome, BeforeID: q.BeforeID, Limit: q.Limit}
}

func (s engineStore) History(ctx context.Context, q engine.HistoryQuery) ([]engine.AttemptRecord, error) {
	page, err := s.db.HistoryPage(ctx, historyFilter(q))
	if err != nil {
		return nil, err
	}
	out := make([]engine.AttemptRecord, len(page))
	for i, a := range page {
		br, _ := engine.ParseBreakerState(a.BreakerState)
		out[i] = engine.AttemptRecord{ID: a.ID, JobID: a.JobID, URL: a.URL, Host: a.Host, Attempt: a.Attempt,
			StartedAt: a.StartedAt, Duration: a.Duration, Status: a.Status, Outcome: a.Outcome, Bytes: a.Bytes,
			Err: a.Error, RetryAfter: a.RetryAfter, Level: a.BackoffLevel, Breaker: br}
	}
	return out, nil
}

func (s engineStore) ExportHistoryCSV(ctx context.Context, w io.Writer, q engine.HistoryQuery) error {
	return s.db.ExportHistoryCSV(ctx, w, historyFilter(q))
}

func (s engineStore) HostEvents(ctx context.Context, host string, limit int) ([]engine.Event, error) {
	evs, err := s.db.HostEvents(ctx, host, limit)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Event, len(evs))
	for i, e := range evs {
		k, _ := engine.ParseEventKind(e.Kind)
		out[i] = engine.Event{Host: e.Host, At: e.At, Kind: k, Detail: e.Detail}
	}
	return out, nil
}

func (s engineStore) CountsByHost(ctx context.Context) (map[string]map[engine.JobState]int64, error) {
	m, err := s.db.CountsByHost(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[engine.JobState]int64, len(m))
	for h, byState := range m {
		c := make(map[engine.JobState]int64, len(byState))
		for st, n := range byState {
			c[engine.JobState(st)] = n
		}
		out[h] = c
	}
	return out, nil
}

func (s engineStore) Interrupted(ctx context.Context) ([]engine.Interrupted, error) {
	its, err := s.db.Interrupted(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Interrupted, len(its))
	for i, it := range its {
		out[i] = engine.Interrupted(it)
	}
	return out, nil
}

func (s engineStore) ClearInterrupted(ctx context.Context, ids []int64) error {
	return s.db.ClearInterrupted(ctx, ids)
}

func (s engineStore) Setting(ctx context.Context, key string) (string, error) {
	v, err := s.db.GetSetting(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return v, err
}

func (s engineStore) SetSetting(ctx context.Context, key, value string) error {
	return s.db.SetSetting(ctx, key, value)
}

// notQueued turns storage's state conflict into the engine's sentinel.
func notQueued(err error) error {
	if errors.Is(err, ErrStateConflict) {
		return fmt.Errorf("%w: %w", engine.ErrNotQueued, err)
	}
	return err
}

func (s engineStore) StartJobs(ctx context.Context, ids []int64) ([]engine.JobRecord, error) {
	jobs, err := s.db.StartJobs(ctx, ids)
	if err != nil {
		return nil, err
	}
	recs := make([]engine.JobRecord, len(jobs))
	for i, j := range jobs {
		if j.ID != 0 {
			recs[i] = jobRecord(j)
		}
	}
	return recs, nil
}

func (s engineStore) FinishJobs(ctx context.Context, done []engine.Finished) ([]error, error) {
	fs := make([]Finish, len(done))
	for i, d := range done {
		fs[i] = Finish{Attempt: attemptOf(d.Attempt),
			Done: Done{File: d.Done.File, Bytes: d.Done.Bytes, SHA256: d.Done.SHA256, Status: d.Done.Status,
				Part: d.Done.Part, Size: d.Done.Size, ETag: d.Done.ETag, LastModified: d.Done.LastModified,
				Held: d.Done.Held}}
	}
	errs, err := s.db.FinishJobs(ctx, fs)
	for i := range errs {
		errs[i] = notQueued(errs[i])
	}
	return errs, err
}

func (s engineStore) Unnamed(ctx context.Context) ([]engine.Unnamed, error) {
	us, err := s.db.Unnamed(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Unnamed, len(us))
	for i, u := range us {
		out[i] = engine.Unnamed(u)
	}
	return out, nil
}

func (s engineStore) Named(ns []engine.Named) error {
	out := make([]Named, len(ns))
	for i, n := range ns {
		out[i] = Named(n)
	}
	return s.db.Named(out)
}

func progressOf(r engine.Resume) Progress {
	return Progress{Part: r.Part, Bytes: r.Bytes, Size: r.Size, ETag: r.ETag, LastModified: r.LastModified}
}

func (s engineStore) MarkQueued(ctx context.Context, id int64, r engine.Requeued) error {
	p := progressOf(r.Resume)
	return notQueued(s.db.MarkQueued(ctx, id, Retry{NotBefore: r.NotBefore, Err: r.Err, Status: r.Status,
		Throttled: r.Throttled, Progress: &p}))
}

func (s engineStore) MarkFailed(ctx context.Context, id int64, reason string, status int) error {
	return notQueued(s.db.MarkFailed(ctx, id, reason, status))
}

func (s engineStore) SaveResume(ctx context.Context, id int64, r engine.Resume) error {
	return s.db.SaveProgress(ctx, id, progressOf(r))
}

func (s engineStore) NoteResume(id int64, r engine.Resume) error {
	return s.db.QueueProgress(id, progressOf(r))
}

func (s engineStore) SetJobState(ctx context.Context, ids []int64, to engine.JobState) ([]int64, error) {
	return s.db.SetJobState(ctx, ids, State(to))
}

func (s engineStore) RecordAttempt(a engine.AttemptRecord) error {
	return s.db.RecordAttempt(attemptOf(a))
}

func attemptOf(a engine.AttemptRecord) Attempt {
	return Attempt{JobID: a.JobID, URL: a.URL, Host: a.Host, Attempt: a.Attempt,
		StartedAt: a.StartedAt, Duration: a.Duration, Status: a.Status, Outcome: a.Outcome, Bytes: a.Bytes,
		Error: a.Err, RetryAfter: a.RetryAfter, BackoffLevel: a.Level, BreakerState: a.Breaker.String()}
}

func (s engineStore) SaveHost(h engine.HostState) error {
	var tun json.RawMessage
	if h.Tunables != nil {
		b, err := json.Marshal(h.Tunables)
		if err != nil {
			return err
		}
		tun = b
	}
	return s.db.SaveHost(HostRow{Host: h.Host, Tunables: tun, Paused: h.Paused, PauseReason: h.PauseReason,
		Level: h.Level, Streak: h.Streak, Gate: h.Gate, Breaker: int(h.Breaker), Failures: h.Failures,
		OpenedAt: h.OpenedAt, LastStatus: h.LastStatus, Throttles: h.Throttles, Tokens: h.Tokens,
		TokensAt: h.TokensAt, SpaceUntil: h.SpaceUntil})
}

func (s engineStore) AppendEvent(e engine.Event) error {
	return s.db.AppendHostEvent(HostEvent{Host: e.Host, At: e.At, Kind: e.Kind.String(), Detail: e.Detail})
}

func (s engineStore) LoadHosts(ctx context.Context) ([]engine.HostState, error) {
	rows, err := s.db.Hosts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]engine.HostState, 0, len(rows))
	for _, r := range rows {
		h := engine.HostState{Host: r.Host, Paused: r.Paused, PauseReason: r.PauseReason, Level: r.Level,
			Streak: r.Streak, Gate: r.Gate, Breaker: engine.BreakerState(r.Breaker), Failures: r.Failures,
			OpenedAt: r.OpenedAt, LastStatus: r.LastStatus, Throttles: r.Throttles, Tokens: r.Tokens,
			TokensAt: r.TokensAt, SpaceUntil: r.SpaceUntil}
		if len(r.Tunables) > 0 {
			var t engine.Tunables
			if err := json.Unmarshal(r.Tunables, &t); err != nil {
				return nil, fmt.Errorf("host %s: stored tunables: %w", r.Host, err)
			}
			h.Tunables = &t
		}
		out = append(out, h)
	}
	return out, nil
}

func (s engineStore) Flush(ctx context.Context) error { return s.db.Flush(ctx) }

// Files lists the database's files, which downloads never take the names of.
func (s engineStore) Files() []string { return s.db.Files() }
