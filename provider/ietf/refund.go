package ietf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"chargeonce/provider"
)

// Refund sends req to POST /v1/refunds and reads the answer exactly as a
// charge's is read: it never returns an error, and the RefundResult is
// provider.Approved only when the provider's refund is exactly the one that
// was asked for, succeeded or still pending. A refusal (the charge is
// refunded already, the amount is more than what is left) is
// provider.Declined with the provider's code, as is a refund the provider
// created as failed.
func (c *Client) Refund(ctx context.Context, req provider.RefundRequest) provider.RefundResult {
	var r provider.RefundResult
	r.Exchange = c.create(ctx, "/v1/refunds", req.Key, checkRefund(req), refundBody{
		Charge:            req.ChargeID,
		Amount:            req.Amount,
		Currency:          req.Currency,
		Reason:            req.Reason,
		MerchantReference: req.MerchantReference,
	}, refundEndpoint(req, &r))
	return r
}

// refundBody is the JSON body of POST /v1/refunds: exactly the contract's
// fields, since the provider fingerprints the whole body.
type refundBody struct {
	Charge            string `json:"charge"`
	Amount            int64  `json:"amount"`
	Currency          string `json:"currency"`
	Reason            string `json:"reason"`
	MerchantReference string `json:"merchant_reference"`
}

// checkRefund refuses, before sending, a refund the provider would refuse.
func checkRefund(req provider.RefundRequest) error {
	switch {
	case req.ChargeID == "":
		return errors.New("charge id is empty")
	case req.MerchantReference == "":
		return errors.New("merchant reference is empty")
	}
	return checkMoney(req.Amount, req.Currency)
}

// refundEndpoint reads the answers of POST /v1/refunds for req into r.
func refundEndpoint(req provider.RefundRequest, r *provider.RefundResult) endpoint {
	return endpoint{
		object:  "refund",
		refusal: http.StatusPaymentRequired,
		created: func(body []byte) (provider.Outcome, error) {
			var w wireRefund
			if err := json.Unmarshal(body, &w); err != nil {
				return "", fmt.Errorf("decoding the refund: %w", err)
			}
			rf, err := w.refund()
			switch {
			case err != nil:
			case w.IdempotencyKey != req.Key:
				err = fmt.Errorf("idempotency_key %q, want %q", w.IdempotencyKey, req.Key)
			default:
				err = matches(req, rf)
			}
			if err != nil {
				return "", err
			}
			r.Refund = &rf
			if rf.Status == provider.RefundFailed {
				// Created, but the money could not be returned: the
				// provider's answer is final, and its reason is the
				// refund's.
				r.DeclineCode = rf.FailureReason
				return provider.Declined, nil
			}
			return provider.Approved, nil
		},
		declined: func(p problem) (bool, error) {
			if p.Code == "" || p.ChargeID != req.ChargeID || p.RefundID == "" {
				return false, fmt.Errorf("needs a code, the charge_id %q and a refund_id; got code %q, charge_id %q, refund_id %q", req.ChargeID, p.Code, p.ChargeID, p.RefundID)
			}
			// The contract stores a refusal as a failed refund with the
			// refusal's code as its failure_reason, and the rest as
			// requested; the problem names its id, so that it is the same
			// refund a lookup finds.
			r.DeclineCode = p.Code
			r.Refund = &provider.Refund{
				ID:                p.RefundID,
				ChargeID:          req.ChargeID,
				Status:            provider.RefundFailed,
				FailureReason:     p.Code,
				Amount:            req.Amount,
				Currency:          req.Currency,
				MerchantReference: req.MerchantReference,
			}
			return false, nil
		},
	}
}

// matches checks that a refund of an answer to req is the refund that was
// asked for: a refund of another charge, amount or reference would settle
// the refund intent on money that is not its own.
func matches(req provider.RefundRequest, rf provider.Refund) error {
	switch {
	case rf.ChargeID != req.ChargeID:
		return fmt.Errorf("charge %q, want %q", rf.ChargeID, req.ChargeID)
	case rf.Amount != req.Amount || rf.Currency != req.Currency:
		return fmt.Errorf("amount %d %s, want %d %s", rf.Amount, rf.Currency, req.Amount, req.Currency)
	case rf.MerchantReference != req.MerchantReference:
		return fmt.Errorf("merchant_reference %q, want %q", rf.MerchantReference, req.MerchantReference)
	}
	return nil
}

