package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// migrationFiles holds one directory of numbered SQL files per database,
// named like 0001_init.sql. A file, once released, never changes: a schema
// change is a new file.
//
//go:embed migrations
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the migrations of dir in version order.
func loadMigrations(dir string) ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		number, _, ok := strings.Cut(e.Name(), "_")
		version, err := strconv.Atoi(number)
		if !ok || err != nil || version <= 0 || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration file %s is not named like 0001_name.sql", e.Name())
		}
		body, err := migrationFiles.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: version, name: e.Name(), sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies the missing migrations, all in one transaction that holds
// the dialect's migration lock, so that two processes starting at once on a
// fresh database do not both create the schema.
func (s *db) migrate(ctx context.Context) error {
	ms, err := loadMigrations(s.d.migrations)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	err = s.txs.inTx(ctx, true, func(q querier) error {
		if s.d.migrationLock != "" {
			if _, err := q.exec(ctx, s.d.migrationLock); err != nil {
				return err
			}
		}
		if _, err := q.exec(ctx, s.d.migrationsTable); err != nil {
			return err
		}
		applied, err := queryAll(ctx, q, scanInt64, `SELECT version FROM schema_migrations ORDER BY version`)
		if err != nil {
			return err
		}
		if n := len(applied); n > 0 && applied[n-1] > int64(len(ms)) {
			return fmt.Errorf("the database schema is at version %d, newer than this program's %d; run a newer program", applied[n-1], len(ms))
		}
		for _, m := range ms[len(applied):] {
			if _, err := q.exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
			if _, err := q.exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, s.t(time.Now())); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: migrate the schema: %w", err)
	}
	return nil
}
