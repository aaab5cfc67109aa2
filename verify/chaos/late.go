package chaos

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/store"
)

// Late charges planted at the provider, as counted in Summary.Faults: each
// is a succeeded charge, announced by its event, for an attempt the run had
// abandoned. None is planted for a not processed attempt: its 503 told the
// customer that nothing was charged, a promise the provider alone could
// break and that the checker's invariant 7 holds absolutely.
const (
	// FaultLateBeforePaid is a late charge for an order nobody paid since:
	// the order must adopt it.
	FaultLateBeforePaid = "late charge before the customer paid again"
	// FaultLateAfterPaid is a late charge for an order that a new attempt
	// paid meanwhile: it must be refunded in whole.
	FaultLateAfterPaid = "late charge after the order was paid again"
)

// lateCandidate is an order of the run with an abandoned attempt, for which
// the provider can still finish a charge.
type lateCandidate struct {
	order   store.Order
	attempt store.Attempt
}

// plantLateCharges plays the provider finishing charges after they were
// given up, once every attempt has settled: for up to LateCharges orders
// still unpaid, a charge for the abandoned attempt arrives
// before the customer pays again; for up to LateCharges others, it arrives
// after the order was paid by a newer attempt (the run's own, or one the
// customer makes now). It then waits until the repair has recorded each,
// so that the checker sees them repaired; one it never records is left to
// the settlement's repair and to the checker's repair window.
func (r *run) plantLateCharges(ctx context.Context) error {
	if r.cfg.LateCharges == 0 {
		return nil
	}
	unpaid, paid, err := r.lateCandidates(ctx)
	if err != nil {
		return err
	}
	// Half of the unpaid orders are paid again first, so that both orders
	// of arrival happen even when the run paid none after a lost attempt.
	var before []lateCandidate
	for i, c := range unpaid {
		if i%2 == 1 && len(paid) < r.cfg.LateCharges && r.payAgain(ctx, c) {
			paid = append(paid, c)
			continue
		}
		if len(before) < r.cfg.LateCharges {
			before = append(before, c)
		}
	}
	paid = paid[:min(len(paid), r.cfg.LateCharges)]
	var planted []string
	for _, set := range []struct {
		kind       string
		candidates []lateCandidate
	}{{FaultLateBeforePaid, before}, {FaultLateAfterPaid, paid}} {
		for _, c := range set.candidates {
			id, err := r.plantCharge(ctx, c.attempt)
			if err != nil {
				return err
			}
			r.cfg.Logger.Info("late charge planted", "kind", set.kind, "order", c.order.ID, "attempt", c.attempt.Key,
				"attempt_status", c.attempt.Status, "charge", id)
			r.count(r.faults, set.kind)
			planted = append(planted, id)
		}
	}
	return r.awaitRepairs(ctx, planted)
}

// lateCandidates sorts the run's orders with an abandoned attempt into
// those unpaid and those paid by another attempt since.
func (r *run) lateCandidates(ctx context.Context) (unpaid, paid []lateCandidate, err error) {
	r.mu.Lock()
	ids := append([]int64(nil), r.orders...)
	r.mu.Unlock()
	for _, id := range ids {
		o, attempts, err := r.stack.Store().GetOrder(ctx, id)
		if err != nil {
			return nil, nil, fmt.Errorf("chaos: order %d: %w", id, err)
		}
		var lost *store.Attempt
		for i, a := range attempts {
			// A manual capture's late answer is a hold, not the
			// succeeded charge planted here: its orders are left out.
			// So are the backup's attempts: only the first provider's
			// late charges are repaired in a run, by its events, which
			// the stack's API confirms at that provider alone, or by its
			// settlement report, the only one the settlement reads.
			if a.Status == chargeonce.AttemptAbandoned && !a.Capture.Manual() && a.Provider == chargeonce.DefaultProvider {
				lost = &attempts[i]
			}
		}
		switch {
		case lost == nil:
		case o.Status == chargeonce.OrderPlaced:
			unpaid = append(unpaid, lateCandidate{o, *lost})
		case o.Status.Paid():
			paid = append(paid, lateCandidate{o, *lost})
		}
	}
	return unpaid, paid, nil
}

// payAgain has the customer of an unpaid order pay it with a card that
// the provider accepts, and reports whether the order is paid now.
func (r *run) payAgain(ctx context.Context, c lateCandidate) bool {
	r.mu.Lock()
	card := r.cards[c.order.ID]
	r.mu.Unlock()
	if isDeclineCard(card) {
		card = cardOK
		r.setCard(c.order.ID, card)
	}
	res := r.checkout(ctx, c.order.ID, card)
	switch {
	case res.status == http.StatusOK, res.status == http.StatusAccepted, notProcessed(res):
	default:
		r.unexpectedf("order %d: paying again before a late charge answered %d: %s", c.order.ID, res.status, res.detail)
		return false
	}
	return r.awaitSettled(ctx, c.order.ID).Paid()
}

// plantCharge makes the provider finish a charge for attempt a, under its
// key and reference, and announce it, through the admin API, so that it
// works on a provider in another process too; it returns the charge id.
func (r *run) plantCharge(ctx context.Context, a store.Attempt) (string, error) {
	// The charge is the attempt's provider's to finish.
	p, err := r.provider(a.Provider)
	if err != nil {
		return "", err
	}
	var c fakeprovider.Charge
	err = r.admin(ctx, p.url, http.MethodPost, "/_admin/charges", fakeprovider.PlantedCharge{
		Amount: a.Amount.Minor, Currency: a.Amount.Currency, MerchantReference: a.MerchantReference,
		Status: fakeprovider.ChargeSucceeded, IdempotencyKey: a.Key, SendEvent: true,
	}, &c)
	if err != nil {
		return "", fmt.Errorf("chaos: plant a late charge for attempt %s: %w", a.Key, err)
	}
	return c.ID, nil
}

// awaitRepairs waits, at most the settle timeout, until the store has
// recorded a repair of every planted charge.
func (r *run) awaitRepairs(ctx context.Context, charges []string) error {
	if len(charges) == 0 {
		return nil
	}
	if r.processes != nil {
		// The cluster's APIs hold no provider connection, so they cannot
		// check a charge.succeeded event at the provider and leave its
		// repair to the settlement, which the run ends with.
		r.cfg.Logger.Info("late charges planted on the cluster: the settlement repairs them", "charges", len(charges))
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.SettleTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		found, err := r.stack.Store().LateCharges(ctx, charges)
		if err == nil && len(found) == len(charges) {
			r.cfg.Logger.Info("every planted late charge repaired", "charges", len(charges))
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				r.cfg.Logger.Warn("planted late charges not all repaired at the settle timeout", "planted", len(charges), "repaired", len(found))
				return nil
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}
