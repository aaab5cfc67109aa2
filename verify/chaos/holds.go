package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/client"
	"chargeonce/store"
)

// holdWindow is the fake provider's hold window in a run: an authorization
// expires this long after it was made, so that with Timing's HoldMargin
// the deadlines of the holds nobody moved, and the provider's expiries of
// any whose deadline move did not get through, come within the run.
const holdWindow = 40 * time.Second

// Shares of the customers who check out with a manual capture, and of
// those whose order is authorized, what they do with the hold.
const (
	manualShare = 0.2
	// leaveShare leaves the hold to its deadline, which voids it.
	leaveShare = 0.15
	// raceShare captures and voids at once, each with its own key.
	raceShare = 0.15
	// voidShare voids; the rest capture, some in part.
	voidShare           = 0.3
	partialCaptureShare = 0.5
	// moveTries bounds the requests of one capture or void: a merchant
	// sends the same request again, under the same key, while it hears
	// nothing final.
	moveTries = 4
)

// The behaviours of customers whose checkout only authorized.
const (
	BehaviourManual         = "check out with manual capture"
	BehaviourHoldLeft       = "leave the hold to its deadline"
	BehaviourCaptureWhole   = "capture the whole hold"
	BehaviourCapturePartial = "capture part of the hold"
	BehaviourVoid           = "void the hold"
	BehaviourMoveRace       = "capture and void the hold at once"
	BehaviourMoveAgain      = "capture or void again with the same Idempotency-Key"
	// BehaviourVoidAtEnd: the merchant voids a hold still authorized
	// once the customers are done (voidOpenHolds).
	BehaviourVoidAtEnd = "void a hold still open at the end of the day"
)

// captureMode is how the order's checkouts take the money: every checkout
// of an order, retries and late retries included, asks for the same mode,
// or it would be a payment of another kind. Empty is the merchant's,
// automatic.
func (r *run) captureMode(id int64) chargeonce.CaptureMode {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.manual[id] {
		return chargeonce.CaptureManual
	}
	return ""
}

// holdBehaviours are what a customer does with an authorized hold. A
// run's first holds take each of them once, in this order, so that a run
// with as many holds as behaviours exercises every one, however few holds
// the faults let through; the later holds draw theirs by the shares.
var holdBehaviours = []string{BehaviourMoveRace, BehaviourVoid, BehaviourCapturePartial, BehaviourCaptureWhole, BehaviourHoldLeft}

// holdBehaviour chooses, and counts, what the customer of an authorized
// hold of amount does with it. Choosing and counting under one lock keeps
// two customers from both taking the same behaviour still owed.
func (r *run) holdBehaviour(rng *rand.Rand, amount chargeonce.Money) string {
	partial := amount.Minor > 1
	r.mu.Lock()
	defer r.mu.Unlock()
	b := ""
	for _, owed := range holdBehaviours {
		if r.behave[owed] == 0 && (owed != BehaviourCapturePartial || partial) {
			b = owed
			break
		}
	}
	if b == "" {
		switch p := rng.Float64(); {
		case p < leaveShare:
			b = BehaviourHoldLeft
		case p < leaveShare+raceShare:
			b = BehaviourMoveRace
		case p < leaveShare+raceShare+voidShare:
			b = BehaviourVoid
		case partial && rng.Float64() < partialCaptureShare:
			b = BehaviourCapturePartial
		default:
			b = BehaviourCaptureWhole
		}
	}
	r.behave[b]++
	return b
}

// maybeMoveHold has a customer whose order is authorized capture it (all
// or part), void it, do both at once, or leave it to its deadline, under
// the chaos of the moment.
func (r *run) maybeMoveHold(ctx context.Context, rng *rand.Rand, id int64, amount chargeonce.Money) {
	status, err := r.orderStatus(ctx, id)
	if err != nil || status != chargeonce.OrderAuthorized {
		return
	}
	switch r.holdBehaviour(rng, amount) {
	case BehaviourHoldLeft:
	case BehaviourMoveRace:
		// One of the two ends the hold; the other is refused as moving or
		// ended, whatever the faults do to either.
		var wg sync.WaitGroup
		seeds := [2]uint64{rng.Uint64(), rng.Uint64()}
		wg.Go(func() { r.move(ctx, rand.New(rand.NewPCG(seeds[0], 0)), id, chargeonce.MoveCapture, nil, true) })
		wg.Go(func() { r.move(ctx, rand.New(rand.NewPCG(seeds[1], 0)), id, chargeonce.MoveVoid, nil, true) })
		wg.Wait()
	case BehaviourVoid:
		r.move(ctx, rng, id, chargeonce.MoveVoid, nil, false)
	case BehaviourCapturePartial:
		part := chargeonce.Money{Minor: 1 + rng.Int64N(amount.Minor-1), Currency: amount.Currency}.String()
		decimal, _, _ := strings.Cut(part, " ")
		r.move(ctx, rng, id, chargeonce.MoveCapture, &decimal, false)
	default:
		r.move(ctx, rng, id, chargeonce.MoveCapture, nil, false)
	}
}

