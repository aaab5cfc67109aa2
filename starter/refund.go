package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"chargeonce/api/wire"
	"chargeonce/client"
)

// refundCommand refunds an order (or, for an operator, a charge) and prints
// the refund's requests to the provider and its outcome. Its exit codes are
// checkout's: 0 refunded, 3 refused by the provider (failed), 4 pending,
// 5 conflict (the same Idempotency-Key in flight, or nothing to refund),
// 6 nothing refunded (the provider processed nothing; send again).
func refundCommand(ctx context.Context, opts *options, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	fs := newFlagSet("refund", stderr, opts)
	order := fs.Int64("order", 0, "the order to refund")
	charge := fs.String("charge", "", "the charge to refund, for an operator (instead of --order)")
	amount := fs.String("amount", "", "the amount to refund as a decimal, such as 12.50 (default: all that is left)")
	reason := fs.String("reason", "", "why, shown on the provider's dashboard")
	key := fs.String("key", "", "the request's Idempotency-Key (default: a new UUID); give the same one to retry a refund")
	api, err := parseFlags(fs, args, opts, getenv)
	if err != nil {
		return 0, err
	}
	body := wire.RefundRequest{Reason: *reason}
	if *amount != "" {
		body.Amount = amount
	}
	var res client.RefundResult
	switch {
	case *order > 0 && *charge == "":
		res, err = api.RefundOrder(ctx, *order, *key, body)
	case *order == 0 && *charge != "":
		res, err = api.RefundCharge(ctx, *charge, *key, body)
	default:
		return 0, usagef("refund needs --order with a positive order number, or --charge")
	}
	var p *client.Problem
	if errors.As(err, &p) {
		if !opts.json {
			fmt.Fprintf(stdout, "Idempotency-Key %s\n", res.IdempotencyKey)
		}
		switch p.Status {
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
	ref := res.Refund
	if full, err := api.GetRefund(ctx, ref.ID); err == nil {
		ref = full
	}
	code := exitPaid
	switch {
	case res.HTTPStatus == http.StatusAccepted:
		code = exitPending
	case ref.Status == "failed":
		code = exitDeclined
	}
	if opts.json {
		return code, writeJSONLine(stdout, ref)
	}
	fmt.Fprintf(stdout, "Idempotency-Key %s\n", res.IdempotencyKey)
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
