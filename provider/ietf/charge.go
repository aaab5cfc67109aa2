package ietf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"

	"chargeonce"
	"chargeonce/provider"
)

// maxKeyLength is the longest Idempotency-Key the provider accepts.
const maxKeyLength = 255

// Charge sends req to POST /v1/charges and reads the answer. It never returns
// an error: everything that can happen, from a decline to a lost connection,
// is an Outcome in the Result, so that no failure goes unclassified. The
// Result is provider.Approved only when the provider's charge is exactly the one that
// was asked for.
func (c *Client) Charge(ctx context.Context, req provider.ChargeRequest) provider.Result {
	header, body, err := encode(req)
	if err != nil {
		return provider.Result{Outcome: provider.InvalidRequest, Detail: "not sent: " + err.Error()}
	}
	ex := c.send(ctx, http.MethodPost, "/v1/charges", nil, header, body)
	var r provider.Result
	if ex.failed != "" {
		r = provider.Result{Outcome: ex.failed, StatusCode: ex.status, Detail: ex.detail}
	} else {
		r = classifyCharge(req, ex.status, ex.header, ex.body, time.Now())
	}
	r.Sent, r.Duration = ex.sent, ex.duration
	r.Refused = r.Refused || refused(r.StatusCode)
	return r
}

// refused reports whether status is one that docs/provider-http.md documents
// as processing nothing and storing nothing under the key: 400 (refused as
// malformed), 429 (the rate limiter runs before the idempotency layer), and
// the 500 and 503 of a provider error. A 409 (the first request is still
// processing) and the 502 and 504 of a gateway, behind which the provider
// may have received the request, may hide a charge.
func refused(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable:
		return true
	}
	return false
}

// chargeBody is the JSON body of POST /v1/charges: exactly the contract's
// fields, since the provider fingerprints the whole body.
type chargeBody struct {
	Amount            int64  `json:"amount"`
	Currency          string `json:"currency"`
	Source            string `json:"source"`
	Description       string `json:"description"`
	MerchantReference string `json:"merchant_reference"`
}

// encode checks req and builds the headers and body of its request. Bad input
// is refused here, before anything is sent, so that a bug on our side is a
// clear provider.InvalidRequest with Sent false rather than a round trip whose 400 a
// caller might have to interpret.
func encode(req provider.ChargeRequest) (http.Header, []byte, error) {
	switch {
	case req.Key == "":
		return nil, nil, errors.New("idempotency key is empty")
	case len(req.Key) > maxKeyLength:
		return nil, nil, fmt.Errorf("idempotency key has %d characters, more than %d", len(req.Key), maxKeyLength)
	case req.Source == "":
		return nil, nil, errors.New("source (card token) is empty")
	case req.MerchantReference == "":
		return nil, nil, errors.New("merchant reference is empty")
	}
	if _, err := chargeonce.NewMoney(req.Amount, req.Currency); err != nil {
		return nil, nil, err
	}
	key, err := httpsfv.Marshal(httpsfv.NewItem(req.Key))
	if err != nil {
		return nil, nil, fmt.Errorf("idempotency key %q is not a Structured Field String (printable ASCII only): %w", req.Key, err)
	}
	body, err := json.Marshal(chargeBody{
		Amount:            req.Amount,
		Currency:          req.Currency,
		Source:            req.Source,
		Description:       req.Description,
		MerchantReference: req.MerchantReference,
	})
	if err != nil {
		return nil, nil, err
	}
	header := http.Header{}
	header.Set("Idempotency-Key", key)
	header.Set("Content-Type", "application/json")
	return header, body, nil
}

