package invariant

import (
	"context"
	"errors"
	"fmt"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/store"
)

// The invariants of holds, the authorizations of manual captures.
const (
	// CaptureWithinHold: no hold is captured beyond what it authorized:
	// the provider's amount_captured is at most the hold's amount, ours
	// too, and once both say captured they say the same amount, which is
	// the amount of the capture that ended it.
	CaptureWithinHold Invariant = 11
	// RefundsWithinCapture: the refunds of a captured hold never return
	// more than its capture took: at the provider, its refunds that have
	// not failed; in our books, its refund intents that hold. A hold that
	// took nothing has none.
	RefundsWithinCapture Invariant = 12
	// NoMoveAfterEnd: no capture after a void or an expiry, and no void
	// or expiry after a capture: once our books say a hold ended, the
	// provider says it ended the same way, and a hold the provider ended
	// by a capture or a void is ended so in our books unless a move of
	// ours is still pending.
	NoMoveAfterEnd Invariant = 13
	// HoldEndsOnce: every authorization ends exactly once: a hold has at
	// most one move that holds (pending or succeeded), a succeeded move
	// has ended its hold, and an ended hold's status is the one its
	// succeeded move made, or expired when no move succeeded.
	HoldEndsOnce Invariant = 14
	// NoOverdueHold: no hold is still authorized in our books past its
	// deadline plus the hold margin (the provider's expiry) plus one
	// lookup interval, by which the payment has read the expiry.
	NoOverdueHold Invariant = 15
)

// loadHolds reads the hold and the moves of an order whose attempts
// include a manual capture; no other order can have one.
func (w *world) loadHolds(ctx context.Context, st store.HoldStore, id int64, attempts []store.Attempt) error {
	manual := false
	for _, a := range attempts {
		manual = manual || a.Capture.Manual()
	}
	if !manual {
		return nil
	}
	h, err := st.OrderHold(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil // never authorized
	}
	if err != nil {
		return fmt.Errorf("invariant: hold of order %d: %w", id, err)
	}
	moves, err := st.OrderMoves(ctx, id)
	if err != nil {
		return fmt.Errorf("invariant: moves of order %d: %w", id, err)
	}
	w.holds[id], w.moves[id] = h, moves
	return nil
}

// taken is what a charge took from the card: a charge captured at once its
// amount, a captured hold what its capture took, and any other (a failed
// charge, a hold authorized, voided or expired) nothing.
func taken(ch fakeprovider.Charge) int64 {
	switch {
	case ch.Status != fakeprovider.ChargeSucceeded:
		return 0
	case ch.AmountCaptured != nil:
		return *ch.AmountCaptured
	}
	return ch.Amount
}

// isHold reports whether the provider's charge was posted as a hold.
func isHold(ch fakeprovider.Charge) bool { return ch.AmountCaptured != nil }

// providerHoldStatus is the status of a hold that the provider's charge
// shows: a captured hold is a succeeded charge. A failed charge is no hold.
var providerHoldStatus = map[fakeprovider.ChargeStatus]chargeonce.HoldStatus{
	fakeprovider.ChargeAuthorized: chargeonce.HoldAuthorized,
	fakeprovider.ChargeSucceeded:  chargeonce.HoldCaptured,
	fakeprovider.ChargeVoided:     chargeonce.HoldVoided,
	fakeprovider.ChargeExpired:    chargeonce.HoldExpired,
}

// pays reports whether order o stands as its charge or hold chargeID left
// it: paid (and maybe refunded) by it, or holding it, or released by its
// void or expiry.
func (c *checker) pays(o store.Order, chargeID string) bool {
	if o.ProviderPaymentID != chargeID {
		return false
	}
	if o.Status.Paid() {
		return true
	}
	h, ok := c.holds[o.ID]
	return ok && h.ChargeID == chargeID && o.Status == h.Status.OrderStatus()
}

