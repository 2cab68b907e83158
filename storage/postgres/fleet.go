package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"heed/engine"
)

// The fleet (SPEC §12): leases, commands and heartbeats. Every lease time is now() on the
// database, never a worker's clock (M5).

var _ engine.Fleet = (*DB)(nil)

// errNotMember is what the lease methods of a DB opened without WithWorker return.
var errNotMember = errors.New("postgres: this database was opened without a worker name (WithWorker)")

// Lease is how long a lease lasts without renewal.
func (db *DB) Lease() time.Duration { return db.lease }

// interval is d as a PostgreSQL interval parameter.
func interval(d time.Duration) string { return fmt.Sprintf("%d microseconds", d.Microseconds()) }

// Claim leases up to n hosts with work and no live owner to this worker, within its fair share
// of the fleet's hosts with work (an even split over the live workers, rounded up), and returns
// their saved states and that share. The jobs a dead owner left active on them are queued again, their attempt
// given back (M3, G42).
func (db *DB) Claim(ctx context.Context, n int) ([]engine.HostState, int, error) {
	if !db.member {
		return nil, 0, errNotMember
	}
	var out []engine.HostState
	var share int
	err := db.tx(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		if err := tx.QueryRow(ctx, `SELECT ceil((SELECT count(*) FROM `+hostsJoin+`
			WHERE ((c.queued > 0 OR c.active > 0) AND NOT h.paused) OR (h.lease_owner <> '' AND h.lease_until > now()))::float8
			/ (SELECT greatest(count(*), 1) FROM workers WHERE NOT stopped AND heartbeat_at > now() - $1::interval))::int`,
			interval(db.lease)).Scan(&share); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `WITH
			live AS (SELECT greatest(count(*), 1) AS n FROM workers
				WHERE NOT stopped AND heartbeat_at > now() - $3::interval),
			work AS (SELECT count(*) AS n FROM `+hostsJoin+` WHERE ((c.queued > 0 OR c.active > 0) AND NOT h.paused)
				OR (h.lease_owner <> '' AND h.lease_until > now())),
			mine AS (SELECT count(*) AS n FROM hosts WHERE lease_owner = $1 AND lease_until > now()),
			pick AS (SELECT h.host FROM host_counts c JOIN hosts h ON h.host = c.host
				WHERE (c.queued > 0 OR c.active > 0) AND NOT h.paused AND (h.lease_owner = '' OR h.lease_until < now())
				ORDER BY h.lease_until NULLS FIRST, h.host
				LIMIT (SELECT greatest(0, least($2, ceil(work.n::float8 / live.n)::int - mine.n))
					FROM live, work, mine)
				FOR UPDATE OF h SKIP LOCKED)
			UPDATE hosts h SET lease_owner = $1, lease_until = now() + $3::interval, lease_epoch = h.lease_epoch + 1
			FROM pick LEFT JOIN host_counts c ON c.host = pick.host WHERE h.host = pick.host
			RETURNING `+hostCols, db.token, n, interval(db.lease))
		if err != nil {
			return err
		}
		var hosts []string
		for rows.Next() {
			h, _, err := scanHost(rows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, h)
			hosts = append(hosts, h.Host)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(hosts) == 0 {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE jobs SET state = 'queued', attempts = greatest(attempts - 1, 0),
			last_error = 'interrupted: its worker stopped', not_before = $2, updated_at = $2
			WHERE host = ANY($1) AND state = 'active'`, hosts, nanos(now()))
		if err != nil {
			return err
		}
		if tag.RowsAffected() > 0 {
			// Counted again by the trigger; the states read above are from before.
			for i := range out {
				out[i].Counts.Queued += out[i].Counts.Active
				out[i].Counts.Active = 0
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	db.heldMu.Lock()
	for _, h := range out {
		db.held[h.Host] = h.Epoch
	}
	db.heldMu.Unlock()
	return out, share, nil
}

// Renew extends every lease this process holds and returns the hosts it held and lost.
func (db *DB) Renew(ctx context.Context) ([]string, error) {
	if !db.member {
		return nil, errNotMember
	}
	// The rows are locked in the order of their names; a deadlock with a batch that writes the
	// same hosts in another order is tried again, not left to let the leases lapse.
	kept := map[string]int64{}
	err := db.retry(func() error {
		clear(kept)
		rows, err := db.pool.Query(ctx, `UPDATE hosts SET lease_until = now() + $2::interval
			WHERE host IN (SELECT host FROM hosts WHERE lease_owner = $1 ORDER BY host FOR UPDATE)
			AND lease_owner = $1 RETURNING host, lease_epoch`, db.token, interval(db.lease))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h string
			var epoch int64
			if err := rows.Scan(&h, &epoch); err != nil {
				return err
			}
			kept[h] = epoch
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	db.heldMu.Lock()
	defer db.heldMu.Unlock()
	var lost []string
	for h, epoch := range db.held {
		if e, ok := kept[h]; !ok || e != epoch {
			lost = append(lost, h)
			delete(db.held, h)
		}
	}
	return lost, nil
}

// Release saves a host's last state and gives its lease back, unless it has commands this
// worker has not applied, or is not this worker's any more.
func (db *DB) Release(ctx context.Context, s engine.HostState) (bool, error) {
	if !db.member {
		return false, errNotMember
	}
	args, err := hostStateArgs(s)
	if err != nil {
		return false, err
	}
	set := ""
	for i, c := range splitCols(hostStateCols) {
		set += fmt.Sprintf("%s = $%d, ", c, i+2)
	}
	tag, err := db.pool.Exec(ctx, `UPDATE hosts SET `+set+`lease_owner = '', lease_until = NULL
		WHERE host = $1 AND lease_owner = $`+fmt.Sprint(len(args)+2)+` AND commands = commands_seen`,
		append(append([]any{s.Host}, args...), db.token)...)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	db.heldMu.Lock()
	delete(db.held, s.Host)
	db.heldMu.Unlock()
	return true, nil
}

// Commands returns the command state of each host this worker leases whose commands it has not
// applied yet.
func (db *DB) Commands(ctx context.Context) ([]engine.HostCommand, error) {
	if !db.member {
		return nil, errNotMember
	}
	rows, err := db.pool.Query(ctx, `SELECT host, paused, pause_reason, tunables_json, action, commands
		FROM hosts WHERE lease_owner = $1 AND commands > commands_seen`, db.token)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.HostCommand
	for rows.Next() {
		c := engine.HostCommand{Kind: engine.CommandAllState}
		var tun []byte
		var action string
		if err := rows.Scan(&c.Host, &c.Paused, &c.PauseReason, &tun, &action, &c.Seq); err != nil {
			return nil, err
		}
		if tun != nil {
			var t engine.Tunables
			if json.Unmarshal(tun, &t) == nil {
				c.Tunables = &t
			}
		}
		if action != "" {
			c.Action, _ = engine.ParseEventKind(action)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Applied records that this worker applied a host's commands up to c.Seq, its breaker action
// taken.
func (db *DB) Applied(ctx context.Context, c engine.HostCommand) error {
	_, err := db.pool.Exec(ctx, `UPDATE hosts SET commands_seen = $2,
		action = CASE WHEN commands = $2 THEN '' ELSE action END
		WHERE host = $1 AND lease_owner = $3`, c.Host, c.Seq, db.token)
	return err
}

// Command writes a person's command into the host's row and tells the host's owner (M4).
func (db *DB) Command(ctx context.Context, c engine.HostCommand) error {
	var set string
	var args []any
	switch c.Kind {
	case engine.CommandPause:
		set, args = `paused = true, pause_reason = $2`, []any{c.PauseReason}
	case engine.CommandResume:
		set = `paused = false, pause_reason = ''`
	case engine.CommandTune:
		var tun any
		if c.Tunables != nil {
			b, err := json.Marshal(c.Tunables)
			if err != nil {
				return err
			}
			tun = string(b)
		}
		set, args = `tunables_json = $2`, []any{tun}
	case engine.CommandBreaker:
		set, args = `action = $2`, []any{c.Action.String()}
	default:
		return fmt.Errorf("postgres: Command: no such command %d", c.Kind)
	}
	return db.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO hosts (host) VALUES ($1) ON CONFLICT DO NOTHING`, c.Host); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE hosts SET `+set+`, commands = commands + 1 WHERE host = $1`,
			append([]any{c.Host}, args...)...); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify('heed_hosts', $1)`, c.Host)
		return err
	})
}

