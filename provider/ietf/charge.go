package ietf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"chargeonce/provider"
)

// Charge sends req to POST /v1/charges and reads the answer. It never returns
// an error: everything that can happen, from a decline to a lost connection,
// is an Outcome in the Result, so that no failure goes unclassified. The
// Result is provider.Approved only when the provider's charge is exactly the one that
// was asked for. A hold (req.Hold) is sent with "capture": false and is
// approved as an authorized charge.
func (c *Client) Charge(ctx context.Context, req provider.ChargeRequest) provider.Result {
	var r provider.Result
	body := chargeBody{
		Amount:            req.Amount,
		Currency:          req.Currency,
		Source:            req.Source,
		Description:       req.Description,
		MerchantReference: req.MerchantReference,
	}
	if req.Hold {
		body.Capture = new(false)
	}
	r.Exchange = c.create(ctx, "/v1/charges", req.Key, checkCharge(req), body, chargeEndpoint(req, &r))
	return r
}

// chargeBody is the JSON body of POST /v1/charges: exactly the contract's
// fields, since the provider fingerprints the whole body. Capture is sent
// only for a hold, so that the body of a charge captured at once, and its
// fingerprint, stay what they were before holds.
type chargeBody struct {
	Amount            int64  `json:"amount"`
	Currency          string `json:"currency"`
	Source            string `json:"source"`
	Description       string `json:"description"`
	MerchantReference string `json:"merchant_reference"`
	Capture           *bool  `json:"capture,omitempty"`
}

// checkCharge refuses, before sending, a charge the provider would refuse.
func checkCharge(req provider.ChargeRequest) error {
	switch {
	case req.Source == "":
		return errors.New("source (card token) is empty")
	case req.MerchantReference == "":
		return errors.New("merchant reference is empty")
	}
	return checkMoney(req.Amount, req.Currency)
}

// chargeEndpoint reads the answers of POST /v1/charges for req into r.
func chargeEndpoint(req provider.ChargeRequest, r *provider.Result) endpoint {
	return endpoint{
		object:  "charge",
		refusal: http.StatusPaymentRequired,
		created: func(body []byte) (provider.Outcome, error) {
			ch, err := approvedCharge(req, body)
			if err != nil {
				return "", err
			}
			r.Charge, r.ChargeID = &ch, ch.ID
			return provider.Approved, nil
		},
		declined: func(p problem) (bool, error) {
			switch {
			case p.Code == codeInvalidSource:
				// The customer's card is not one the provider can charge:
				// a decline that processed nothing and left no charge.
				r.DeclineCode = provider.DeclineInvalidPaymentMethod
				return true, nil
			case p.Code != codeCardDeclined || p.DeclineCode == "" || p.ChargeID == "":
				return false, fmt.Errorf("needs code card_declined, a decline_code and a charge_id, or code invalid_source; got code %q, decline_code %q, charge_id %q", p.Code, p.DeclineCode, p.ChargeID)
			}
			r.DeclineCode, r.ChargeID = p.DeclineCode, p.ChargeID
			// The draft's decline codes are the common ones.
			r.ProviderTrouble = provider.IsProviderTrouble(p.DeclineCode)
			return false, nil
		},
	}
}

// classifyCharge reads a complete answer to a charge request without a
// server, for the benchmark of the reading alone.
func classifyCharge(req provider.ChargeRequest, status int, header http.Header, body []byte, now time.Time) provider.Result {
	var r provider.Result
	r.Exchange = classify(chargeEndpoint(req, &r), status, header, body, now)
	return r
}