// heldCharges indexes the provider's charges, as read after the store, by
// id: they show every move our books can record.
func (c *checker) heldCharges() map[string]fakeprovider.Charge {
	out := map[string]fakeprovider.Charge{}
	for _, ch := range c.laterCharges {
		out[ch.ID] = ch
	}
	return out
}

// sortedHolds are the holds read, by order.
func (c *checker) sortedHolds() []store.Hold {
	var out []store.Hold
	for _, id := range c.sortedOrders() {
		if h, ok := c.holds[id]; ok {
			out = append(out, h)
		}
	}
	return out
}

// Invariant 11.
func (c *checker) captureWithinHold() {
	for _, ch := range c.charges {
		if isHold(ch) && *ch.AmountCaptured > ch.Amount {
			c.add(Violation{Invariant: CaptureWithinHold, Order: orderOf(ch), Key: ch.IdempotencyKey, ChargeID: ch.ID,
				Message: fmt.Sprintf("the provider captured %d of a hold of %d %s", *ch.AmountCaptured, ch.Amount, ch.Currency)})
		}
	}
	at := c.heldCharges()
	for _, h := range c.sortedHolds() {
		v := Violation{Invariant: CaptureWithinHold, Order: h.OrderID, Key: h.AttemptKey, ChargeID: h.ChargeID}
		ch, known := at[h.ChargeID]
		switch {
		case h.Captured > h.Amount.Minor:
			v.Message = fmt.Sprintf("our books captured %d of a hold of %s", h.Captured, h.Amount)
		case h.Status != chargeonce.HoldCaptured && h.Captured != 0:
			v.Message = fmt.Sprintf("a %s hold records %d captured", h.Status, h.Captured)
		case h.Status != chargeonce.HoldCaptured || !known || !isHold(ch) || ch.Status != fakeprovider.ChargeSucceeded:
			// Whether the provider agrees that it ended so is invariant
			// 13's.
			continue
		case *ch.AmountCaptured != h.Captured:
			v.Message = fmt.Sprintf("our books captured %d, the provider %d", h.Captured, *ch.AmountCaptured)
		default:
			continue
		}
		c.add(v)
	}
	for _, h := range c.sortedHolds() {
		for _, m := range c.moves[h.OrderID] {
			if m.Kind == chargeonce.MoveCapture && m.Status == chargeonce.MoveSucceeded && m.Amount.Minor != h.Captured {
				c.add(Violation{Invariant: CaptureWithinHold, Order: h.OrderID, Key: m.Key, ChargeID: h.ChargeID,
					Message: fmt.Sprintf("capture of %s succeeded, and the hold records %d captured", m.Amount, h.Captured)})
			}
		}
	}
}

// Invariant 13. Our books are read before the provider's later state, so
// a hold they say ended shows its end at the provider; one they still say
// authorized may have ended at the provider since, by a move of ours still
// pending, or by an expiry the payment has yet to read, which invariant 15
// bounds.
func (c *checker) noMoveAfterEnd() {
	at := c.heldCharges()
	for _, h := range c.sortedHolds() {
		v := Violation{Invariant: NoMoveAfterEnd, Order: h.OrderID, Key: h.AttemptKey, ChargeID: h.ChargeID}
		ch, known := at[h.ChargeID]
		theirs, isHeld := providerHoldStatus[ch.Status]
		switch {
		case !known:
			v.Message = fmt.Sprintf("%s hold the provider does not have", h.Status)
		case !isHold(ch) || !isHeld:
			v.Message = fmt.Sprintf("%s hold is a %s charge, not a hold, at the provider", h.Status, ch.Status)
		case theirs == h.Status:
			continue
		case h.Status.Ended():
			v.Message = fmt.Sprintf("hold %s in our books is %s at the provider", h.Status, theirs)
		case theirs == chargeonce.HoldExpired || c.pendingMove(h.OrderID):
			continue
		default:
			v.Message = fmt.Sprintf("hold authorized in our books, with no move pending, is %s at the provider", theirs)
		}
		c.add(v)
	}
}

