package client

import (
	"context"
	"net/http"

	"chargeonce/api/wire"
)

// CreateOrder creates an order of amount (a decimal string in the
// currency's minor units, such as "548.90"; a JSON number is never sent, so
// no float rounds it) in currency (ISO 4217, such as "TRY"), with a
// description shown on the provider's dashboard. Scope checkout. Bad input
// is a *Problem of type wire.ProblemInvalidRequest, and creates nothing.
func (c *Client) CreateOrder(ctx context.Context, amount, currency, description string) (wire.Order, error) {
	var o wire.Order
	_, err := c.call(ctx, http.MethodPost, "/api/orders", wire.CreateOrderRequest{Amount: &amount, Currency: &currency, Description: description}, nil, &o)
	return o, err
}

// GetOrder reads an order with its payment attempts, their requests to the
// provider, and its refunds. Scope checkout. An unknown order is a *Problem
// of type wire.ProblemNotFound.
func (c *Client) GetOrder(ctx context.Context, id int64) (wire.Order, error) {
	var o wire.Order
	_, err := c.call(ctx, http.MethodGet, orderPath(id), nil, nil, &o)
	return o, err
}

// CheckoutResult is the answer of a checkout that did not fail.
type CheckoutResult struct {
	// HTTPStatus is 200 when the order is paid, 202 when the outcome is
	// not known yet: the payment settles later (GetOrder, or the
	// payment.* event tells how), and the order must not be paid again
	// meanwhile.
	HTTPStatus int
	wire.CheckoutAnswer
}

// Checkout pays an order with a card token. Scope checkout. A checkout of
// an order already paid answers 200 and charges nothing; sending the same
// checkout again after an error or a lost answer is always safe.
//
// The answers that are not a payment come back as a *Problem:
//   - 402 wire.ProblemCardDeclined, with DeclineCode: the card was declined;
//     another card may pay the order.
//   - 409 wire.ProblemPaymentInProgress: a previous payment of the order is
//     still being verified; do not pay again until it settles.
//   - 503 wire.ProblemProviderUnavailable or wire.ProblemNoPaymentWorker,
//     with RetryAfter: nothing was charged; pay again after RetryAfter.
//   - 500 wire.ProblemPaymentFailed or wire.ProblemPaymentNeedsReview: the
//     payment failed on chargeonce's side, or is held for a person.
func (c *Client) Checkout(ctx context.Context, orderID int64, cardToken string) (CheckoutResult, error) {
	return c.CheckoutWith(ctx, orderID, wire.CheckoutRequest{CardToken: cardToken})
}

// CheckoutWith is Checkout with the whole body, which may choose the
// capture mode: with Capture "manual", a success only authorizes the
// amount (status authorized, 200), and Capture or Void ends the hold.
func (c *Client) CheckoutWith(ctx context.Context, orderID int64, req wire.CheckoutRequest) (CheckoutResult, error) {
	var res CheckoutResult
	a, err := c.call(ctx, http.MethodPost, orderPath(orderID, "/checkout"), req, nil, &res.CheckoutAnswer)
	res.HTTPStatus = a.status
	return res, err
}

// OrderEvents lists the events of an order (payment.*, refund.*), by their
// sequence number, as they were sent or are to be sent to the merchant's
// endpoints. Scope checkout. An unknown order is a *Problem of type
// wire.ProblemNotFound.
func (c *Client) OrderEvents(ctx context.Context, orderID int64) ([]wire.Event, error) {
	var l wire.EventList
	_, err := c.call(ctx, http.MethodGet, orderPath(orderID, "/events"), nil, nil, &l)
	return l.Events, err
}