// wireRefund is the refund object of the contract.
type wireRefund struct {
	ID                string    `json:"id"`
	Object            string    `json:"object"`
	Charge            string    `json:"charge"`
	Amount            int64     `json:"amount"`
	Currency          string    `json:"currency"`
	Status            string    `json:"status"`
	FailureReason     *string   `json:"failure_reason"`
	MerchantReference string    `json:"merchant_reference"`
	IdempotencyKey    string    `json:"idempotency_key"`
	Created           time.Time `json:"created"`
}

// refund checks the fields every refund object must have.
func (w wireRefund) refund() (provider.Refund, error) {
	switch {
	case w.Object != "refund":
		return provider.Refund{}, fmt.Errorf("object %q, want \"refund\"", w.Object)
	case w.ID == "":
		return provider.Refund{}, errors.New("refund without an id")
	case w.Status != provider.RefundPending && w.Status != provider.RefundSucceeded && w.Status != provider.RefundFailed:
		return provider.Refund{}, fmt.Errorf("refund %s: unknown status %q", w.ID, w.Status)
	case w.Status == provider.RefundFailed && (w.FailureReason == nil || *w.FailureReason == ""):
		return provider.Refund{}, fmt.Errorf("refund %s: failed without a failure_reason", w.ID)
	case w.Charge == "":
		return provider.Refund{}, fmt.Errorf("refund %s: charge is missing", w.ID)
	case w.Amount <= 0 || w.Currency == "":
		return provider.Refund{}, fmt.Errorf("refund %s: amount %d %q is not a positive amount in a currency", w.ID, w.Amount, w.Currency)
	case w.MerchantReference == "" || w.IdempotencyKey == "":
		return provider.Refund{}, fmt.Errorf("refund %s: merchant_reference or idempotency_key is missing", w.ID)
	case w.Created.IsZero():
		return provider.Refund{}, fmt.Errorf("refund %s: created is missing", w.ID)
	}
	rf := provider.Refund{
		ID:                w.ID,
		ChargeID:          w.Charge,
		Status:            w.Status,
		Amount:            w.Amount,
		Currency:          w.Currency,
		MerchantReference: w.MerchantReference,
		Created:           w.Created,
	}
	if w.Status == provider.RefundFailed {
		rf.FailureReason = *w.FailureReason
	}
	return rf, nil
}

// FindRefunds returns every refund the provider holds for
// merchantReference, oldest first; none is an empty list, not an error. It
// is how a refund whose every answer was lost learns whether the money went
// back. The contract searches refunds by reference, so chargeID only checks
// the answer: a refund of another charge under the reference is a
// ContractViolation. Errors are *provider.Error.
func (c *Client) FindRefunds(ctx context.Context, chargeID, merchantReference string) ([]provider.Refund, error) {
	const op = "find refunds"
	if chargeID == "" || merchantReference == "" {
		return nil, &provider.Error{Op: op, Outcome: provider.InvalidRequest, Detail: "not sent: the charge id and the merchant reference are both needed"}
	}
	return findByReference(ctx, c, op, "/v1/refunds", merchantReference, func(w wireRefund) (provider.Refund, error) {
		rf, err := w.refund()
		switch {
		case err != nil:
		case rf.MerchantReference != merchantReference:
			err = fmt.Errorf("refund %s has merchant_reference %q, want %q", rf.ID, rf.MerchantReference, merchantReference)
		case rf.ChargeID != chargeID:
			err = fmt.Errorf("refund %s is of charge %q, want %q", rf.ID, rf.ChargeID, chargeID)
		}
		return rf, err
	}, func(rf provider.Refund) time.Time { return rf.Created })
}
