package storage

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
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
// Foreign keys are off while a step runs (a step may rebuild a table others refer to, SQLite's
// twelve-step way) and checked before it commits. A database newer than the newest migration is
// refused with ErrSchemaTooNew.
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
	if have >= target {
		return nil
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys = ON")
	for _, m := range ms[have:target] {
		if err := step(ctx, conn, m); err != nil {
			return fmt.Errorf("storage: migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// step applies one migration in one transaction.
func step(ctx context.Context, conn *sql.Conn, m migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return err
	}
	bad := rows.Next()
	rows.Close()
	if bad {
		return errors.New("it leaves rows whose foreign keys refer to nothing")
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
		return err
	}
	return tx.Commit()
}
