package invariant

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/store"
)

// The invariants of refunds.
const (
	// NoOverRefund: no charge is refunded beyond its amount: at the
	// provider, its refunds that have not failed sum to at most the charge;
	// in our books, its refund intents that hold (pending or succeeded) do.
	NoOverRefund Invariant = 9
	// RefundsMatchIntents: every refund at the provider was made under the
	// key of exactly one refund intent of ours, with its merchant
	// reference, charge and amount; one key is sent with one body; a
	// refund intent that is succeeded or failed agrees with the provider,
	// and one that is not_processed has no refund there.
	RefundsMatchIntents Invariant = 10
)

// loadRepairs reads our refund intents of the provider's refunds that the
// orders did not lead to (an operator's refund of a charge of no order),
// and what the repair decided for each successful charge, in batches.
func (w *world) loadRepairs(ctx context.Context, st store.Store) error {
	have := map[string]bool{}
	for _, r := range w.ours {
		have[r.MerchantReference] = true
	}
	refs := map[string][]string{} // by provider
	for _, r := range w.refunds {
		if !have[r.MerchantReference] {
			have[r.MerchantReference] = true
			at := w.at.refunds[r.ID]
			refs[at] = append(refs[at], r.MerchantReference)
		}
	}
	for _, provider := range slices.Sorted(maps.Keys(refs)) {
		for batch := range slices.Chunk(refs[provider], store.MaxSettlementBatch) {
			found, err := st.RefundsByReference(ctx, provider, batch)
			if err != nil {
				return fmt.Errorf("invariant: refunds at %s: %w", provider, err)
			}
			for _, r := range found {
				w.ours[r.Key] = r
			}
		}
	}
	var ids []string
	for _, ch := range succeededOf(w.charges) {
		ids = append(ids, ch.ID)
	}
	for batch := range slices.Chunk(ids, store.MaxSettlementBatch) {
		found, err := st.LateCharges(ctx, batch)
		if err != nil {
			return fmt.Errorf("invariant: late charges: %w", err)
		}
		for _, lc := range found {
			w.late[lc.ChargeID] = lc
		}
	}
	return nil
}

// refundedAtProvider sums the provider's succeeded refunds by charge.
func (c *checker) refundedAtProvider() map[string]int64 {
	sum := map[string]int64{}
	for _, r := range c.refunds {
		if r.Status == fakeprovider.RefundSucceeded {
			sum[r.Charge] += r.Amount
		}
	}
	return sum
}

// repairing reports whether a net charge that does not pay its order is
// still within the repair's window, and says where its repair stands.
func (c *checker) repairing(ch fakeprovider.Charge) (bool, string) {
	lc, found := c.late[ch.ID]
	switch {
	case !found:
		age := c.now.Sub(ch.Created)
		return age < c.repairWindow, fmt.Sprintf("no repair recorded for it %s after it was made (window %s)", age.Round(1e6), c.repairWindow)
	case lc.Decision != chargeonce.LateChargeRefunded:
		return false, fmt.Sprintf("the repair %s it", lc.Decision)
	}
	r, ok := c.ours[lc.RefundKey]
	if !ok {
		return false, fmt.Sprintf("its repair's refund %s is not in the books", lc.RefundKey)
	}
	age := c.now.Sub(lc.FoundAt)
	if r.Status == chargeonce.RefundPending || r.Status == chargeonce.RefundSucceeded {
		// Succeeded in our books but not yet at the provider read first:
		// the provider's later state is what counts, within the window.
		return age < c.repairWindow, fmt.Sprintf("its repair's refund %s is %s %s after the charge was found (window %s)",
			r.Key, r.Status, age.Round(1e6), c.repairWindow)
	}
	return false, fmt.Sprintf("its repair's refund %s is %s (%s)", r.Key, r.Status, r.FailureReason)
}

// Invariant 9, over the charges that were no hold.
func (c *checker) noOverRefund() { c.refundsWithin(NoOverRefund, false) }

// Invariant 12, over the holds.
func (c *checker) refundsWithinCapture() { c.refundsWithin(RefundsWithinCapture, true) }