// move sends one capture or void under its own Idempotency-Key, and again
// under the same key while the answer is not final: pending (202), in
// progress or moving (409), nothing moved (503) or an outage. In a race
// with the other move, a hold that the other ended is no longer held.
func (r *run) move(ctx context.Context, rng *rand.Rand, id int64, kind chargeonce.MoveKind, amount *string, racing bool) {
	key := uuid.NewString()
	api := r.api()
	for try := 1; ; try++ {
		if try > 1 {
			r.count(r.behave, BehaviourMoveAgain)
		}
		sent := time.Now()
		var (
			res client.MoveResult
			err error
		)
		if kind == chargeonce.MoveCapture {
			res, err = api.Capture(ctx, id, amount, key)
		} else {
			res, err = api.Void(ctx, id, key)
		}
		a := newAnswer(res.HTTPStatus, err, sent)
		r.count(r.behave, string(kind)+" answered "+strconv.Itoa(a.status))
		again := false
		switch {
		case a.status == http.StatusOK && (res.Status == string(chargeonce.MoveSucceeded) || res.Status == string(chargeonce.MoveDeclined)):
		case a.status == http.StatusAccepted:
			again = true
		case a.status == http.StatusConflict && slices.Contains([]wire.ProblemType{wire.ProblemRequestInProgress, wire.ProblemHoldMoving}, a.problem):
			again = true
		case a.status == http.StatusConflict && a.problem == wire.ProblemNotHeld && racing:
		case a.status == http.StatusServiceUnavailable && a.problem == wire.ProblemNothingMoved, r.outageAnswer(a):
			again = true
		default:
			r.unexpectedf("order %d: %s answered %d %s: %s", id, kind, a.status, res.Status, a.detail)
		}
		if !again || try == moveTries || !pause(ctx, rng, 300*time.Millisecond, 1500*time.Millisecond) {
			return
		}
	}
}

// voidOpenHolds has the merchant void, at the end of the run's day, every
// hold of the run still authorized: the holds of the last customers, and
// of the late retries, whose deadlines would otherwise keep the run
// waiting for up to the hold window. The holds left to their deadline
// earlier met it while the customers paid. A deadline may still race the
// void.
func (r *run) voidOpenHolds(ctx context.Context) error {
	for _, id := range r.manualOrders() {
		h, err := r.stack.Store().OrderHold(ctx, id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && h.Status != chargeonce.HoldAuthorized) {
			continue
		}
		if err != nil {
			return fmt.Errorf("chaos: hold of order %d: %w", id, err)
		}
		r.count(r.behave, BehaviourVoidAtEnd)
		r.move(ctx, rand.New(rand.NewPCG(r.cfg.Seed, uint64(id))), id, chargeonce.MoveVoid, nil, true)
	}
	return nil
}

// manualOrders are the run's orders whose checkouts ask for a manual
// capture.
func (r *run) manualOrders() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []int64
	for _, id := range r.orders {
		if r.manual[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// unsettledHolds counts the moves still pending of the run's manual
// orders, and their holds still authorized whose deadline comes within
// the settle timeout: the deadline's move starts then and must settle
// before the checker reads the holds, which it would otherwise catch
// between a move and its end. A hold further from its deadline stays
// authorized through the check.
func (r *run) unsettledHolds(ctx context.Context) (int, error) {
	soon := time.Now().Add(r.cfg.SettleTimeout)
	unsettled := 0
	for _, id := range r.manualOrders() {
		moves, err := r.stack.Store().OrderMoves(ctx, id)
		if err != nil {
			return 0, err
		}
		for _, m := range moves {
			if m.Status == chargeonce.MovePending {
				unsettled++
			}
		}
		h, err := r.stack.Store().OrderHold(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if h.Status == chargeonce.HoldAuthorized && h.Deadline.Before(soon) {
			unsettled++
		}
	}
	return unsettled, nil
}