// pendingMove reports whether a move of the order's hold is pending.
func (c *checker) pendingMove(id int64) bool {
	for _, m := range c.moves[id] {
		if m.Status == chargeonce.MovePending {
			return true
		}
	}
	return false
}

// Invariant 14.
func (c *checker) holdEndsOnce() {
	for _, h := range c.sortedHolds() {
		v := Violation{Invariant: HoldEndsOnce, Order: h.OrderID, Key: h.AttemptKey, ChargeID: h.ChargeID}
		var holding, succeeded []store.Move
		for _, m := range c.moves[h.OrderID] {
			if m.Status.Holds() {
				holding = append(holding, m)
			}
			if m.Status == chargeonce.MoveSucceeded {
				succeeded = append(succeeded, m)
			}
		}
		switch {
		case len(holding) > 1:
			v.Message = fmt.Sprintf("%d moves of one hold hold (pending or succeeded)", len(holding))
		case len(succeeded) == 1 && h.Status != succeeded[0].Kind.Ends():
			v.Key = succeeded[0].Key
			v.Message = fmt.Sprintf("%s succeeded, and the hold is %s", succeeded[0].Kind, h.Status)
		case len(succeeded) == 0 && h.Status.Ended() && h.Status != chargeonce.HoldExpired:
			v.Message = fmt.Sprintf("hold %s by no succeeded move", h.Status)
		case h.Status.Ended() != (h.EndedAt != nil):
			v.Message = fmt.Sprintf("%s hold with end time %v", h.Status, h.EndedAt)
		case !h.Status.Valid():
			v.Message = fmt.Sprintf("hold in unknown status %q", h.Status)
		default:
			continue
		}
		c.add(v)
	}
}

// Invariant 15.
func (c *checker) noOverdueHold() {
	for _, h := range c.sortedHolds() {
		if h.Status != chargeonce.HoldAuthorized {
			continue
		}
		due := h.Deadline.Add(c.holdMargin + c.interval)
		if late := c.now.Sub(due); late > 0 {
			c.add(Violation{Invariant: NoOverdueHold, Order: h.OrderID, Key: h.AttemptKey, ChargeID: h.ChargeID,
				Message: fmt.Sprintf("authorized %s past its deadline %s plus the hold margin %s and one interval (%s)",
					late.Round(1e6), h.Deadline.Format("2006-01-02T15:04:05.000Z07:00"), c.holdMargin, c.interval)})
		}
	}
}

// holdAmountsAgree is invariant 5 for holds: the authorized amount is the
// order's, the provider's hold is of it, and a move is in its currency, a
// void of the whole of it.
func (c *checker) holdAmountsAgree() {
	at := c.heldCharges()
	for _, h := range c.sortedHolds() {
		v := Violation{Invariant: AmountsAgree, Order: h.OrderID, Key: h.AttemptKey, ChargeID: h.ChargeID}
		o := c.orders[h.OrderID]
		if ch, ok := at[h.ChargeID]; ok && (ch.Amount != h.Amount.Minor || ch.Currency != h.Amount.Currency) {
			v.Message = fmt.Sprintf("hold of %s is a charge of %d %s at the provider", h.Amount, ch.Amount, ch.Currency)
			c.add(v)
		}
		if o.Amount != h.Amount {
			v.Message = fmt.Sprintf("hold of %s for an order of %s", h.Amount, o.Amount)
			c.add(v)
		}
		for _, m := range c.moves[h.OrderID] {
			if m.Amount.Currency != h.Amount.Currency || (m.Kind == chargeonce.MoveVoid && m.Amount != h.Amount) {
				v.Key = m.Key
				v.Message = fmt.Sprintf("%s of %s of a hold of %s", m.Kind, m.Amount, h.Amount)
				c.add(v)
			}
		}
	}
}