// refundsWithin reports, as inv, the charges (holds, or charges captured at
// once) whose refunds sum to more than the charge took. A refund of a
// charge the provider does not hold is invariant 9's, since nothing tells
// whether it was a hold.
func (c *checker) refundsWithin(inv Invariant, holds bool) {
	charged := map[string]fakeprovider.Charge{}
	for _, ch := range c.charges {
		charged[ch.ID] = ch
	}
	atProvider := map[string]int64{}
	for _, r := range c.refunds {
		if r.Status != fakeprovider.RefundFailed {
			atProvider[r.Charge] += r.Amount
		}
	}
	ours := map[string]int64{}
	for _, r := range c.ours {
		if r.Status.Holds() {
			ours[r.ChargeID] += r.Amount.Minor
		}
	}
	what := "charge of"
	if holds {
		what = "hold that captured"
	}
	for _, side := range []struct {
		name string
		sums map[string]int64
	}{{"the provider's refunds that have not failed", atProvider}, {"our refunds that hold", ours}} {
		for _, id := range slices.Sorted(maps.Keys(side.sums)) {
			ch, ok := charged[id]
			switch {
			case !ok && !holds:
				c.add(Violation{Invariant: inv, ChargeID: id,
					Message: fmt.Sprintf("%s return %d from a charge the provider does not hold", side.name, side.sums[id])})
			case !ok || isHold(ch) != holds:
			case ch.Status != fakeprovider.ChargeSucceeded || side.sums[id] > taken(ch):
				amount := ch.Amount
				if holds {
					amount = *ch.AmountCaptured
				}
				c.add(Violation{Invariant: inv, Order: orderOf(ch), ChargeID: id,
					Message: fmt.Sprintf("%s sum to %d %s, of a %s %s %d", side.name, side.sums[id], ch.Currency, ch.Status, what, amount)})
			}
		}
	}
}

// Invariant 10.
func (c *checker) refundsMatchIntents() {
	byRef := map[string][]fakeprovider.Refund{}
	for _, r := range c.refunds {
		v := Violation{Invariant: RefundsMatchIntents, Key: r.IdempotencyKey, ChargeID: r.Charge}
		ours, ok := c.ours[r.IdempotencyKey]
		switch {
		case !ok:
			v.Message = fmt.Sprintf("refund %s under a key that belongs to no refund intent", r.ID)
		case ours.Provider != c.at.refunds[r.ID]:
			v.Order = ours.OrderID
			v.Message = fmt.Sprintf("refund %s at provider %s of an intent sent to %s", r.ID, c.at.refunds[r.ID], ours.Provider)
		case ours.MerchantReference != r.MerchantReference || ours.ChargeID != r.Charge ||
			ours.Amount.Minor != r.Amount || ours.Amount.Currency != r.Currency:
			v.Order = ours.OrderID
			v.Message = fmt.Sprintf("refund %s (%s, %d %s of %s) differs from its intent (%s, %s of %s)", r.ID,
				r.MerchantReference, r.Amount, r.Currency, r.Charge, ours.MerchantReference, ours.Amount, ours.ChargeID)
		default:
			byRef[r.MerchantReference] = append(byRef[r.MerchantReference], r)
			continue
		}
		c.add(v)
	}
	fingerprints := map[string]map[string]bool{}
	for _, r := range c.refundRequests {
		if r.Key == "" || r.Fingerprint == "" {
			continue
		}
		if fingerprints[r.Key] == nil {
			fingerprints[r.Key] = map[string]bool{}
		}
		fingerprints[r.Key][r.Fingerprint] = true
	}
	for _, key := range sortedKeys(fingerprints) {
		ours, ok := c.ours[key]
		switch {
		case !ok:
			c.add(Violation{Invariant: RefundsMatchIntents, Key: key,
				Message: "the provider received a refund under a key that belongs to no refund intent"})
		case len(fingerprints[key]) > 1:
			c.add(Violation{Invariant: RefundsMatchIntents, Order: ours.OrderID, Key: key,
				Message: fmt.Sprintf("one refund key sent with %d different bodies", len(fingerprints[key]))})
		}
	}
	for _, key := range sortedKeys(c.ours) {
		r := c.ours[key]
		at := byRef[r.MerchantReference]
		v := Violation{Invariant: RefundsMatchIntents, Order: r.OrderID, Key: key, ChargeID: r.ChargeID}
		switch {
		case len(at) > 1:
			v.Message = fmt.Sprintf("one refund intent has %d refunds at the provider", len(at))
		case r.Status == chargeonce.RefundNotProcessed && len(at) == 1:
			v.Message = fmt.Sprintf("refund marked not_processed has a %s refund %s at the provider", at[0].Status, at[0].ID)
		case r.Status == chargeonce.RefundSucceeded || r.Status == chargeonce.RefundFailed:
			switch {
			case len(at) == 0 && r.Status == chargeonce.RefundSucceeded:
				v.Message = "refund marked succeeded has no refund at the provider"
			case len(at) == 0:
				continue
			case r.ProviderRefundID != "" && at[0].ID != r.ProviderRefundID:
				v.Message = fmt.Sprintf("refund records %q, the provider holds %q", r.ProviderRefundID, at[0].ID)
			case string(at[0].Status) != string(r.Status):
				v.Message = fmt.Sprintf("refund marked %s is %s at the provider", r.Status, at[0].Status)
			default:
				continue
			}
		default:
			continue
		}
		c.add(v)
	}
}

// counts renders a count by status, such as "succeeded=3 failed=1".
func counts[K ~string](m map[K]int) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
