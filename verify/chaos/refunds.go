package chaos

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"chargeonce"
	"chargeonce/api/wire"
)

// Shares of the paid customers who refund, and how.
const (
	refundShare      = 0.3
	partialShare     = 0.5
	refundRetryShare = 0.5
)

// The behaviours of refunding customers.
const (
	BehaviourRefundPartial = "refund part of a paid order"
	BehaviourRefundWhole   = "refund a paid order in whole"
	BehaviourRefundRetry   = "refund again at once with the same Idempotency-Key"
)

// maybeRefund has some customers whose order is paid, or whose hold was
// captured, refund part of it or all of it, under the chaos of the moment,
// and some send the same request twice at once under one Idempotency-Key,
// as a client that timed out would. Every answer must be one the refund API
// promises.
func (r *run) maybeRefund(ctx context.Context, rng *rand.Rand, id int64, paid chargeonce.Money) {
	if rng.Float64() >= refundShare {
		return
	}
	o, err := r.api().GetOrder(ctx, id)
	if err != nil || !chargeonce.OrderStatus(o.Status).Paid() {
		return
	}
	if o.Hold != nil {
		// A captured hold took only what its capture took, which may be
		// less than the order, and only that is refundable.
		if paid, err = chargeonce.ParseMoney(o.Hold.Captured, o.Hold.Currency); err != nil {
			r.unexpectedf("order %d: the hold's captured amount %q %s: %v", id, o.Hold.Captured, o.Hold.Currency, err)
			return
		}
	}
	body := wire.RefundRequest{Reason: "chaos customer"}
	if paid.Minor > 1 && rng.Float64() < partialShare {
		half := chargeonce.Money{Minor: paid.Minor / 2, Currency: paid.Currency}.String()
		amount, _, _ := strings.Cut(half, " ")
		body.Amount = &amount
		r.count(r.behave, BehaviourRefundPartial)
	} else {
		r.count(r.behave, BehaviourRefundWhole)
	}
	key := uuid.NewString()
	sends := 1
	if rng.Float64() < refundRetryShare {
		sends = 2
		r.count(r.behave, BehaviourRefundRetry)
	}
	var wg sync.WaitGroup
	for range sends {
		wg.Go(func() { r.refund(ctx, id, key, body) })
	}
	wg.Wait()
}

// refund sends one refund request and judges its answer.
func (r *run) refund(ctx context.Context, id int64, key string, body wire.RefundRequest) {
	sent := time.Now()
	ref, err := r.api().RefundOrder(ctx, id, key, body)
	res := newAnswer(ref.HTTPStatus, err, sent)
	r.count(r.behave, "refund answered "+strconv.Itoa(res.status))
	switch {
	case res.status == http.StatusOK, res.status == http.StatusCreated, res.status == http.StatusAccepted:
	case res.status == http.StatusServiceUnavailable && res.problem == wire.ProblemNothingRefunded:
	case res.status == http.StatusConflict && res.problem == wire.ProblemRequestInProgress:
	case r.outageAnswer(res):
	default:
		r.unexpectedf("order %d: refund answered %d: %s", id, res.status, res.detail)
	}
}
