package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/checkout"
	"chargeonce/client"
	"chargeonce/store"
)

// Shares of customers who behave in each way.
const (
	declineShare     = 0.15
	doubleClickShare = 0.15
	switchShare      = 0.2
	switchAfterShare = 0.5
	retryLostShare   = 0.5
	maxRetries       = 2
)

// The cards customers pay with.
const (
	cardOK        = "tok_visa"
	cardOther     = "tok_mastercard"
	cardDeclined  = "tok_chargeDeclined"
	cardNoFunds   = "tok_chargeDeclinedInsufficientFunds"
	maxAnswerBody = 1 << 20
)

// currencies mixes minor-unit scales, so that an amount mangled on its way
// to the provider shows up as a mismatch.
var currencies = []string{"TRY", "EUR", "JPY", "KWD"}

// answer is one answer of the checkout API.
type answer struct {
	status int
	key    string
	// problem is the type of a problem answer.
	problem wire.ProblemType
	detail  string
	// sent and answered bound the exchange, to tell whether it overlapped
	// a database outage.
	sent, answered time.Time
}

// notProcessed reports whether a says that the provider processed none of
// the attempt's requests, so that nothing was charged.
func notProcessed(a answer) bool {
	return a.status == http.StatusServiceUnavailable && a.problem == wire.ProblemProviderUnavailable
}

// outageAnswer reports whether a is a server error, or no answer, during a
// database outage: the customer was told nothing and asks again later.
func (r *run) outageAnswer(a answer) bool {
	return (a.status == 0 || a.status >= http.StatusInternalServerError) && r.duringOutage(a.sent, a.answered)
}

// askAgainLater checks out again with the same card while the answer is an
// outage answer.
func (r *run) askAgainLater(ctx context.Context, id int64, card string, res answer) answer {
	for r.outageAnswer(res) {
		r.count(r.behave, BehaviourServerError)
		select {
		case <-time.After(outageRetryPause):
		case <-ctx.Done():
			return res
		}
		res = r.checkout(ctx, id, card)
	}
	return res
}

// customer creates one order and pays it the way the i-th customer does.
func (r *run) customer(ctx context.Context, i int) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(i)))
	money, err := chargeonce.NewMoney(1+rng.Int64N(99999), currencies[rng.IntN(len(currencies))])
	if err != nil {
		r.markStarted()
		r.unexpectedf("customer %d: amount: %v", i, err)
		return
	}
	id, err := r.createOrder(ctx, money)
	r.markStarted()
	if err != nil {
		r.unexpectedf("customer %d: create order: %v", i, err)
		return
	}
	card := cardOK
	if rng.Float64() < declineShare {
		card = []string{cardDeclined, cardNoFunds}[rng.IntN(2)]
		r.count(r.behave, BehaviourDeclineToken)
	}
	manual := rng.Float64() < manualShare
	if manual {
		r.count(r.behave, BehaviourManual)
	}
	r.addOrder(id, card, manual)

	var res answer
	switch {
	case rng.Float64() < r.cfg.LostStarts:
		r.count(r.faults, FaultLostStart)
		// The crashed API answered nothing, so the result is not read; an
		// error here is the database's, which is a real problem unless the
		// database was down, when the customer's retry or the sweep
		// recovers whatever was stored.
		sent := time.Now()
		if _, err := r.lost.CheckoutWith(ctx, id, card, checkout.Capture{Mode: r.captureMode(id)}); err != nil && !r.duringOutage(sent, time.Now()) {
			r.unexpectedf("order %d: checkout with a lost start: %v", id, err)
			return
		}
		if rng.Float64() >= retryLostShare {
			return // the outbox sweep alone must settle it
		}
		if !pause(ctx, rng, time.Second, 3*time.Second) {
			return
		}
		r.count(r.behave, BehaviourRetryLost)
		res = r.checkout(ctx, id, card)
	case rng.Float64() < doubleClickShare:
		r.count(r.behave, BehaviourDoubleClick)
		res = r.doubleClick(ctx, id, card)
	default:
		res = r.checkout(ctx, id, card)
	}
	r.follow(ctx, rng, id, card, res)
	if manual {
		r.maybeMoveHold(ctx, rng, id, money)
	}
	r.maybeRefund(ctx, rng, id, money)
}

