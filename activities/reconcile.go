package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"

	"chargeonce"
	"chargeonce/internal/alert"
	"chargeonce/provider"
	"chargeonce/store"
)

// What FindCharge found at the provider.
const (
	// FoundSucceeded: a succeeded charge matching the attempt.
	FoundSucceeded = "succeeded"
	// FoundFailedOnly: only failed (declined) charges.
	FoundFailedOnly = "failed_only"
	// FoundNone: no charge at all.
	FoundNone = "none"
)

// FindChargeInput is the input of FindCharge.
type FindChargeInput struct {
	// Key is the attempt's idempotency key, for the log and MarkChecked.
	Key string `json:"Key"`
	// MerchantReference is what the charge is looked up by.
	MerchantReference string `json:"MerchantReference"`
	// Amount is what a charge of this attempt must be for.
	Amount chargeonce.Money `json:"Amount"`
	// Provider names the provider the attempt was sent to
	// (chargeonce.PaymentIntent.Provider); empty means the default.
	Provider string `json:"Provider,omitempty"`
	// Hold says that the attempt is a manual capture's, whose charge is a
	// hold: one that the provider authorized counts as its success.
	Hold bool `json:"Hold,omitempty"`
	// HoldMargin is how long before the hold's expiry its deadline comes.
	HoldMargin time.Duration `json:"HoldMargin,omitempty"`
}

// FindChargeResult is what the provider holds for the reference.
type FindChargeResult struct {
	// Found is FoundSucceeded, FoundFailedOnly or FoundNone.
	Found string `json:"Found"`
	// ProviderPaymentID is the succeeded charge's id.
	ProviderPaymentID string `json:"ProviderPaymentID"`
	// Hold holds the terms of the hold found, for a manual capture's
	// attempt whose charge is a hold.
	Hold *HoldTerms `json:"Hold,omitempty"`
}

// FindCharge looks the attempt up at the provider by its merchant reference,
// for an attempt whose outcome is unknown. A succeeded charge whose amount or
// currency differs from the attempt is a non-retryable ChargeMismatch error
// carrying the charge id in its details: such a charge must not mark the
// order paid, and a human must look. Failed lookups are retryable or not as
// their provider outcome says.
func (a *Activities) FindCharge(ctx context.Context, in FindChargeInput) (FindChargeResult, error) {
	log := a.logger().With("key", in.Key, "reference", in.MerchantReference, "attempt", activity.GetInfo(ctx).Attempt)
	if in.MerchantReference == "" {
		return FindChargeResult{}, nonRetryable(ErrTypeInvalidRequest, "find charge: merchant reference is empty")
	}
	port, err := a.port(in.Provider)
	if err != nil {
		return FindChargeResult{}, err
	}
	charges, err := port.FindCharges(ctx, in.MerchantReference)
	if err != nil {
		a.Metrics.lookup(a.providerName(in.Provider), chargeonce.OperationCharge, reconcileError)
		log.Warn("could not look up charges at the provider", "error", err)
		return FindChargeResult{}, lookupError(err, "find charges for "+in.MerchantReference)
	}
	if err := a.Store.MarkChecked(ctx, in.Key, a.now()); err != nil {
		// The check itself succeeded; the time of the last check is shown to
		// people and must not make the lookup fail or be repeated.
		log.Warn("could not record the time of the check", "error", err)
	}

	var succeeded []provider.Charge
	failed := 0
	for _, c := range charges {
		if c.MerchantReference != in.MerchantReference {
			continue
		}
		if c.Succeeded() || in.Hold && c.Status != provider.StatusFailed {
			succeeded = append(succeeded, c)
		} else {
			failed++
		}
	}
	if len(succeeded) == 0 {
		found := FoundNone
		if failed > 0 {
			found = FoundFailedOnly
		}
		a.Metrics.lookup(a.providerName(in.Provider), chargeonce.OperationCharge, found)
		log.Info("looked up charges at the provider", "found", found, "failed_charges", failed)
		return FindChargeResult{Found: found}, nil
	}
	if len(succeeded) > 1 {
		ids := make([]string, len(succeeded))
		for i, c := range succeeded {
			ids[i] = c.ID
		}
		a.Metrics.lookup(a.providerName(in.Provider), chargeonce.OperationCharge, reconcileDoubleCharge)
		log.Error("the provider holds more than one succeeded charge for one attempt; refund all but one", alert.Attr(alert.DoubleCharge), "charges", ids)
	}
	for _, c := range succeeded {
		if c.Amount == in.Amount.Minor && c.Currency == in.Amount.Currency {
			a.Metrics.lookup(a.providerName(in.Provider), chargeonce.OperationCharge, FoundSucceeded)
			res := FindChargeResult{Found: FoundSucceeded, ProviderPaymentID: c.ID}
			if in.Hold && c.Status != provider.StatusSucceeded {
				res.Hold = a.authorized(ctx, log, port, &c, in.HoldMargin)
			}
			log.Info("provider has a succeeded charge for the attempt", "found", FoundSucceeded, "charge", c.ID, "hold", res.Hold != nil)
			return res, nil
		}
	}
	// The workflow, which marks the attempt failed, logs the alert with
	// this error's text.
	c := succeeded[0]
	a.Metrics.lookup(a.providerName(in.Provider), chargeonce.OperationCharge, reconcileMismatch)
	return FindChargeResult{}, nonRetryable(ErrTypeChargeMismatch,
		fmt.Sprintf("provider charge %s for %s is %d %s, but the attempt is for %s", c.ID, in.MerchantReference, c.Amount, c.Currency, in.Amount),
		c.ID)
}

