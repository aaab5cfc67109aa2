package client

import (
	"context"
	"net/http"
	"net/url"

	"chargeonce/api/wire"
)

// MoveResult is the answer of a capture or void request that did not
// fail.
type MoveResult struct {
	// HTTPStatus is 200 when the move's outcome is known (Status
	// succeeded; declined, with a DeclineCode: the provider found the hold
	// ended already; or failed), 202 while it is pending: it settles
	// later (GetCapture, GetVoid, or the order tells how), without a retry.
	HTTPStatus int
	// IdempotencyKey is the key the request was sent under: the caller's,
	// or the one generated for it. It is set even when the request
	// failed, so that a retry can send the same one.
	IdempotencyKey string
	// Replayed is set when the API answered from an earlier request with
	// the same key and body: nothing was sent to the provider again.
	Replayed bool
	wire.Move
}

// Capture takes the money of the hold that a manual capture's checkout
// authorized for the order: all of it when amount is nil, or *amount (a
// decimal string in the hold's currency, at most the authorized amount).
// Scope checkout.
//
// idempotencyKey names this capture, as RefundOrder's names a refund: the
// same key with the same amount retries it, and an empty key is replaced
// by a new UUIDv7, returned in MoveResult.IdempotencyKey.
//
// The answers that move nothing come back as a *Problem:
//   - 503 wire.ProblemNothingMoved, with RetryAfter: the provider
//     processed nothing; send the same request again, with the same key.
//   - 409 wire.ProblemNotHeld: the order holds no authorization (never
//     authorized, or its hold ended already).
//   - 409 wire.ProblemHoldMoving: another capture or void of the hold is
//     pending.
//   - 409 wire.ProblemRequestInProgress, with RetryAfter: the first request
//     with this key is still being answered.
//   - 422 wire.ProblemCaptureExceedsHold: more than the hold.
//   - 422 wire.ProblemIdempotencyKeyReused: the key was sent before with
//     another request.
func (c *Client) Capture(ctx context.Context, orderID int64, amount *string, idempotencyKey string) (MoveResult, error) {
	return c.move(ctx, orderPath(orderID, "/capture"), idempotencyKey, wire.CaptureRequest{Amount: amount})
}

// Void releases the hold that a manual capture's checkout authorized for
// the order: the customer is charged nothing. Scope refund. Its key and
// its answers are Capture's, but for the amount; the void of a captured
// order is a wire.ProblemNotHeld whose detail names a refund as the way
// back.
func (c *Client) Void(ctx context.Context, orderID int64, idempotencyKey string) (MoveResult, error) {
	return c.move(ctx, orderPath(orderID, "/void"), idempotencyKey, wire.VoidRequest{})
}

func (c *Client) move(ctx context.Context, path, key string, body any) (MoveResult, error) {
	var res MoveResult
	a, err := c.idempotentPost(ctx, path, key, body, &res.Move)
	res.HTTPStatus, res.IdempotencyKey, res.Replayed = a.status, a.key, a.replayed
	return res, err
}

// GetCapture reads a capture, with its requests to the provider, by its
// ID (MoveResult.ID). Scope checkout. An unknown capture is a *Problem of
// type wire.ProblemNotFound.
func (c *Client) GetCapture(ctx context.Context, id string) (wire.Move, error) {
	return c.getMove(ctx, "/api/captures/"+url.PathEscape(id))
}

// GetVoid reads a void, with its requests to the provider, by its ID.
// Scope refund. An unknown void is a *Problem of type wire.ProblemNotFound.
func (c *Client) GetVoid(ctx context.Context, id string) (wire.Move, error) {
	return c.getMove(ctx, "/api/voids/"+url.PathEscape(id))
}

func (c *Client) getMove(ctx context.Context, path string) (wire.Move, error) {
	var m wire.Move
	_, err := c.call(ctx, http.MethodGet, path, nil, nil, &m)
	return m, err
}
