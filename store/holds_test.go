package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/store"
)

// authorizedOrder is an order of try whose manual capture authorized a
// hold, with the attempt that did and the hold's charge.
func authorizedOrder(t *testing.T, s store.Store) (store.Order, store.Attempt, string) {
	t.Helper()
	order := newOrder(t, s)
	n := newAttempt(t, order.ID, card("visa"), base)
	n.Capture = chargeonce.CaptureManual
	_, a, d, err := s.GetOrStartAttempt(context.Background(), n)
	require.NoError(t, err)
	require.Equal(t, store.DecisionCreated, d)
	charge := "ch_hold_" + strings.ReplaceAll(a.Key, "-", "")
	settled, err := s.SettleAuthorization(context.Background(), a.Key, newHold(charge))
	require.NoError(t, err)
	require.True(t, settled.Changed)
	o, _ := getOrder(t, s, order.ID)
	return o, a, charge
}

func newHold(charge string) store.NewHold {
	return store.NewHold{
		ChargeID:      charge,
		CaptureBefore: base.Add(7 * 24 * time.Hour),
		Deadline:      base.Add(7*24*time.Hour - time.Hour),
		At:            base.Add(time.Minute),
	}
}

func newMove(t *testing.T, orderID int64, kind chargeonce.MoveKind, amount int64, requestKey string) store.NewMove {
	t.Helper()
	n := store.NewMove{
		OrderID:         orderID,
		Kind:            kind,
		Amount:          amount,
		Origin:          chargeonce.MoveByMerchant,
		Key:             newKey(t),
		ReferencePrefix: "bookstore",
		Now:             base.Add(time.Hour),
	}
	if requestKey != "" {
		n.RequestKey, n.RequestFingerprint = requestKey, fingerprint(requestKey+string(kind))
	}
	return n
}

func startMove(t *testing.T, s store.Store, n store.NewMove) (store.Move, store.MoveDecision) {
	t.Helper()
	m, d, err := s.StartMove(context.Background(), n)
	require.NoError(t, err)
	return m, d
}

func settleMove(t *testing.T, s store.Store, key string, status chargeonce.MoveStatus, code string, ended chargeonce.HoldStatus, captured int64) bool {
	t.Helper()
	changed, err := s.SettleMove(context.Background(), key, status, code, ended, captured, base.Add(2*time.Hour))
	require.NoError(t, err)
	return changed
}

// requireHoldEvents checks the types, statuses and amounts of the order's
// merchant events, by sequence.
func requireHoldEvents(t *testing.T, s store.Store, orderID int64, want ...store.MerchantEvent) {
	t.Helper()
	events, err := s.OrderEvents(context.Background(), orderID)
	require.NoError(t, err)
	got := make([]store.MerchantEvent, len(events))
	for i, e := range events {
		got[i] = store.MerchantEvent{Type: e.Type, Sequence: e.Sequence, OrderStatus: e.OrderStatus, Status: e.Status, Amount: e.Amount}
	}
	require.Equal(t, want, got)
}

func getHold(t *testing.T, s store.Store, attemptKey string) store.Hold {
	t.Helper()
	h, err := s.GetHold(context.Background(), attemptKey)
	require.NoError(t, err)
	return h
}

