package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"

	"chargeonce/api/wire"
)

// refund posts one refund request under the Idempotency-Key. Besides
// errors, it answers 200 or 202.
func (c *apiClient) refund(ctx context.Context, path, key string, body wire.RefundRequest) (int, wire.Refund, error) {
	r, err := c.doWith(ctx, http.MethodPost, path, body, http.Header{"Idempotency-Key": {key}})
	if err != nil {
		return 0, wire.Refund{}, err
	}
	ref, err := decode[wire.Refund](r, "the refund")
	return r.status, ref, err
}

func (c *apiClient) getRefund(ctx context.Context, id string) (wire.Refund, error) {
	r, err := c.do(ctx, http.MethodGet, "/api/refunds/"+url.PathEscape(id), nil)
	if err != nil {
		return wire.Refund{}, fmt.Errorf("refund %s: %w", id, err)
	}
	return decode[wire.Refund](r, "a refund lookup")
}

// refundCommand refunds an order (or, for an operator, a charge) and prints
// the refund's requests to the provider and its outcome. Its exit codes are
// checkout's: 0 refunded, 3 refused by the provider (failed), 4 pending,
// 5 conflict (the same Idempotency-Key in flight, or nothing to refund),
// 6 nothing refunded (the provider processed nothing; send again).
func refundCommand(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	var opts options
	fs := newFlagSet("refund", stderr, &opts)
	order := fs.Int64("order", 0, "the order to refund")
	charge := fs.String("charge", "", "the charge to refund, for an operator (instead of --order)")
	amount := fs.String("amount", "", "the amount to refund as a decimal, such as 12.50 (default: all that is left)")
	reason := fs.String("reason", "", "why, shown on the provider's dashboard")
	key := fs.String("key", "", "the request's Idempotency-Key (default: a new UUID); give the same one to retry a refund")
	api, err := parseFlags(fs, args, &opts, getenv)
	if err != nil {
		return 0, err
	}
	path := ""
	switch {
	case *order > 0 && *charge == "":
		path = "/api/orders/" + strconv.FormatInt(*order, 10) + "/refunds"
	case *order == 0 && *charge != "":
		path = "/api/charges/" + url.PathEscape(*charge) + "/refunds"
	default:
		return 0, usagef("refund needs --order with a positive order number, or --charge")
	}
	if *key == "" {
		*key = uuid.NewString()
	}
	body := wire.RefundRequest{Reason: *reason}
	if *amount != "" {
		body.Amount = amount
	}
	status, ref, err := api.refund(ctx, path, *key, body)
	var aerr *apiError
	if errors.As(err, &aerr) {
		if !opts.json {
			fmt.Fprintf(stdout, "Idempotency-Key %s\n", *key)
		}
		switch aerr.status {
		case http.StatusServiceUnavailable:
			return exitNotProcessed, err
		case http.StatusConflict:
			return exitConflict, err
		}
	}
	if err != nil {
		return 0, err
	}
	// The refund's request log is in its own resource.
	if full, err := api.getRefund(ctx, ref.ID); err == nil {
		ref = full
	}
	code := exitPaid
	switch {
	case status == http.StatusAccepted:
		code = exitPending
	case ref.Status == "failed":
		code = exitDeclined
	}
	if opts.json {
		return code, writeJSONLine(stdout, ref)
	}
	fmt.Fprintf(stdout, "Idempotency-Key %s\n", *key)
	printRefund(stdout, ref)
	return code, nil
}

// printRefund prints a refund with its requests to the provider.
func printRefund(w io.Writer, r wire.Refund) {
	fmt.Fprintf(w, "refund %s  %s  %s %s  charge %s", r.ID, r.Status, r.Amount, r.Currency, r.ChargeID)
	if r.ProviderRefundID != nil {
		fmt.Fprintf(w, "  %s", *r.ProviderRefundID)
	}
	if r.FailureReason != nil {
		fmt.Fprintf(w, "  (%s)", *r.FailureReason)
	}
	fmt.Fprintln(w)
	for i, req := range r.Requests {
		fmt.Fprintf(w, "  request %d  %s\n", i+1, describe(req, refundWords))
	}
}