// Heartbeat records this worker's figures, and that it is alive, in the workers table.
func (db *DB) Heartbeat(ctx context.Context, s engine.WorkerStats) error {
	if !db.member {
		return errNotMember
	}
	machine, _ := os.Hostname()
	_, err := db.pool.Exec(ctx, `INSERT INTO workers (name, machine, hosts, inflight, requests, rate)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (name) DO UPDATE SET machine = excluded.machine, heartbeat_at = now(), hosts = excluded.hosts,
		inflight = excluded.inflight, requests = excluded.requests, rate = excluded.rate, stopped = false,
		started_at = CASE WHEN workers.stopped THEN now() ELSE workers.started_at END`,
		db.worker, machine, s.Hosts, s.Inflight, s.Requests, s.Rate)
	return err
}

// Busy reports whether any job is queued on a host not paused, or active on a host whose lease
// is live, in the whole database.
func (db *DB) Busy(ctx context.Context) (bool, error) {
	var busy bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM host_counts c JOIN hosts h ON h.host = c.host
		WHERE (c.queued > 0 AND NOT h.paused) OR (c.active > 0 AND NOT h.paused)
		OR (c.active > 0 AND h.lease_owner <> '' AND h.lease_until > now()))`).Scan(&busy)
	return busy, err
}

// Leave gives back every lease this process still holds and marks the worker stopped.
func (db *DB) Leave(ctx context.Context) error {
	if !db.member {
		return errNotMember
	}
	db.heldMu.Lock()
	clear(db.held)
	db.heldMu.Unlock()
	_, err := db.pool.Exec(ctx, `UPDATE hosts SET lease_owner = '', lease_until = NULL WHERE lease_owner = $1`, db.token)
	if err == nil {
		_, err = db.pool.Exec(ctx, `UPDATE workers SET stopped = true, inflight = 0, hosts = 0, heartbeat_at = now()
			WHERE name = $1`, db.worker)
	}
	return err
}

// Workers returns every worker of the fleet, by name (M4).
func (db *DB) Workers(ctx context.Context) ([]engine.Worker, error) {
	rows, err := db.pool.Query(ctx, `SELECT name, machine, started_at, heartbeat_at, hosts, inflight, requests, rate,
		stopped, NOT stopped AND heartbeat_at > now() - $1::interval FROM workers ORDER BY name`, interval(db.lease))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []engine.Worker
	for rows.Next() {
		var w engine.Worker
		if err := rows.Scan(&w.Name, &w.Machine, &w.Started, &w.Heartbeat, &w.Hosts, &w.Inflight, &w.Requests,
			&w.Rate, &w.Stopped, &w.Alive); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// Changes receives the hosts NOTIFY named: jobs queued for them, or commands.
func (db *DB) Changes() <-chan string {
	db.heldMu.Lock()
	defer db.heldMu.Unlock()
	if db.listen == nil {
		db.listen = newListener(db.dsn, db.log)
	}
	return db.listen.ch
}

// listener holds one connection that LISTENs on heed_hosts, reconnecting as needed.
type listener struct {
	ch     chan string
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newListener(dsn string, log interface{ Error(string, ...any) }) *listener {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{ch: make(chan string, 1024), cancel: cancel}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for ctx.Err() == nil {
			err := l.run(ctx, dsn)
			if ctx.Err() != nil {
				return
			}
			log.Error("listening for host changes", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return l
}

func (l *listener) run(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN heed_hosts`); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		select {
		case l.ch <- n.Payload:
		default: // full: the claim loop and Commands catch up
		}
	}
}

func (l *listener) close() {
	l.cancel()
	l.wg.Wait()
}