func TestStore_AuthorizationStoresTheHoldAndAuthorizesTheOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, a, charge := authorizedOrder(t, s)
		require.Equal(t, chargeonce.CaptureManual, a.Capture)
		require.Equal(t, chargeonce.DeadlineVoid, a.OnDeadline, "a manual capture's deadline voids unless told otherwise")

		require.Equal(t, chargeonce.OrderAuthorized, order.Status)
		require.Equal(t, charge, order.ProviderPaymentID, "an authorized order names its hold's charge")
		_, attempts := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.AttemptSucceeded, attempts[0].Status)
		require.Equal(t, charge, attempts[0].ProviderPaymentID)

		h := getHold(t, s, a.Key)
		require.Equal(t, store.Hold{
			AttemptKey:    a.Key,
			OrderID:       order.ID,
			ChargeID:      charge,
			Provider:      chargeonce.DefaultProvider,
			Amount:        try,
			Status:        chargeonce.HoldAuthorized,
			CaptureBefore: stored(base.Add(7 * 24 * time.Hour)),
			Deadline:      stored(base.Add(7*24*time.Hour - time.Hour)),
			OnDeadline:    chargeonce.DeadlineVoid,
			AuthorizedAt:  stored(base.Add(time.Minute)),
		}, h)
		byOrder, err := s.OrderHold(context.Background(), order.ID)
		require.NoError(t, err)
		require.Equal(t, h, byOrder)

		again, err := s.SettleAuthorization(context.Background(), a.Key, newHold("ch_other"))
		require.NoError(t, err)
		require.Equal(t, store.Settlement{}, again, "a terminal attempt is left as it is, and an authorized order is not paid")
		requireHoldEvents(t, s, order.ID, store.MerchantEvent{Type: chargeonce.EventPaymentAuthorized, Sequence: 1,
			OrderStatus: chargeonce.OrderAuthorized, Status: "authorized", Amount: try})
		require.Equal(t, h, getHold(t, s, a.Key))
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM holds`))

		_, paying, d, err := s.GetOrStartAttempt(context.Background(), newAttempt(t, order.ID, card("visa"), base.Add(time.Hour)))
		require.NoError(t, err)
		require.Equal(t, store.DecisionAlreadyPaid, d, "an authorized order is never offered for payment again")
		require.Equal(t, a.Key, paying.Key)

		_, err = s.OrderHold(context.Background(), newOrder(t, s).ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.GetHold(context.Background(), newKey(t))
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestStore_AuthorizationOfAnAutomaticCaptureIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		a, _ := checkout(t, s, order.ID, card("visa"), base)
		_, err := s.SettleAuthorization(context.Background(), a.Key, newHold("ch_hold"))
		require.ErrorContains(t, err, "authorizes no hold")
		got, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaymentPending, got.Status, "nothing changed")
		require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM holds`))
	})
}

func TestStore_CheckoutReusesAnOpenAttemptOnlyForTheSameCaptureMode(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		manual := func(action chargeonce.DeadlineAction) store.NewAttempt {
			n := newAttempt(t, order.ID, card("visa"), base)
			n.Capture, n.OnDeadline = chargeonce.CaptureManual, action
			return n
		}
		_, open, d, err := s.GetOrStartAttempt(context.Background(), manual(""))
		require.NoError(t, err)
		require.Equal(t, store.DecisionCreated, d)

		_, a, d, err := s.GetOrStartAttempt(context.Background(), manual(chargeonce.DeadlineVoid))
		require.NoError(t, err)
		require.Equal(t, store.DecisionReused, d, "an empty deadline action is void")
		require.Equal(t, open.Key, a.Key)

		for _, n := range []store.NewAttempt{newAttempt(t, order.ID, card("visa"), base), manual(chargeonce.DeadlineCapture)} {
			_, a, d, err = s.GetOrStartAttempt(context.Background(), n)
			require.NoError(t, err)
			require.Equal(t, store.DecisionConflict, d, "capture %q, deadline %q", n.Capture, n.OnDeadline)
			require.Equal(t, open.Key, a.Key)
		}

		bad := newAttempt(t, order.ID, card("visa"), base)
		bad.OnDeadline = chargeonce.DeadlineCapture
		_, _, _, err = s.GetOrStartAttempt(context.Background(), bad)
		require.ErrorContains(t, err, "without a manual capture")
		bad = manual("later")
		_, _, _, err = s.GetOrStartAttempt(context.Background(), bad)
		require.ErrorContains(t, err, "unknown deadline action")
		bad.Capture, bad.OnDeadline = "sometimes", ""
		_, _, _, err = s.GetOrStartAttempt(context.Background(), bad)
		require.ErrorContains(t, err, "unknown capture mode")
	})
}

func TestStore_MoveIsStoredPendingAndItsRequestKeyReplayed(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, a, charge := authorizedOrder(t, s)
		n := newMove(t, order.ID, chargeonce.MoveCapture, 20000, "capture-1")
		m, d := startMove(t, s, n)
		require.Equal(t, store.MoveCreated, d)
		require.Equal(t, store.Move{
			MoveIntent: chargeonce.MoveIntent{
				Key:               n.Key,
				Kind:              chargeonce.MoveCapture,
				OrderID:           order.ID,
				AttemptKey:        a.Key,
				ChargeID:          charge,
				Amount:            chargeonce.Money{Minor: 20000, Currency: "TRY"},
				MerchantReference: chargeonce.MoveReference("bookstore", chargeonce.MoveCapture, n.Key),
				Origin:            chargeonce.MoveByMerchant,
				CreatedAt:         stored(n.Now),
				Provider:          chargeonce.DefaultProvider,
			},
			Status:             chargeonce.MovePending,
			RequestKey:         "capture-1",
			RequestFingerprint: n.RequestFingerprint,
		}, m)
		require.NoError(t, m.Validate())

		again := newMove(t, order.ID, chargeonce.MoveCapture, 20000, "capture-1")
		replayed, d := startMove(t, s, again)
		require.Equal(t, store.MoveReplayed, d)
		require.Equal(t, m, replayed)

		other := newMove(t, order.ID, chargeonce.MoveVoid, 0, "capture-1")
		reused, d := startMove(t, s, other)
		require.Equal(t, store.MoveKeyReused, d, "the key decides before the hold does")
		require.Equal(t, m, reused)
		elsewhere := newMove(t, 999999, chargeonce.MoveVoid, 0, "capture-1")
		reused, d = startMove(t, s, elsewhere)
		require.Equal(t, store.MoveKeyReused, d, "the key decides before the order does")
		require.Equal(t, m, reused)

		for _, n := range []store.NewMove{
			newMove(t, order.ID, chargeonce.MoveCapture, 0, "capture-2"),
			newMove(t, order.ID, chargeonce.MoveVoid, 0, ""),
		} {
			_, _, err := s.StartMove(context.Background(), n)
			require.ErrorIs(t, err, store.ErrHoldMoving, "%s while a capture is pending", n.Kind)
		}

		moves, err := s.OrderMoves(context.Background(), order.ID)
		require.NoError(t, err)
		require.Equal(t, []store.Move{m}, moves)
		got, err := s.GetMove(context.Background(), m.Key)
		require.NoError(t, err)
		require.Equal(t, m, got)
		_, err = s.GetMove(context.Background(), newKey(t))
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.OrderMoves(context.Background(), 999999)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestStore_MoveOfNoAuthorizedHoldIsRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		paid, _ := paidOrder(t, s)
		placed := newOrder(t, s)
		authorized, _, _ := authorizedOrder(t, s)

		for _, c := range []struct {
			name string
			n    store.NewMove
			err  error
		}{
			{"captured at once", newMove(t, paid.ID, chargeonce.MoveCapture, 0, ""), store.ErrNotHeld},
			{"placed", newMove(t, placed.ID, chargeonce.MoveVoid, 0, "void-placed"), store.ErrNotHeld},
			{"no such order", newMove(t, 999999, chargeonce.MoveVoid, 0, "void-missing"), store.ErrNotFound},
			{"more than the hold", newMove(t, authorized.ID, chargeonce.MoveCapture, try.Minor+1, "capture-more"), store.ErrCaptureExceedsHold},
		} {
			_, _, err := s.StartMove(context.Background(), c.n)
			require.ErrorIs(t, err, c.err, c.name)
		}

		bad := func(change func(*store.NewMove)) store.NewMove {
			n := newMove(t, authorized.ID, chargeonce.MoveCapture, 0, "bad")
			change(&n)
			return n
		}
		for name, n := range map[string]store.NewMove{
			"void of an amount":           bad(func(n *store.NewMove) { n.Kind, n.Amount = chargeonce.MoveVoid, 100 }),
			"negative amount":             bad(func(n *store.NewMove) { n.Amount = -1 }),
			"unknown kind":                bad(func(n *store.NewMove) { n.Kind = "refund" }),
			"unknown origin":              bad(func(n *store.NewMove) { n.Origin = "customer" }),
			"deadline with a request key": bad(func(n *store.NewMove) { n.Origin = chargeonce.MoveByDeadline }),
			"bad key":                     bad(func(n *store.NewMove) { n.Key = "not-a-key" }),
			"bad prefix":                  bad(func(n *store.NewMove) { n.ReferencePrefix = "Book Store" }),
			"key without fingerprint":     bad(func(n *store.NewMove) { n.RequestFingerprint = "" }),
			"bad fingerprint":             bad(func(n *store.NewMove) { n.RequestFingerprint = strings.Repeat("G", 64) }),
			"no time":                     bad(func(n *store.NewMove) { n.Now = time.Time{} }),
		} {
			_, _, err := s.StartMove(context.Background(), n)
			require.Error(t, err, name)
			for _, sentinel := range []error{store.ErrNotFound, store.ErrNotHeld, store.ErrHoldMoving, store.ErrCaptureExceedsHold, store.ErrConflict} {
				require.False(t, errors.Is(err, sentinel), "%s: %v", name, err)
			}
		}
		require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM hold_moves`), "nothing was stored")
	})
}

func TestStore_NotProcessedMoveFreesItsRequestKeyAndTheHold(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, a, _ := authorizedOrder(t, s)
		first, _ := startMove(t, s, newMove(t, order.ID, chargeonce.MoveCapture, 0, "capture-1"))
		require.Equal(t, try, first.Amount, "0 captures the whole hold")
		require.True(t, settleMove(t, s, first.Key, chargeonce.MoveNotProcessed, "", "", 0))
		require.Equal(t, chargeonce.HoldAuthorized, getHold(t, s, a.Key).Status)

		second, d := startMove(t, s, newMove(t, order.ID, chargeonce.MoveCapture, 0, "capture-1"))
		require.Equal(t, store.MoveCreated, d, "the request key is free again")
		require.NotEqual(t, first.Key, second.Key)
	})
}

func TestStore_SucceededCaptureEndsTheHoldAndCapturesTheOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, a, charge := authorizedOrder(t, s)
		m, _ := startMove(t, s, newMove(t, order.ID, chargeonce.MoveCapture, 20000, "capture-1"))
		require.True(t, settleMove(t, s, m.Key, chargeonce.MoveSucceeded, "", chargeonce.HoldCaptured, 20000))
		require.False(t, settleMove(t, s, m.Key, chargeonce.MoveFailed, "", chargeonce.HoldVoided, 0), "a settled move stays settled")

		h := getHold(t, s, a.Key)
		require.Equal(t, chargeonce.HoldCaptured, h.Status)
		require.Equal(t, int64(20000), h.Captured)
		require.Equal(t, stored(base.Add(2*time.Hour)), *h.EndedAt)
		got, err := s.GetMove(context.Background(), m.Key)
		require.NoError(t, err)
		require.Equal(t, chargeonce.MoveSucceeded, got.Status)
		require.Equal(t, stored(base.Add(2*time.Hour)), *got.SettledAt)
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderCaptured, o.Status)
		require.Equal(t, charge, o.ProviderPaymentID)
		requireHoldEvents(t, s, order.ID,
			store.MerchantEvent{Type: chargeonce.EventPaymentAuthorized, Sequence: 1, OrderStatus: chargeonce.OrderAuthorized, Status: "authorized", Amount: try},
			store.MerchantEvent{Type: chargeonce.EventPaymentCaptured, Sequence: 2, OrderStatus: chargeonce.OrderCaptured, Status: "captured",
				Amount: chargeonce.Money{Minor: 20000, Currency: try.Currency}})

		for _, kind := range []chargeonce.MoveKind{chargeonce.MoveCapture, chargeonce.MoveVoid} {
			_, _, err := s.StartMove(context.Background(), newMove(t, order.ID, kind, 0, ""))
			require.ErrorIs(t, err, store.ErrNotHeld, "a %s after the capture", kind)
		}
		_, paying, d, err := s.GetOrStartAttempt(context.Background(), newAttempt(t, order.ID, card("visa"), base))
		require.NoError(t, err)
		require.Equal(t, store.DecisionAlreadyPaid, d)
		require.Equal(t, a.Key, paying.Key)
	})
}

// A captured order refunds what the capture took, not the order's amount,
// and its refunds move it as a paid order's do, back to captured when they
// return nothing after all.
func TestStore_CapturedOrderRefundsAtMostTheCapturedAmount(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, _, charge := authorizedOrder(t, s)
		m, _ := startMove(t, s, newMove(t, order.ID, chargeonce.MoveCapture, 20000, ""))
		require.True(t, settleMove(t, s, m.Key, chargeonce.MoveSucceeded, "", chargeonce.HoldCaptured, 20000))

		c, err := s.RefundableCharge(context.Background(), charge)
		require.NoError(t, err)
		require.Equal(t, chargeonce.Money{Minor: 20000, Currency: "TRY"}, c.Amount)
		_, _, err = s.StartRefund(context.Background(), newRefund(t, order.ID, 20001, ""))
		require.ErrorIs(t, err, store.ErrRefundExceedsCharge)

		f, d := startRefund(t, s, newRefund(t, order.ID, 5000, ""))
		require.Equal(t, store.RefundCreated, d)
		require.True(t, settleRefund(t, s, f.Key, chargeonce.RefundSucceeded, "re_1"))
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPartiallyRefunded, o.Status)

		rest, _ := startRefund(t, s, newRefund(t, order.ID, 0, ""))
		require.Equal(t, int64(15000), rest.Amount.Minor, "the rest of what the capture took")
		require.True(t, settleRefund(t, s, rest.Key, chargeonce.RefundNotProcessed, ""))

		require.True(t, settleRefund(t, s, f.Key, chargeonce.RefundFailed, ""))
		o, _ = getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderCaptured, o.Status, "refunds that return nothing leave it captured, not paid")

		all, _ := startRefund(t, s, newRefund(t, order.ID, 0, ""))
		require.True(t, settleRefund(t, s, all.Key, chargeonce.RefundSucceeded, "re_2"))
		o, _ = getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderRefunded, o.Status)
	})
}

func TestStore_UncapturedHoldIsNotRefundable(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, _, charge := authorizedOrder(t, s)
		_, _, err := s.StartRefund(context.Background(), newRefund(t, order.ID, 0, ""))
		require.ErrorIs(t, err, store.ErrNotRefundable)
		_, err = s.RefundableCharge(context.Background(), charge)
		require.ErrorIs(t, err, store.ErrNotRefundable, "a hold took no money")
	})
}

func TestStore_DeclinedMoveEndsAnExpiredHold(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, a, _ := authorizedOrder(t, s)
		m, _ := startMove(t, s, newMove(t, order.ID, chargeonce.MoveCapture, 0, ""))
		require.True(t, settleMove(t, s, m.Key, chargeonce.MoveDeclined, "hold_expired", chargeonce.HoldExpired, 0))
		require.False(t, settleMove(t, s, m.Key, chargeonce.MoveSucceeded, "", chargeonce.HoldCaptured, 100))

		h := getHold(t, s, a.Key)
		require.Equal(t, chargeonce.HoldExpired, h.Status)
		require.Zero(t, h.Captured)
		got, err := s.GetMove(context.Background(), m.Key)
		require.NoError(t, err)
		require.Equal(t, chargeonce.MoveDeclined, got.Status)
		require.Equal(t, "hold_expired", got.DeclineCode)
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderExpired, o.Status)
		requireHoldEvents(t, s, order.ID,
			store.MerchantEvent{Type: chargeonce.EventPaymentAuthorized, Sequence: 1, OrderStatus: chargeonce.OrderAuthorized, Status: "authorized", Amount: try},
			store.MerchantEvent{Type: chargeonce.EventPaymentAuthorizationExpired, Sequence: 2, OrderStatus: chargeonce.OrderExpired, Status: "expired", Amount: try})

		_, err = s.SettleMove(context.Background(), newKey(t), chargeonce.MoveFailed, "", "", 0, base)
		require.ErrorIs(t, err, store.ErrNotFound)
		for name, call := range map[string]func() error{
			"decline code of a success": func() error {
				_, err := s.SettleMove(context.Background(), m.Key, chargeonce.MoveSucceeded, "x", "", 0, base)
				return err
			},
			"capture of nothing": func() error {
				_, err := s.SettleMove(context.Background(), m.Key, chargeonce.MoveSucceeded, "", chargeonce.HoldCaptured, 0, base)
				return err
			},
			"pending": func() error {
				_, err := s.SettleMove(context.Background(), m.Key, chargeonce.MovePending, "", "", 0, base)
				return err
			},
		} {
			require.Error(t, call(), name)
		}
	})
}

func TestStore_EndHoldEndsItOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, a, _ := authorizedOrder(t, s)
		changed, err := s.EndHold(context.Background(), a.Key, chargeonce.HoldVoided, 0, base.Add(time.Hour))
		require.NoError(t, err)
		require.True(t, changed)
		changed, err = s.EndHold(context.Background(), a.Key, chargeonce.HoldCaptured, 100, base.Add(2*time.Hour))
		require.NoError(t, err)
		require.False(t, changed, "an ended hold never changes")

		h := getHold(t, s, a.Key)
		require.Equal(t, chargeonce.HoldVoided, h.Status)
		require.Equal(t, stored(base.Add(time.Hour)), *h.EndedAt)
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderVoided, o.Status)
		requireHoldEvents(t, s, order.ID,
			store.MerchantEvent{Type: chargeonce.EventPaymentAuthorized, Sequence: 1, OrderStatus: chargeonce.OrderAuthorized, Status: "authorized", Amount: try},
			store.MerchantEvent{Type: chargeonce.EventPaymentVoided, Sequence: 2, OrderStatus: chargeonce.OrderVoided, Status: "voided", Amount: try})
		_, _, err = s.StartMove(context.Background(), newMove(t, order.ID, chargeonce.MoveCapture, 0, ""))
		require.ErrorIs(t, err, store.ErrNotHeld, "a capture after the void")

		_, err = s.EndHold(context.Background(), newKey(t), chargeonce.HoldVoided, 0, base)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.EndHold(context.Background(), a.Key, chargeonce.HoldAuthorized, 0, base)
		require.ErrorContains(t, err, "does not end a hold")
	})
}

// Captures and voids of one hold asked for at once leave one move that
// holds: the others learn that it is moving.
func TestStore_ConcurrentMovesOfOneHoldMakeOne(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, withConns(dsn, 8))
		order, _, _ := authorizedOrder(t, s)
		const callers = 12
		errs := make([]error, callers)
		decisions := make([]store.MoveDecision, callers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range callers {
			kind := chargeonce.MoveCapture
			if i%2 == 1 {
				kind = chargeonce.MoveVoid
			}
			n := newMove(t, order.ID, kind, 0, "")
			wg.Go(func() {
				<-start
				_, decisions[i], errs[i] = s.StartMove(context.Background(), n)
			})
		}
		close(start)
		wg.Wait()
		created := 0
		for i, err := range errs {
			if err == nil {
				require.Equal(t, store.MoveCreated, decisions[i])
				created++
				continue
			}
			require.ErrorIs(t, err, store.ErrHoldMoving)
		}
		require.Equal(t, 1, created)
		require.Equal(t, int64(1), rawCount(t, dsn, `SELECT count(*) FROM hold_moves`))
	})
}

func TestStore_MoveRequestLogAndOutbox(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order, _, _ := authorizedOrder(t, s)
		n := newMove(t, order.ID, chargeonce.MoveVoid, 0, "")
		n.Origin = chargeonce.MoveByDeadline
		m, _ := startMove(t, s, n)
		require.Equal(t, try, m.Amount, "a void releases the whole hold")

		r := chargeonce.ProviderRequest{Key: m.Key, At: stored(base.Add(90 * time.Minute)), StatusCode: 200, Outcome: "voided", Duration: 1500 * time.Microsecond}
		require.Equal(t, 1, logRequest(t, s, chargeonce.OperationVoid, r))
		r2 := r
		r2.At = r.At.Add(time.Second)
		require.Equal(t, 2, logRequest(t, s, chargeonce.OperationCapture, r2), "one log serves captures and voids")
		got, err := s.GetMove(context.Background(), m.Key)
		require.NoError(t, err)
		require.Equal(t, []chargeonce.ProviderRequest{r, r2}, got.Requests)
		moves, err := s.OrderMoves(context.Background(), order.ID)
		require.NoError(t, err)
		require.Nil(t, moves[0].Requests, "only GetMove loads the log")
		log, err := s.Requests(chargeonce.OperationCapture)
		require.NoError(t, err)
		_, err = log.Begin(context.Background(), newKey(t), base)
		require.ErrorIs(t, err, store.ErrNotFound)

		unstarted, err := s.UnstartedMoves(context.Background(), base.Add(2*time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, []string{m.Key}, moveKeys(unstarted))
		unstarted, err = s.UnstartedMoves(context.Background(), n.Now, 10)
		require.NoError(t, err)
		require.Empty(t, unstarted, "only moves created before the time")
		require.NoError(t, s.MarkMoveWorkflowStarted(context.Background(), m.Key))
		unstarted, err = s.UnstartedMoves(context.Background(), base.Add(2*time.Hour), 10)
		require.NoError(t, err)
		require.Empty(t, unstarted)
		require.NoError(t, s.MarkMoveChecked(context.Background(), m.Key, base.Add(3*time.Hour)))
		got, err = s.GetMove(context.Background(), m.Key)
		require.NoError(t, err)
		require.True(t, got.WorkflowStarted)
		require.Equal(t, stored(base.Add(3*time.Hour)), *got.LastCheckedAt)
		require.ErrorIs(t, s.MarkMoveWorkflowStarted(context.Background(), newKey(t)), store.ErrNotFound)
	})
}

func moveKeys(moves []store.Move) []string {
	ks := make([]string, len(moves))
	for i, m := range moves {
		ks[i] = m.Key
	}
	return ks
}

// TestStore_MigrationToHoldsKeepsPaidAndRefundedOrders migrates a database
// of version 11, with a paid, a partially refunded and a refunded order,
// their attempts, refunds, request logs, a late charge and a merchant
// event with its delivery, to the current schema. SQLite rebuilds orders
// and every table that refers to it or to one rebuilt: every row is kept,
// every reference leads to its row, and the old attempts took the money at
// once.
func TestStore_MigrationToHoldsKeepsPaidAndRefundedOrders(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		dialect, at := schemaAt(t, dsn, 11)
		orders := []struct{ status, charge string }{{"paid", "ch_paid"}, {"partially_refunded", "ch_part"}, {"refunded", "ch_ref"}}
		attemptKeys := make([]string, len(orders))
		for i, o := range orders {
			orderID := int64(1001 + i)
			rawExec(t, dsn, `INSERT INTO orders (amount_minor, currency, description, status, provider_payment_id, created_at, updated_at, event_sequence)
				VALUES (54890, 'TRY', 'Collected works', $1, $2, $3, $3, $4)`, o.status, o.charge, at, i)
			attemptKeys[i] = newKey(t)
			rawExec(t, dsn, `INSERT INTO payment_attempts (idempotency_key, order_id, amount_minor, currency, card_hash, card_hash_keyed,
					merchant_reference, status, provider_payment_id, workflow_started, created_at, abandon_at, settled_at, provider)
				VALUES ($1, $2, 54890, 'TRY', $3, true, $4, 'succeeded', $5, true, $6, $6, $6, 'eu')`,
				attemptKeys[i], orderID, card("visa"), chargeonce.MerchantReference("bookstore", orderID, attemptKeys[i]), o.charge, at)
			rawExec(t, dsn, `INSERT INTO provider_requests (idempotency_key, at, status_code, outcome, replayed, duration_us) VALUES ($1, $2, 200, 'succeeded', false, 1500)`,
				attemptKeys[i], at)
		}
		refundKeys := []string{newKey(t), newKey(t), newKey(t)}
		for i, f := range []struct {
			orderID int64
			charge  string
			minor   int64
			origin  string
		}{{1002, "ch_part", 1000, "merchant"}, {1003, "ch_ref", 54890, "merchant"}, {1001, "ch_late", 54890, "late_charge"}} {
			rawExec(t, dsn, `INSERT INTO refunds (idempotency_key, order_id, charge_id, amount_minor, currency, reason, origin, merchant_reference,
					status, provider_refund_id, workflow_started, created_at, settled_at, provider)
				VALUES ($1, $2, $3, $4, 'TRY', 'damaged', $5, $6, 'succeeded', $7, true, $8, $8, 'eu')`,
				refundKeys[i], f.orderID, f.charge, f.minor, f.origin, chargeonce.RefundReference("bookstore", refundKeys[i]), "re_"+f.charge, at)
			rawExec(t, dsn, `INSERT INTO refund_requests (idempotency_key, at, status_code, outcome, replayed, duration_us) VALUES ($1, $2, 200, 'succeeded', false, 900)`,
				refundKeys[i], at)
		}
		rawExec(t, dsn, `INSERT INTO late_charges (charge_id, attempt_key, order_id, amount_minor, currency, decision, refund_key, found_at)
			VALUES ('ch_late', $1, 1001, 54890, 'TRY', 'refunded', $2, $3)`, attemptKeys[0], refundKeys[2], at)
		rawExec(t, dsn, `INSERT INTO event_endpoints (id, url, event_types, description, secret, created_at)
			VALUES ('we_0123456789abcdef0123456789abcdef', 'https://shop.example/hooks', '', 'shop', 'whsec_x', $1)`, at)
		rawExec(t, dsn, `INSERT INTO merchant_events (id, order_id, sequence, type, attempt_key, refund_key, amount_minor, currency,
				order_status, provider_id, charge_id, status, failure_reason, created_at)
			VALUES ('evt_0123456789abcdef0123456789abcdef', 1002, 1, 'refund.succeeded', '', $1, 1000, 'TRY',
				'partially_refunded', 're_ch_part', 'ch_part', 'succeeded', '', $2)`, refundKeys[0], at)
		rawExec(t, dsn, `INSERT INTO event_deliveries (event_id, endpoint_id, status, attempts, failed_in_round, next_attempt_at, created_at)
			VALUES ('evt_0123456789abcdef0123456789abcdef', 'we_0123456789abcdef0123456789abcdef', 'pending', 1, 1, $1, $1)`, at)
		rawExec(t, dsn, `INSERT INTO event_delivery_attempts (delivery_id, endpoint_id, attempt, at, result, http_status, error, duration_us)
			SELECT id, 'we_0123456789abcdef0123456789abcdef', 1, $1, 'failed', 503, 'unavailable', 2000 FROM event_deliveries`, at)
		tables := []string{"orders", "payment_attempts", "provider_requests", "refunds", "refund_requests", "late_charges",
			"merchant_events", "event_deliveries", "event_delivery_attempts"}
		before := map[string]int64{}
		for _, table := range tables {
			before[table] = rawCount(t, dsn, `SELECT count(*) FROM `+table)
		}

		s := openStore(t, dsn)

		for _, table := range tables {
			require.Equal(t, before[table], rawCount(t, dsn, `SELECT count(*) FROM `+table), "the rows of %s are kept", table)
		}
		if dialect == "sqlite" {
			require.Zero(t, rawCount(t, dsn, `SELECT count(*) FROM pragma_foreign_key_check`), "every reference leads to its row")
			require.Equal(t, int64(17), rawCount(t, dsn, `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL
				AND tbl_name IN ('orders', 'payment_attempts', 'provider_requests', 'refunds', 'refund_requests', 'late_charges',
					'merchant_events', 'event_deliveries', 'event_delivery_attempts')`), "the indexes are back")
		}
		for i, o := range orders {
			got, attempts := getOrder(t, s, int64(1001+i))
			require.Equal(t, chargeonce.OrderStatus(o.status), got.Status)
			require.Equal(t, o.charge, got.ProviderPaymentID)
			require.Equal(t, []string{attemptKeys[i]}, keys(attempts))
			require.Equal(t, chargeonce.CaptureAutomatic, attempts[0].Capture, "every attempt before holds captured at once")
			require.Empty(t, attempts[0].OnDeadline)
			require.Len(t, attempts[0].Requests, 1)
		}
		f, err := s.GetRefund(context.Background(), refundKeys[0])
		require.NoError(t, err)
		require.Len(t, f.Requests, 1)

		rest, d := startRefund(t, s, newRefund(t, 1002, 0, ""))
		require.Equal(t, store.RefundCreated, d)
		require.Equal(t, int64(54890-1000), rest.Amount.Minor)
		require.Equal(t, int64(1004), newOrder(t, s).ID, "order numbers go on from the highest ever given")
		authorized, _, _ := authorizedOrder(t, s)
		require.Equal(t, chargeonce.OrderAuthorized, authorized.Status, "the new statuses are admitted")
	})
}

func TestStore_ManualCaptureDoesNotSucceedAsACharge(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		s := openStore(t, dsn)
		order := newOrder(t, s)
		n := newAttempt(t, order.ID, card("visa"), base)
		n.Capture = chargeonce.CaptureManual
		_, a, _, err := s.GetOrStartAttempt(context.Background(), n)
		require.NoError(t, err)
		_, err = s.SettleAttempt(context.Background(), a.Key, chargeonce.AttemptSucceeded, "ch_hold", base)
		require.ErrorContains(t, err, "by SettleAuthorization")
		o, _ := getOrder(t, s, order.ID)
		require.Equal(t, chargeonce.OrderPaymentPending, o.Status, "nothing changed")
		require.True(t, settle(t, s, a.Key, chargeonce.AttemptDeclined, "ch_declined"), "a manual capture is declined as any attempt is")
	})
}
