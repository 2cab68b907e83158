package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// HostRow is the persisted politeness state of one host (S4; G10, B6).
type HostRow struct {
	Host string
	// Tunables is the host's own settings as JSON, owned by the engine; nil means the host
	// follows the defaults.
	Tunables    json.RawMessage
	Paused      bool
	PauseReason string
	Level       int       // backoff level
	Streak      int       // successes since the last level change
	Gate        time.Time // no request before this; zero = no gate
	Breaker     int       // breaker state, as the engine numbers it
	Failures    int       // consecutive failures counted by the breaker
	OpenedAt    time.Time // when the breaker last opened; zero = never
	LastStatus  int
	Throttles   int64     // throttle responses seen from the host
	Tokens      float64   // tokens left in the host's bucket at TokensAt (G2)
	TokensAt    time.Time // when Tokens was read; zero = never (a full bucket)
	SpaceUntil  time.Time // end of the jitter spacing after the last request (G4); zero = none
	UpdatedAt   time.Time // set by SaveHost when zero
}

// HostEvent is one entry of a host's timeline: a throttle, a breaker transition, a decay, a user
// action (S4).
type HostEvent struct {
	ID     int64 // set by the database
	Host   string
	At     time.Time
	Kind   string
	Detail string
}

// SaveHost queues an insert-or-replace of the host's row; it returns at once and is committed
// with the next batch (S5). Flush waits for it. Tunables, if set, must be valid JSON.
func (db *DB) SaveHost(h HostRow) error {
	if h.Host == "" {
		return errors.New("storage: SaveHost: empty host")
	}
	var tun any // NULL unless set
	if h.Tunables != nil {
		if !json.Valid(h.Tunables) {
			return fmt.Errorf("storage: SaveHost %s: tunables are not valid JSON", h.Host)
		}
		tun = string(h.Tunables)
	}
	if h.UpdatedAt.IsZero() {
		h.UpdatedAt = db.now()
	}
	return db.queue("save host "+h.Host, func(w *wtx) error {
		_, err := w.exec(`INSERT INTO hosts (host, tunables_json, paused, pause_reason, level, streak, gate,
			breaker_state, failures, opened_at, last_status, throttles, tokens, tokens_at, space_until, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (host) DO UPDATE SET tunables_json = excluded.tunables_json, paused = excluded.paused,
			pause_reason = excluded.pause_reason, level = excluded.level, streak = excluded.streak,
			gate = excluded.gate, breaker_state = excluded.breaker_state, failures = excluded.failures,
			opened_at = excluded.opened_at, last_status = excluded.last_status, throttles = excluded.throttles,
			tokens = excluded.tokens, tokens_at = excluded.tokens_at, space_until = excluded.space_until,
			updated_at = excluded.updated_at`,
			h.Host, tun, h.Paused, h.PauseReason, h.Level, h.Streak, nanos(h.Gate), h.Breaker, h.Failures,
			nanos(h.OpenedAt), h.LastStatus, h.Throttles, h.Tokens, nanos(h.TokensAt), nanos(h.SpaceUntil),
			nanos(h.UpdatedAt))
		return err
	})
}

// AppendHostEvent queues an event for the host's timeline; it returns at once and is committed
// with the next batch (S5). A zero At means now.
func (db *DB) AppendHostEvent(e HostEvent) error {
	if e.At.IsZero() {
		e.At = db.now()
	}
	return db.queue("host event", func(w *wtx) error {
		_, err := w.exec(`INSERT INTO host_events (host, at, kind, detail) VALUES (?, ?, ?, ?)`,
			e.Host, nanos(e.At), e.Kind, e.Detail)
		return err
	})
}

// Hosts returns every saved host row, ordered by host.
func (db *DB) Hosts(ctx context.Context) ([]HostRow, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT host, tunables_json, paused, pause_reason, level, streak,
		gate, breaker_state, failures, opened_at, last_status, throttles, tokens, tokens_at, space_until,
		updated_at FROM hosts ORDER BY host`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []HostRow
	for rows.Next() {
		var h HostRow
		var tun sql.NullString
		var gate, opened, tokensAt, spaceUntil, updated int64
		if err := rows.Scan(&h.Host, &tun, &h.Paused, &h.PauseReason, &h.Level, &h.Streak, &gate,
			&h.Breaker, &h.Failures, &opened, &h.LastStatus, &h.Throttles, &h.Tokens, &tokensAt, &spaceUntil,
			&updated); err != nil {
			return nil, err
		}
		if tun.Valid {
			h.Tunables = json.RawMessage(tun.String)
		}
		h.Gate, h.OpenedAt, h.UpdatedAt = fromNanos(gate), fromNanos(opened), fromNanos(updated)
		h.TokensAt, h.SpaceUntil = fromNanos(tokensAt), fromNanos(spaceUntil)
		out = append(out, h)
	}
	return out, rows.Err()
}

const qHostEvents = `SELECT id, host, at, kind, detail FROM host_events WHERE host = ? ORDER BY id DESC LIMIT ?`

// HostEvents returns up to limit events of host, newest first (limit 0 = all).
func (db *DB) HostEvents(ctx context.Context, host string, limit int) ([]HostEvent, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := db.r.QueryContext(ctx, qHostEvents, host, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []HostEvent
	for rows.Next() {
		var e HostEvent
		var at int64
		if err := rows.Scan(&e.ID, &e.Host, &at, &e.Kind, &e.Detail); err != nil {
			return nil, err
		}
		e.At = fromNanos(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// GetSetting returns the value stored under key, or ErrNotFound.
func (db *DB) GetSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := db.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("setting %q: %w", key, ErrNotFound)
	}
	return v, err
}

// SetSetting stores value under key (defaults JSON, download folder, UI preferences) and returns
// after it committed.
func (db *DB) SetSetting(ctx context.Context, key, value string) error {
	return db.write(ctx, "set setting", func(w *wtx) error {
		_, err := w.exec(`INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
		return err
	})
}