// RecordOutcomeInput is the input of RecordOutcome.
type RecordOutcomeInput struct {
	// Key is the attempt's idempotency key.
	Key string `json:"Key"`
	// Status is the terminal status to record.
	Status chargeonce.AttemptStatus `json:"Status"`
	// ProviderPaymentID is the provider's charge id, when there is one.
	ProviderPaymentID string `json:"ProviderPaymentID"`
	// Hold holds the terms of the hold a succeeded attempt of a manual
	// capture authorized; the attempt then settles with its hold
	// (store.HoldStore.SettleAuthorization).
	Hold *HoldTerms `json:"Hold,omitempty"`
}

// RecordOutcomeResult tells whether the attempt changed.
type RecordOutcomeResult struct {
	// Changed is false when the attempt was already terminal, so nothing was
	// written.
	Changed bool `json:"Changed"`
}

// RecordOutcome settles the attempt, and its order, in the merchant's
// database. The update is conditional on the attempt being open, so running
// it twice, or after another settlement, changes nothing. A succeeded charge
// that did not pay its order, because another charge paid it meanwhile, is
// repaired (repairLateCharge).
func (a *Activities) RecordOutcome(ctx context.Context, in RecordOutcomeInput) (RecordOutcomeResult, error) {
	if !in.Status.Terminal() {
		return RecordOutcomeResult{}, nonRetryable(ErrTypeInvalidRequest, fmt.Sprintf("record outcome: %q is not a terminal attempt status", in.Status))
	}
	log := a.logger().With("key", in.Key, "status", string(in.Status), "attempt", activity.GetInfo(ctx).Attempt)
	return a.recordOutcome(ctx, log, in)
}

// recordOutcome settles the attempt as in says, for RecordOutcome and for a
// Charge that settles its own answer (ChargeInput.Settle).
func (a *Activities) recordOutcome(ctx context.Context, log *slog.Logger, in RecordOutcomeInput) (RecordOutcomeResult, error) {
	if in.Hold != nil {
		return a.recordAuthorization(ctx, log, in)
	}
	settled, err := a.Store.SettleAttempt(ctx, in.Key, in.Status, in.ProviderPaymentID, a.now())
	if errors.Is(err, store.ErrNotFound) {
		// The workflow logs the alert with this error's text.
		return RecordOutcomeResult{}, nonRetryable(ErrTypeAttemptNotFound, "record outcome: attempt "+in.Key+" is not in the database")
	}
	if err != nil {
		return RecordOutcomeResult{}, fmt.Errorf("record outcome %s for attempt %s: %w", in.Status, in.Key, err)
	}
	if settled.Changed {
		log.Info("attempt settled", "charge", in.ProviderPaymentID, "order_status", string(chargeonce.OrderStatusAfter(in.Status)))
	} else {
		log.Debug("attempt was already settled, nothing changed")
	}
	// The usual success paid its order in the settlement's transaction,
	// which says so: nothing is read again. Every other success, the first
	// recording or a retried one, goes to the repair.
	if in.Status == chargeonce.AttemptSucceeded && in.ProviderPaymentID != "" && settled.OrderPaidBy != in.ProviderPaymentID {
		if err := a.repairLateCharge(ctx, log, in.Key, in.ProviderPaymentID); err != nil {
			return RecordOutcomeResult{}, err
		}
	}
	return RecordOutcomeResult{Changed: settled.Changed}, nil
}

// recordAuthorization settles a manual capture's attempt with the hold its
// charge authorized.
func (a *Activities) recordAuthorization(ctx context.Context, log *slog.Logger, in RecordOutcomeInput) (RecordOutcomeResult, error) {
	if in.Status != chargeonce.AttemptSucceeded || in.ProviderPaymentID == "" {
		return RecordOutcomeResult{}, nonRetryable(ErrTypeInvalidRequest, fmt.Sprintf("record outcome: a hold settles an attempt as succeeded with its charge, not as %q with %q", in.Status, in.ProviderPaymentID))
	}
	settled, err := a.Store.SettleAuthorization(ctx, in.Key, store.NewHold{
		ChargeID: in.ProviderPaymentID, CaptureBefore: in.Hold.CaptureBefore, Deadline: in.Hold.Deadline, At: a.now(),
	})
	if errors.Is(err, store.ErrNotFound) {
		return RecordOutcomeResult{}, nonRetryable(ErrTypeAttemptNotFound, "record outcome: attempt "+in.Key+" is not in the database")
	}
	if err != nil {
		return RecordOutcomeResult{}, fmt.Errorf("record the hold %s of attempt %s: %w", in.ProviderPaymentID, in.Key, err)
	}
	if settled.Changed {
		log.Info("attempt settled with its hold", "charge", in.ProviderPaymentID, "order_status", string(chargeonce.OrderAuthorized), "deadline", in.Hold.Deadline)
	}
	return RecordOutcomeResult{Changed: settled.Changed}, nil
}

// authorized is the terms of the hold c that a manual capture's charge
// authorized, or nil when the provider took the money at once, which the
// attempt then records as an ordinary payment: the money is taken, and
// the books must say so.
func (a *Activities) authorized(ctx context.Context, log *slog.Logger, port provider.Port, c *provider.Charge, margin time.Duration) *HoldTerms {
	if c != nil && c.Succeeded() {
		log.Error("the provider captured the charge of a manual capture at once; the order is recorded as paid", alert.Attr(alert.ContractViolation), "charge", c.ID)
		return nil
	}
	terms := a.holdTerms(ctx, log, port, c, margin)
	return &terms
}
