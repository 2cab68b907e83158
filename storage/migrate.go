package storage

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one schema step: the SQL that takes a database from Version-1 to Version.
type migration struct {
	Version int
	Name    string
	SQL     string
}

// migrations is the schema history, read from migrations/NNNN_name.sql, in version order.
var migrations = mustLoadMigrations(migrationFS)

func mustLoadMigrations(fsys fs.FS) []migration {
	ms, err := loadMigrations(fsys)
	if err != nil {
		panic(err)
	}
	return ms
}

// loadMigrations reads migrations/*.sql. Versions must run 1, 2, 3 … without gaps.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("storage: migration %s: name must be NNNN_name.sql", name)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{Version: v, Name: base, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("storage: migration %s: expected version %d", m.Name, i+1)
		}
	}
	return ms, nil
}

// schemaVersion reads PRAGMA user_version, where the database records its schema version.
func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// migrate applies every migration newer than the database's user_version, each in its own
// transaction together with the new user_version, so a crash leaves the schema at a whole step.
// A database newer than the newest migration is refused with ErrSchemaTooNew.
func migrate(ctx context.Context, db *sql.DB, ms []migration) error {
	return migrateTo(ctx, db, ms, len(ms))
}

func migrateTo(ctx context.Context, db *sql.DB, ms []migration, target int) error {
	have, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if have > len(ms) {
		return fmt.Errorf("%w: schema version %d, this Heed knows up to %d", ErrSchemaTooNew, have, len(ms))
	}
	for _, m := range ms[have:target] {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			tx.Rollback()
			return fmt.Errorf("storage: migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("storage: migration %s: %w", m.Name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("storage: migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// recoverActive queues again every job a crash left active — those whose starts it left in the
// start log too — keeping its partial file, bytes and validators for resume (S2), and lists
// them as interrupted (see Interrupted), in one transaction.
// It returns how many it queued. Nothing else moves.
func recoverActive(ctx context.Context, db *sql.DB, now time.Time, starts []startRec) (int64, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if err := replayStarts(ctx, tx, starts); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, qInterrupt); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, qRecover, nanos(now))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return n, tx.Commit()
}
