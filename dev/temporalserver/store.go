package temporalserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"

	"chargeonce/internal/ownerfile"
)

// SQLite settings for a database file. They are passed as connection
// attributes, which the Temporal SQLite plugin turns into PRAGMAs run on every
// connection.
const (
	// SQLiteJournalMode lets readers proceed while a write commits and makes
	// commits append to a log instead of rewriting pages.
	SQLiteJournalMode = "wal"
	// SQLiteSynchronous: with a write-ahead log, NORMAL loses no committed
	// transaction when the process crashes; only an operating-system crash or
	// power loss can drop the last commits. That is the right trade for a
	// development server, and it saves an fsync per commit.
	SQLiteSynchronous = "normal"
	// SQLiteBusyTimeoutMillis is how long a connection waits for a lock held
	// by another process (say, someone inspecting the file) before failing.
	SQLiteBusyTimeoutMillis = 5000
	// SQLiteMaxConns is the size of the connection pool. SQLite admits one
	// writer at a time, and a single connection also rules out the
	// lock-upgrade deadlock that returns SQLITE_BUSY at once, whatever the
	// busy timeout.
	SQLiteMaxConns = 1
)

// clusterName names the single cluster this server forms.
const clusterName = "local"

// memoryDatabases numbers in-memory databases. Shared-cache in-memory
// databases are visible process-wide by name, and the plugin never closes its
// connections, so each server needs a name no earlier server used.
var memoryDatabases atomic.Uint64

// store is the SQLite database behind one server.
type store struct {
	sql  *config.SQL
	path string // empty for an in-memory database
}

// openStore prepares the database: it creates the schema in a new file (an
// in-memory database gets its schema when first opened) and the namespace.
func openStore(cfg Config) (*store, error) {
	s := &store{sql: &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		MaxConns:     SQLiteMaxConns,
		MaxIdleConns: SQLiteMaxConns,
	}}
	if cfg.DataDir == "" {
		s.sql.DatabaseName = "chargeonce-temporal-" + strconv.FormatUint(memoryDatabases.Add(1), 10)
		s.sql.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
	} else {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("temporalserver: create data directory: %w", err)
		}
		s.path = filepath.Join(cfg.DataDir, DatabaseFileName)
		s.sql.DatabaseName = s.path
		s.sql.ConnectAttributes = map[string]string{
			"mode":         "rwc",
			"journal_mode": SQLiteJournalMode,
			"synchronous":  SQLiteSynchronous,
			"busy_timeout": strconv.Itoa(SQLiteBusyTimeoutMillis),
		}
		if err := createSchemaIfMissing(s.path); err != nil {
			return nil, err
		}
		// A new file is 0600 already (os.CreateTemp); one that an older
		// version created 0644 is tightened.
		if err := ownerfile.Restrict(s.path); err != nil {
			return nil, fmt.Errorf("temporalserver: database file: %w", err)
		}
	}

	ns, err := sqliteschema.NewNamespaceConfig(clusterName, cfg.Namespace, false, cfg.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("temporalserver: namespace %q: %w", cfg.Namespace, err)
	}
	// Writing the namespace before the services start means every service
	// loads it with its first namespace-cache refresh, instead of learning of
	// it only at the next periodic refresh. An existing namespace is left as
	// it is; search attributes added since are registered by
	// prepareNamespace.
	if err := sqliteschema.CreateNamespaces(s.sql, ns); err != nil {
		return nil, fmt.Errorf("temporalserver: create namespace %q: %w", cfg.Namespace, err)
	}
	return s, nil
}

// createSchemaIfMissing creates path with the Temporal schema unless it
// exists. The schema is built in a temporary file that is renamed into place
// only when complete, so a crash during the first start never leaves a
// half-built database behind.
func createSchemaIfMissing(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("temporalserver: database file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), DatabaseFileName+".init-*")
	if err != nil {
		return fmt.Errorf("temporalserver: create database file: %w", err)
	}
	tmpPath := tmp.Name()
	if err := tmp.Close(); err != nil {
		return errors.Join(fmt.Errorf("temporalserver: create database file: %w", err), os.Remove(tmpPath))
	}
	// Rollback-journal mode keeps everything in the one file that is renamed.
	setup := &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      tmpPath,
		ConnectAttributes: map[string]string{"mode": "rw"},
	}
	if err := sqliteschema.SetupSchema(setup); err != nil {
		return errors.Join(fmt.Errorf("temporalserver: create schema: %w", err), os.Remove(tmpPath))
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return errors.Join(fmt.Errorf("temporalserver: install database file: %w", err), os.Remove(tmpPath))
	}
	return nil
}

// describe states where the data lives and with which settings.
func (s *store) describe() string {
	if s.path == "" {
		return fmt.Sprintf("sqlite in-memory (shared cache), max_conns=%d", SQLiteMaxConns)
	}
	return fmt.Sprintf("sqlite file %s: journal_mode=%s synchronous=%s busy_timeout=%dms max_conns=%d",
		s.path, SQLiteJournalMode, SQLiteSynchronous, SQLiteBusyTimeoutMillis, SQLiteMaxConns)
}
