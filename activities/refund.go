package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"chargeonce"
	"chargeonce/internal/alert"
	"chargeonce/provider"
	"chargeonce/store"
)

// RefundInput is the input of Refund.
type RefundInput struct {
	// Intent is the refund to send; its Key goes out as the
	// Idempotency-Key.
	Intent chargeonce.RefundIntent `json:"Intent"`
}

// RefundResult is a definite answer from the provider.
type RefundResult struct {
	// Status is RefundSucceeded, RefundFailed, or RefundPending when the
	// provider accepted the refund and is still processing it.
	Status chargeonce.RefundStatus `json:"Status"`
	// ProviderRefundID is the provider's refund id; empty for a refusal
	// that the provider stored no refund for.
	ProviderRefundID string `json:"ProviderRefundID"`
	// FailureReason is the provider's reason for a failed refund: the
	// decline code of a refusal, or the refund's failure_reason.
	FailureReason string `json:"FailureReason"`
	// Replayed reports that the provider answered from its idempotency store.
	Replayed bool `json:"Replayed"`
}

// Refund sends the intent's refund to the provider: exactly one HTTP
// request per activity attempt, always with the intent's key, so that every
// retry is the same request and the provider refunds at most once.
//
// An accepted refund (succeeded or pending at the provider) and a refusal
// (failed, with the provider's code as its reason) are results. Every other
// outcome is an error typed as Charge types it: ErrTypeNotProcessed for a
// retryable outcome that certainly processed nothing, the outcome's own type
// otherwise.
func (a *Activities) Refund(ctx context.Context, in RefundInput) (RefundResult, error) {
	intent := in.Intent
	log := a.logger().With("key", intent.Key, "order", intent.OrderID, "charge", intent.ChargeID)
	if err := intent.Validate(); err != nil {
		log.Error("refund intent cannot be sent", "error", err)
		return RefundResult{}, nonRetryable(ErrTypeInvalidRequest, err.Error())
	}

	port, err := a.port(intent.Provider)
	if err != nil {
		log.Error("refund intent names a provider this worker does not reach, nothing sent", "provider", intent.Provider, "error", err)
		return RefundResult{}, err
	}

	reqCtx, cancel := requestContext(ctx)
	defer cancel()
	listed, err := a.listRequest(ctx, log, chargeonce.OperationRefund, intent.Key)
	if err != nil {
		return RefundResult{}, err
	}
	res := port.Refund(reqCtx, provider.RefundRequestOf(intent))
	a.Metrics.request(a.providerName(intent.Provider), chargeonce.OperationRefund, res.Exchange)
	log = a.exchanged(ctx, log, listed, res.Exchange)

	switch res.Class() {
	case provider.ClassApproved:
		if res.Refund == nil {
			return RefundResult{}, nonRetryable(ErrTypeContractViolation, "the provider accepted refund "+intent.Key+" without returning the refund")
		}
		status, err := refundStatus(*res.Refund)
		if err != nil {
			return RefundResult{}, nonRetryable(ErrTypeContractViolation, err.Error())
		}
		log.Info("refund accepted by provider", "refund", res.Refund.ID, "refund_status", string(status), "failure_reason", res.Refund.FailureReason)
		return RefundResult{Status: status, ProviderRefundID: res.Refund.ID, FailureReason: res.Refund.FailureReason, Replayed: res.Replayed}, nil
	case provider.ClassDeclined:
		var id string
		if res.Refund != nil {
			id = res.Refund.ID
		}
		log.Info("provider refused the refund", "refund", id, "decline_code", res.DeclineCode)
		return RefundResult{Status: chargeonce.RefundFailed, ProviderRefundID: id, FailureReason: res.DeclineCode, Replayed: res.Replayed}, nil
	}
	return RefundResult{}, requestError(ctx, log, listed, res.Exchange)
}

// refundStatus is the status of a refund as the provider holds it.
func refundStatus(r provider.Refund) (chargeonce.RefundStatus, error) {
	switch r.Status {
	case provider.RefundPending:
		return chargeonce.RefundPending, nil
	case provider.RefundSucceeded:
		return chargeonce.RefundSucceeded, nil
	case provider.RefundFailed:
		return chargeonce.RefundFailed, nil
	}
	return "", fmt.Errorf("provider refund %s has the unknown status %q", r.ID, r.Status)
}

