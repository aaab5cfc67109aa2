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

// moveCommand captures (kind "capture") or voids (kind "void") an order's
// hold and prints the move's requests to the provider and its outcome. Its
// exit codes are refund's: 0 captured or voided, 3 declined (the hold had
// ended at the provider) or failed, 4 pending, 5 conflict (no hold to
// move, another move pending, or the same Idempotency-Key in flight), 6
// nothing moved (the provider processed nothing; send again).
func moveCommand(kind string) func(ctx context.Context, opts *options, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	return func(ctx context.Context, opts *options, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
		fs := newFlagSet(kind, stderr, opts)
		order := fs.Int64("order", 0, "the order whose hold to "+kind)
		var amount *string
		if kind == "capture" {
			amount = fs.String("amount", "", "the amount to capture as a decimal, such as 12.50 (default: the whole hold)")
		}
		key := fs.String("key", "", "the request's Idempotency-Key (default: a new UUID); give the same one to retry a "+kind)
		api, err := parseFlags(fs, args, opts, getenv)
		if err != nil {
			return 0, err
		}
		if *order <= 0 {
			return 0, usagef("%s needs --order with a positive order number", kind)
		}
		var res client.MoveResult
		if kind == "capture" {
			if *amount == "" {
				amount = nil
			}
			res, err = api.Capture(ctx, *order, amount, *key)
		} else {
			res, err = api.Void(ctx, *order, *key)
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
		// The move's request log is in its own resource.
		m := res.Move
		get := api.GetVoid
		if kind == "capture" {
			get = api.GetCapture
		}
		if full, err := get(ctx, m.ID); err == nil {
			m = full
		}
		code := exitPaid
		switch {
		case res.HTTPStatus == http.StatusAccepted:
			code = exitPending
		case m.Status != "succeeded":
			code = exitDeclined
		}
		if opts.json {
			return code, writeJSONLine(stdout, m)
		}
		fmt.Fprintf(stdout, "Idempotency-Key %s\n", res.IdempotencyKey)
		printMove(stdout, m)
		return code, nil
	}
}

// moveWords are describe's words for the requests of a capture and of a
// void.
var moveWords = map[string]requestWords{
	"capture": {approved: "captured", refused: "declined"},
	"void":    {approved: "voided", refused: "declined"},
}

// printMove prints a capture or a void with its requests to the provider.
func printMove(w io.Writer, m wire.Move) {
	fmt.Fprintf(w, "%s %s  %s  %s %s", m.Kind, m.ID, m.Status, m.Amount, m.Currency)
	if m.DeclineCode != nil {
		fmt.Fprintf(w, "  (%s)", *m.DeclineCode)
	}
	fmt.Fprintln(w)
	for i, req := range m.Requests {
		fmt.Fprintf(w, "  request %d  %s\n", i+1, describe(req, moveWords[m.Kind]))
	}
}

// printHold prints an order's hold.
func printHold(w io.Writer, h wire.Hold) {
	fmt.Fprintf(w, "hold %s  %s  authorized %s %s", h.ChargeID, h.Status, h.Authorized, h.Currency)
	if h.Status == "captured" {
		fmt.Fprintf(w, "  captured %s", h.Captured)
	}
	if h.Status == "authorized" {
		fmt.Fprintf(w, "  deadline %s (%s)", h.Deadline.Format("2006-01-02T15:04:05Z07:00"), h.OnDeadline)
	}
	fmt.Fprintln(w)
}
