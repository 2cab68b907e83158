package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver storage uses

	"heed/storage"
)

// FixtureHost is the host key of host i (0-based) of a fixture: h000000.example,
// h000001.example … — distinct host keys, as engine.HostKey gives them.
func FixtureHost(i int) string { return fmt.Sprintf("h%06d.example", i) }

// FixtureURL is the URL of job i (0-based, id i+1) of a fixture over hosts
// hosts: job i belongs to host i mod hosts, so the hosts interleave in id
// order as a paste of many sites would.
func FixtureURL(i, hosts int) string {
	return fmt.Sprintf("http://%s/f/%d.bin", FixtureHost(i%hosts), i)
}

// fixtureFormat is bumped when BuildFixture writes something else, so that
// a cached fixture of the old form is built again.
const fixtureFormat = 1

// BuildFixture writes a Heed database at path holding jobs queued jobs over
// hosts hosts, fast: storage.Open creates it (so the schema is this Heed's),
// then one transaction fills jobs and hosts with plain SQL. Job i (id i+1)
// is FixtureURL(i, hosts), its own de-duplication key, queued, with a
// not-before that grows with its id (all in the past: every job is due);
// each host's row holds its queued count, which storage otherwise keeps
// itself. The indexes are dropped for the fill and built again after it,
// from their own definitions, which is much faster than filling them row
// by row.
func BuildFixture(ctx context.Context, path string, jobs, hosts int) error {
	if jobs < 1 || hosts < 1 {
		return errors.New("bench: a fixture needs at least one job and one host")
	}
	db, err := storage.Open(path)
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	conn, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	for _, p := range []string{"PRAGMA journal_mode = DELETE", "PRAGMA synchronous = OFF", "PRAGMA cache_size = -262144",
		"PRAGMA temp_store = MEMORY"} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("bench: %s already holds %d jobs", path, n)
	}
	idx, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_master
		WHERE type = 'index' AND tbl_name IN ('jobs', 'hosts') AND sql IS NOT NULL`)
	if err != nil {
		return err
	}
	var names, defs []string
	for idx.Next() {
		var name, def string
		if err := idx.Scan(&name, &def); err != nil {
			idx.Close()
			return err
		}
		names, defs = append(names, name), append(defs, def)
	}
	if err := errors.Join(idx.Err(), idx.Close()); err != nil {
		return err
	}
	for _, name := range names {
		if _, err := tx.ExecContext(ctx, `DROP INDEX "`+name+`"`); err != nil {
			return err
		}
	}
	now := time.Now().UnixNano()
	base := now - int64(time.Hour) - int64(jobs) // every not-before in the past
	if _, err := tx.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
		INSERT INTO jobs (id, url, key, host, state, not_before, created_at, updated_at)
		SELECT i + 1, u, u, h, 'queued', ?3 + i, ?4, ?4 FROM (
			SELECT i, printf('h%06d.example', i % ?2) AS h, printf('http://h%06d.example/f/%d.bin', i % ?2, i) AS u FROM n)`,
		jobs, hosts, base, now); err != nil {
		return fmt.Errorf("bench: filling jobs: %w", err)
	}
	// Host i has the jobs whose index is i modulo hosts. Whatever a trigger did, the row is set.
	if _, err := tx.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1)
		INSERT INTO hosts (host, queued, updated_at)
		SELECT printf('h%06d.example', i), ?2 / ?1 + (i < ?2 % ?1), ?3 FROM n WHERE ?2 / ?1 + (i < ?2 % ?1) > 0
		ON CONFLICT (host) DO UPDATE SET queued = excluded.queued`, hosts, jobs, now); err != nil {
		return fmt.Errorf("bench: filling hosts: %w", err)
	}
	for _, def := range defs {
		if _, err := tx.ExecContext(ctx, def); err != nil {
			return fmt.Errorf("bench: %s: %w", def, err)
		}
	}
	var queued, rows int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(sum(queued), 0), count(*) FROM hosts`).Scan(&queued, &rows); err != nil {
		return err
	}
	if queued != int64(jobs) || rows != int64(min(jobs, hosts)) {
		return fmt.Errorf("bench: fixture hosts count %d queued jobs over %d hosts, want %d over %d", queued, rows, jobs, min(jobs, hosts))
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	// No ANALYZE: storage never runs it, so the fixture is planned as a real database is.
	if _, err := conn.ExecContext(ctx, "PRAGMA journal_mode = WAL"); err != nil {
		return fmt.Errorf("PRAGMA journal_mode = WAL: %w", err)
	}
	return conn.Close()
}

// Fixture returns the path of a fixture database of jobs queued jobs over
// hosts hosts in dir, built with BuildFixture unless dir already holds one
// for this Heed's schema; built reports whether it was built now. A fixture
// is only ever read or copied, never run on.
func Fixture(ctx context.Context, dir string, jobs, hosts int) (path string, built bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, err
	}
	version, err := schemaVersion(ctx, dir)
	if err != nil {
		return "", false, err
	}
	path = filepath.Join(dir, fmt.Sprintf("frontier-%d-jobs-%d-hosts-schema%d-f%d.db", jobs, hosts, version, fixtureFormat))
	if _, err := os.Stat(path); err == nil {
		return path, false, nil
	}
	tmp := path + ".building"
	for _, f := range []string{tmp, tmp + "-wal", tmp + "-shm", tmp + "-journal"} {
		_ = os.Remove(f)
	}
	if err := BuildFixture(ctx, tmp, jobs, hosts); err != nil {
		return "", false, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", false, err
	}
	return path, true, nil
}

// schemaVersion is the user_version of a database storage.Open creates now.
func schemaVersion(ctx context.Context, dir string) (int, error) {
	probe, err := os.MkdirTemp(dir, "schema-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(probe)
	p := filepath.Join(probe, "probe.db")
	db, err := storage.Open(p)
	if err != nil {
		return 0, err
	}
	if err := db.Close(); err != nil {
		return 0, err
	}
	conn, err := sql.Open("sqlite3", "file:"+p+"?mode=ro")
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var v int
	err = conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v)
	return v, err
}
