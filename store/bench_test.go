package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce/store"
)

// BenchmarkGetOrStartAttempt_Reuse measures the most common retry: a second
// checkout of an order whose attempt is open, on a SQLite file.
func BenchmarkGetOrStartAttempt_Reuse(b *testing.B) {
	s := openStore(b, "sqlite:"+filepath.Join(b.TempDir(), "store.db"))
	order := newOrder(b, s)
	n := newAttempt(b, order.ID, card("visa"), base)
	first, d, err := s.GetOrStartAttempt(context.Background(), n)
	require.NoError(b, err)
	require.Equal(b, store.DecisionCreated, d)

	b.ReportAllocs()
	for b.Loop() {
		a, d, err := s.GetOrStartAttempt(context.Background(), n)
		if err != nil || d != store.DecisionReused || a.Key != first.Key {
			b.Fatalf("got %s %s %v, want the reused attempt %s", a.Key, d, err, first.Key)
		}
	}
}
