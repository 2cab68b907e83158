package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"heed/engine"
)

// hostStateCols are the politeness columns of a hosts row, in the order of hostStateArgs.
const hostStateCols = `tunables_json, paused, pause_reason, level, streak, gate, breaker_state, failures,
	opened_at, last_status, throttles, tokens, tokens_at, space_until, updated_at, quota_name, quota_form,
	quota_limit, quota_window_ns, quota_remaining, quota_reset, quota_seen, quota_until, crawl_delay_ns`

// hostStateArgs are h's values for hostStateCols.
func hostStateArgs(h engine.HostState) ([]any, error) {
	var tun any // NULL: the host follows the defaults
	if h.Tunables != nil {
		b, err := json.Marshal(h.Tunables)
		if err != nil {
			return nil, fmt.Errorf("postgres: SaveHost %s: %w", h.Host, err)
		}
		tun = string(b)
	}
	return []any{tun, h.Paused, h.PauseReason, h.Level, h.Streak, nanos(h.Gate), int(h.Breaker), h.Failures,
		nanos(h.OpenedAt), h.LastStatus, h.Throttles, h.Tokens, nanos(h.TokensAt), nanos(h.SpaceUntil),
		nanos(now()), h.QuotaName, h.QuotaForm, h.QuotaLimit, int64(h.QuotaWindow), h.QuotaRemaining,
		nanos(h.QuotaReset), nanos(h.QuotaSeen), nanos(h.QuotaUntil), int64(h.CrawlDelay)}, nil
}

// SaveHost writes a host's politeness state with the next batch (S4; G10, B6). In the fleet, it
// is written only while this process leases the host, and only once it has applied the person's
// commands on it (see Commands): otherwise it is dropped, the owner's state being the one kept.
func (db *DB) SaveHost(h engine.HostState) error {
	if h.Host == "" {
		return errors.New("postgres: SaveHost: empty host")
	}
	args, err := hostStateArgs(h)
	if err != nil {
		return err
	}
	return db.queue(db.saveHost(h.Host, args))
}

// saveHost is the statement that writes host's state args, and its arguments.
func (db *DB) saveHost(host string, args []any) (string, []any) {
	set := ""
	for i, c := range splitCols(hostStateCols) {
		if i > 0 {
			set += ", "
		}
		set += fmt.Sprintf("%s = $%d", c, i+2)
	}
	if db.member {
		return `UPDATE hosts SET ` + set + fmt.Sprintf(` WHERE host = $1 AND lease_owner = $%d
			AND commands = commands_seen`, len(args)+2), append(append([]any{host}, args...), db.token)
	}
	vals := "$1"
	for i := range args {
		vals += fmt.Sprintf(", $%d", i+2)
	}
	return `INSERT INTO hosts (host, ` + hostStateCols + `) VALUES (` + vals + `)
		ON CONFLICT (host) DO UPDATE SET ` + set, append([]any{host}, args...)
}

// AppendEvent adds an event to the host's timeline with the next batch. A zero At means now.
func (db *DB) AppendEvent(e engine.Event) error {
	if e.At.IsZero() {
		e.At = now()
	}
	return db.queue(`INSERT INTO host_events (host, at, kind, detail) VALUES ($1, $2, $3, $4)`,
		[]any{e.Host, nanos(e.At), e.Kind.String(), e.Detail})
}

// hostCols are the columns scanHost reads, from hostsJoin: a host's row (h) and its job counts (c),
// which a host with no jobs yet has none of.
var hostCols = `h.host, ` + prefixed("h.", hostStateCols) + `, coalesce(c.queued, 0), coalesce(c.active, 0),
	coalesce(c.paused_jobs, 0), coalesce(c.done, 0), coalesce(c.failed, 0), coalesce(c.cancelled, 0),
	coalesce(c.skipped, 0), h.lease_owner, h.lease_until, h.lease_epoch, h.commands`

// hostsJoin is every host row with its job counts, for hostCols.
const hostsJoin = `hosts h LEFT JOIN host_counts c ON c.host = h.host`

