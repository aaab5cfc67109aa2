package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/internal/apikey"
	"chargeonce/store"
)

func TestStore_APIKeyRoundTripsWithoutItsSecret(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		key, rec, err := apikey.New("shop front", []apikey.Scope{apikey.ScopeCheckout, apikey.ScopeOperator}, base)
		require.NoError(t, err)
		require.NoError(t, s.CreateAPIKey(ctx, rec))

		got, err := s.APIKey(ctx, key.ID)
		require.NoError(t, err)
		want := rec
		want.CreatedAt = stored(base)
		require.Equal(t, want, got)
		require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM api_keys WHERE secret_hash = $1 OR name = $1`, key.String()[20:]),
			"the secret is stored nowhere")

		require.ErrorIs(t, s.CreateAPIKey(ctx, rec), store.ErrConflict, "an id is one key's")
		_, err = s.APIKey(ctx, "0123456789abcdef")
		require.True(t, errors.Is(err, apikey.ErrUnknown) && errors.Is(err, store.ErrNotFound), "got %v", err)
	})
}

func TestStore_APIKeyRevocationOnlyMovesEarlier(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		_, old, err := apikey.New("old", []apikey.Scope{apikey.ScopeCheckout}, base)
		require.NoError(t, err)
		_, fresh, err := apikey.New("new", []apikey.Scope{apikey.ScopeCheckout}, base.Add(time.Second))
		require.NoError(t, err)
		require.NoError(t, s.CreateAPIKey(ctx, old))
		require.NoError(t, s.CreateAPIKey(ctx, fresh))

		later := base.Add(24 * time.Hour)
		got, err := s.RevokeAPIKey(ctx, old.ID, later)
		require.NoError(t, err)
		require.Equal(t, stored(later), *got.RevokedAt)
		require.True(t, got.ActiveAt(later.Add(-time.Microsecond)), "the old key works until its time")
		require.False(t, got.ActiveAt(later))

		got, err = s.RevokeAPIKey(ctx, old.ID, later.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, stored(later), *got.RevokedAt, "a later revocation does not extend the key")
		got, err = s.RevokeAPIKey(ctx, old.ID, base)
		require.NoError(t, err)
		require.Equal(t, stored(base), *got.RevokedAt, "an earlier one takes effect")

		all, err := s.APIKeys(ctx)
		require.NoError(t, err)
		require.Len(t, all, 2)
		require.Equal(t, []string{old.ID, fresh.ID}, []string{all[0].ID, all[1].ID}, "oldest first")
		require.Nil(t, all[1].RevokedAt)

		_, err = s.RevokeAPIKey(ctx, "0123456789abcdef", base)
		require.ErrorIs(t, err, apikey.ErrUnknown)
	})
}