// follow reacts to an answer as a customer would: retry with the same card
// after pending, or after a 503 that says nothing was charged, which opens a
// new attempt; maybe try another card while pending, which must be refused
// while the payment is open (every customer does until one was,
// conflictOwed); and, once the card was declined, maybe pay with another, which must be
// allowed. A customer who still does not know after the retries
// asks for the order until it settles, as the API tells them to. A server
// error or no answer during a database outage tells them nothing, so they
// ask again later with the same card.
func (r *run) follow(ctx context.Context, rng *rand.Rand, id int64, card string, res answer) {
	switchWhilePending := rng.Float64() < switchShare
	switchAfterDecline := isDeclineCard(card) && rng.Float64() < switchAfterShare
	for retries := 0; ; {
		res = r.askAgainLater(ctx, id, card, res)
		switch res.status {
		case http.StatusOK:
			return
		case http.StatusPaymentRequired:
			if switchAfterDecline {
				r.switchAfterDecline(ctx, id)
			}
			return
		case http.StatusAccepted:
			if switchWhilePending || r.conflictOwed() {
				switchWhilePending = false
				r.count(r.behave, BehaviourSwitchWhile)
				// An outage answer to the other card leaves the customer
				// with the pending one.
				other := r.checkout(ctx, id, otherCard(card))
				if other.status != http.StatusConflict && !r.outageAnswer(other) {
					r.checkSwitchAllowed(ctx, id, res.key, other)
					card = otherCard(card)
					r.setCard(id, card)
					res = other
					continue
				}
			}
			if retries == maxRetries {
				if switchAfterDecline && r.awaitSettled(ctx, id) == chargeonce.OrderPlaced {
					r.switchAfterDecline(ctx, id)
				}
				return
			}
			if !pause(ctx, rng, 300*time.Millisecond, 2500*time.Millisecond) {
				return
			}
			retries++
			r.count(r.behave, BehaviourRetry)
			res = r.checkout(ctx, id, card)
		case http.StatusServiceUnavailable:
			if !notProcessed(res) {
				r.unexpectedf("order %d: checkout answered %d: %s", id, res.status, res.detail)
				return
			}
			if retries == maxRetries || !pause(ctx, rng, 300*time.Millisecond, 2500*time.Millisecond) {
				return
			}
			retries++
			r.count(r.behave, BehaviourRetryNotProcessed)
			res = r.checkout(ctx, id, card)
		default:
			r.unexpectedf("order %d: checkout answered %d: %s", id, res.status, res.detail)
			return
		}
	}
}

// conflictOwed reports that no checkout has been refused 409 yet. Until
// one is, every customer told pending tries another card, so that the run
// shows the refusal however few customers choose to switch, or meet a
// payment still open when they do.
func (r *run) conflictOwed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answers[http.StatusConflict] == 0
}

// switchAfterDecline pays a declined order with another card, which must
// not be refused; the customer then follows that payment no further.
func (r *run) switchAfterDecline(ctx context.Context, id int64) {
	r.count(r.behave, BehaviourSwitchAfter)
	r.setCard(id, cardOther)
	res := r.askAgainLater(ctx, id, cardOther, r.checkout(ctx, id, cardOther))
	switch {
	case res.status == http.StatusOK, res.status == http.StatusAccepted, notProcessed(res):
	default:
		r.unexpectedf("order %d: another card after a decline answered %d: %s", id, res.status, res.detail)
	}
}