func scanHost(row pgx.Row) (engine.HostState, int64, error) {
	var h engine.HostState
	var tun []byte
	var gate, opened, tokensAt, spaceUntil, updated, qWindow, qReset, qSeen, qUntil, crawlDelay, commands int64
	var breaker int
	var until *time.Time
	c := &h.Counts
	err := row.Scan(&h.Host, &tun, &h.Paused, &h.PauseReason, &h.Level, &h.Streak, &gate, &breaker, &h.Failures,
		&opened, &h.LastStatus, &h.Throttles, &h.Tokens, &tokensAt, &spaceUntil, &updated, &h.QuotaName,
		&h.QuotaForm, &h.QuotaLimit, &qWindow, &h.QuotaRemaining, &qReset, &qSeen, &qUntil, &crawlDelay,
		&c.Queued, &c.Active, &c.Paused, &c.Done, &c.Failed, &c.Cancelled, &c.Skipped,
		&h.Owner, &until, &h.Epoch, &commands)
	if err != nil {
		return h, 0, err
	}
	if until != nil {
		h.LeaseUntil = *until
	}
	h.Owner = ownerName(h.Owner)
	h.QuotaWindow, h.CrawlDelay = time.Duration(qWindow), time.Duration(crawlDelay)
	h.QuotaReset, h.QuotaSeen, h.QuotaUntil = fromNanos(qReset), fromNanos(qSeen), fromNanos(qUntil)
	if tun != nil {
		var t engine.Tunables
		if json.Unmarshal(tun, &t) == nil {
			h.Tunables = &t
		}
	}
	h.Breaker = engine.BreakerState(breaker)
	h.Gate, h.OpenedAt, h.UpdatedAt = fromNanos(gate), fromNanos(opened), fromNanos(updated)
	h.TokensAt, h.SpaceUntil = fromNanos(tokensAt), fromNanos(spaceUntil)
	return h, commands, nil
}

// ownerName is the worker name of a lease owner token ("name/random").
func ownerName(token string) string {
	for i := len(token) - 1; i >= 0; i-- {
		if token[i] == '/' {
			return token[:i]
		}
	}
	return token
}

// Hosts returns every host row, with its politeness state, job counts and lease, by host.
func (db *DB) Hosts(ctx context.Context) ([]engine.HostState, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+hostCols+` FROM `+hostsJoin+` ORDER BY h.host`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.HostState
	for rows.Next() {
		h, _, err := scanHost(rows)
		if err != nil {
			return nil, err
		}
		if !h.LeaseUntil.IsZero() && h.Owner != "" {
			h.LeaseUntil = h.LeaseUntil.Local()
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// HostCounts returns the job counts of every host that has a counts row, by host.
func (db *DB) HostCounts(ctx context.Context) (map[string]engine.Counts, error) {
	rows, err := db.pool.Query(ctx, `SELECT host, queued, active, paused_jobs, done, failed, cancelled, skipped
		FROM host_counts`)
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
	q := `SELECT host, at, kind, detail FROM host_events WHERE host = $1 ORDER BY id DESC`
	args := []any{host}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	rows, err := db.pool.Query(ctx, q, args...)
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
	err := db.pool.QueryRow(ctx, `SELECT value FROM settings WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// SetSetting stores value under key and returns after it committed.
func (db *DB) SetSetting(ctx context.Context, key, value string) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

// Counts returns the jobs by state over all hosts, from their counts rows.
func (db *DB) Counts(ctx context.Context) (engine.Counts, error) {
	var c engine.Counts
	err := db.pool.QueryRow(ctx, `SELECT coalesce(sum(queued), 0), coalesce(sum(active), 0),
		coalesce(sum(paused_jobs), 0), coalesce(sum(done), 0), coalesce(sum(failed), 0),
		coalesce(sum(cancelled), 0), coalesce(sum(skipped), 0) FROM host_counts`).
		Scan(&c.Queued, &c.Active, &c.Paused, &c.Done, &c.Failed, &c.Cancelled, &c.Skipped)
	return c, err
}

// Robots returns host's robots.txt as last fetched; ok is false when it never was.
func (db *DB) Robots(ctx context.Context, host string) (engine.RobotsFile, bool, error) {
	r := engine.RobotsFile{Host: host}
	var fetched int64
	err := db.pool.QueryRow(ctx, `SELECT fetched_at, status, body, error FROM robots WHERE host = $1`, host).
		Scan(&fetched, &r.Status, &r.Body, &r.Error)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	r.Fetched = fromNanos(fetched)
	return r, err == nil, err
}

// SaveRobots keeps a host's robots.txt, with the next batch.
func (db *DB) SaveRobots(r engine.RobotsFile) error {
	body := r.Body
	if body == nil {
		body = []byte{}
	}
	return db.queue(`INSERT INTO robots (host, fetched_at, status, body, error)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (host) DO UPDATE SET fetched_at = excluded.fetched_at,
		status = excluded.status, body = excluded.body, error = excluded.error`,
		[]any{r.Host, nanos(r.Fetched), r.Status, body, r.Error})
}

// splitCols splits a comma-separated column list.
func splitCols(cols string) []string {
	out := strings.Split(cols, ",")
	for i, c := range out {
		out[i] = strings.TrimSpace(c)
	}
	return out
}
