package ietf

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"chargeonce/provider"
)

// FindCharges returns every charge the provider holds for merchantReference,
// oldest first; none is an empty list, not an error. It is how an attempt
// whose every answer was lost learns whether the card was charged. Errors are
// *provider.Error, whose Outcome says whether asking again may help.
func (c *Client) FindCharges(ctx context.Context, merchantReference string) ([]provider.Charge, error) {
	const op = "find charges"
	if merchantReference == "" {
		return nil, &provider.Error{Op: op, Outcome: provider.InvalidRequest, Detail: "not sent: merchant reference is empty"}
	}
	return findByReference(ctx, c, op, "/v1/charges", merchantReference, func(w wireCharge) (provider.Charge, error) {
		ch, err := w.charge()
		if err == nil && ch.MerchantReference != merchantReference {
			err = fmt.Errorf("charge %s has merchant_reference %q, want %q", ch.ID, ch.MerchantReference, merchantReference)
		}
		return ch, err
	}, func(ch provider.Charge) time.Time { return ch.Created })
}

// findByReference sends the lookup of merchantReference to path and reads
// each object of the list with read, which also checks that it is one of
// the reference's. It returns them oldest first: the contract lists oldest
// first, and sorting keeps that promise for the caller even if the provider
// does not, while the stable sort keeps the provider's order among objects
// created in the same instant. An object read fails the whole lookup as a
// ContractViolation.
func findByReference[W, T any](ctx context.Context, c *Client, op, path, merchantReference string, read func(W) (T, error), created func(T) time.Time) ([]T, error) {
	var list struct {
		Data []W `json:"data"`
	}
	if err := c.get(ctx, op, path, url.Values{"merchant_reference": {merchantReference}}, &list); err != nil {
		return nil, err
	}
	if list.Data == nil {
		return nil, &provider.Error{Op: op, Outcome: provider.ContractViolation, StatusCode: http.StatusOK, Detail: `the list has no "data" array`}
	}
	found := make([]T, 0, len(list.Data))
	for _, w := range list.Data {
		v, err := read(w)
		if err != nil {
			return nil, &provider.Error{Op: op, Outcome: provider.ContractViolation, StatusCode: http.StatusOK, Detail: err.Error()}
		}
		found = append(found, v)
	}
	slices.SortStableFunc(found, func(a, b T) int { return created(a).Compare(created(b)) })
	return found, nil
}

// Limits reads the limits the provider publishes. A provider that publishes
// no positive retention or no positive lookup rate is an error: no safe
// abandon deadline, or no lookup pace, can be derived from it. A provider
// that publishes no hold window offers no holds.
func (c *Client) Limits(ctx context.Context) (provider.Limits, error) {
	const op = "limits"
	var policy struct {
		Seconds          *int64   `json:"key_retention_seconds"`
		LookupsPerSecond *float64 `json:"lookups_per_second"`
		HoldWindow       int64    `json:"hold_window_seconds"`
	}
	if err := c.get(ctx, op, "/v1/idempotency", nil, &policy); err != nil {
		return provider.Limits{}, err
	}
	violation := func(detail string) error {
		return &provider.Error{Op: op, Outcome: provider.ContractViolation, StatusCode: http.StatusOK, Detail: detail}
	}
	switch {
	case policy.Seconds == nil:
		return provider.Limits{}, violation("key_retention_seconds is missing")
	case *policy.Seconds <= 0 || *policy.Seconds > math.MaxInt64/int64(time.Second):
		return provider.Limits{}, violation(fmt.Sprintf("key_retention_seconds %d is not a positive duration", *policy.Seconds))
	case policy.LookupsPerSecond == nil:
		return provider.Limits{}, violation("lookups_per_second is missing")
	case *policy.LookupsPerSecond <= 0:
		return provider.Limits{}, violation(fmt.Sprintf("lookups_per_second %v is not a positive rate", *policy.LookupsPerSecond))
	case policy.HoldWindow < 0 || policy.HoldWindow > math.MaxInt64/int64(time.Second):
		return provider.Limits{}, violation(fmt.Sprintf("hold_window_seconds %d is not a duration", policy.HoldWindow))
	}
	return provider.Limits{
		KeyRetention:     time.Duration(*policy.Seconds) * time.Second,
		LookupsPerSecond: *policy.LookupsPerSecond,
		HoldWindow:       time.Duration(policy.HoldWindow) * time.Second,
	}, nil
}

// get sends a lookup and decodes a 200 answer into v. Any other answer, or
// none, is a *provider.Error.
func (c *Client) get(ctx context.Context, op, path string, query url.Values, v any) error {
	ex := c.send(ctx, http.MethodGet, path, query, nil, nil)
	if ex.failed != "" {
		return &provider.Error{Op: op, Outcome: ex.failed, StatusCode: ex.status, Detail: ex.detail}
	}
	if ex.status != http.StatusOK {
		delay, note := retryAfter(ex.header, time.Now())
		return &provider.Error{Op: op, Outcome: statusOutcome(ex.status), StatusCode: ex.status, RetryAfter: delay, Detail: joinNote(describe(ex.status, ex.body), note)}
	}
	if err := json.Unmarshal(ex.body, v); err != nil {
		return &provider.Error{Op: op, Outcome: provider.ContractViolation, StatusCode: ex.status, Detail: "decoding the answer: " + err.Error()}
	}
	return nil
}