// awaitSettled asks for the order until its payment is no longer pending
// and returns its status; an order pending past every deadline is
// unexpected.
func (r *run) awaitSettled(ctx context.Context, id int64) chargeonce.OrderStatus {
	deadline := time.Now().Add(r.cfg.Timing.AbandonAfter + 5*r.cfg.Timing.Interval)
	for {
		var status chargeonce.OrderStatus
		err := r.throughOutage(ctx, func() (err error) {
			status, err = r.orderStatus(ctx, id)
			return err
		})
		switch {
		case err != nil:
			r.unexpectedf("order %d: read: %v", id, err)
			return ""
		case status != chargeonce.OrderPaymentPending:
			return status
		case time.Now().After(deadline):
			r.unexpectedf("order %d: still pending past its abandon deadline", id)
			return status
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			return ""
		}
	}
}

func isDeclineCard(card string) bool { return card == cardDeclined || card == cardNoFunds }

// checkSwitchAllowed accepts another card's checkout after a pending answer
// only if the pending attempt had settled by then; an attempt still open
// means two attempts ran at once.
func (r *run) checkSwitchAllowed(ctx context.Context, id int64, pendingKey string, other answer) {
	var a store.Attempt
	err := r.throughOutage(ctx, func() (err error) {
		a, err = r.stack.Store().GetAttempt(ctx, pendingKey)
		return err
	})
	if err != nil {
		r.unexpectedf("order %d: read attempt %s: %v", id, pendingKey, err)
		return
	}
	if a.Status == chargeonce.AttemptOpen {
		r.unexpectedf("order %d: another card answered %d while attempt %s was open", id, other.status, pendingKey)
	}
}

// doubleClick sends two checkouts of the same order and card at once. Both
// must belong to the same attempt.
func (r *run) doubleClick(ctx context.Context, id int64, card string) answer {
	var a, b answer
	var wg sync.WaitGroup
	wg.Go(func() { a = r.checkout(ctx, id, card) })
	wg.Go(func() { b = r.checkout(ctx, id, card) })
	wg.Wait()
	if a.key != "" && b.key != "" && a.key != b.key {
		r.unexpectedf("order %d: a double click used two keys, %s and %s", id, a.key, b.key)
	}
	// The customer reads whichever answer says more.
	if b.status == http.StatusOK || a.status == 0 || r.outageAnswer(a) {
		return b
	}
	return a
}

func otherCard(card string) string {
	if card == cardOther {
		return cardOK
	}
	return cardOther
}