// classifyCharge reads a complete answer to a charge request. It is pure, so
// that every status and body can be tested and benchmarked without a server.
func classifyCharge(req provider.ChargeRequest, status int, header http.Header, body []byte, now time.Time) provider.Result {
	r := provider.Result{
		StatusCode: status,
		Replayed:   strings.EqualFold(strings.TrimSpace(header.Get("Idempotent-Replayed")), "true"),
	}
	var note string
	r.RetryAfter, note = retryAfter(header, now)
	switch status {
	case http.StatusCreated, http.StatusOK:
		ch, err := approvedCharge(req, body)
		if err != nil {
			r.Outcome, r.Detail = provider.ContractViolation, fmt.Sprintf("HTTP %d with a charge that is not the one requested: %v", status, err)
			break
		}
		r.Outcome, r.Charge, r.ChargeID = provider.Approved, &ch, ch.ID
	case http.StatusPaymentRequired:
		p, err := decodeProblem(body)
		switch {
		case err != nil:
			r.Outcome, r.Detail = provider.ContractViolation, "HTTP 402 without a readable problem: "+err.Error()
		case p.Code == codeInvalidSource:
			// The customer's card is not one the provider can charge:
			// a decline that processed nothing and left no charge.
			r.Outcome, r.DeclineCode, r.Detail = provider.Declined, provider.DeclineInvalidPaymentMethod, p.Detail
			r.Refused = true
		case p.Code != codeCardDeclined || p.DeclineCode == "" || p.ChargeID == "":
			r.Outcome, r.Detail = provider.ContractViolation, fmt.Sprintf("HTTP 402 needs code card_declined, a decline_code and a charge_id, or code invalid_source; got code %q, decline_code %q, charge_id %q", p.Code, p.DeclineCode, p.ChargeID)
		default:
			r.Outcome, r.DeclineCode, r.ChargeID, r.Detail = provider.Declined, p.DeclineCode, p.ChargeID, p.Detail
		}
	case http.StatusConflict:
		r.Outcome, r.Detail = provider.InFlight, describe(status, body)
	case http.StatusUnprocessableEntity:
		r.Outcome, r.Detail = provider.ContractViolation, describe(status, body)
	default:
		r.Outcome, r.Detail = statusOutcome(status), describe(status, body)
	}
	r.Detail = joinNote(r.Detail, note)
	return r
}

// approvedCharge decodes the charge of a 2xx answer and checks that it is the
// charge that was asked for: a success for another amount, another reference
// or another key would settle the payment on a charge that is not ours.
func approvedCharge(req provider.ChargeRequest, body []byte) (provider.Charge, error) {
	var w wireCharge
	if err := json.Unmarshal(body, &w); err != nil {
		return provider.Charge{}, fmt.Errorf("decoding the charge: %w", err)
	}
	ch, err := w.charge()
	if err != nil {
		return provider.Charge{}, err
	}
	switch {
	case ch.Status != provider.StatusSucceeded:
		return provider.Charge{}, fmt.Errorf("status %q, want %q", ch.Status, provider.StatusSucceeded)
	case ch.Amount != req.Amount || ch.Currency != req.Currency:
		return provider.Charge{}, fmt.Errorf("amount %d %s, want %d %s", ch.Amount, ch.Currency, req.Amount, req.Currency)
	case ch.MerchantReference != req.MerchantReference:
		return provider.Charge{}, fmt.Errorf("merchant_reference %q, want %q", ch.MerchantReference, req.MerchantReference)
	case ch.IdempotencyKey != req.Key:
		return provider.Charge{}, fmt.Errorf("idempotency_key %q, want %q", ch.IdempotencyKey, req.Key)
	}
	return ch, nil
}

// wireCharge is the charge object of the contract.
type wireCharge struct {
	ID                string    `json:"id"`
	Object            string    `json:"object"`
	Amount            int64     `json:"amount"`
	Currency          string    `json:"currency"`
	Status            string    `json:"status"`
	MerchantReference string    `json:"merchant_reference"`
	IdempotencyKey    string    `json:"idempotency_key"`
	Created           time.Time `json:"created"`
}

// charge checks the fields every charge object must have.
func (w wireCharge) charge() (provider.Charge, error) {
	switch {
	case w.Object != "charge":
		return provider.Charge{}, fmt.Errorf("object %q, want \"charge\"", w.Object)
	case w.ID == "":
		return provider.Charge{}, errors.New("charge without an id")
	case w.Status != provider.StatusSucceeded && w.Status != provider.StatusFailed:
		return provider.Charge{}, fmt.Errorf("charge %s: unknown status %q", w.ID, w.Status)
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
	}, nil
}

// The codes of the contract's 402 answers: a declined card, which left a
// failed charge, and a source refused as no card the provider can charge.
const (
	codeCardDeclined  = "card_declined"
	codeInvalidSource = "invalid_source"
)

// problem is the part of an RFC 9457 problem that this client reads, with
// the contract's extra members.
type problem struct {
	Title       string `json:"title"`
	Detail      string `json:"detail"`
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code"`
	ChargeID    string `json:"charge_id"`
}

func decodeProblem(body []byte) (problem, error) {
	var p problem
	err := json.Unmarshal(body, &p)
	return p, err
}

// describe summarises an error answer for logs: its status and, when the body
// is a readable problem, its title and detail.
func describe(status int, body []byte) string {
	msg := fmt.Sprintf("HTTP %d", status)
	p, err := decodeProblem(body)
	if err != nil {
		return msg
	}
	for _, part := range []string{p.Title, p.Detail} {
		if part != "" {
			msg += ": " + part
		}
	}
	return msg
}