// What FindRefund found at the provider, besides FoundSucceeded and
// FoundNone.
const (
	// FoundPending: a refund that the provider is still processing.
	FoundPending = "pending"
	// FoundFailed: only a failed refund.
	FoundFailed = "failed"
)

// FindRefundInput is the input of FindRefund.
type FindRefundInput struct {
	// Key is the refund's idempotency key, for the log and
	// MarkRefundChecked.
	Key string `json:"Key"`
	// ChargeID is the charge the refund returns money from; providers that
	// cannot search refunds by reference list the charge's refunds.
	ChargeID string `json:"ChargeID"`
	// MerchantReference is what the refund is looked up by.
	MerchantReference string `json:"MerchantReference"`
	// Amount is what a refund of this intent must be for.
	Amount chargeonce.Money `json:"Amount"`
	// Provider names the provider the refund was sent to
	// (chargeonce.RefundIntent.Provider); empty means the default.
	Provider string `json:"Provider,omitempty"`
}

// FindRefundResult is what the provider holds for the reference.
type FindRefundResult struct {
	// Found is FoundSucceeded, FoundPending, FoundFailed or FoundNone.
	Found string `json:"Found"`
	// ProviderRefundID is the id of the refund found.
	ProviderRefundID string `json:"ProviderRefundID"`
	// FailureReason is the provider's reason for a failed refund.
	FailureReason string `json:"FailureReason"`
}

// FindRefund looks the refund up at the provider by its merchant reference,
// for a refund whose outcome is unknown or still pending there. A succeeded
// refund wins over a pending one, and a pending one over a failed one. A
// refund that has not failed and whose amount or currency differs from the
// intent is a non-retryable RefundMismatch error carrying its id in its
// details: a human must look. Failed lookups are retryable or not as their
// provider outcome says.
func (a *Activities) FindRefund(ctx context.Context, in FindRefundInput) (FindRefundResult, error) {
	log := a.logger().With("key", in.Key, "reference", in.MerchantReference, "charge", in.ChargeID, "attempt", activity.GetInfo(ctx).Attempt)
	if in.MerchantReference == "" || in.ChargeID == "" {
		return FindRefundResult{}, nonRetryable(ErrTypeInvalidRequest, "find refund: the merchant reference and the charge id are both needed")
	}
	port, err := a.port(in.Provider)
	if err != nil {
		return FindRefundResult{}, err
	}
	refunds, err := port.FindRefunds(ctx, in.ChargeID, in.MerchantReference)
	if err != nil {
		a.Metrics.lookup(a.providerName(in.Provider), chargeonce.OperationRefund, reconcileError)
		log.Warn("could not look up refunds at the provider", "error", err)
		return FindRefundResult{}, lookupError(err, "find refunds for "+in.MerchantReference)
	}
	if err := a.Store.MarkRefundChecked(ctx, in.Key, a.now()); err != nil {
		// As for charges: the time of the last check is for people, and
		// must not make the lookup fail or be repeated.
		log.Warn("could not record the time of the check", "error", err)
	}

	best := FindRefundResult{Found: FoundNone}
	rank := map[string]int{FoundNone: 0, FoundFailed: 1, FoundPending: 2, FoundSucceeded: 3}
	for _, r := range refunds {
		if r.MerchantReference != in.MerchantReference {
			continue
		}
		status, err := refundStatus(r)
		if err != nil {
			return FindRefundResult{}, nonRetryable(ErrTypeContractViolation, err.Error())
		}
		if status != chargeonce.RefundFailed && (r.Amount != in.Amount.Minor || r.Currency != in.Amount.Currency) {
			// The workflow, which marks the refund failed, logs the alert
			// with this error's text.
			a.Metrics.lookup(a.providerName(in.Provider), chargeonce.OperationRefund, reconcileMismatch)
			return FindRefundResult{}, nonRetryable(ErrTypeRefundMismatch,
				fmt.Sprintf("provider refund %s for %s is %d %s, but the refund is for %s", r.ID, in.MerchantReference, r.Amount, r.Currency, in.Amount),
				r.ID)
		}
		found := string(status)
		if rank[found] > rank[best.Found] {
			best = FindRefundResult{Found: found, ProviderRefundID: r.ID, FailureReason: r.FailureReason}
		}
	}
	a.Metrics.lookup(a.providerName(in.Provider), chargeonce.OperationRefund, best.Found)
	log.Info("looked up refunds at the provider", "found", best.Found, "refund", best.ProviderRefundID, "refunds", len(refunds))
	return best, nil
}

