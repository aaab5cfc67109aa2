package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/store"
)

// secret is a whsec_ secret of the tests; the store only keeps it.
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func newEndpoint(t *testing.T, s store.Store, types ...chargeonce.EventType) store.Endpoint {
	t.Helper()
	e, err := s.CreateEndpoint(context.Background(), store.NewEndpoint{
		ID: chargeonce.NewEndpointID(), URL: "https://shop.example/events", EventTypes: types,
		Description: "the shop's backend", Secret: secret, Now: base,
	})
	require.NoError(t, err)
	return e
}

func orderEvents(t *testing.T, s store.Store, orderID int64) []store.MerchantEvent {
	t.Helper()
	events, err := s.OrderEvents(context.Background(), orderID)
	require.NoError(t, err)
	return events
}

// eventTypes lists the events' types, with their sequence numbers.
func eventTypes(events []store.MerchantEvent) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = fmt.Sprintf("%d %s", ev.Sequence, ev.Type)
	}
	return out
}

// later is a time after every change of the tests, when all their
// deliveries are due.
var later = base.Add(24 * time.Hour)

func claim(t *testing.T, s store.Store, now time.Time) []store.DueDelivery {
	t.Helper()
	due, err := s.ClaimDeliveries(context.Background(), now, time.Minute, store.MaxDeliveriesLimit)
	require.NoError(t, err)
	return due
}

// claimedAt lists, per endpoint, the event types of the deliveries claimed.
func claimedAt(due []store.DueDelivery) map[string][]chargeonce.EventType {
	out := make(map[string][]chargeonce.EventType)
	for _, d := range due {
		out[d.Endpoint.ID] = append(out[d.Endpoint.ID], d.Event.Type)
	}
	return out
}

func record(t *testing.T, s store.Store, d store.DueDelivery, result store.DeliveryResult, status int, at, next time.Time) {
	t.Helper()
	a := store.DeliveryAttempt{DeliveryID: d.ID, Attempt: d.Attempt, At: at, Result: result, HTTPStatus: status,
		Duration: 3 * time.Millisecond, NextAttemptAt: next}
	switch {
	case status == 0:
		a.Failure = store.FailureConnectionRefused
	case result != store.DeliveryDelivered:
		a.Failure = store.FailureHTTPStatus
	}
	require.NoError(t, s.RecordDeliveryAttempt(context.Background(), a))
}

