package ownerfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/ownerfile"
)

func TestLoadOrCreate_CreatesTheFileAndItsDirectoryForTheOwnerOnlyThenKeepsIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "secret")
	fresh := func() (string, error) { return "s3cret", nil }

	got, created, err := ownerfile.LoadOrCreate(path, fresh)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "s3cret", got)
	requireMode(t, path, 0o600)
	requireMode(t, dir, 0o700)

	got, created, err = ownerfile.LoadOrCreate(path, func() (string, error) { return "other", nil })
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "s3cret", got, "an existing secret is kept")
}

func TestLoadOrCreate_RefusesASecretOthersCanRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(path, []byte("s3cret\n"), 0o600))
	require.NoError(t, os.Chmod(path, 0o640))

	_, _, err := ownerfile.LoadOrCreate(path, func() (string, error) { return "other", nil })
	require.ErrorContains(t, err, "has mode 0640; it must be readable by its owner only (chmod 600)")
}

func TestWrite_CreatesForTheOwnerOnlyAndReplacesALooserFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "key")

	require.NoError(t, ownerfile.Write(path, []byte("first\n")))
	requireMode(t, path, 0o600)
	requireMode(t, dir, 0o700)

	require.NoError(t, os.Chmod(path, 0o644))
	require.NoError(t, ownerfile.Write(path, []byte("second\n")))
	requireMode(t, path, 0o600)
	got, err := ownerfile.Read(path)
	require.NoError(t, err)
	require.Equal(t, "second", got)
}

func TestRestrict_CreatesTheFileForTheOwnerAndTightensAnOldOne(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.db")
	require.NoError(t, ownerfile.Restrict(fresh))
	requireMode(t, fresh, 0o600)

	old := filepath.Join(dir, "old.db")
	for _, p := range []string{old, old + "-wal"} {
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
		require.NoError(t, os.Chmod(p, 0o644))
	}
	require.NoError(t, ownerfile.Restrict(old))
	requireMode(t, old, 0o600)
	requireMode(t, old+"-wal", 0o600)
	b, err := os.ReadFile(old)
	require.NoError(t, err)
	require.Equal(t, "x", string(b), "the content is kept")

	require.NoError(t, ownerfile.Restrict(filepath.Join(dir, "missing", "x.db")), "the database's own open reports a missing directory")
}

func requireMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, want, info.Mode().Perm(), "mode of %s", path)
}
