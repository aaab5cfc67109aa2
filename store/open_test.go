package store_test

import (
	"context"
	"testing"

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