func TestStore_EndpointsRoundTripDisableAndRotate(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		all := newEndpoint(t, s)
		refunds := newEndpoint(t, s, chargeonce.EventRefundSucceeded, chargeonce.EventRefundNotProcessed)
		require.Empty(t, all.EventTypes)
		require.Equal(t, []chargeonce.EventType{chargeonce.EventRefundSucceeded, chargeonce.EventRefundNotProcessed}, refunds.EventTypes)
		require.Equal(t, stored(base), all.CreatedAt)
		require.Equal(t, secret, all.Secret)
		require.Nil(t, all.DisabledAt)
		require.Nil(t, all.FailingSince)

		list, err := s.Endpoints(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		got, err := s.GetEndpoint(ctx, refunds.ID)
		require.NoError(t, err)
		require.Equal(t, refunds, got)

		off, err := s.SetEndpointDisabled(ctx, all.ID, true, "disabled through the API", base.Add(time.Minute))
		require.NoError(t, err)
		require.Equal(t, stored(base.Add(time.Minute)), *off.DisabledAt)
		require.Equal(t, "disabled through the API", off.DisabledReason)
		again, err := s.SetEndpointDisabled(ctx, all.ID, true, "again", base.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, off, again, "a disabled endpoint keeps when and why it was first disabled")
		on, err := s.SetEndpointDisabled(ctx, all.ID, false, "", base.Add(time.Hour))
		require.NoError(t, err)
		require.Nil(t, on.DisabledAt)
		require.Empty(t, on.DisabledReason)

		const next = "whsec_c2Vjb25kIHNlY3JldCBvZiB0aGUgdGVzdHMh"
		rotated, err := s.RotateEndpointSecret(ctx, all.ID, next, base.Add(25*time.Hour), base.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, next, rotated.Secret)
		require.Equal(t, secret, rotated.PreviousSecret)
		require.Equal(t, stored(base.Add(25*time.Hour)), *rotated.PreviousSecretExpiresAt)
		retired, err := s.RotateEndpointSecret(ctx, all.ID, secret, base.Add(time.Hour), base.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, secret, retired.Secret)
		require.Empty(t, retired.PreviousSecret, "a previous secret that expires now signs nothing")
		require.Nil(t, retired.PreviousSecretExpiresAt)

		_, err = s.GetEndpoint(ctx, chargeonce.NewEndpointID())
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.SetEndpointDisabled(ctx, chargeonce.NewEndpointID(), true, "gone", base)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.RotateEndpointSecret(ctx, chargeonce.NewEndpointID(), next, base, base)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestStore_BadEndpointInputIsRefusedAndChangesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		good := store.NewEndpoint{ID: chargeonce.NewEndpointID(), URL: "https://shop.example/events", Secret: secret, Now: base}
		for name, change := range map[string]func(*store.NewEndpoint){
			"bad id":           func(n *store.NewEndpoint) { n.ID = "we_1" },
			"no url":           func(n *store.NewEndpoint) { n.URL = "" },
			"no secret":        func(n *store.NewEndpoint) { n.Secret = "" },
			"no time":          func(n *store.NewEndpoint) { n.Now = time.Time{} },
			"unknown type":     func(n *store.NewEndpoint) { n.EventTypes = []chargeonce.EventType{"payment.maybe"} },
			"type twice":       func(n *store.NewEndpoint) { n.EventTypes = []chargeonce.EventType{"refund.failed", "refund.failed"} },
			"control in text":  func(n *store.NewEndpoint) { n.Description = "a\x00b" },
			"long description": func(n *store.NewEndpoint) { n.Description = string(make([]byte, 501)) },
		} {
			n := good
			change(&n)
			_, err := s.CreateEndpoint(ctx, n)
			require.Error(t, err, name)
		}
		_, err := s.CreateEndpoint(ctx, good)
		require.NoError(t, err)
		_, err = s.CreateEndpoint(ctx, good)
		require.ErrorIs(t, err, store.ErrConflict)
		_, err = s.SetEndpointDisabled(ctx, good.ID, true, "", base)
		require.Error(t, err, "a disabled endpoint says why")
		_, err = s.RotateEndpointSecret(ctx, good.ID, "secret", base, base)
		require.Error(t, err)
		list, err := s.Endpoints(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Nil(t, list[0].DisabledAt)
		require.Equal(t, secret, list[0].Secret)
	})
}