// lookupError is the error of a failed lookup at the provider: retryable or
// not as its provider outcome says.
func lookupError(err error, what string) error {
	var perr *provider.Error
	if errors.As(err, &perr) {
		return outcomeError(perr.Outcome, perr.RetryAfter, err.Error())
	}
	return fmt.Errorf("%s: %w", what, err)
}

// RecordRefundOutcomeInput is the input of RecordRefundOutcome.
type RecordRefundOutcomeInput struct {
	// Key is the refund's idempotency key.
	Key string `json:"Key"`
	// Status is the settled status to record.
	Status chargeonce.RefundStatus `json:"Status"`
	// ProviderRefundID is the provider's refund id, when there is one.
	ProviderRefundID string `json:"ProviderRefundID"`
	// FailureReason is the provider's reason for a failed refund.
	FailureReason string `json:"FailureReason"`
}

// RecordRefundOutcomeResult tells whether the refund changed.
type RecordRefundOutcomeResult struct {
	// Changed is false when the refund was settled already, so nothing was
	// written.
	Changed bool `json:"Changed"`
}

// RecordRefundOutcome settles the refund, and its order's status, in the
// merchant's database. The update is conditional on the refund being
// pending, so running it twice, or after the provider's event settled the
// refund, changes nothing; only a succeeded refund may still move to
// failed, which raises refund_failed_after_success.
//
// Metrics counts a settlement once per change of status, so that a refund
// that succeeded and then failed counts in both.
func (a *Activities) RecordRefundOutcome(ctx context.Context, in RecordRefundOutcomeInput) (RecordRefundOutcomeResult, error) {
	if !in.Status.Settled() {
		return RecordRefundOutcomeResult{}, nonRetryable(ErrTypeInvalidRequest, fmt.Sprintf("record refund outcome: %q is not a settled refund status", in.Status))
	}
	log := a.logger().With("key", in.Key, "status", string(in.Status), "attempt", activity.GetInfo(ctx).Attempt)
	var before chargeonce.RefundStatus
	if in.Status == chargeonce.RefundFailed {
		// Only a succeeded refund can still fail, when the provider's
		// event settled it before the workflow's lookup found it failed.
		r, err := a.Store.GetRefund(ctx, in.Key)
		if err == nil {
			before = r.Status
		} else if !errors.Is(err, store.ErrNotFound) {
			return RecordRefundOutcomeResult{}, fmt.Errorf("read refund %s before recording its failure: %w", in.Key, err)
		}
	}
	changed, err := a.Store.SettleRefund(ctx, in.Key, in.Status, in.ProviderRefundID, in.FailureReason, a.now())
	if errors.Is(err, store.ErrNotFound) {
		// The workflow logs the alert with this error's text.
		return RecordRefundOutcomeResult{}, nonRetryable(ErrTypeRefundNotFound, "record refund outcome: refund "+in.Key+" is not in the database")
	}
	if err != nil {
		return RecordRefundOutcomeResult{}, fmt.Errorf("record refund outcome %s for refund %s: %w", in.Status, in.Key, err)
	}
	switch {
	case changed && before == chargeonce.RefundSucceeded:
		a.Metrics.refundSettled(in.Status)
		log.Error("the provider failed a refund that had succeeded: the customer has not got the money back; refund them another way, or again once the reason is resolved",
			alert.Attr(alert.RefundFailedAfterSuccess), "refund", in.ProviderRefundID, "failure_reason", in.FailureReason)
	case changed:
		a.Metrics.refundSettled(in.Status)
		log.Info("refund settled", "refund", in.ProviderRefundID, "failure_reason", in.FailureReason)
	default:
		log.Debug("refund was already settled, nothing changed")
	}
	return RecordRefundOutcomeResult{Changed: changed}, nil
}

