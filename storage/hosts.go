package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"heed/engine"
)

// SaveHost queues an insert-or-replace of a host's politeness state (S4; G10, B6); it returns at
// once and is committed with the next batch (S5). The job counts in the row are the triggers'
// and are left as they are.
func (db *DB) SaveHost(h engine.HostState) error {
	if h.Host == "" {
		return errors.New("storage: SaveHost: empty host")
	}
	var tun any // NULL: the host follows the defaults
	if h.Tunables != nil {
		b, err := json.Marshal(h.Tunables)
		if err != nil {
			return fmt.Errorf("storage: SaveHost %s: %w", h.Host, err)
		}
		tun = string(b)
	}
	updated := nanos(db.now())
	return db.queue("save host "+h.Host, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO hosts (host, tunables_json, paused, pause_reason, level, streak, gate,
			breaker_state, failures, opened_at, last_status, throttles, tokens, tokens_at, space_until, updated_at,
			quota_name, quota_form, quota_limit, quota_window_ns, quota_remaining, quota_reset, quota_seen, quota_until,
			crawl_delay_ns)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (host) DO UPDATE SET tunables_json = excluded.tunables_json, paused = excluded.paused,
			pause_reason = excluded.pause_reason, level = excluded.level, streak = excluded.streak,
			gate = excluded.gate, breaker_state = excluded.breaker_state, failures = excluded.failures,
			opened_at = excluded.opened_at, last_status = excluded.last_status, throttles = excluded.throttles,
			tokens = excluded.tokens, tokens_at = excluded.tokens_at, space_until = excluded.space_until,
			updated_at = excluded.updated_at, quota_name = excluded.quota_name, quota_form = excluded.quota_form,
			quota_limit = excluded.quota_limit, quota_window_ns = excluded.quota_window_ns,
			quota_remaining = excluded.quota_remaining, quota_reset = excluded.quota_reset,
			quota_seen = excluded.quota_seen, quota_until = excluded.quota_until, crawl_delay_ns = excluded.crawl_delay_ns`,
			h.Host, tun, h.Paused, h.PauseReason, h.Level, h.Streak, nanos(h.Gate), int(h.Breaker), h.Failures,
			nanos(h.OpenedAt), h.LastStatus, h.Throttles, h.Tokens, nanos(h.TokensAt), nanos(h.SpaceUntil), updated,
			h.QuotaName, h.QuotaForm, h.QuotaLimit, int64(h.QuotaWindow), h.QuotaRemaining, nanos(h.QuotaReset),
			nanos(h.QuotaSeen), nanos(h.QuotaUntil), int64(h.CrawlDelay))
		return err
	})
}

// AppendEvent queues an event for the host's timeline; it returns at once and is committed with
// the next batch (S5). A zero At means now.
func (db *DB) AppendEvent(e engine.Event) error {
	if e.At.IsZero() {
		e.At = db.now()
	}
	return db.queue("host event", func(w *wtx) error {
		_, err := w.exec(`INSERT INTO host_events (host, at, kind, detail) VALUES (?, ?, ?, ?)`,
			e.Host, nanos(e.At), e.Kind.String(), e.Detail)
		return err
	})
}

// Hosts returns every host row, with its politeness state and job counts, ordered by host. Saved
// tunables that no longer decode are dropped: the host follows the defaults.
func (db *DB) Hosts(ctx context.Context) ([]engine.HostState, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT host, tunables_json, paused, pause_reason, level, streak,
		gate, breaker_state, failures, opened_at, last_status, throttles, tokens, tokens_at, space_until,
		updated_at, queued, active, paused_jobs, done, failed, cancelled, skipped, quota_name, quota_form,
		quota_limit, quota_window_ns, quota_remaining, quota_reset, quota_seen, quota_until, crawl_delay_ns
		FROM hosts ORDER BY host`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.HostState
	for rows.Next() {
		var h engine.HostState
		var tun sql.NullString
		var gate, opened, tokensAt, spaceUntil, updated, qWindow, qReset, qSeen, qUntil, crawlDelay int64
		var breaker int
		c := &h.Counts
		if err := rows.Scan(&h.Host, &tun, &h.Paused, &h.PauseReason, &h.Level, &h.Streak, &gate,
			&breaker, &h.Failures, &opened, &h.LastStatus, &h.Throttles, &h.Tokens, &tokensAt, &spaceUntil,
			&updated, &c.Queued, &c.Active, &c.Paused, &c.Done, &c.Failed, &c.Cancelled, &c.Skipped,
			&h.QuotaName, &h.QuotaForm, &h.QuotaLimit, &qWindow, &h.QuotaRemaining, &qReset, &qSeen, &qUntil,
			&crawlDelay); err != nil {
			return nil, err
		}
		h.QuotaWindow, h.CrawlDelay = time.Duration(qWindow), time.Duration(crawlDelay)
		h.QuotaReset, h.QuotaSeen, h.QuotaUntil = fromNanos(qReset), fromNanos(qSeen), fromNanos(qUntil)
		if tun.Valid {
			var t engine.Tunables
			if json.Unmarshal([]byte(tun.String), &t) == nil {
				h.Tunables = &t
			}
		}
		h.Breaker = engine.BreakerState(breaker)
		h.Gate, h.OpenedAt, h.UpdatedAt = fromNanos(gate), fromNanos(opened), fromNanos(updated)
		h.TokensAt, h.SpaceUntil = fromNanos(tokensAt), fromNanos(spaceUntil)
		out = append(out, h)
	}
	return out, rows.Err()
}

// HostCounts returns every host's job counts, by host: the columns of Hosts that a view polls
// each second, without the politeness state it does not show there.
func (db *DB) HostCounts(ctx context.Context) (map[string]engine.Counts, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT host, queued, active, paused_jobs, done, failed, cancelled, skipped
		FROM hosts`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]engine.Counts{}
	for rows.Next() {
		var host string
		var c engine.Counts
		if err := rows.Scan(&host, &c.Queued, &c.Active, &c.Paused, &c.Done, &c.Failed, &c.Cancelled,
			&c.Skipped); err != nil {
			return nil, err
		}
		out[host] = c
	}
	return out, rows.Err()
}

// HostEvents returns up to limit events of host, newest first (limit 0 = all).
func (db *DB) HostEvents(ctx context.Context, host string, limit int) ([]engine.Event, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := db.r.QueryContext(ctx, `SELECT host, at, kind, detail FROM host_events WHERE host = ?
		ORDER BY id DESC LIMIT ?`, host, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.Event
	for rows.Next() {
		var e engine.Event
		var at int64
		var kind string
		if err := rows.Scan(&e.Host, &at, &kind, &e.Detail); err != nil {
			return nil, err
		}
		e.At = fromNanos(at)
		e.Kind, _ = engine.ParseEventKind(kind)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Setting returns the value stored under key, "" when there is none.
func (db *DB) Setting(ctx context.Context, key string) (string, error) {
	var v string
	err := db.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// SetSetting stores value under key (defaults, global limits, whether a run is going) and
// returns after it committed.
func (db *DB) SetSetting(ctx context.Context, key, value string) error {
	return db.write(ctx, "set setting", func(w *wtx) error {
		_, err := w.exec(`INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}

// Counts returns the jobs by state over all hosts, from the hosts rows.
func (db *DB) Counts(ctx context.Context) (engine.Counts, error) {
	var c engine.Counts
	err := db.r.QueryRowContext(ctx, `SELECT coalesce(sum(queued), 0), coalesce(sum(active), 0),
		coalesce(sum(paused_jobs), 0), coalesce(sum(done), 0), coalesce(sum(failed), 0),
		coalesce(sum(cancelled), 0), coalesce(sum(skipped), 0) FROM hosts`).
		Scan(&c.Queued, &c.Active, &c.Paused, &c.Done, &c.Failed, &c.Cancelled, &c.Skipped)
	return c, err
}

// Store is db as the engine's Store.
var _ engine.Store = (*DB)(nil)
