package stripe

import (
	"context"
	"errors"
	"fmt"

	stripeapi "github.com/stripe/stripe-go/v84"

	"chargeonce/provider"
)

// expandCharge expands a PaymentIntent's latest charge, whose card details
// carry when a hold expires (capture_before).
const expandCharge = "latest_charge"

// Capture captures req.Amount of the PaymentIntent req.ChargeID
// (amount_to_capture) under the capture's key, and reads the answer as a
// charge's is read. It is Approved only for the PaymentIntent asked for,
// succeeded with exactly req.Amount received; a smaller amount releases the
// rest, as Stripe does. Stripe's refusals are Declined: amount_too_large,
// and payment_intent_unexpected_state read by the state of the
// PaymentIntent it shows (hold_voided, hold_expired, hold_captured or
// not_a_hold). A PaymentIntent Stripe does not have is NotFound.
func (c *Client) Capture(ctx context.Context, req provider.CaptureRequest) provider.CaptureResult {
	params := &stripeapi.PaymentIntentCaptureParams{AmountToCapture: stripeapi.Int64(req.Amount)}
	params.AddExpand(expandCharge)
	params.SetIdempotencyKey(req.Key)
	var r provider.CaptureResult
	invalid := provider.CheckChargeID(req.ChargeID)
	if invalid == nil {
		invalid = checkKeyAndMoney(req.Key, req.Amount, req.Currency)
	}
	r.Exchange = create(ctx, invalid, func(ctx context.Context) (*stripeapi.PaymentIntent, error) {
		return c.api.V1PaymentIntents.Capture(ctx, req.ChargeID, params)
	}, func(pi *stripeapi.PaymentIntent) endpoint {
		return holdEndpoint(req.ChargeID, pi, &r.Charge, &r.DeclineCode, func(ch provider.Charge) error {
			switch {
			case ch.Status != provider.StatusSucceeded:
				return fmt.Errorf("PaymentIntent %s has status %q, want %q", pi.ID, pi.Status, stripeapi.PaymentIntentStatusSucceeded)
			case ch.AmountCaptured != req.Amount || ch.Currency != req.Currency:
				return fmt.Errorf("amount_received %d %s, want %d %s", ch.AmountCaptured, ch.Currency, req.Amount, req.Currency)
			}
			return nil
		})
	})
	return r
}

// Void cancels the PaymentIntent req.ChargeID under the void's key, and
// reads the answer as Capture does: Approved only for the PaymentIntent
// asked for, canceled by us (not expired).
func (c *Client) Void(ctx context.Context, req provider.VoidRequest) provider.VoidResult {
	params := &stripeapi.PaymentIntentCancelParams{}
	params.AddExpand(expandCharge)
	params.SetIdempotencyKey(req.Key)
	var r provider.VoidResult
	invalid := provider.CheckChargeID(req.ChargeID)
	if invalid == nil {
		invalid = checkKey(req.Key)
	}
	r.Exchange = create(ctx, invalid, func(ctx context.Context) (*stripeapi.PaymentIntent, error) {
		return c.api.V1PaymentIntents.Cancel(ctx, req.ChargeID, params)
	}, func(pi *stripeapi.PaymentIntent) endpoint {
		return holdEndpoint(req.ChargeID, pi, &r.Charge, &r.DeclineCode, func(ch provider.Charge) error {
			if ch.Status != provider.StatusVoided {
				return fmt.Errorf("PaymentIntent %s is %q (cancellation_reason %q), want the port's %q", pi.ID, pi.Status, pi.CancellationReason, provider.StatusVoided)
			}
			return nil
		})
	})
	return r
}

// holdEndpoint reads the answers to a capture or a cancel of chargeID: the
// PaymentIntent pi of a 200, checked by want, into got; a refusal's code
// into decline. Captures and voids differ only in want, so they share the
// rest.
func holdEndpoint(chargeID string, pi *stripeapi.PaymentIntent, got **provider.Charge, decline *string, want func(provider.Charge) error) endpoint {
	return endpoint{
		object: "PaymentIntent",
		created: func() (provider.Outcome, error) {
			ch, err := charge(pi)
			switch {
			case err != nil:
			case ch.ID != chargeID:
				err = fmt.Errorf("PaymentIntent %q, want %q", ch.ID, chargeID)
			default:
				err = want(ch)
			}
			if err != nil {
				return "", err
			}
			*got = &ch
			return provider.Approved, nil
		},
		refusal: func(e *stripeapi.Error) (refused, ok bool) {
			// Stripe began to execute these, and keeps their answer under
			// the key: a result, not a request that processed nothing.
			if e.Type != stripeapi.ErrorTypeInvalidRequest {
				return false, false
			}
			switch e.Code {
			case stripeapi.ErrorCodeAmountTooLarge:
				*decline = provider.DeclineAmountTooLarge
				return false, true
			case stripeapi.ErrorCodePaymentIntentUnexpectedState:
				*decline = stateDecline(e.PaymentIntent)
				return false, *decline != ""
			}
			return false, false
		},
	}
}

// stateDecline is the port's decline code of payment_intent_unexpected_state
// for the PaymentIntent the error shows, or "" when it shows none that reads
// as a refusal: then the error is read as any other 400.
func stateDecline(pi *stripeapi.PaymentIntent) string {
	if pi == nil {
		return ""
	}
	status, err := statusOf(pi)
	if err != nil {
		return ""
	}
	return provider.HoldDecline(status, held(pi))
}

// GetCharge retrieves the PaymentIntent id, with its latest charge
// expanded, as a charge. Errors are *provider.Error: an id that is not safe
// in a path is InvalidRequest and not sent, a PaymentIntent Stripe does not
// have is NotFound, one still processing is a retryable InFlight.
func (c *Client) GetCharge(ctx context.Context, id string) (provider.Charge, error) {
	const op = "get charge"
	if err := provider.CheckChargeID(id); err != nil {
		return provider.Charge{}, &provider.Error{Op: op, Outcome: provider.InvalidRequest, Detail: "not sent: " + err.Error()}
	}
	if err := ctx.Err(); err != nil {
		return provider.Charge{}, &provider.Error{Op: op, Outcome: provider.Timeout, Detail: "not sent: " + err.Error()}
	}
	params := &stripeapi.PaymentIntentRetrieveParams{}
	params.AddExpand(expandCharge)
	ctx, ex := record(ctx)
	pi, err := c.api.V1PaymentIntents.Retrieve(ctx, id, params)
	if err != nil {
		return provider.Charge{}, lookupError(ctx, op, ex, err)
	}
	ch, err := charge(pi)
	if err == nil && ch.ID != id {
		err = fmt.Errorf("PaymentIntent %q, want %q", ch.ID, id)
	}
	switch {
	case errors.Is(err, errInFlight):
		return provider.Charge{}, &provider.Error{Op: op, Outcome: provider.InFlight, StatusCode: ex.status, Detail: err.Error()}
	case err != nil:
		return provider.Charge{}, &provider.Error{Op: op, Outcome: provider.ContractViolation, StatusCode: ex.status, Detail: err.Error()}
	}
	return ch, nil
}
