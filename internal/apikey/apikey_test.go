package apikey_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/apikey"
	"chargeonce/store"
)

func TestParse_TakesOnlyTheFormThatStringWrites(t *testing.T) {
	k, _, err := apikey.New("", apikey.AllScopes(), time.Now())
	require.NoError(t, err)
	s := k.String()
	require.Regexp(t, `^ck_[0-9a-f]{16}_[0-9a-f]{64}$`, s)
	back, err := apikey.Parse(s)
	require.NoError(t, err)
	require.Equal(t, k, back)

	for _, bad := range []string{"", s[:len(s)-1], s + "0", strings.ToUpper(s), "sk" + s[2:], s[:19] + "-" + s[20:],
		strings.Replace(s, s[3:4], "g", 1), " " + s[1:]} {
		_, err := apikey.Parse(bad)
		require.ErrorIs(t, err, apikey.ErrMalformed, "%q", bad)
	}
}

func TestParseScopes_IsCanonicalAndRefusesUnknownAndRepeated(t *testing.T) {
	got, err := apikey.ParseScopes("operator, checkout")
	require.NoError(t, err)
	require.Equal(t, []apikey.Scope{apikey.ScopeCheckout, apikey.ScopeOperator}, got)
	require.Equal(t, "checkout,refund,operator,viewer", apikey.FormatScopes(apikey.AllScopes()))
	for _, bad := range []string{"", "admin", "checkout,", "Checkout", "checkout,checkout"} {
		_, err := apikey.ParseScopes(bad)
		require.Error(t, err, "%q", bad)
	}
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "chargeonce.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestAuthenticate_SaysWhyAKeyIsRefused(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	now := time.Now()
	k, rec, err := apikey.New("shop", []apikey.Scope{apikey.ScopeCheckout}, now)
	require.NoError(t, err)
	require.NoError(t, st.CreateAPIKey(ctx, rec))
	unknown, _, err := apikey.New("", apikey.AllScopes(), now)
	require.NoError(t, err)

	got, err := apikey.Authenticate(ctx, st, "Bearer "+k.String(), now)
	require.NoError(t, err)
	require.Equal(t, k.ID, got.ID)
	_, err = apikey.Authenticate(ctx, st, "bearer "+k.String(), now)
	require.NoError(t, err, "the scheme is case-insensitive")

	tests := map[string]error{
		"":                           apikey.ErrMissing,
		"Basic " + k.String():        apikey.ErrMalformed,
		"Bearer":                     apikey.ErrMalformed,
		"Bearer " + unknown.String(): apikey.ErrUnknown,
		"Bearer " + k.String()[:20] + strings.Repeat("a", 64): apikey.ErrUnknown,
	}
	for header, want := range tests {
		_, err := apikey.Authenticate(ctx, st, header, now)
		require.ErrorIs(t, err, want, "%q", header)
	}

	_, err = st.RevokeAPIKey(ctx, k.ID, now.Add(time.Hour))
	require.NoError(t, err)
	_, err = apikey.Authenticate(ctx, st, "Bearer "+k.String(), now.Add(time.Hour-time.Millisecond))
	require.NoError(t, err, "before its revocation")
	_, err = apikey.Authenticate(ctx, st, "Bearer "+k.String(), now.Add(time.Hour))
	require.ErrorIs(t, err, apikey.ErrRevoked)
}

func TestLoadOrCreateFile_KeepsAWorkingKeyAndReplacesOneTheStoreDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), apikey.FileName)
	st := openStore(t)

	first, created, err := apikey.LoadOrCreateFile(ctx, st, path, "dev", apikey.AllScopes())
	require.NoError(t, err)
	require.True(t, created)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	again, created, err := apikey.LoadOrCreateFile(ctx, st, path, "dev", apikey.AllScopes())
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, first, again)

	// A fresh database does not know the file's key: a new one replaces it.
	fresh, created, err := apikey.LoadOrCreateFile(ctx, openStore(t), path, "dev", apikey.AllScopes())
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, first.ID, fresh.ID)
	onDisk, err := apikey.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, fresh, onDisk)
}