// repairLateCharge hands a succeeded charge of an attempt that did not pay
// its order to the store's repair (store.RecordLateCharge): an order that
// another charge paid gets a refund of the whole late charge, stored with
// its workflow not started, which the refund outbox sweep starts; an order
// not paid since is paid by the charge. It runs for every recording of a
// success whose settlement found the order paid by no charge or another,
// not only the one that settled the attempt, so that a recording retried
// after a crash still repairs; the store makes one refund per charge. It
// reads the order again all the same, and leaves an order that this charge
// paid meanwhile alone.
func (a *Activities) repairLateCharge(ctx context.Context, log *slog.Logger, attemptKey, chargeID string) error {
	att, err := a.Store.GetAttempt(ctx, attemptKey)
	if err != nil {
		return fmt.Errorf("read attempt %s to check for a late charge: %w", attemptKey, err)
	}
	order, _, err := a.Store.GetOrder(ctx, att.OrderID)
	if err != nil {
		return fmt.Errorf("read order %d to check for a late charge: %w", att.OrderID, err)
	}
	if order.Status.Paid() && order.ProviderPaymentID == chargeID {
		return nil
	}
	prefix, _, _, err := chargeonce.ParseMerchantReference(att.MerchantReference)
	if err != nil {
		return nonRetryable(ErrTypeInvalidRequest, "late charge "+chargeID+": "+err.Error())
	}
	refundKey, err := uuid.NewV7()
	if err != nil {
		return fmt.Errorf("late charge %s: a refund key: %w", chargeID, err)
	}
	decision, refund, err := a.Store.RecordLateCharge(ctx, store.LateCharge{
		AttemptKey:      attemptKey,
		ChargeID:        chargeID,
		Amount:          att.Amount,
		RefundKey:       refundKey.String(),
		ReferencePrefix: prefix,
		Now:             a.now(),
	})
	if err != nil {
		return fmt.Errorf("record late charge %s of attempt %s: %w", chargeID, attemptKey, err)
	}
	switch {
	case decision == chargeonce.LateChargeAdopted:
		log.Warn("late charge adopted: the order had not been paid since, so this charge pays it and the merchant delivers", "order", att.OrderID)
	case decision == chargeonce.LateChargeRefunded && refund != nil && refund.Key == refundKey.String():
		log.Error("late charge: the order was paid by another charge, so this charge is refunded in whole; check that the refund succeeds and tell the customer",
			alert.Attr(alert.LateChargeRefunded), "order", att.OrderID, "paid_by", order.ProviderPaymentID, "refund_key", refund.Key, "refund_reference", refund.MerchantReference)
	case decision == chargeonce.LateChargeRefunded:
		log.Info("late charge: its refund was stored already", "order", att.OrderID, "paid_by", order.ProviderPaymentID)
	}
	return nil
}

// KeyRetentionInput is the input of KeyRetention.
type KeyRetentionInput struct {
	// Provider names the provider whose retention to read
	// (chargeonce.RefundIntent.Provider); empty means the default.
	Provider string `json:"Provider,omitempty"`
}

// KeyRetentionResult is how long the provider remembers an idempotency key.
type KeyRetentionResult struct {
	// KeyRetention is the provider's published key retention.
	KeyRetention time.Duration `json:"KeyRetention"`
}

// KeyRetention reads the key retention that the provider publishes, the
// limit the worker checked its timing against at start. A refund whose
// outcome stays unknown is looked up until that retention nears.
func (a *Activities) KeyRetention(ctx context.Context, in KeyRetentionInput) (KeyRetentionResult, error) {
	port, err := a.port(in.Provider)
	if err != nil {
		return KeyRetentionResult{}, err
	}
	limits, err := port.Limits(ctx)
	if err != nil {
		return KeyRetentionResult{}, lookupError(err, "read the provider's limits")
	}
	if limits.KeyRetention <= 0 {
		return KeyRetentionResult{}, nonRetryable(ErrTypeContractViolation, fmt.Sprintf("the provider publishes a key retention of %v", limits.KeyRetention))
	}
	return KeyRetentionResult{KeyRetention: limits.KeyRetention}, nil
}
