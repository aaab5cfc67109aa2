package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// FindCharges returns every charge the provider holds for merchantReference,
// oldest first; none is an empty list, not an error. It is how an attempt
// whose every answer was lost learns whether the card was charged. Errors are
// *Error, whose Outcome says whether asking again may help.
func (c *Client) FindCharges(ctx context.Context, merchantReference string) ([]Charge, error) {
	const op = "find charges"
	if merchantReference == "" {
		return nil, &Error{Op: op, Outcome: InvalidRequest, Detail: "not sent: merchant reference is empty"}
	}
	var list struct {
		Data []wireCharge `json:"data"`
	}
	if err := c.get(ctx, op, "/v1/charges", url.Values{"merchant_reference": {merchantReference}}, &list); err != nil {
		return nil, err
	}
	if list.Data == nil {
		return nil, &Error{Op: op, Outcome: ContractViolation, StatusCode: http.StatusOK, Detail: `the list has no "data" array`}
	}
	charges := make([]Charge, 0, len(list.Data))
	for _, w := range list.Data {
		ch, err := w.charge()
		if err == nil && ch.MerchantReference != merchantReference {
			err = fmt.Errorf("charge %s has merchant_reference %q, want %q", ch.ID, ch.MerchantReference, merchantReference)
		}
		if err != nil {
			return nil, &Error{Op: op, Outcome: ContractViolation, StatusCode: http.StatusOK, Detail: err.Error()}
		}
		charges = append(charges, ch)
	}
	// The contract lists oldest first; sorting keeps that promise for the
	// caller even if the provider does not, and the stable sort keeps the
	// provider's order among charges created in the same instant.
	slices.SortStableFunc(charges, func(a, b Charge) int { return a.Created.Compare(b.Created) })
	return charges, nil
}

// KeyRetention returns how long the provider remembers an idempotency key.
// After that, the same key creates a new charge, so every retry and every
// reconciliation of an attempt must end well within it; the worker checks its
// configuration against this at start. A provider that publishes no positive
// retention is an error: no safe abandon deadline can be derived from it.
func (c *Client) KeyRetention(ctx context.Context) (time.Duration, error) {
	const op = "key retention"
	var policy struct {
		Seconds *int64 `json:"key_retention_seconds"`
	}
	if err := c.get(ctx, op, "/v1/idempotency", nil, &policy); err != nil {
		return 0, err
	}
	switch {
	case policy.Seconds == nil:
		return 0, &Error{Op: op, Outcome: ContractViolation, StatusCode: http.StatusOK, Detail: "key_retention_seconds is missing"}
	case *policy.Seconds <= 0 || *policy.Seconds > math.MaxInt64/int64(time.Second):
		return 0, &Error{Op: op, Outcome: ContractViolation, StatusCode: http.StatusOK, Detail: fmt.Sprintf("key_retention_seconds %d is not a positive duration", *policy.Seconds)}
	}
	return time.Duration(*policy.Seconds) * time.Second, nil
}

// get sends a lookup and decodes a 200 answer into v. Any other answer, or
// none, is an *Error.
func (c *Client) get(ctx context.Context, op, path string, query url.Values, v any) error {
	ex := c.send(ctx, c.lookups, http.MethodGet, path, query, nil, nil)
	if ex.failed != "" {
		return &Error{Op: op, Outcome: ex.failed, StatusCode: ex.status, Detail: ex.detail}
	}
	if ex.status != http.StatusOK {
		outcome := statusOutcome(ex.status)
		if ex.status == http.StatusNotFound {
			outcome = NotFound
		}
		delay, note := retryAfter(ex.header, time.Now())
		return &Error{Op: op, Outcome: outcome, StatusCode: ex.status, RetryAfter: delay, Detail: joinNote(describe(ex.status, ex.body), note)}
	}
	if err := json.Unmarshal(ex.body, v); err != nil {
		return &Error{Op: op, Outcome: ContractViolation, StatusCode: ex.status, Detail: "decoding the answer: " + err.Error()}
	}
	return nil
}
