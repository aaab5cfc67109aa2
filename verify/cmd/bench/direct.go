package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"chargeonce"
	"chargeonce/provider"
	"chargeonce/store"
	"chargeonce/workflows"
)

// referencePrefix starts the merchant references of the direct loop, so that
// its charges are told apart from the checkout's at the provider.
const referencePrefix = "benchdirect"

// direct pays orders without Temporal: the same store transaction, the same
// provider requests retried by the same rules, the same request log and the
// same settlement, in the caller's goroutine. It is the floor of what a
// checkout costs without durable orchestration, and it has none of the
// orchestration's guarantees: a crash mid-charge loses the retries and the
// reconciliation.
type direct struct {
	store    store.Store
	provider provider.Port
	timing   workflows.Timing
	// hasher keys the card hashes, as the checkout API does.
	hasher chargeonce.CardHasher
}

// errNotPaid reports a payment that ended otherwise than paid.
var errNotPaid = errors.New("not paid")

// pay charges the order with the card and settles the attempt.
func (d *direct) pay(ctx context.Context, orderID int64, cardToken string) error {
	key, err := uuid.NewV7()
	if err != nil {
		return err
	}
	_, attempt, decision, err := d.store.GetOrStartAttempt(ctx, store.NewAttempt{
		OrderID:         orderID,
		CardHash:        d.hasher.Hash(cardToken),
		Key:             key.String(),
		ReferencePrefix: referencePrefix,
		Now:             time.Now(),
		AbandonAfter:    d.timing.AbandonAfter,
		Provider:        chargeonce.DefaultProvider,
	})
	if err != nil {
		return fmt.Errorf("order %d: %w", orderID, err)
	}
	if decision != store.DecisionCreated {
		return fmt.Errorf("order %d: store decided %s, want a new attempt", orderID, decision)
	}
	res := d.charge(ctx, provider.ChargeRequest{
		Key:               attempt.Key,
		Amount:            attempt.Amount.Minor,
		Currency:          attempt.Amount.Currency,
		Source:            cardToken,
		Description:       "bench order",
		MerchantReference: attempt.MerchantReference,
	})
	if res.Outcome != provider.Approved {
		return fmt.Errorf("order %d: %w: %s %s", orderID, errNotPaid, res.Outcome, res.Detail)
	}
	settled, err := d.store.SettleAttempt(ctx, attempt.Key, chargeonce.AttemptSucceeded, res.ChargeID, time.Now())
	if err != nil {
		return fmt.Errorf("order %d: settle: %w", orderID, err)
	}
	if !settled.Changed {
		return fmt.Errorf("order %d: attempt %s was already settled", orderID, attempt.Key)
	}
	return nil
}

// charge sends req until a definite answer or until the charge budget is
// spent, as the payment workflow's Charge activity and retry policy do: each
// request bounded by AttemptTimeout, RetryInterval between requests unless
// the provider's Retry-After asks for another wait, no retry of an outcome
// that cannot change, and every request listed in the request log before it
// is sent and its end written after.
func (d *direct) charge(ctx context.Context, req provider.ChargeRequest) provider.Result {
	budget, cancel := context.WithTimeout(ctx, d.timing.SendBudget)
	defer cancel()
	requests, err := d.store.Requests(chargeonce.OperationCharge)
	if err != nil {
		return provider.Result{Exchange: provider.Exchange{Outcome: provider.InvalidRequest, Detail: err.Error()}}
	}
	for {
		res := d.send(ctx, budget, requests, req)
		if !res.Outcome.Retryable() {
			return res
		}
		wait := d.timing.RetryInterval
		if res.RetryAfter > 0 {
			wait = res.RetryAfter
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-budget.Done():
			t.Stop()
			return res
		}
	}
}

// send sends req once, within budget, listed in requests. As in the
// activity, a request that cannot be listed is not sent, and a failed write
// of its end does not change the outcome.
func (d *direct) send(ctx, budget context.Context, requests store.RequestLog, req provider.ChargeRequest) provider.Result {
	lr, err := requests.Begin(ctx, req.Key, time.Now())
	if err != nil {
		return provider.Result{Exchange: provider.Exchange{Outcome: provider.TransportError, Detail: "not sent: " + err.Error()}}
	}
	reqCtx, cancel := context.WithTimeout(budget, d.timing.AttemptTimeout)
	defer cancel()
	res := d.provider.Charge(reqCtx, req)
	if !res.Sent {
		_ = requests.Withdraw(ctx, lr)
		return res
	}
	_ = requests.End(ctx, lr, chargeonce.ProviderRequest{
		Key: req.Key, At: lr.At, StatusCode: res.StatusCode, Outcome: string(res.Outcome),
		Replayed: res.Replayed, Duration: res.Duration,
	})
	return res
}