// TestStore_SettlementsWriteTheirEventsAndQueueThem: every settlement that
// changes something writes its event, numbered in its order, with the
// order's status after it, and queues it for each enabled endpoint that
// wants its type; a settlement that changes nothing, and a failed attempt,
// write none.
func TestStore_SettlementsWriteTheirEventsAndQueueThem(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		all := newEndpoint(t, s)
		refunds := newEndpoint(t, s, chargeonce.EventRefundSucceeded, chargeonce.EventRefundFailed)
		notProcessed := newEndpoint(t, s, chargeonce.EventPaymentNotProcessed)
		off := newEndpoint(t, s)
		_, err := s.SetEndpointDisabled(ctx, off.ID, true, "disabled through the API", base)
		require.NoError(t, err)

		order := newOrder(t, s)
		declined, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, declined.Key, chargeonce.AttemptDeclined, ""))
		require.False(t, settle(t, s, declined.Key, chargeonce.AttemptDeclined, ""), "settled already")
		routed := newAttempt(t, order.ID, card("mastercard"), base)
		routed.RoutedBy = "rule 1 (line 3)"
		_, paid, _, err := s.GetOrStartAttempt(ctx, routed)
		require.NoError(t, err)
		require.True(t, settle(t, s, paid.Key, chargeonce.AttemptSucceeded, "ch_paid"))
		refund, _ := startRefund(t, s, newRefund(t, order.ID, 100, ""))
		require.True(t, settleRefund(t, s, refund.Key, chargeonce.RefundSucceeded, "re_1"))
		changed, err := s.SettleRefund(ctx, refund.Key, chargeonce.RefundFailed, "", "the bank sent it back", base.Add(time.Hour))
		require.NoError(t, err)
		require.True(t, changed)

		failedOrder := newOrder(t, s)
		failed, _ := checkout(t, s, failedOrder.ID, card("visa"), base)
		require.True(t, settle(t, s, failed.Key, chargeonce.AttemptFailed, ""))
		require.Empty(t, orderEvents(t, s, failedOrder.ID), "a failed attempt waits for a human's review")

		events := orderEvents(t, s, order.ID)
		require.Equal(t, []string{"1 payment.declined", "2 payment.succeeded", "3 refund.succeeded", "4 refund.failed"}, eventTypes(events))
		require.Equal(t, store.MerchantEvent{
			ID: events[1].ID, Type: chargeonce.EventPaymentSucceeded, OrderID: order.ID, Sequence: 2,
			OrderStatus: chargeonce.OrderPaid, AttemptKey: paid.Key, Amount: try, ProviderID: "ch_paid",
			Status: "succeeded", Provider: chargeonce.DefaultProvider, RoutedBy: "rule 1 (line 3)", CreatedAt: stored(base.Add(time.Minute)),
		}, events[1], "the event names the attempt's provider, and why it went there")
		require.Equal(t, chargeonce.OrderPlaced, events[0].OrderStatus)
		require.Equal(t, chargeonce.OrderPartiallyRefunded, events[2].OrderStatus)
		require.Equal(t, store.MerchantEvent{
			ID: events[3].ID, Type: chargeonce.EventRefundFailed, OrderID: order.ID, Sequence: 4,
			OrderStatus: chargeonce.OrderPaid, RefundKey: refund.Key, Amount: chargeonce.Money{Minor: 100, Currency: "TRY"},
			ProviderID: "re_1", ChargeID: "ch_paid", Status: "failed", FailureReason: "the bank sent it back",
			Provider: chargeonce.DefaultProvider, CreatedAt: stored(base.Add(time.Hour)),
		}, events[3])
		got, err := s.GetEvent(ctx, events[3].ID)
		require.NoError(t, err)
		require.Equal(t, events[3], got)

		due := claimedAt(claim(t, s, later))
		require.Equal(t, map[string][]chargeonce.EventType{
			all.ID:     {chargeonce.EventPaymentDeclined, chargeonce.EventPaymentSucceeded, chargeonce.EventRefundSucceeded, chargeonce.EventRefundFailed},
			refunds.ID: {chargeonce.EventRefundSucceeded, chargeonce.EventRefundFailed},
		}, due, "neither the endpoint that wants payment.not_processed only nor the disabled one gets these")
		require.NotContains(t, due, notProcessed.ID)

		_, err = s.GetEvent(ctx, "evt_00000000000000000000000000000000")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.OrderEvents(ctx, 999999)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

// TestStore_AdoptedLateChargeIsAPaymentSucceeded: to the merchant, the
// attempt whose late charge paid the order succeeded.
func TestStore_AdoptedLateChargeIsAPaymentSucceeded(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		abandoned, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, abandoned.Key, chargeonce.AttemptAbandoned, ""))
		d, _ := recordLateCharge(t, s, lateCharge(t, abandoned.Key, "ch_late"))
		require.Equal(t, chargeonce.LateChargeAdopted, d)
		d, _ = recordLateCharge(t, s, lateCharge(t, abandoned.Key, "ch_late"))
		require.Equal(t, chargeonce.LateChargeKnown, d)

		events := orderEvents(t, s, order.ID)
		require.Equal(t, []string{"1 payment.abandoned", "2 payment.succeeded"}, eventTypes(events))
		require.Equal(t, abandoned.Key, events[1].AttemptKey)
		require.Equal(t, "succeeded", events[1].Status)
		require.Equal(t, "ch_late", events[1].ProviderID)
		require.Equal(t, chargeonce.OrderPaid, events[1].OrderStatus)
	})
}

