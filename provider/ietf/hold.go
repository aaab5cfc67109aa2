package ietf

import (
	"context"
	"fmt"
	"net/http"

	"chargeonce/provider"
)

// The codes of the contract's 403 answers to a capture or a void the
// provider refuses; their decline_code says why.
const (
	codeNotCapturable = "charge_not_capturable"
	codeNotVoidable   = "charge_not_voidable"
)

// Capture sends req to POST /v1/charges/{id}/capture under the capture's
// key and reads the answer as a charge's is read: it never returns an
// error, and the result is provider.Approved only when the answer is the
// charge asked for, succeeded with exactly req.Amount captured. A refusal
// (the hold was voided, captured or has expired, the amount is more than
// the hold, the charge was no hold) is provider.Declined with the
// contract's decline_code. An unknown charge is provider.NotFound.
func (c *Client) Capture(ctx context.Context, req provider.CaptureRequest) provider.CaptureResult {
	var r provider.CaptureResult
	invalid := provider.CheckChargeID(req.ChargeID)
	if invalid == nil {
		invalid = checkMoney(req.Amount, req.Currency)
	}
	e := holdEndpoint(req.ChargeID, codeNotCapturable, &r.Charge, &r.DeclineCode, func(ch provider.Charge) error {
		switch {
		case ch.Status != provider.StatusSucceeded:
			return fmt.Errorf("status %q, want %q", ch.Status, provider.StatusSucceeded)
		case ch.AmountCaptured != req.Amount || ch.Currency != req.Currency:
			return fmt.Errorf("amount_captured %d %s, want %d %s", ch.AmountCaptured, ch.Currency, req.Amount, req.Currency)
		}
		return nil
	})
	r.Exchange = c.create(ctx, holdPath(req.ChargeID, "capture"), req.Key, invalid, captureBody{Amount: req.Amount, Currency: req.Currency}, e)
	return r
}

// captureBody is the JSON body of POST /v1/charges/{id}/capture.
type captureBody struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// Void sends req to POST /v1/charges/{id}/void under the void's key, with
// the empty object as its body, and reads the answer as Capture does: it is
// provider.Approved only with the charge asked for, voided.
func (c *Client) Void(ctx context.Context, req provider.VoidRequest) provider.VoidResult {
	var r provider.VoidResult
	e := holdEndpoint(req.ChargeID, codeNotVoidable, &r.Charge, &r.DeclineCode, func(ch provider.Charge) error {
		if ch.Status != provider.StatusVoided {
			return fmt.Errorf("status %q, want %q", ch.Status, provider.StatusVoided)
		}
		return nil
	})
	r.Exchange = c.create(ctx, holdPath(req.ChargeID, "void"), req.Key, provider.CheckChargeID(req.ChargeID), struct{}{}, e)
	return r
}

// holdPath is the path of an action on the charge id, which the caller has
// checked with provider.CheckChargeID before anything is sent.
func holdPath(chargeID, action string) string {
	return "/v1/charges/" + chargeID + "/" + action
}

// holdEndpoint reads the answers of a capture or a void of chargeID: the
// charge of a 200, checked by want, into charge; the decline_code of a 403
// whose code is refusalCode into decline. Captures and voids differ only
// in those, so they share the rest.
func holdEndpoint(chargeID, refusalCode string, charge **provider.Charge, decline *string, want func(provider.Charge) error) endpoint {
	return endpoint{
		object:  "charge",
		refusal: http.StatusForbidden,
		created: func(body []byte) (provider.Outcome, error) {
			ch, err := decodeCharge(body)
			switch {
			case err != nil:
			case ch.ID != chargeID:
				err = fmt.Errorf("charge %q, want %q", ch.ID, chargeID)
			default:
				err = want(ch)
			}
			if err != nil {
				return "", err
			}
			*charge = &ch
			return provider.Approved, nil
		},
		declined: func(p problem) (bool, error) {
			switch {
			case p.Code != refusalCode || !provider.IsHoldDecline(p.DeclineCode):
				return false, fmt.Errorf("needs code %s and a hold decline_code; got code %q, decline_code %q", refusalCode, p.Code, p.DeclineCode)
			case p.ChargeID != "" && p.ChargeID != chargeID:
				return false, fmt.Errorf("refuses charge_id %q, want %q", p.ChargeID, chargeID)
			}
			// The refusal is stored under the key and replayed, like a
			// declined card: it processed the request.
			*decline = p.DeclineCode
			return false, nil
		},
	}
}

// GetCharge reads the charge id with GET /v1/charges/{id}. Errors are
// *provider.Error: an id that is not safe in a path is InvalidRequest and
// not sent, an unknown charge is NotFound.
func (c *Client) GetCharge(ctx context.Context, id string) (provider.Charge, error) {
	const op = "get charge"
	if err := provider.CheckChargeID(id); err != nil {
		return provider.Charge{}, &provider.Error{Op: op, Outcome: provider.InvalidRequest, Detail: "not sent: " + err.Error()}
	}
	var w wireCharge
	if err := c.get(ctx, op, "/v1/charges/"+id, nil, &w); err != nil {
		return provider.Charge{}, err
	}
	ch, err := w.charge()
	if err == nil && ch.ID != id {
		err = fmt.Errorf("charge %q, want %q", ch.ID, id)
	}
	if err != nil {
		return provider.Charge{}, &provider.Error{Op: op, Outcome: provider.ContractViolation, StatusCode: http.StatusOK, Detail: err.Error()}
	}
	return ch, nil
}
