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

// endpoint is what one POST endpoint knows of its own answers. Each reader
// keeps what it decoded for the endpoint's result.
type endpoint struct {
	// object names what a 2xx carries, for the logs: "charge", "refund".
	object string
	// refusal is the status of the endpoint's refusals that are results:
	// 402 for a charge or a refund, 403 for a capture or a void.
	refusal int
	// created reads the body of a 2xx answer: Approved, or Declined when
	// the provider created the object as failed. An error means the body is
	// not the object that was asked for, which breaks the contract.
	created func(body []byte) (provider.Outcome, error)
	// declined reads the problem of a refusal answer (status refusal), a
	// refusal that is a result; refused reports that it processed nothing
	// and stored nothing under the key. An error means the refusal is not
	// one the contract defines.
	declined func(p problem) (refused bool, err error)
}

// create checks a request that creates an object under key, sends it to
// path as the JSON of body, and reads the answer into an Exchange as e says.
// invalid is what the endpoint found wrong with the request, if anything;
// such a request, like one under a bad key, is InvalidRequest and not sent.
// It never fails: no answer at all is an answer too.
func (c *Client) create(ctx context.Context, path, key string, invalid error, body any, e endpoint) provider.Exchange {
	header, err := keyed(key)
	if err == nil {
		err = invalid
	}
	var data []byte
	if err == nil {
		data, err = json.Marshal(body)
	}
	if err != nil {
		return provider.Exchange{Outcome: provider.InvalidRequest, Detail: "not sent: " + err.Error()}
	}
	return c.post(ctx, path, header, data, e)
}

// post sends body under the key in header to path and reads the answer as
// e says: the one reading of statuses, Retry-After, Idempotent-Replayed and
// the answers that processed nothing, for charges and refunds alike, since
// they follow one set of idempotency rules, and for captures and voids,
// which follow them too. Only the objects of a 2xx and the problem of a
// refusal are the endpoint's own.
func (c *Client) post(ctx context.Context, path string, header http.Header, body []byte, e endpoint) provider.Exchange {
	ex := c.send(ctx, http.MethodPost, path, nil, header, body)
	var x provider.Exchange
	if ex.failed != "" {
		x = provider.Exchange{Outcome: ex.failed, StatusCode: ex.status, Detail: ex.detail}
	} else {
		x = classify(e, ex.status, ex.header, ex.body, time.Now())
	}
	x.Sent, x.Duration = ex.sent, ex.duration
	x.Refused = x.Refused || refused(x.StatusCode)
	return x
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
func classify(e endpoint, status int, header http.Header, body []byte, now time.Time) provider.Exchange {
	x := provider.Exchange{
		StatusCode: status,
		Replayed:   strings.EqualFold(strings.TrimSpace(header.Get("Idempotent-Replayed")), "true"),
	}
	var note string
	x.RetryAfter, note = retryAfter(header, now)
	switch status {
	case http.StatusCreated, http.StatusOK:
		outcome, err := e.created(body)
		if err != nil {
			x.Outcome, x.Detail = provider.ContractViolation, fmt.Sprintf("HTTP %d with a %s that is not the one requested: %v", status, e.object, err)
			break
		}
		x.Outcome = outcome
	case e.refusal:
		p, err := decodeProblem(body)
		if err != nil {
			x.Outcome, x.Detail = provider.ContractViolation, fmt.Sprintf("HTTP %d without a readable problem: %v", status, err)
			break
		}
		x.Refused, err = e.declined(p)
		if err != nil {
			x.Outcome, x.Refused, x.Detail = provider.ContractViolation, false, fmt.Sprintf("HTTP %d %v", status, err)
			break
		}
		x.Outcome, x.Detail = provider.Declined, p.Detail
	case http.StatusConflict:
		x.Outcome, x.Detail = provider.InFlight, describe(status, body)
	case http.StatusUnprocessableEntity:
		x.Outcome, x.Detail = provider.ContractViolation, describe(status, body)
	default:
		x.Outcome, x.Detail = statusOutcome(status), describe(status, body)
	}
	x.Detail = joinNote(x.Detail, note)
	return x
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
