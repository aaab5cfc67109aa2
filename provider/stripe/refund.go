package stripe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	stripeapi "github.com/stripe/stripe-go/v84"

	"chargeonce/provider"
)

// metadataReason is the metadata key under which a refund's reason travels:
// Stripe's own reason takes only a few values.
const metadataReason = "reason"

// maxMetadataValue is the longest metadata value Stripe accepts.
const maxMetadataValue = 500

// stripeReasons are the values of Stripe's own refund reason. A reason that
// is one of them is sent as Stripe's reason too, so that the dashboard
// shows it; any other goes in the metadata alone.
var stripeReasons = []stripeapi.RefundReason{
	stripeapi.RefundReasonDuplicate,
	stripeapi.RefundReasonFraudulent,
	stripeapi.RefundReasonRequestedByCustomer,
}

// refusals are the error codes with which Stripe refuses a refund it will
// not make: a result about the charge, like a decline, not a bug of ours.
// Stripe began to execute such a request and keeps its answer under the key.
var refusals = []stripeapi.ErrorCode{
	stripeapi.ErrorCodeChargeAlreadyRefunded,
	stripeapi.ErrorCodeAmountTooLarge,
	stripeapi.ErrorCodeChargeNotRefundable,
	stripeapi.ErrorCodeChargeDisputed,
	stripeapi.ErrorCodeRefundDisputedPayment,
}

// Refund refunds req's PaymentIntent (ChargeID) under its key and reads
// the answer as a charge's is read. The merchant reference, and the reason,
// travel as metadata; the currency is the PaymentIntent's, and is checked
// on the answer. A refund Stripe refuses (charge_already_refunded,
// amount_too_large, charge_not_refundable, a disputed charge) is Declined
// with that code; so is a PaymentIntent Stripe does not have, as
// charge_not_refundable, which processed nothing; and so is a refund
// Stripe created as failed or canceled, with its failure reason.
func (c *Client) Refund(ctx context.Context, req provider.RefundRequest) provider.RefundResult {
	params := &stripeapi.RefundCreateParams{
		PaymentIntent: stripeapi.String(req.ChargeID),
		Amount:        stripeapi.Int64(req.Amount),
		Metadata:      map[string]string{metadataReference: req.MerchantReference},
	}
	if req.Reason != "" {
		params.Metadata[metadataReason] = req.Reason
		if slices.Contains(stripeReasons, stripeapi.RefundReason(req.Reason)) {
			params.Reason = stripeapi.String(req.Reason)
		}
	}
	params.SetIdempotencyKey(req.Key)
	var r provider.RefundResult
	r.Exchange = create(ctx, checkRefund(req), func(ctx context.Context) (*stripeapi.Refund, error) {
		return c.api.V1Refunds.Create(ctx, params)
	}, func(rf *stripeapi.Refund) endpoint {
		return refundEndpoint(req, rf, &r)
	})
	return r
}

// checkRefund refuses, before anything is sent, a refund Stripe would
// refuse.
func checkRefund(req provider.RefundRequest) error {
	switch {
	case req.ChargeID == "":
		return errors.New("charge id (PaymentIntent) is empty")
	case req.MerchantReference == "":
		return errors.New("merchant reference is empty")
	case len(req.MerchantReference) > maxMetadataValue || len(req.Reason) > maxMetadataValue:
		return fmt.Errorf("merchant reference and reason must be at most %d characters, Stripe's limit of a metadata value", maxMetadataValue)
	}
	return checkKeyAndMoney(req.Key, req.Amount, req.Currency)
}

// refundEndpoint reads the answers to the creation of rf for req into r.
func refundEndpoint(req provider.RefundRequest, rf *stripeapi.Refund, r *provider.RefundResult) endpoint {
	return endpoint{
		object: "refund",
		created: func() (provider.Outcome, error) {
			got, err := refundOf(rf)
			switch {
			case err != nil:
			case got.ChargeID != req.ChargeID:
				err = fmt.Errorf("payment_intent %q, want %q", got.ChargeID, req.ChargeID)
			case got.Amount != req.Amount || got.Currency != req.Currency:
				err = fmt.Errorf("amount %d %s, want %d %s", got.Amount, got.Currency, req.Amount, req.Currency)
			case got.MerchantReference != req.MerchantReference:
				err = fmt.Errorf("metadata[%s] %q, want %q", metadataReference, got.MerchantReference, req.MerchantReference)
			}
			if err != nil {
				return "", err
			}
			r.Refund = &got
			if got.Status == provider.RefundFailed {
				r.DeclineCode = got.FailureReason
				return provider.Declined, nil
			}
			return provider.Approved, nil
		},
		refusal: func(e *stripeapi.Error) (refused, ok bool) {
			switch {
			case e.Type == stripeapi.ErrorTypeInvalidRequest && slices.Contains(refusals, e.Code):
				r.DeclineCode = string(e.Code)
				return false, true
			case resourceMissing(e, "payment_intent"):
				// "No such payment_intent": nothing of it can be refunded,
				// and Stripe checks it before it executes anything.
				r.DeclineCode = string(stripeapi.ErrorCodeChargeNotRefundable)
				return true, true
			}
			return false, false
		},
	}
}

