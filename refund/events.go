package refund

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/internal/alert"
	"chargeonce/internal/webhook"
	"chargeonce/provider"
	"chargeonce/store"
	"chargeonce/workflows"
)

// signalTimeout bounds the signal to a refund workflow, so that a provider
// waiting for the answer hears 503 and delivers again, rather than timing
// out, while Temporal is unreachable.
const signalTimeout = 5 * time.Second

// HandleRefundEvent acts on the provider's refund event, stored once by
// checkout.HandleProviderEvent. As for charges, the event is a hint and
// only what a lookup finds changes state. A pending refund's workflow is
// told, and looks the refund up at once. A refund.failed for a refund that
// had succeeded, which no workflow follows any more, is looked up here
// (failAfterSuccess). Every other event of a settled refund changes
// nothing, and so does an event from another provider than the refund's
// (checkout.EventUnconfirmed).
func (s *Service) HandleRefundEvent(ctx context.Context, ev checkout.ProviderEvent) (checkout.EventResult, error) {
	log := s.log.With("event", ev.ID, "type", ev.Type, "provider_refund", ev.RefundID, "reference", ev.MerchantReference)
	r, err := s.store.RefundByReference(ctx, ev.MerchantReference)
	if errors.Is(err, store.ErrNotFound) {
		log.Warn("refund event for no known refund, kept for the books")
		return checkout.EventUnknownReference, nil
	}
	if err != nil {
		return "", fmt.Errorf("refund: provider event: %w", err)
	}
	log = log.With("refund", r.Key, "order", r.OrderID, "charge", r.ChargeID)
	if r.Provider != ev.Provider {
		log.Warn("refund event about a refund of another provider: nothing changes, and the event is kept for the books", "sender", ev.Provider, "provider", r.Provider)
		return checkout.EventUnconfirmed, nil
	}
	switch {
	case r.Status == chargeonce.RefundPending:
		return s.signal(ctx, log, r, ev)
	case r.Status == chargeonce.RefundSucceeded && ev.Type == webhook.EventRefundFailed:
		return s.failAfterSuccess(ctx, log, r, ev)
	default:
		log.Info("refund event for a settled refund, nothing changes", "status", r.Status)
		return checkout.EventSettled, nil
	}
}

func (s *Service) signal(ctx context.Context, log *slog.Logger, r store.Refund, ev checkout.ProviderEvent) (checkout.EventResult, error) {
	sctx, cancel := context.WithTimeout(ctx, signalTimeout)
	defer cancel()
	err := s.temporal.SignalWorkflow(sctx, workflows.RefundWorkflowID(r.Key), "", chargeonce.SignalRefundEvent,
		workflows.RefundEvent{RefundID: ev.RefundID, Type: ev.Type})
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		// Never started (the sweep starts it, and it looks up first) or
		// closed since the refund was read.
		log.Warn("refund event for a pending refund whose workflow does not run")
		return checkout.EventNoWorkflow, nil
	case err != nil:
		return "", fmt.Errorf("refund: provider event %s: signal the refund workflow: %w", ev.ID, err)
	}
	log.Info("refund event: the refund workflow looks the refund up at once")
	return checkout.EventSignaled, nil
}

// failAfterSuccess handles a refund.failed for a refund that succeeded. The
// event is not trusted: only when the provider, asked, holds the refund
// failed is it recorded, and alerted (refund_failed_after_success): money
// the customer was told is back is not. Otherwise nothing changes and the
// event is EventUnconfirmed.
func (s *Service) failAfterSuccess(ctx context.Context, log *slog.Logger, r store.Refund, ev checkout.ProviderEvent) (checkout.EventResult, error) {
	if ev.RefundID != "" && r.ProviderRefundID != "" && ev.RefundID != r.ProviderRefundID {
		// Another refund under this reference: not this refund's news. The
		// settlement sees every refund the provider holds.
		log.Warn("refund.failed for another provider refund than the one that succeeded, kept for the books", "succeeded_refund", r.ProviderRefundID)
		return checkout.EventSettled, nil
	}
	failed, err := s.confirmFailed(ctx, r, cmp.Or(r.ProviderRefundID, ev.RefundID))
	if err != nil {
		return "", fmt.Errorf("refund: provider event %s: %w", ev.ID, err)
	}
	if failed == nil {
		log.Warn("refund.failed that the provider does not confirm: the refund stays succeeded, and the event is kept for the books")
		return checkout.EventUnconfirmed, nil
	}
	moved, err := s.store.SettleRefund(ctx, r.Key, chargeonce.RefundFailed, failed.ID, failed.FailureReason, s.now())
	if err != nil {
		return "", fmt.Errorf("refund: provider event %s: %w", ev.ID, err)
	}
	if !moved {
		log.Info("refund.failed for a refund settled otherwise meanwhile, nothing changes")
		return checkout.EventSettled, nil
	}
	log.Error("a refund that had succeeded failed at the provider: the money is not back with the customer; refund again or contact the customer",
		alert.Attr(alert.RefundFailedAfterSuccess), "amount", r.Amount.String(), "failure_reason", failed.FailureReason)
	return checkout.EventSettled, nil
}