// approvedCharge decodes the charge of a 2xx answer and checks that it is the
// charge that was asked for: a success for another amount, another reference
// or another key would settle the payment on a charge that is not ours.
func approvedCharge(req provider.ChargeRequest, body []byte) (provider.Charge, error) {
	ch, err := decodeCharge(body)
	if err != nil {
		return provider.Charge{}, err
	}
	want := provider.StatusSucceeded
	if req.Hold {
		want = provider.StatusAuthorized
	}
	switch {
	case ch.Status != want:
		return provider.Charge{}, fmt.Errorf("status %q, want %q", ch.Status, want)
	case ch.Amount != req.Amount || ch.Currency != req.Currency:
		return provider.Charge{}, fmt.Errorf("amount %d %s, want %d %s", ch.Amount, ch.Currency, req.Amount, req.Currency)
	case ch.MerchantReference != req.MerchantReference:
		return provider.Charge{}, fmt.Errorf("merchant_reference %q, want %q", ch.MerchantReference, req.MerchantReference)
	case ch.IdempotencyKey != req.Key:
		return provider.Charge{}, fmt.Errorf("idempotency_key %q, want %q", ch.IdempotencyKey, req.Key)
	}
	return ch, nil
}

// decodeCharge decodes the charge object of a 2xx answer and checks the
// fields every charge object must have.
func decodeCharge(body []byte) (provider.Charge, error) {
	var w wireCharge
	if err := json.Unmarshal(body, &w); err != nil {
		return provider.Charge{}, fmt.Errorf("decoding the charge: %w", err)
	}
	return w.charge()
}

// wireCharge is the charge object of the contract. A hold carries
// amount_captured and capture_before; other charges omit them.
type wireCharge struct {
	ID                string    `json:"id"`
	Object            string    `json:"object"`
	Amount            int64     `json:"amount"`
	Currency          string    `json:"currency"`
	Status            string    `json:"status"`
	MerchantReference string    `json:"merchant_reference"`
	IdempotencyKey    string    `json:"idempotency_key"`
	Created           time.Time `json:"created"`
	AmountCaptured    int64     `json:"amount_captured"`
	CaptureBefore     time.Time `json:"capture_before"`
}

// statuses are the charge statuses of the contract.
var statuses = []string{provider.StatusSucceeded, provider.StatusFailed, provider.StatusAuthorized, provider.StatusVoided, provider.StatusExpired}

// charge checks the fields every charge object must have.
func (w wireCharge) charge() (provider.Charge, error) {
	switch {
	case w.Object != "charge":
		return provider.Charge{}, fmt.Errorf("object %q, want \"charge\"", w.Object)
	case w.ID == "":
		return provider.Charge{}, errors.New("charge without an id")
	case !slices.Contains(statuses, w.Status):
		return provider.Charge{}, fmt.Errorf("charge %s: unknown status %q", w.ID, w.Status)
	case w.Status == provider.StatusAuthorized && w.CaptureBefore.IsZero():
		return provider.Charge{}, fmt.Errorf("charge %s: authorized without a capture_before", w.ID)
	case w.AmountCaptured < 0 || w.AmountCaptured > w.Amount:
		return provider.Charge{}, fmt.Errorf("charge %s: amount_captured %d is not within the amount %d", w.ID, w.AmountCaptured, w.Amount)
	case w.Amount <= 0 || w.Currency == "":
		return provider.Charge{}, fmt.Errorf("charge %s: amount %d %q is not a positive amount in a currency", w.ID, w.Amount, w.Currency)
	case w.MerchantReference == "" || w.IdempotencyKey == "":
		return provider.Charge{}, fmt.Errorf("charge %s: merchant_reference or idempotency_key is missing", w.ID)
	case w.Created.IsZero():
		return provider.Charge{}, fmt.Errorf("charge %s: created is missing", w.ID)
	}
	return provider.Charge{
		ID:                w.ID,
		Status:            w.Status,
		Currency:          w.Currency,
		MerchantReference: w.MerchantReference,
		IdempotencyKey:    w.IdempotencyKey,
		Amount:            w.Amount,
		Created:           w.Created,
		AmountCaptured:    w.AmountCaptured,
		CaptureBefore:     w.CaptureBefore,
	}, nil
}

// The codes of the contract's 402 answers: a declined card, which left a
// failed charge, and a source refused as no card the provider can charge.
const (
	codeCardDeclined  = "card_declined"
	codeInvalidSource = "invalid_source"
)