// TestStore_EventSequenceHasNoGapsUnderConcurrentSettlements: an attempt
// and the refunds of late charges of one order settle at once; their events
// are numbered 1 to n, each once.
func TestStore_EventSequenceHasNoGapsUnderConcurrentSettlements(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		const lateCharges = 8
		s := openStore(t, withConns(dsn, lateCharges+1))
		order := newOrder(t, s)
		abandoned, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, abandoned.Key, chargeonce.AttemptAbandoned, ""))
		var refundKeys []string
		for i := range lateCharges {
			c := lateCharge(t, abandoned.Key, fmt.Sprintf("ch_late_%d", i))
			c.Amount.Minor-- // not the order's amount: refunded
			d, f := recordLateCharge(t, s, c)
			require.Equal(t, chargeonce.LateChargeRefunded, d)
			refundKeys = append(refundKeys, f.Key)
		}
		open, _ := checkout(t, s, order.ID, card("visa"), base)
		release := holdTable(t, dsn, "orders")

		errs := make([]error, lateCharges+1)
		var wg sync.WaitGroup
		wg.Go(func() {
			_, errs[lateCharges] = s.SettleAttempt(context.Background(), open.Key, chargeonce.AttemptSucceeded, "ch_paid", base.Add(time.Minute))
		})
		for i, key := range refundKeys {
			wg.Go(func() {
				_, errs[i] = s.SettleRefund(context.Background(), key, chargeonce.RefundSucceeded, fmt.Sprintf("re_%d", i), "", base.Add(time.Minute))
			})
		}
		release(lateCharges + 1)
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}

		events := orderEvents(t, s, order.ID)
		require.Len(t, events, lateCharges+2)
		kinds := make(map[chargeonce.EventType]int)
		for i, ev := range events {
			require.Equal(t, int64(i+1), ev.Sequence)
			kinds[ev.Type]++
		}
		require.Equal(t, map[chargeonce.EventType]int{
			chargeonce.EventPaymentAbandoned: 1, chargeonce.EventPaymentSucceeded: 1, chargeonce.EventRefundSucceeded: lateCharges,
		}, kinds)
	})
}

// TestStore_ConcurrentClaimsNeverShareADelivery: dispatchers that claim at
// once each get deliveries of their own; a claimed delivery is claimed
// again only once its lease ran out.
func TestStore_ConcurrentClaimsNeverShareADelivery(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		const (
			claimers = 4
			orders   = 12
		)
		s := openStore(t, withConns(dsn, claimers))
		newEndpoint(t, s)
		newEndpoint(t, s)
		for range orders {
			o := newOrder(t, s)
			a, _ := checkout(t, s, o.ID, card("visa"), base)
			require.True(t, settle(t, s, a.Key, chargeonce.AttemptDeclined, ""))
		}

		release := holdTable(t, dsn, "event_deliveries")
		claimed := make([][]int64, claimers)
		var wg sync.WaitGroup
		for i := range claimers {
			wg.Go(func() {
				for {
					due, err := s.ClaimDeliveries(context.Background(), later, time.Hour, 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(due) == 0 {
						return
					}
					for _, d := range due {
						claimed[i] = append(claimed[i], d.ID)
					}
				}
			})
		}
		release(claimers)
		wg.Wait()
		all := slices.Concat(claimed...)
		require.Len(t, all, 2*orders)
		slices.Sort(all)
		require.Len(t, slices.Compact(all), 2*orders, "each delivery once")

		require.Empty(t, claim(t, s, later.Add(59*time.Minute)), "leased")
		require.Len(t, claim(t, s, later.Add(time.Hour)), 2*orders, "the lease ran out")
	})
}

