package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/store"
)

func event(id, ref string) store.ProviderEvent {
	return store.ProviderEvent{
		ID: id, Type: "charge.succeeded", ChargeID: "ch_000001", MerchantReference: ref,
		Payload: []byte(`{"type":"charge.succeeded"}`), ReceivedAt: base,
	}
}

func TestStore_ProviderEventIsStoredOnceByID(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		first := event("msg_1", "bookstore_1")
		got, created, err := s.RecordProviderEvent(ctx, first)
		require.NoError(t, err)
		require.True(t, created)
		want := first
		want.ReceivedAt = stored(base)
		require.Equal(t, want, got)

		// A redelivery, even one that differs, finds the first and changes
		// nothing.
		again := event("msg_1", "bookstore_2")
		again.Type = "charge.failed"
		got, created, err = s.RecordProviderEvent(ctx, again)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, want, got)
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM provider_events`))

		handledAt := base.Add(time.Second)
		require.NoError(t, s.MarkProviderEventHandled(ctx, "msg_1", "signaled", handledAt))
		require.NoError(t, s.MarkProviderEventHandled(ctx, "msg_1", "settled", handledAt.Add(time.Second)), "a second handling keeps the first result")
		got, created, err = s.RecordProviderEvent(ctx, first)
		require.NoError(t, err)
		require.False(t, created)
		at := stored(handledAt)
		want.Result, want.HandledAt = "signaled", &at
		require.Equal(t, want, got)

		_, _, err = s.RecordProviderEvent(ctx, event("msg_2", "bookstore_1"))
		require.NoError(t, err)
		events, err := s.ProviderEvents(ctx, "bookstore_1")
		require.NoError(t, err)
		require.Len(t, events, 2)
		require.Equal(t, []string{"msg_1", "msg_2"}, []string{events[0].ID, events[1].ID})
	})
}

func TestStore_BadProviderEventIsRefusedAndChangesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		ctx := context.Background()
		for name, mutate := range map[string]func(*store.ProviderEvent){
			"no ID":        func(e *store.ProviderEvent) { e.ID = "" },
			"no type":      func(e *store.ProviderEvent) { e.Type = "" },
			"no charge":    func(e *store.ProviderEvent) { e.ChargeID = "" },
			"no reference": func(e *store.ProviderEvent) { e.MerchantReference = "" },
			"no time":      func(e *store.ProviderEvent) { e.ReceivedAt = time.Time{} },
			"not UTF-8":    func(e *store.ProviderEvent) { e.Payload = []byte("\xff") },
		} {
			e := event("msg_1", "bookstore_1")
			mutate(&e)
			_, _, err := s.RecordProviderEvent(ctx, e)
			require.Error(t, err, name)
		}
		require.Equal(t, int64(0), rawCount(t, dsn, `SELECT count(*) FROM provider_events`))
		require.ErrorIs(t, s.MarkProviderEventHandled(ctx, "msg_unknown", "signaled", base), store.ErrNotFound)
		require.Error(t, s.MarkProviderEventHandled(ctx, "msg_unknown", "", base))
	})
}

func TestStore_AttemptByReference(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		got, err := s.AttemptByReference(context.Background(), a.MerchantReference)
		require.NoError(t, err)
		require.Equal(t, a.Key, got.Key)
		_, err = s.AttemptByReference(context.Background(), "bookstore_unknown")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}
