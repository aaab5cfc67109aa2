package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/store"
)

// BenchmarkGetOrStartAttempt_Reuse measures the most common retry: a second
// checkout of an order whose attempt is open, on a SQLite file.
func BenchmarkGetOrStartAttempt_Reuse(b *testing.B) {
	s := openStore(b, "sqlite:"+filepath.Join(b.TempDir(), "store.db"))
	order := newOrder(b, s)
	n := newAttempt(b, order.ID, card("visa"), base)
	_, first, d, err := s.GetOrStartAttempt(context.Background(), n)
	require.NoError(b, err)
	require.Equal(b, store.DecisionCreated, d)

	b.ReportAllocs()
	for b.Loop() {
		_, a, d, err := s.GetOrStartAttempt(context.Background(), n)
		if err != nil || d != store.DecisionReused || a.Key != first.Key {
			b.Fatalf("got %s %s %v, want the reused attempt %s", a.Key, d, err, first.Key)
		}
	}
}

// BenchmarkStartRefund_Replay measures a merchant's retry of a refund
// request: the same Idempotency-Key and body, answered with the refund
// stored, on a SQLite file.
func BenchmarkStartRefund_Replay(b *testing.B) {
	s := openStore(b, "sqlite:"+filepath.Join(b.TempDir(), "store.db"))
	n := benchRefund(b, s)
	first, d, err := s.StartRefund(context.Background(), n)
	require.NoError(b, err)
	require.Equal(b, store.RefundCreated, d)

	b.ReportAllocs()
	for b.Loop() {
		f, d, err := s.StartRefund(context.Background(), n)
		if err != nil || d != store.RefundReplayed || f.Key != first.Key {
			b.Fatalf("got %s %s %v, want the replayed refund %s", f.Key, d, err, first.Key)
		}
	}
}

// BenchmarkStartRefund_Created measures a new refund of one unit, checked
// against the refunds of its charge, which grow by one each time, to far
// more than any real charge has: the sum reads them by an index. Most of
// the time is the commit's sync to disk.
func BenchmarkStartRefund_Created(b *testing.B) {
	s := openStore(b, "sqlite:"+filepath.Join(b.TempDir(), "store.db"))
	n := benchRefund(b, s)
	n.Amount, n.RequestKey, n.RequestFingerprint = 1, "", ""

	b.ReportAllocs()
	for b.Loop() {
		n.Key = newKey(b)
		if _, d, err := s.StartRefund(context.Background(), n); err != nil || d != store.RefundCreated {
			b.Fatalf("got %s %v, want a new refund", d, err)
		}
	}
}

// benchRefund pays an order of the largest amount and returns a refund
// request for part of it.
func benchRefund(b *testing.B, s store.Store) store.NewRefund {
	ctx := context.Background()
	order, err := s.CreateOrder(ctx, chargeonce.Money{Minor: 1 << 40, Currency: "TRY"}, "Collected works")
	require.NoError(b, err)
	_, a, _, err := s.GetOrStartAttempt(ctx, newAttempt(b, order.ID, card("visa"), base))
	require.NoError(b, err)
	_, err = s.SettleAttempt(ctx, a.Key, chargeonce.AttemptSucceeded, "ch_bench", base)
	require.NoError(b, err)
	return store.NewRefund{
		OrderID: order.ID, Amount: 100, Reason: "damaged in transit", Origin: chargeonce.RefundByMerchant,
		Key: newKey(b), ReferencePrefix: "bookstore", RequestKey: "req-1", RequestFingerprint: card("body"), Now: base,
	}
}

// BenchmarkSettleAttempt measures an attempt's settlement as succeeded,
// with its order: with merchant events, it writes the event and queues it
// for the one endpoint. On a file, most of the time is the commit's sync
// to disk; in memory, what is left is the statements' own cost.
func BenchmarkSettleAttempt(b *testing.B) {
	for _, where := range []string{"file", "memory"} {
		b.Run(where, func(b *testing.B) {
			ctx := context.Background()
			dsn := "sqlite::memory:"
			if where == "file" {
				dsn = "sqlite:" + filepath.Join(b.TempDir(), "store.db")
			}
			s := openStore(b, dsn)
			benchEndpoint(b, s)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				order := newOrder(b, s)
				_, a, _, err := s.GetOrStartAttempt(ctx, newAttempt(b, order.ID, card("visa"), base))
				require.NoError(b, err)
				b.StartTimer()
				if settled, err := s.SettleAttempt(ctx, a.Key, chargeonce.AttemptSucceeded, "ch_bench", base); err != nil || !settled.Changed {
					b.Fatalf("settle: changed %v, %v", settled.Changed, err)
				}
			}
		})
	}
}