// TestStore_TriesMoveADeliveryOn: a failed try makes the delivery due at
// the next time, and the endpoint failing since the first failure; a 2xx
// delivers it; the schedule's end gives it up; the log shows every try,
// newest first; a try recorded twice is refused.
func TestStore_TriesMoveADeliveryOn(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		e := newEndpoint(t, s)
		for range 2 {
			o := newOrder(t, s)
			a, _ := checkout(t, s, o.ID, card("visa"), base)
			require.True(t, settle(t, s, a.Key, chargeonce.AttemptDeclined, ""))
		}
		stats, err := s.DeliveryStats(ctx)
		require.NoError(t, err)
		require.Equal(t, store.DeliveryStats{Pending: 2, OldestPendingAt: stored(base.Add(time.Minute)), FailingSince: map[string]time.Time{}}, stats)

		due := claim(t, s, later)
		require.Len(t, due, 2)
		first, second := due[0], due[1]
		require.Equal(t, 1, first.Attempt)
		require.Zero(t, first.FailedInRound)
		require.Nil(t, first.FirstFailedAt)

		t1 := later.Add(time.Second)
		record(t, s, first, store.DeliveryFailed, 500, t1, t1.Add(30*time.Second))
		record(t, s, second, store.DeliveryFailed, 0, t1, t1.Add(5*time.Second))
		err = s.RecordDeliveryAttempt(ctx, store.DeliveryAttempt{DeliveryID: first.ID, Attempt: 1, At: t1,
			Result: store.DeliveryDelivered, HTTPStatus: 200})
		require.ErrorIs(t, err, store.ErrConflict, "the try was recorded already")

		stats, err = s.DeliveryStats(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]time.Time{e.ID: stored(t1)}, stats.FailingSince)
		got, err := s.GetEndpoint(ctx, e.ID)
		require.NoError(t, err)
		require.Equal(t, stored(t1), *got.FailingSince)

		due = claim(t, s, t1.Add(5*time.Second))
		require.Len(t, due, 1, "only the delivery due then")
		require.Equal(t, second.ID, due[0].ID)
		require.Equal(t, 2, due[0].Attempt)
		require.Equal(t, 1, due[0].FailedInRound)
		require.Equal(t, stored(t1), *due[0].FirstFailedAt)
		t2 := t1.Add(6 * time.Second)
		record(t, s, due[0], store.DeliveryGivenUp, 503, t2, time.Time{})

		due = claim(t, s, t1.Add(30*time.Second))
		require.Len(t, due, 1)
		require.Equal(t, first.ID, due[0].ID)
		t3 := t1.Add(31 * time.Second)
		record(t, s, due[0], store.DeliveryDelivered, 204, t3, time.Time{})

		require.Empty(t, claim(t, s, later.Add(48*time.Hour)), "delivered and given up")
		stats, err = s.DeliveryStats(ctx)
		require.NoError(t, err)
		require.Equal(t, store.DeliveryStats{FailingSince: map[string]time.Time{}}, stats)

		log, err := s.Deliveries(ctx, e.ID, 10)
		require.NoError(t, err)
		results := make([]string, len(log))
		for i, a := range log {
			results[i] = fmt.Sprintf("%d %d %s %d", a.DeliveryID, a.Attempt, a.Result, a.HTTPStatus)
		}
		require.Equal(t, []string{
			fmt.Sprintf("%d 2 delivered 204", first.ID),
			fmt.Sprintf("%d 2 given_up 503", second.ID),
			fmt.Sprintf("%d 1 failed 0", second.ID),
			fmt.Sprintf("%d 1 failed 500", first.ID),
		}, results)
		require.Equal(t, store.FailureConnectionRefused, log[2].Failure)
		require.Equal(t, store.FailureHTTPStatus, log[1].Failure)
		require.Empty(t, log[0].Failure)
		require.Equal(t, stored(t1.Add(5*time.Second)), log[2].NextAttemptAt)
		require.Equal(t, first.Event.ID, log[0].EventID)
		require.Equal(t, chargeonce.EventPaymentDeclined, log[0].EventType)
		require.Equal(t, e.ID, log[0].EndpointID)
		require.Equal(t, 3*time.Millisecond, log[0].Duration)

		// A try recorded before the log kept classes holds the transport's
		// own text, or nothing for an answer: each reads as its class, and
		// the text never shows.
		rawExec(t, dsn, `UPDATE event_delivery_attempts SET error = $1 WHERE delivery_id = $2 AND attempt = 1`,
			"dial tcp 10.0.0.1:443: connect: connection refused", second.ID)
		rawExec(t, dsn, `UPDATE event_delivery_attempts SET error = '' WHERE delivery_id = $1 AND attempt = 1`, first.ID)
		log, err = s.Deliveries(ctx, e.ID, 10)
		require.NoError(t, err)
		require.Equal(t, store.FailureConnection, log[2].Failure)
		require.Equal(t, store.FailureHTTPStatus, log[3].Failure)

		log, err = s.Deliveries(ctx, e.ID, 1)
		require.NoError(t, err)
		require.Len(t, log, 1)
		_, err = s.Deliveries(ctx, chargeonce.NewEndpointID(), 1)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.Deliveries(ctx, e.ID, 0)
		require.Error(t, err)
	})
}