// confirmFailed looks the refund up at the provider by its reference and
// returns the refund with providerID when the provider holds it failed;
// nil when it does not, or when the refund's provider cannot be asked here.
func (s *Service) confirmFailed(ctx context.Context, r store.Refund, providerID string) (*provider.Refund, error) {
	finder := s.finders[r.Provider]
	if finder == nil {
		s.log.Warn("a refund.failed cannot be verified: its provider cannot be asked here; the settlement compares the refund with the provider's report", "refund", r.Key, "provider", r.Provider)
		return nil, nil
	}
	refunds, err := finder.FindRefunds(ctx, r.ChargeID, r.MerchantReference)
	if err != nil {
		return nil, fmt.Errorf("verify the refund at the provider: %w", err)
	}
	for i := range refunds {
		if refunds[i].ID == providerID && refunds[i].Status == provider.RefundFailed {
			return &refunds[i], nil
		}
	}
	return nil, nil
}

// RepairLateCharge repairs a charge that the provider reports succeeded
// for attempt a, which settled without it: abandoned, not processed,
// declined, or succeeded with another charge. The event is not trusted:
// the charge must be one the provider holds as succeeded under the
// attempt's merchant reference. Then store.RecordLateCharge decides: the
// order adopts the charge when nothing paid it since; otherwise the whole
// charge is refunded under a refund key of its own, started here at once,
// with the alert late_charge_refunded (the outbox sweep starts it should
// this start fail).
func (s *Service) RepairLateCharge(ctx context.Context, a store.Attempt, chargeID string) (checkout.EventResult, error) {
	log := s.log.With("key", a.Key, "order", a.OrderID, "charge", chargeID, "status", a.Status)
	finder := s.finders[a.Provider]
	if finder == nil {
		log.Warn("a charge succeeded for an attempt that settled without it, and its provider cannot be asked here to verify it; the settlement will repair it", "provider", a.Provider)
		return checkout.EventLateChargeUnverified, nil
	}
	charges, err := finder.FindCharges(ctx, a.MerchantReference)
	if err != nil {
		return "", fmt.Errorf("refund: verify late charge %s: %w", chargeID, err)
	}
	var charge *provider.Charge
	for i := range charges {
		if charges[i].ID == chargeID && charges[i].Succeeded() {
			charge = &charges[i]
		}
	}
	if charge == nil {
		log.Warn("the provider holds no succeeded charge with this id under the attempt's reference; the event is kept for the books")
		return checkout.EventLateChargeUnverified, nil
	}
	amount, err := chargeonce.NewMoney(charge.Amount, charge.Currency)
	if err != nil {
		return "", fmt.Errorf("refund: late charge %s: %w", chargeID, err)
	}
	key, err := s.newKey()
	if err != nil {
		return "", fmt.Errorf("refund: issue idempotency key: %w", err)
	}
	decision, r, err := s.store.RecordLateCharge(ctx, store.LateCharge{
		AttemptKey: a.Key, ChargeID: chargeID, Amount: amount, RefundKey: key, ReferencePrefix: s.prefix, Now: s.now(),
	})
	if err != nil {
		return "", fmt.Errorf("refund: late charge %s: %w", chargeID, err)
	}
	switch decision {
	case chargeonce.LateChargeAdopted:
		log.Info("late charge adopted: no other charge paid the order, so this one pays it", "amount", amount.String())
		return checkout.EventLateChargeAdopted, nil
	case chargeonce.LateChargeKnown:
		log.Info("the charge is the one that paid the order; nothing changes")
		return checkout.EventSettled, nil
	case chargeonce.LateChargeRefunded:
	default:
		return "", fmt.Errorf("refund: late charge %s: unknown store decision %q", chargeID, decision)
	}
	if r == nil {
		return "", fmt.Errorf("refund: late charge %s: the store decided a refund and returned none", chargeID)
	}
	if r.WorkflowStarted || r.Status != chargeonce.RefundPending {
		// Found before, and its refund runs: alerted then.
		log.Info("the late charge's refund runs already", "refund", r.Key, "refund_status", r.Status)
		return checkout.EventLateChargeRefunded, nil
	}
	log.Error("a late charge for an order another charge paid is refunded automatically; nothing to do unless the refund fails",
		alert.Attr(alert.LateChargeRefunded), "refund", r.Key, "amount", amount.String())
	timing, err := checkout.ReadTiming(ctx, s.store)
	if err == nil {
		err = s.start(ctx, timing, *r)
	}
	if err != nil {
		log.Warn("the late charge's refund is stored but its workflow did not start; the refund sweep starts it", "refund", r.Key, "error", err)
	}
	return checkout.EventLateChargeRefunded, nil
}
