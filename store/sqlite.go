package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"chargeonce/internal/ownerfile"
)

// sqliteBusyTimeout is how long a connection waits for another writer (of
// this process or another) before it gives up with SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// sqliteMaxReaders bounds the connections that read a SQLite file; in WAL
// mode they run in parallel with each other and with the writer.
const sqliteMaxReaders = 4

var sqliteDialect = dialect{
	migrations: "migrations/sqlite",
	migrationsTable: `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`,
	// Every writing transaction begins IMMEDIATE (see openSQLite), which
	// takes the database's single write lock up front: the order is locked
	// with everything else, and migrations of two processes take turns.
	migrationLock: "",
	lockOrder:     "",
	lockCharge:    "",
	// One writer at a time: a claim's SELECT and UPDATE run alone.
	skipLocked: "",
	timeArg:    func(t time.Time) any { return t.UnixMicro() },
	// SQLite compares text byte by byte (BINARY) unless told otherwise.
	byteOrder: "",
	// Times are microseconds since the epoch; integer division truncates,
	// which floors every time after 1970.
	epochDay: func(column string) string { return "(" + column + " / 86400000000)" },
	uniqueViolation: func(err error) bool {
		var e *sqlite.Error
		return errors.As(err, &e) && (e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
	},
}

// openSQLite opens the database file at path, or a private in-memory database
// for ":memory:".
//
// SQLite allows one writer at a time. A transaction that begins DEFERRED and
// writes later can fail with SQLITE_BUSY when another writer got there
// first, and no busy timeout helps then, because waiting would deadlock. So
// every writing transaction begins IMMEDIATE (_txlock=immediate): it takes
// the write lock at BEGIN, waiting up to the busy timeout, and concurrent
// checkouts serialize instead of failing. Read-only transactions begin
// DEFERRED and, in WAL mode, never wait for writers.
//
// The writers of this process share one connection of their own and queue
// for it in the pool, each handed the connection the moment the last one
// commits. A writer that waited on the file lock instead would poll it,
// sleeping up to 100 ms between tries, while the lock is free most of the
// time, and would hold a connection that readers wait for. Under eight
// concurrent checkouts, polling made a write transaction wait about five
// times longer for the lock than its turn in the queue does. The busy
// timeout still serves writers of other processes.
func openSQLite(ctx context.Context, path string) (Store, error) {
	if path == "" {
		return nil, errors.New(`store: the SQLite DSN needs a file path, as in "sqlite:chargeonce.db", or "sqlite::memory:"`)
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("store: SQLite path %q: query parameters are not accepted; the store sets its own", path)
	}
	memory := path == ":memory:"
	if !memory {
		// Orders, amounts and card hashes are for this account alone.
		if err := ownerfile.Restrict(path); err != nil {
			return nil, fmt.Errorf("store: SQLite %s: %w", path, err)
		}
	}
	params := url.Values{}
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	params.Add("_pragma", "foreign_keys(1)")
	if !memory {
		// WAL lets readers run while a writer commits. synchronous stays at
		// its default, FULL: an idempotency key must survive a power loss
		// once its commit returned, or a retry could charge under a new key.
		params.Add("_pragma", "journal_mode(WAL)")
	}
	params.Set("_txlock", "immediate")
	dsn := path + "?" + params.Encode()
	write, err := openSQLitePool(ctx, dsn, 1)
	if err != nil {
		return nil, fmt.Errorf("store: SQLite %s: %w", path, err)
	}
	// Every connection to ":memory:" is a database of its own: the one
	// connection serves readers and writers alike, forever.
	txs := sqlTxs{read: write, write: write}
	if !memory {
		if txs.read, err = openSQLitePool(ctx, dsn, sqliteMaxReaders); err != nil {
			write.Close()
			return nil, fmt.Errorf("store: SQLite %s: %w", path, err)
		}
	}
	s := &db{txs: txs, d: sqliteDialect}
	if err := s.migrate(ctx); err != nil {
		txs.close()
		return nil, err
	}
	return s, nil
}

// openSQLitePool opens a pool of at most conns connections to dsn and
// checks that the database answers.
func openSQLitePool(ctx context.Context, dsn string, conns int) (*sql.DB, error) {
	handle, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	handle.SetMaxOpenConns(conns)
	handle.SetMaxIdleConns(conns)
	if err := handle.PingContext(ctx); err != nil {
		handle.Close()
		return nil, err
	}
	return handle, nil
}

// sqlTxs runs the transactions of a SQLite database: the writing ones on
// write, the others on read (see openSQLite). In memory, both are the same
// one connection.
type sqlTxs struct{ read, write *sql.DB }

func (s sqlTxs) inTx(ctx context.Context, write bool, fn func(querier) error) error {
	handle := s.read
	if write {
		handle = s.write
	}
	tx, err := handle.BeginTx(ctx, &sql.TxOptions{ReadOnly: !write})
	if err != nil {
		return err
	}
	if err := fn(sqlQuerier{tx}); err != nil {
		_ = tx.Rollback() // the error of fn is the one that matters
		return err
	}
	return tx.Commit()
}

func (s sqlTxs) close() error {
	err := s.write.Close()
	if s.read != s.write {
		err = errors.Join(err, s.read.Close())
	}
	return err
}

type sqlQuerier struct{ tx *sql.Tx }

func (q sqlQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q sqlQuerier) query(ctx context.Context, query string, args ...any) (rows, error) {
	r, err := q.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

// sqlRows gives *sql.Rows the Close of pgx.Rows; errors surface through Err.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }
