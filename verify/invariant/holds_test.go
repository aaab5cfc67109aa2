package invariant_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/store"
	"chargeonce/verify/invariant"
)

const (
	holdCharge = "ch_000001"
	captureKey = "0199aaaa-0000-7000-8000-000000000002"
	voidKey    = "0199aaaa-0000-7000-8000-000000000003"
	refundKey  = "0199aaaa-0000-7000-8000-000000000004"
)

var holdAmount = chargeonce.Money{Minor: 2500, Currency: "EUR"}

// heldOrder is one order of a manual capture, its hold and its moves as
// our books hold them, the provider's charge and refunds, and our refunds:
// a store and a provider for Check at once.
type heldOrder struct {
	store.Store // nil: the checker reads nothing else here
	order       store.Order
	hold        store.Hold
	moves       []store.Move
	charge      fakeprovider.Charge
	refunds     []fakeprovider.Refund
	ours        []store.Refund
}

func (h *heldOrder) GetOrder(_ context.Context, id int64) (store.Order, []store.Attempt, error) {
	if id != orderID {
		return store.Order{}, nil, store.ErrNotFound
	}
	return h.order, []store.Attempt{{
		Key: attemptKey, OrderID: orderID, Amount: holdAmount, Status: chargeonce.AttemptSucceeded,
		MerchantReference: h.charge.MerchantReference, ProviderPaymentID: holdCharge,
		Capture: chargeonce.CaptureManual, AbandonAt: time.Now().Add(-time.Hour), Provider: chargeonce.DefaultProvider,
	}}, nil
}

func (h *heldOrder) OrderRefunds(context.Context, int64) ([]store.Refund, error) { return h.ours, nil }

func (h *heldOrder) OrderHold(context.Context, int64) (store.Hold, error) { return h.hold, nil }

func (h *heldOrder) OrderMoves(context.Context, int64) ([]store.Move, error) { return h.moves, nil }

func (h *heldOrder) LateCharges(context.Context, []string) ([]store.RecordedLateCharge, error) {
	return nil, nil
}

func (h *heldOrder) ProviderState(context.Context) (invariant.ProviderState, error) {
	return invariant.ProviderState{Charges: []fakeprovider.Charge{h.charge}, Refunds: h.refunds}, nil
}

func ptr[T any](v T) *T { return &v }

// capturedAndRefunded is a hold captured in part, 1500 of 2500, and 500 of
// that refunded: every book agrees.
func capturedAndRefunded() *heldOrder {
	now := time.Now()
	ref := chargeonce.MerchantReference("shop", orderID, attemptKey)
	move := func(key string, kind chargeonce.MoveKind, minor int64, status chargeonce.MoveStatus) store.Move {
		return store.Move{MoveIntent: chargeonce.MoveIntent{Key: key, Kind: kind, OrderID: orderID, AttemptKey: attemptKey,
			ChargeID: holdCharge, Amount: chargeonce.Money{Minor: minor, Currency: "EUR"}}, Status: status}
	}
	refundRef := "shop-refund-" + refundKey
	h := &heldOrder{
		order: store.Order{ID: orderID, Amount: holdAmount, Status: chargeonce.OrderPartiallyRefunded, ProviderPaymentID: holdCharge},
		hold: store.Hold{AttemptKey: attemptKey, OrderID: orderID, ChargeID: holdCharge, Amount: holdAmount, Captured: 1500,
			Status: chargeonce.HoldCaptured, Deadline: now.Add(time.Hour), AuthorizedAt: now.Add(-time.Minute), EndedAt: ptr(now)},
		moves: []store.Move{move(captureKey, chargeonce.MoveCapture, 1500, chargeonce.MoveSucceeded)},
		charge: fakeprovider.Charge{ID: holdCharge, Amount: 2500, Currency: "EUR", Status: fakeprovider.ChargeSucceeded,
			AmountCaptured: ptr[int64](1500), MerchantReference: ref, IdempotencyKey: attemptKey, Created: now.Add(-time.Minute)},
		refunds: []fakeprovider.Refund{{ID: "re_000001", Charge: holdCharge, Amount: 500, Currency: "EUR",
			Status: fakeprovider.RefundSucceeded, MerchantReference: refundRef, IdempotencyKey: refundKey}},
		ours: []store.Refund{{RefundIntent: chargeonce.RefundIntent{Key: refundKey, OrderID: orderID, ChargeID: holdCharge,
			Amount: chargeonce.Money{Minor: 500, Currency: "EUR"}, MerchantReference: refundRef, Provider: chargeonce.DefaultProvider},
			Status: chargeonce.RefundSucceeded, ProviderRefundID: "re_000001"}},
	}
	return h
}

// ended turns the hold into one that ended as status, by a move of kind
// when kind is not empty, and took nothing.
func (h *heldOrder) ended(status chargeonce.HoldStatus, charge fakeprovider.ChargeStatus, kind chargeonce.MoveKind) *heldOrder {
	h.order.Status, h.hold.Status, h.hold.Captured, h.charge.Status = status.OrderStatus(), status, 0, charge
	h.charge.AmountCaptured = ptr[int64](0)
	h.refunds, h.ours, h.moves = nil, nil, nil
	if kind != "" {
		h.moves = []store.Move{{MoveIntent: chargeonce.MoveIntent{Key: voidKey, Kind: kind, OrderID: orderID, AttemptKey: attemptKey,
			ChargeID: holdCharge, Amount: holdAmount}, Status: chargeonce.MoveSucceeded}}
	}
	if status == chargeonce.HoldAuthorized {
		h.hold.EndedAt = nil
	}
	return h
}

func TestCheck_Holds(t *testing.T) {
	type inv = invariant.Invariant
	cases := []struct {
		name string
		make func() *heldOrder
		// want is how many violations of each invariant are reported.
		want map[inv]int
	}{
		{name: "a hold captured in part and refunded within the capture breaks nothing", make: capturedAndRefunded},
		{name: "a hold still authorized before its deadline breaks nothing", make: func() *heldOrder {
			return capturedAndRefunded().ended(chargeonce.HoldAuthorized, fakeprovider.ChargeAuthorized, "")
		}},
		{name: "a voided hold breaks nothing", make: func() *heldOrder {
			return capturedAndRefunded().ended(chargeonce.HoldVoided, fakeprovider.ChargeVoided, chargeonce.MoveVoid)
		}},
		{name: "an expired hold breaks nothing", make: func() *heldOrder {
			return capturedAndRefunded().ended(chargeonce.HoldExpired, fakeprovider.ChargeExpired, "")
		}},
		{name: "a hold the provider captured while our capture is pending breaks nothing", make: func() *heldOrder {
			h := capturedAndRefunded().ended(chargeonce.HoldAuthorized, fakeprovider.ChargeSucceeded, chargeonce.MoveCapture)
			h.charge.AmountCaptured, h.moves[0].Status, h.moves[0].Amount = ptr(holdAmount.Minor), chargeonce.MovePending, holdAmount
			return h
		}},
		{name: "a hold authorized within its margin breaks nothing", make: func() *heldOrder {
			h := capturedAndRefunded().ended(chargeonce.HoldAuthorized, fakeprovider.ChargeAuthorized, "")
			h.hold.Deadline = time.Now().Add(-30 * time.Minute)
			return h
		}},

		{name: "11: the provider captured more than the hold", want: map[inv]int{invariant.CaptureWithinHold: 2}, make: func() *heldOrder {
			h := capturedAndRefunded()
			h.charge.AmountCaptured = ptr[int64](3000)
			return h
		}},
		{name: "11: our books and the provider captured different amounts", want: map[inv]int{invariant.CaptureWithinHold: 1}, make: func() *heldOrder {
			h := capturedAndRefunded()
			h.charge.AmountCaptured = ptr[int64](1000)
			return h
		}},
		{name: "12: refunds beyond the capture", want: map[inv]int{invariant.RefundsWithinCapture: 2}, make: func() *heldOrder {
			h := capturedAndRefunded()
			h.refunds[0].Amount, h.ours[0].Amount.Minor = 2000, 2000
			return h
		}},
		{name: "13: a hold voided in our books is captured at the provider", want: map[inv]int{invariant.NoMoveAfterEnd: 1}, make: func() *heldOrder {
			h := capturedAndRefunded().ended(chargeonce.HoldVoided, fakeprovider.ChargeSucceeded, chargeonce.MoveVoid)
			h.charge.AmountCaptured = ptr(holdAmount.Minor)
			return h
		}},
		{name: "13: a hold authorized with no move pending is voided at the provider", want: map[inv]int{invariant.NoMoveAfterEnd: 1}, make: func() *heldOrder {
			return capturedAndRefunded().ended(chargeonce.HoldAuthorized, fakeprovider.ChargeVoided, "")
		}},
		{name: "14: a captured hold was voided too", want: map[inv]int{invariant.HoldEndsOnce: 1}, make: func() *heldOrder {
			h := capturedAndRefunded()
			h.moves = append(h.moves, store.Move{MoveIntent: chargeonce.MoveIntent{Key: voidKey, Kind: chargeonce.MoveVoid,
				OrderID: orderID, ChargeID: holdCharge, Amount: holdAmount}, Status: chargeonce.MoveSucceeded})
			return h
		}},
		{name: "14: a hold voided by no move", want: map[inv]int{invariant.HoldEndsOnce: 1}, make: func() *heldOrder {
			return capturedAndRefunded().ended(chargeonce.HoldVoided, fakeprovider.ChargeVoided, "")
		}},
		{name: "15: a hold authorized past its deadline, margin and interval", want: map[inv]int{invariant.NoOverdueHold: 1}, make: func() *heldOrder {
			h := capturedAndRefunded().ended(chargeonce.HoldAuthorized, fakeprovider.ChargeAuthorized, "")
			h.hold.Deadline = time.Now().Add(-2 * time.Hour)
			return h
		}},
		{name: "5: a hold of another amount than its order", want: map[inv]int{invariant.AmountsAgree: 2}, make: func() *heldOrder {
			h := capturedAndRefunded()
			h.hold.Amount.Minor = 2000
			return h
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.make()
			temporal := &laggingTemporal{workflows: map[string]enumspb.WorkflowExecutionStatus{attemptKey: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING}}
			report, err := invariant.Check(t.Context(), invariant.Config{
				Store: h, Provider: h, Temporal: temporal, Interval: time.Second, HoldMargin: time.Hour,
			}, []int64{orderID})
			require.NoError(t, err)
			got := map[inv]int{}
			for _, v := range report.Violations {
				got[v.Invariant]++
			}
			if tc.want == nil {
				tc.want = map[inv]int{}
			}
			require.Equal(t, tc.want, got, "%s", report)
			require.Equal(t, 1, report.Holds[h.hold.Status], "%s", report)
			require.Equal(t, []chargeonce.HoldStatus{h.hold.Status}, slices.Collect(maps.Keys(report.Holds)))
		})
	}
}