// refundOf reads a Stripe refund. Stripe's statuses map to the port's:
// pending and requires_action (Stripe waits for the customer's bank
// details) are pending; succeeded; failed and canceled are failed, with
// Stripe's failure_reason, or "canceled", or Stripe's own "unknown" when it
// gives none.
func refundOf(rf *stripeapi.Refund) (provider.Refund, error) {
	if rf == nil || rf.ID == "" {
		return provider.Refund{}, errors.New("refund without an id")
	}
	out := provider.Refund{
		ID:                rf.ID,
		FailureReason:     string(rf.FailureReason),
		Amount:            rf.Amount,
		Currency:          strings.ToUpper(string(rf.Currency)),
		MerchantReference: rf.Metadata[metadataReference],
		Created:           time.Unix(rf.Created, 0).UTC(),
	}
	if rf.PaymentIntent != nil {
		out.ChargeID = rf.PaymentIntent.ID
	}
	switch rf.Status {
	case stripeapi.RefundStatusPending, stripeapi.RefundStatusRequiresAction:
		out.Status, out.FailureReason = provider.RefundPending, ""
	case stripeapi.RefundStatusSucceeded:
		out.Status, out.FailureReason = provider.RefundSucceeded, ""
	case stripeapi.RefundStatusFailed, stripeapi.RefundStatusCanceled:
		out.Status = provider.RefundFailed
		switch {
		case out.FailureReason != "":
		case rf.Status == stripeapi.RefundStatusCanceled:
			out.FailureReason = string(stripeapi.RefundStatusCanceled)
		default:
			out.FailureReason = string(stripeapi.RefundFailureReasonUnknown)
		}
	default:
		return provider.Refund{}, fmt.Errorf("refund %s has status %q, which Stripe does not document", rf.ID, rf.Status)
	}
	if rf.Amount <= 0 || rf.Currency == "" {
		return provider.Refund{}, fmt.Errorf("refund %s: amount %d %q is not a positive amount in a currency", rf.ID, rf.Amount, rf.Currency)
	}
	return out, nil
}

// FindRefunds lists the refunds of the PaymentIntent chargeID and returns
// those whose metadata carries merchantReference, oldest first; none is an
// empty list. Stripe has no search of refunds, but a PaymentIntent has few
// of them, and its list is read at once, not through an eventually
// consistent index. Errors are *provider.Error.
func (c *Client) FindRefunds(ctx context.Context, chargeID, merchantReference string) ([]provider.Refund, error) {
	const op = "find refunds"
	if chargeID == "" || merchantReference == "" {
		return nil, &provider.Error{Op: op, Outcome: provider.InvalidRequest, Detail: "not sent: the PaymentIntent and the merchant reference are both needed"}
	}
	if err := ctx.Err(); err != nil {
		return nil, &provider.Error{Op: op, Outcome: provider.Timeout, Detail: "not sent: " + err.Error()}
	}
	params := &stripeapi.RefundListParams{PaymentIntent: stripeapi.String(chargeID)}
	params.Limit = stripeapi.Int64(100)
	ctx, ex := record(ctx)
	refunds := []provider.Refund{}
	for rf, err := range c.api.V1Refunds.List(ctx, params) {
		if err != nil {
			return nil, lookupError(ctx, op, ex, err)
		}
		if rf.Metadata[metadataReference] != merchantReference {
			continue
		}
		got, err := refundOf(rf)
		if err == nil && got.ChargeID != chargeID {
			err = fmt.Errorf("refund %s is of PaymentIntent %q, want %q", got.ID, got.ChargeID, chargeID)
		}
		if err != nil {
			return nil, &provider.Error{Op: op, Outcome: provider.ContractViolation, StatusCode: ex.status, Detail: err.Error()}
		}
		refunds = append(refunds, got)
	}
	// Stripe lists newest first and the port promises oldest first:
	// reversed, then sorted stably, refunds created in the same second keep
	// Stripe's order.
	slices.Reverse(refunds)
	slices.SortStableFunc(refunds, func(a, b provider.Refund) int { return a.Created.Compare(b.Created) })
	return refunds, nil
}