// pause waits a random time in [lo, hi), as a customer thinks; false when
// the run is cancelled.
func pause(ctx context.Context, rng *rand.Rand, lo, hi time.Duration) bool {
	d := lo + time.Duration(rng.Int64N(int64(hi-lo)))
	select {
	case <-time.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *run) addOrder(id int64, card string, manual bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.orders = append(r.orders, id)
	r.cards[id] = card
	r.manual[id] = manual
}

func (r *run) setCard(id int64, card string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cards[id] = card
}

// createOrder creates an order through the API, again after a failure
// during a database outage. An order created by a request whose answer was
// lost stays unpaid and unknown to the run, as a customer's abandoned cart
// does.
func (r *run) createOrder(ctx context.Context, m chargeonce.Money) (int64, error) {
	var (
		id    int64
		again bool
	)
	err := r.throughOutage(ctx, func() error {
		if again {
			r.count(r.behave, BehaviourOrderAgain)
		}
		again = true
		o, err := r.api().CreateOrder(ctx, m.Decimal(), m.Currency, "chaos order")
		id = o.ID
		return err
	})
	return id, err
}

// api is a client of one of the stack's APIs, the next one each time.
func (r *run) api() *client.Client {
	return client.New(r.stack.APIURL(), r.stack.APIKey(), client.WithHTTPClient(r.http))
}

// checkout sends one checkout, in the order's capture mode, through the
// API and counts its answer.
func (r *run) checkout(ctx context.Context, id int64, card string) answer {
	req := wire.CheckoutRequest{CardToken: card}
	if mode := r.captureMode(id); mode != "" {
		req.Capture = (*string)(&mode)
	}
	r.mu.Lock()
	r.requests++
	r.mu.Unlock()
	sent := time.Now()
	res, err := r.api().CheckoutWith(ctx, id, req)
	a := newAnswer(res.HTTPStatus, err, sent)
	a.key = res.IdempotencyKey
	r.mu.Lock()
	r.answers[a.status]++
	if notProcessed(a) {
		r.refused++
	}
	r.mu.Unlock()
	return a
}

// newAnswer is the answer of a request sent at sent and answered now with
// status, or with err: a problem, an answer that is not the API's (its
// status is still judged), or none (status 0).
func newAnswer(status int, err error, sent time.Time) answer {
	a := answer{status: status, sent: sent, answered: time.Now()}
	if err == nil {
		return a
	}
	a.status, a.detail = client.HTTPStatus(err), err.Error()
	var p *client.Problem
	if errors.As(err, &p) {
		a.problem, a.detail = p.Type, strings.TrimSpace(p.Title+" "+p.Detail)
	}
	return a
}

// orderStatus reads the order's status through the API.
func (r *run) orderStatus(ctx context.Context, id int64) (chargeonce.OrderStatus, error) {
	o, err := r.api().GetOrder(ctx, id)
	return chargeonce.OrderStatus(o.Status), err
}

// lateRetries retries the oldest orders with their last card once their
// keys are past the provider's retention. A settled order must answer from
// the database and send nothing; an order whose attempt was abandoned,
// declined or not processed starts a new attempt with a new key.
func (r *run) lateRetries(ctx context.Context) error {
	r.mu.Lock()
	n := min(r.cfg.LateRetries, len(r.orders))
	ids := append([]int64(nil), r.orders[:n]...)
	r.mu.Unlock()
	if n == 0 {
		return nil
	}
	// The newest of these orders must be past retention, and the
	// provider's retention policy must have run after that.
	newest, err := r.newestAttempt(ctx, ids)
	if err != nil {
		return err
	}
	due := newest.Add(r.cfg.Retention + 2*time.Second)
	r.cfg.Logger.Info("late retries wait for the keys to expire", "orders", n, "until", due.Format(time.RFC3339))
	select {
	case <-time.After(time.Until(due)):
	case <-ctx.Done():
		return ctx.Err()
	}
	// Every key these orders sent is now forgotten by the provider.
	records, err := r.providerRequests(ctx)
	if err != nil {
		return fmt.Errorf("chaos: provider requests: %w", err)
	}
	sent := map[string]bool{}
	for _, rec := range records {
		sent[rec.Key] = rec.Key != ""
	}
	for _, id := range ids {
		r.mu.Lock()
		card := r.cards[id]
		r.mu.Unlock()
		r.count(r.behave, BehaviourLateRetry)
		if _, attempts, err := r.stack.Store().GetOrder(ctx, id); err == nil && anySent(attempts, sent) {
			r.count(r.behave, BehaviourLateExpired)
		}
		res := r.checkout(ctx, id, card)
		switch {
		case res.status == http.StatusOK, res.status == http.StatusAccepted, res.status == http.StatusPaymentRequired, notProcessed(res):
		default:
			r.unexpectedf("order %d: late retry answered %d: %s", id, res.status, res.detail)
		}
	}
	return nil
}

func anySent(attempts []store.Attempt, sent map[string]bool) bool {
	for _, a := range attempts {
		if sent[a.Key] {
			return true
		}
	}
	return false
}

// newestAttempt is the creation time of the newest attempt of the orders.
func (r *run) newestAttempt(ctx context.Context, ids []int64) (time.Time, error) {
	var newest time.Time
	for _, id := range ids {
		_, attempts, err := r.stack.Store().GetOrder(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return time.Time{}, fmt.Errorf("chaos: order %d: %w", id, err)
		}
		for _, a := range attempts {
			if a.CreatedAt.After(newest) {
				newest = a.CreatedAt
			}
		}
	}
	return newest, nil
}