// TestStore_GoneDisablesTheEndpoint: a 410 disables the endpoint, whose
// other deliveries then wait, and which gets no new ones; once enabled,
// they go again.
func TestStore_GoneDisablesTheEndpoint(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		gone := newEndpoint(t, s)
		other := newEndpoint(t, s)
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptDeclined, ""))
		a, _ = checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptDeclined, ""))

		due := claim(t, s, later)
		require.Len(t, due, 4)
		var atGone []store.DueDelivery
		for _, d := range due {
			if d.Endpoint.ID == gone.ID {
				atGone = append(atGone, d)
			} else {
				record(t, s, d, store.DeliveryDelivered, 200, later, time.Time{})
			}
		}
		require.Len(t, atGone, 2)
		record(t, s, atGone[0], store.DeliveryGone, 410, later, time.Time{})
		e, err := s.GetEndpoint(ctx, gone.ID)
		require.NoError(t, err)
		require.Equal(t, stored(later), *e.DisabledAt)
		require.Equal(t, store.EndpointGoneReason, e.DisabledReason)
		err = s.RecordDeliveryAttempt(ctx, store.DeliveryAttempt{DeliveryID: atGone[1].ID, Attempt: 1, At: later,
			Result: store.DeliveryGone, HTTPStatus: 500})
		require.Error(t, err, "gone is a 410's")

		require.Empty(t, claim(t, s, later.Add(time.Hour)), "leases ran out, but the endpoint is disabled")
		a, _ = checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptDeclined, ""))
		due = claim(t, s, later.Add(time.Hour))
		require.Equal(t, map[string][]chargeonce.EventType{other.ID: {chargeonce.EventPaymentDeclined}}, claimedAt(due))
		stats, err := s.DeliveryStats(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, stats.Pending, "the disabled endpoint's delivery waits for no dispatcher")

		err = s.ReplayEvent(ctx, atGone[0].Event.ID, gone.ID, later)
		require.ErrorIs(t, err, store.ErrEndpointDisabled)
		_, err = s.SetEndpointDisabled(ctx, gone.ID, false, "", later)
		require.NoError(t, err)
		due = claim(t, s, later.Add(2*time.Hour))
		ids := func(due []store.DueDelivery) []int64 {
			var out []int64
			for _, d := range due {
				out = append(out, d.ID)
			}
			return out
		}
		require.Contains(t, ids(due), atGone[1].ID, "its other delivery goes once it is enabled")
		require.NotContains(t, ids(due), atGone[0].ID, "gone stays gone until replayed")
	})
}

// TestStore_ReplayMakesAnEventDueAgain: a replay of a delivered or given
// up delivery, or of an event the endpoint never got, makes it due at
// once, with the schedule started again.
func TestStore_ReplayMakesAnEventDueAgain(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		s := openStore(t, dsn)
		e := newEndpoint(t, s)
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptDeclined, ""))
		a, _ = checkout(t, s, order.ID, card("visa"), base)
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptDeclined, ""))
		due := claim(t, s, later)
		require.Len(t, due, 2)
		record(t, s, due[0], store.DeliveryDelivered, 200, later, time.Time{})
		record(t, s, due[1], store.DeliveryFailed, 500, later, later.Add(time.Second))
		due1 := claim(t, s, later.Add(time.Second))
		require.Len(t, due1, 1)
		record(t, s, due1[0], store.DeliveryGivenUp, 500, later.Add(time.Second), time.Time{})
		require.Empty(t, claim(t, s, later.Add(time.Hour)))

		replayAt := later.Add(2 * time.Hour)
		require.NoError(t, s.ReplayEvent(ctx, due[0].Event.ID, e.ID, replayAt))
		require.NoError(t, s.ReplayEvent(ctx, due[1].Event.ID, e.ID, replayAt))
		require.Empty(t, claim(t, s, replayAt.Add(-time.Second)), "due at the replay")
		again := claim(t, s, replayAt)
		require.Len(t, again, 2)
		for _, d := range again {
			require.Zero(t, d.FailedInRound, "the schedule starts again")
			require.Nil(t, d.FirstFailedAt)
			if d.ID == due[0].ID {
				require.Equal(t, 2, d.Attempt, "the attempts keep counting")
			} else {
				require.Equal(t, 3, d.Attempt)
			}
		}

		late := newEndpoint(t, s)
		require.NoError(t, s.ReplayEvent(ctx, due[0].Event.ID, late.ID, replayAt))
		require.Equal(t, map[string][]chargeonce.EventType{late.ID: {chargeonce.EventPaymentDeclined}}, claimedAt(claim(t, s, replayAt)),
			"an endpoint made after the event gets it on a replay")

		require.ErrorIs(t, s.ReplayEvent(ctx, "evt_00000000000000000000000000000000", e.ID, replayAt), store.ErrNotFound)
		require.ErrorIs(t, s.ReplayEvent(ctx, due[0].Event.ID, chargeonce.NewEndpointID(), replayAt), store.ErrNotFound)
	})
}

// benchEndpoint registers an endpoint that wants every event.
func benchEndpoint(b *testing.B, s store.Store) {
	_, err := s.CreateEndpoint(context.Background(), store.NewEndpoint{
		ID: chargeonce.NewEndpointID(), URL: "https://shop.example/events", Secret: secret, Now: base,
	})
	require.NoError(b, err)
}
