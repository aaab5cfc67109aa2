package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/store"
)

// checkCharges checks, for the given orders, the invariants a benchmark can
// break under load: no order has two succeeded charges at the provider, and
// the orders paid in the database are exactly the orders with a succeeded
// charge, each recording that charge's id, with the same amount and
// currency. It returns one line per violation.
func checkCharges(ctx context.Context, st store.Store, charges []fakeprovider.Charge, orders []int64) ([]string, error) {
	want := make(map[int64]bool, len(orders))
	for _, id := range orders {
		want[id] = true
	}
	succeeded := make(map[int64][]fakeprovider.Charge)
	for _, c := range charges {
		if c.Status != fakeprovider.ChargeSucceeded {
			continue
		}
		_, orderID, _, err := chargeonce.ParseMerchantReference(c.MerchantReference)
		if err != nil || !want[orderID] {
			continue
		}
		succeeded[orderID] = append(succeeded[orderID], c)
	}

	type verdict struct {
		order    store.Order
		attempts []store.Attempt
		err      error
	}
	got := make([]verdict, len(orders))
	var wg sync.WaitGroup
	const readers = 4
	for r := range readers {
		wg.Go(func() {
			for i := r; i < len(orders); i += readers {
				o, as, err := st.GetOrder(ctx, orders[i])
				got[i] = verdict{o, as, err}
			}
		})
	}
	wg.Wait()

	var violations []string
	for i, id := range orders {
		if got[i].err != nil {
			return nil, fmt.Errorf("read order %d: %w", id, got[i].err)
		}
		o, cs := got[i].order, succeeded[id]
		paid := o.Status == chargeonce.OrderPaid
		switch {
		case len(cs) > 1:
			violations = append(violations, fmt.Sprintf("order %d has %d succeeded charges: %s", id, len(cs), chargeIDs(cs)))
		case paid && len(cs) == 0:
			violations = append(violations, fmt.Sprintf("order %d is paid with %s but the provider holds no succeeded charge for it", id, o.ProviderPaymentID))
		case !paid && len(cs) == 1:
			violations = append(violations, fmt.Sprintf("order %d is %s (attempts: %s) but the provider holds succeeded charge %s for it", id, o.Status, attemptStatuses(got[i].attempts), cs[0].ID))
		case paid && o.ProviderPaymentID != cs[0].ID:
			violations = append(violations, fmt.Sprintf("order %d records charge %s but the provider's charge is %s", id, o.ProviderPaymentID, cs[0].ID))
		case paid && (o.Amount.Minor != cs[0].Amount || o.Amount.Currency != cs[0].Currency):
			violations = append(violations, fmt.Sprintf("order %d is %s but charge %s is %d %s", id, o.Amount, cs[0].ID, cs[0].Amount, cs[0].Currency))
		}
	}
	return violations, nil
}

func chargeIDs(cs []fakeprovider.Charge) string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

func attemptStatuses(as []store.Attempt) string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Key + " " + string(a.Status)
	}
	return strings.Join(out, ", ")
}
