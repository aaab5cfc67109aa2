package ietf

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/internal/idemkey"
	"chargeonce/provider"
)

// answer is how one POST under an idempotency key ended, read the same way
// for every endpoint of the contract: charges and refunds follow one set of
// idempotency rules, so they share one reading of statuses, Retry-After,
// Idempotent-Replayed and the answers that processed nothing. Only the
// objects of a 2xx and the problem of a 402 are the endpoint's own.
type answer struct {
	outcome    provider.Outcome
	status     int
	replayed   bool
	sent       bool
	refused    bool
	duration   time.Duration
	retryAfter time.Duration
	detail     string
}

// intoResult sets the fields of a charge's result that every POST has.
func (a answer) intoResult(r *provider.Result) {
	r.Outcome, r.StatusCode, r.Replayed, r.Sent, r.Refused = a.outcome, a.status, a.replayed, a.sent, a.refused
	r.Duration, r.RetryAfter, r.Detail = a.duration, a.retryAfter, a.detail
}

// intoRefundResult sets the fields of a refund's result that every POST
// has.
func (a answer) intoRefundResult(r *provider.RefundResult) {
	r.Outcome, r.StatusCode, r.Replayed, r.Sent, r.Refused = a.outcome, a.status, a.replayed, a.sent, a.refused
	r.Duration, r.RetryAfter, r.Detail = a.duration, a.retryAfter, a.detail
}

// endpoint is what one POST endpoint knows of its own answers. Each reader
// keeps what it decoded for the endpoint's result.
type endpoint struct {
	// object names what a 2xx carries, for the logs: "charge", "refund".
	object string
	// created reads the body of a 2xx answer: Approved, or Declined when
	// the provider created the object as failed. An error means the body is
	// not the object that was asked for, which breaks the contract.
	created func(body []byte) (provider.Outcome, error)
	// declined reads the problem of a 402 answer, a refusal that is a
	// result; refused reports that it processed nothing and stored nothing
	// under the key. An error means the 402 is not one the contract defines.
	declined func(p problem) (refused bool, err error)
}

// post sends body under the key in header to path and reads the answer as
// e says. It never fails: no answer at all is an answer too.
func (c *Client) post(ctx context.Context, path string, header http.Header, body []byte, e endpoint) answer {
	ex := c.send(ctx, http.MethodPost, path, nil, header, body)
	var a answer
	if ex.failed != "" {
		a = answer{outcome: ex.failed, status: ex.status, detail: ex.detail}
	} else {
		a = classify(e, ex.status, ex.header, ex.body, time.Now())
	}
	a.sent, a.duration = ex.sent, ex.duration
	a.refused = a.refused || refused(a.status)
	return a
}

// refused reports whether status is one that docs/provider-http.md documents
// as processing nothing and storing nothing under the key: 400 (refused as
// malformed), 429 (the rate limiter runs before the idempotency layer), and
// the 500 and 503 of a provider error. A 409 (the first request is still
// processing) and the 502 and 504 of a gateway, behind which the provider
// may have received the request, may hide a charge or a refund.
func refused(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable:
		return true
	}
	return false
}

// classify reads a complete answer to a POST of endpoint e. It is pure, so
// that every status and body can be tested and benchmarked without a server.
func classify(e endpoint, status int, header http.Header, body []byte, now time.Time) answer {
	a := answer{
		status:   status,
		replayed: strings.EqualFold(strings.TrimSpace(header.Get("Idempotent-Replayed")), "true"),
	}
	var note string
	a.retryAfter, note = retryAfter(header, now)
	switch status {
	case http.StatusCreated, http.StatusOK:
		outcome, err := e.created(body)
		if err != nil {
			a.outcome, a.detail = provider.ContractViolation, fmt.Sprintf("HTTP %d with a %s that is not the one requested: %v", status, e.object, err)
			break
		}
		a.outcome = outcome
	case http.StatusPaymentRequired:
		p, err := decodeProblem(body)
		if err != nil {
			a.outcome, a.detail = provider.ContractViolation, "HTTP 402 without a readable problem: "+err.Error()
			break
		}
		a.refused, err = e.declined(p)
		if err != nil {
			a.outcome, a.refused, a.detail = provider.ContractViolation, false, "HTTP 402 "+err.Error()
			break
		}
		a.outcome, a.detail = provider.Declined, p.Detail
	case http.StatusConflict:
		a.outcome, a.detail = provider.InFlight, describe(status, body)
	case http.StatusUnprocessableEntity:
		a.outcome, a.detail = provider.ContractViolation, describe(status, body)
	default:
		a.outcome, a.detail = statusOutcome(status), describe(status, body)
	}
	a.detail = joinNote(a.detail, note)
	return a
}

// keyed checks an idempotency key and builds the headers of a POST under
// it. Bad input is refused here, before anything is sent, so that a bug on
// our side is a clear provider.InvalidRequest with Sent false rather than a
// round trip whose 400 a caller might have to interpret.
func keyed(key string) (http.Header, error) {
	sf, err := idemkey.Format(key)
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	header.Set(idemkey.Header, sf)
	header.Set("Content-Type", "application/json")
	return header, nil
}

// checkMoney refuses, before sending, an amount that is no money: the
// provider would answer 400 to it.
func checkMoney(amount int64, currency string) error {
	_, err := chargeonce.NewMoney(amount, currency)
	return err
}

// problem is the part of an RFC 9457 problem that this client reads, with
// the contract's extra members.
type problem struct {
	Title       string `json:"title"`
	Detail      string `json:"detail"`
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code"`
	ChargeID    string `json:"charge_id"`
	RefundID    string `json:"refund_id"`
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
