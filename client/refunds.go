package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"chargeonce/api/wire"
	"chargeonce/internal/idemkey"
)

// RefundResult is the answer of a refund request that did not fail.
type RefundResult struct {
	// HTTPStatus is 200 when the refund's outcome is known (Status
	// succeeded, or failed with a FailureReason: the provider said no),
	// 202 while it is pending: it settles later (GetRefund, or the
	// refund.* event tells how), without a retry.
	HTTPStatus int
	// IdempotencyKey is the key the request was sent under: the caller's,
	// or the one generated for it. It is set even when the request
	// failed, so that a retry can send the same one.
	IdempotencyKey string
	// Replayed is set when the API answered from an earlier request with
	// the same key and body: nothing was sent to the provider again.
	Replayed bool
	wire.Refund
}

// RefundOrder refunds a paid order's charge: all that is left of it, or
// req.Amount (a decimal string in the order's currency). Scope refund.
//
// idempotencyKey names this refund: send the same key, with the same req,
// to retry it after an error or a lost answer, and it is refunded at most
// once. An empty key is replaced by a new UUIDv7, returned in
// RefundResult.IdempotencyKey, which the caller keeps for its retries. The
// key is sent as the header's Structured Field String (with its quotes), so
// it may be any printable ASCII text up to 255 characters; another is
// refused before anything is sent.
//
// The answers that refund nothing come back as a *Problem:
//   - 503 wire.ProblemNothingRefunded, with RetryAfter: the provider
//     processed nothing; send the same request again, with the same key.
//   - 409 wire.ProblemRequestInProgress, with RetryAfter: the first request
//     with this key is still being answered.
//   - 409 wire.ProblemNotRefundable: the order was never paid.
//   - 422 wire.ProblemRefundExceedsCharge: more than the charge has left.
//   - 422 wire.ProblemIdempotencyKeyReused: the key was sent before with
//     another request; a new refund needs a new key.
func (c *Client) RefundOrder(ctx context.Context, orderID int64, idempotencyKey string, req wire.RefundRequest) (RefundResult, error) {
	return c.refund(ctx, orderPath(orderID, "/refunds"), idempotencyKey, req)
}

// RefundCharge is RefundOrder for an operator (scope operator), naming a
// charge that the books hold (such as "ch_000001") instead of an order:
// one of an order's charges, or one the settlement found that belongs to no
// order. A charge the books do not hold is a *Problem of type
// wire.ProblemNotRefundable.
func (c *Client) RefundCharge(ctx context.Context, chargeID, idempotencyKey string, req wire.RefundRequest) (RefundResult, error) {
	return c.refund(ctx, "/api/charges/"+url.PathEscape(chargeID)+"/refunds", idempotencyKey, req)
}

func (c *Client) refund(ctx context.Context, path, key string, req wire.RefundRequest) (RefundResult, error) {
	var res RefundResult
	a, err := c.idempotentPost(ctx, path, key, req, &res.Refund)
	res.HTTPStatus, res.IdempotencyKey, res.Replayed = a.status, a.key, a.replayed
	return res, err
}

// idempotentAnswer is what every request with the API's own
// Idempotency-Key (a refund, a capture, a void) answers besides its body.
type idempotentAnswer struct {
	status int
	// key is the key sent: the caller's, or the one generated for it.
	key      string
	replayed bool
}

// idempotentPost posts body to path under the Idempotency-Key key, or a
// new UUIDv7 when key is empty, and reads the answer into out. body nil
// sends no body.
func (c *Client) idempotentPost(ctx context.Context, path, key string, body, out any) (idempotentAnswer, error) {
	if key == "" {
		k, err := uuid.NewV7()
		if err != nil {
			return idempotentAnswer{}, fmt.Errorf("generate an Idempotency-Key: %w", err)
		}
		key = k.String()
	}
	res := idempotentAnswer{key: key}
	sf, err := idemkey.Format(key)
	if err != nil {
		return res, fmt.Errorf("Idempotency-Key: %w", err)
	}
	a, err := c.call(ctx, http.MethodPost, path, body, http.Header{idemkey.Header: {sf}}, out)
	res.status = a.status
	res.replayed = a.header.Get("Idempotent-Replayed") == "true"
	return res, err
}

// GetRefund reads a refund, with its requests to the provider, by its ID
// (RefundResult.ID). Scope refund. An unknown refund is a *Problem of type
// wire.ProblemNotFound.
func (c *Client) GetRefund(ctx context.Context, id string) (wire.Refund, error) {
	var r wire.Refund
	_, err := c.call(ctx, http.MethodGet, "/api/refunds/"+url.PathEscape(id), nil, nil, &r)
	return r, err
}
