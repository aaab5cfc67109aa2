package store_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/store"
)

func TestOpen_RefusesDSNsItCannotServe(t *testing.T) {
	cases := []struct {
		dsn, message string
	}{
		{"mysql://root:secret@localhost/shop", `unknown database scheme "mysql"`},
		{"sqlite3:shop.db", `unknown database scheme "sqlite3"`},
		{"host=localhost password=secret", "the DSN must start with postgres://, postgresql:// or sqlite:PATH"},
		{"", "the DSN must start with postgres://, postgresql:// or sqlite:PATH"},
		{"sqlite:", "needs a file path"},
		{"sqlite:shop.db?_pragma=foreign_keys(0)", "query parameters are not accepted"},
	}
	for _, c := range cases {
		s, err := store.Open(context.Background(), c.dsn)
		require.ErrorContains(t, err, c.message, "DSN %q", c.dsn)
		require.NotContains(t, err.Error(), "secret", "a DSN's password never shows in an error")
		require.Nil(t, s)
	}
}

func TestOpen_InMemorySQLiteIsOneDatabase(t *testing.T) {
	s := openStore(t, "sqlite::memory:")
	order := newOrder(t, s)
	a, d := checkout(t, s, order.ID, card("visa"), base)
	require.Equal(t, store.DecisionCreated, d)

	got, attempts := getOrder(t, s, order.ID)
	require.Equal(t, order.ID, got.ID)
	require.Equal(t, []string{a.Key}, keys(attempts))
}

// While another process holds SQLite's write lock, this process's writers
// wait for it, and readers go on: the writers queue for their own
// connection instead of taking every connection the readers need. Once the
// lock is free, every writer that waited succeeds.
func TestOpen_SQLiteReadersGoOnWhileWritersWaitForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.db")
	s := openStore(t, "sqlite:"+path)
	order := newOrder(t, s)

	other, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	lock, err := other.Conn(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { lock.Close() })
	_, err = lock.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.NoError(t, err)

	const writers = 8 // twice the readers' connections
	written := make(chan error, writers)
	for range writers {
		go func() {
			_, err := s.CreateOrder(context.Background(), order.Amount, "waits for the lock")
			written <- err
		}()
	}
	// Each read is bounded well below the busy timeout, which the writers
	// wait out at most: a read that needed one of their connections fails.
	for range 20 {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		got, _, err := s.GetOrder(ctx, order.ID)
		cancel()
		require.NoError(t, err, "a read while writers wait for the lock")
		require.Equal(t, order.ID, got.ID)
	}
	require.Empty(t, written, "no write can finish while the lock is held")

	_, err = lock.ExecContext(t.Context(), "COMMIT")
	require.NoError(t, err)
	for range writers {
		require.NoError(t, <-written)
	}
}

// The merchant database holds orders and card hashes: a new file, its WAL
// and an older file created readable by all are the owner's alone once
// opened.
func TestOpen_SQLiteFilesAreTheOwnersAlone(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.db")
	s := openStore(t, "sqlite:"+fresh)
	newOrder(t, s) // a write, so that the WAL exists
	for _, p := range []string{fresh, fresh + "-wal", fresh + "-shm"} {
		requireMode(t, p, 0o600)
	}

	old := filepath.Join(dir, "old.db")
	require.NoError(t, os.WriteFile(old, nil, 0o644))
	require.NoError(t, os.Chmod(old, 0o644)) // whatever the umask
	openStore(t, "sqlite:"+old)
	requireMode(t, old, 0o600)
}

func requireMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, want, info.Mode().Perm(), "mode of %s", path)
}
