package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationLockID names the advisory lock held while migrating; any constant
// works as long as nothing else in the database uses it.
const migrationLockID = 0x63686172676531 // "charge1"

// chargeLockSpace is the first key of the advisory locks that serialise
// the refunds of one charge.
const chargeLockSpace = 0x72656664 // "refd"

var postgresDialect = dialect{
	migrations: "migrations/postgres",
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL
	)`,
	migrationLock: fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d)`, migrationLockID),
	// NO KEY UPDATE is the weakest lock that excludes another checkout of
	// the order, and it does not block inserting attempts that reference it.
	lockOrder: ` FOR NO KEY UPDATE`,
	// A transaction-scoped advisory lock in a key space of its own (the
	// two-key form, apart from migrationLockID's): charge ids that hash
	// alike only take turns.
	lockCharge: fmt.Sprintf(`SELECT pg_advisory_xact_lock(%d, hashtext($1))`, chargeLockSpace),
	skipLocked: ` FOR UPDATE OF d SKIP LOCKED`,
	timeArg:    func(t time.Time) any { return t },
	byteOrder:  ` COLLATE "C"`,
	// The epoch of a timestamptz counts seconds from 1970-01-01 UTC,
	// whatever the session's time zone.
	epochDay: func(column string) string { return "floor(extract(epoch FROM " + column + ") / 86400)::bigint" },
	uniqueViolation: func(err error) bool {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "23505"
	},
}

func openPostgres(ctx context.Context, dsn string) (Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: PostgreSQL DSN: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: PostgreSQL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: PostgreSQL at %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	s := &db{txs: pgTxs{pool}, d: postgresDialect}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

type pgTxs struct{ pool *pgxpool.Pool }

func (p pgTxs) inTx(ctx context.Context, write bool, fn func(querier) error) error {
	// Writers run at READ COMMITTED: after GetOrStartAttempt waits for the
	// order lock, its next statement sees what the previous holder committed.
	opts := pgx.TxOptions{IsoLevel: pgx.ReadCommitted}
	if !write {
		opts = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	}
	return pgx.BeginTxFunc(ctx, p.pool, opts, func(tx pgx.Tx) error {
		return fn(pgQuerier{tx})
	})
}

func (p pgTxs) close() error {
	p.pool.Close()
	return nil
}

type pgQuerier struct{ tx pgx.Tx }

func (q pgQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.tx.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (q pgQuerier) query(ctx context.Context, query string, args ...any) (rows, error) {
	return q.tx.Query(ctx, query, args...)
}
