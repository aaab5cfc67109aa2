package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"chargeonce"
	"chargeonce/api/wire"
	"chargeonce/client"
)

// pollInterval is how often the order is read while a checkout waits.
const pollInterval = 200 * time.Millisecond

// timeline prints the provider requests of an order as they appear in its
// request log, each once.
type timeline struct {
	w     io.Writer
	quiet bool // --json: nothing but the final object goes to stdout
	// seen counts the requests already shown, per idempotency key.
	seen  map[string]int
	lines []string
}

func (t *timeline) printf(format string, args ...any) {
	if !t.quiet {
		fmt.Fprintf(t.w, format, args...)
	}
}

// baseline marks the requests already in the log as shown, so that only
// those of this checkout are printed.
func (t *timeline) baseline(o wire.Order) {
	t.seen = make(map[string]int, len(o.Attempts))
	for _, a := range o.Attempts {
		t.seen[a.IdempotencyKey] = len(a.Requests)
	}
}

// show prints the requests of o not shown yet. A request is numbered by its
// place among all the requests of its key: "attempt 3" is the third request
// that carried the key, whichever checkout sent it.
//
// A request is listed as unanswered before it goes out, so while the
// checkout is still running an unanswered request is most likely at the
// provider now: show stops before it and prints it once it has its answer.
// Once the checkout has answered (settled), a request still unanswered was
// lost, and is printed as such.
func (t *timeline) show(o wire.Order, settled bool) {
	for i, a := range o.Attempts {
		shown := t.seen[a.IdempotencyKey]
		ready := len(a.Requests)
		if !settled {
			for i := shown; i < ready; i++ {
				if a.Requests[i].Outcome == chargeonce.RequestUnanswered {
					ready = i
					break
				}
			}
		}
		if shown == 0 && ready > 0 {
			t.printf("key %s%s\n", a.IdempotencyKey, movedTo(o.Attempts, i))
		}
		for i := shown; i < ready; i++ {
			line := fmt.Sprintf("attempt %d  %s", i+1, describe(a.Requests[i], chargeWords))
			t.lines = append(t.lines, line)
			t.printf("%s\n", line)
		}
		t.seen[a.IdempotencyKey] = max(shown, ready)
	}
}

// movedTo names the provider of the order's i-th attempt, and why it went
// there, when that is not the provider of the attempt before it: a
// timeline shows where a payment moved, and stays quiet while it stays.
func movedTo(attempts []wire.Attempt, i int) string {
	a := attempts[i]
	switch {
	case i == 0 || attempts[i-1].Provider == a.Provider:
		return ""
	case a.RoutedBy == nil:
		return "  at " + a.Provider
	}
	return fmt.Sprintf("  at %s (%s)", a.Provider, *a.RoutedBy)
}

// The words of describe for a charge's requests and for a refund's.
var (
	chargeWords = requestWords{approved: "charged", refused: "declined"}
	refundWords = requestWords{approved: "refunded", refused: "refused"}
)

// requestWords say what an approved and a refused request did.
type requestWords struct{ approved, refused string }

// describe says in a few words what one request to the provider got.
func describe(r wire.ProviderRequest, words requestWords) string {
	status := 0
	if r.Status != nil {
		status = *r.Status
	}
	switch {
	case r.Outcome == chargeonce.RequestUnanswered:
		return "sent, no answer recorded"
	case status == 0:
		what := strings.ReplaceAll(r.Outcome, "_", " ")
		if what == "" {
			what = "no response"
		}
		return fmt.Sprintf("%s after %.1fs", what, float64(r.DurationMS)/1000)
	case r.Replayed:
		return fmt.Sprintf("%d replayed", status)
	case status == http.StatusConflict:
		return "409 in flight"
	case status == http.StatusOK || status == http.StatusCreated:
		return fmt.Sprintf("%d %s", status, words.approved)
	case status == http.StatusPaymentRequired:
		return "402 " + words.refused
	case status == http.StatusUnprocessableEntity:
		return "422 key reused with another body"
	case status == http.StatusTooManyRequests:
		return "429 rate limited"
	case status >= 500:
		return fmt.Sprintf("%d provider error", status)
	}
	return fmt.Sprintf("%d %s", status, strings.ReplaceAll(r.Outcome, "_", " "))
}

// checkoutRun is one "starter checkout".
type checkoutRun struct {
	api     *client.Client
	out     *timeline
	orderID int64
	req     wire.CheckoutRequest
	// waitTimeout is how long to keep asking after a 202; zero answers at once.
	waitTimeout time.Duration
}

// checkoutResult is what a checkout ended with; with --json it is printed
// as is.
type checkoutResult struct {
	OrderID           int64    `json:"orderId"`
	Outcome           string   `json:"outcome"` // paid, authorized, declined, pending, conflict, not_processed, abandoned, failed
	HTTPStatus        int      `json:"httpStatus"`
	OrderStatus       string   `json:"orderStatus"`
	ProviderPaymentID string   `json:"providerPaymentId,omitempty"`
	IdempotencyKey    string   `json:"idempotencyKey,omitempty"`
	DeclineCode       string   `json:"declineCode,omitempty"`
	Detail            string   `json:"detail,omitempty"`
	Timeline          []string `json:"timeline"`
}

func (r checkoutResult) exitCode() int {
	switch r.Outcome {
	case "paid", "authorized":
		return exitPaid
	case "declined":
		return exitDeclined
	case "pending":
		return exitPending
	case "conflict":
		return exitConflict
	case "not_processed":
		return exitNotProcessed
	}
	return exitOther
}

// posted is the answer of the checkout POST.
type posted struct {
	client.CheckoutResult
	err error
}

func (c *checkoutRun) run(ctx context.Context) (checkoutResult, error) {
	before, err := c.api.GetOrder(ctx, c.orderID)
	if err != nil {
		return checkoutResult{}, fmt.Errorf("order %d: %w", c.orderID, err)
	}
	c.out.baseline(before)

	done := make(chan posted, 1)
	go func() {
		res, err := c.api.CheckoutWith(ctx, c.orderID, c.req)
		done <- posted{res, err}
	}()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var p posted
	for waiting := true; waiting; {
		select {
		case p = <-done:
			waiting = false
		case <-ticker.C:
			c.poll(ctx, false)
		}
	}
	after := c.poll(ctx, true)

	res := checkoutResult{OrderID: c.orderID, HTTPStatus: p.HTTPStatus, IdempotencyKey: p.IdempotencyKey}
	var problem *client.Problem
	switch {
	case errors.As(p.err, &problem):
		res.HTTPStatus = problem.Status
		res.Detail = problem.Title
		switch problem.Status {
		case http.StatusPaymentRequired:
			res.Outcome, res.DeclineCode = "declined", problem.DeclineCode
			c.out.printf("declined %s\n", res.DeclineCode)
		case http.StatusConflict:
			res.Outcome = "conflict"
			c.out.printf("conflict: %s\n", problem.Title)
		case http.StatusServiceUnavailable:
			if problem.Type != wire.ProblemProviderUnavailable {
				return checkoutResult{}, fmt.Errorf("checkout of order %d: %w", c.orderID, problem)
			}
			res.Outcome = "not_processed"
			when := "later"
			if problem.RetryAfter > 0 {
				when = fmt.Sprintf("in %ds", int(problem.RetryAfter.Seconds()))
			}
			c.out.printf("not charged: %s Pay again %s; the next checkout is a new attempt with a new key\n", problem.Title, when)
		default:
			return checkoutResult{}, fmt.Errorf("checkout of order %d: %w", c.orderID, problem)
		}
	case p.err != nil:
		return checkoutResult{}, fmt.Errorf("checkout of order %d: %w", c.orderID, p.err)
	case p.HTTPStatus == http.StatusOK && p.Status == "authorized":
		res.Outcome = "authorized"
		res.ProviderPaymentID = deref(p.ProviderPaymentID)
		c.out.printf("authorized %s; nothing taken until: starter capture --order %d (or void)\n", res.ProviderPaymentID, c.orderID)
	case p.HTTPStatus == http.StatusOK:
		res.Outcome = "paid"
		res.ProviderPaymentID = deref(p.ProviderPaymentID)
		if before.Status == "paid" {
			c.out.printf("already paid %s; nothing charged\n", res.ProviderPaymentID)
		} else {
			c.out.printf("paid %s\n", res.ProviderPaymentID)
		}
	case p.HTTPStatus == http.StatusAccepted:
		res.Outcome = "pending"
		c.out.printf("pending: the outcome is not known yet (key %s); do not pay again\n", p.IdempotencyKey)
		if c.waitTimeout > 0 {
			return c.waitSettled(ctx, res)
		}
		c.out.printf("ask again with: starter status --order %d\n", c.orderID)
	default:
		return checkoutResult{}, fmt.Errorf("checkout of order %d: unexpected HTTP %d", c.orderID, p.HTTPStatus)
	}
	res.OrderStatus = after.Status
	res.Timeline = c.out.lines
	return res, nil
}

// poll reads the order and shows its new requests; settled says the
// checkout has answered. A failed read is skipped: the next one, or the
// final one, catches up.
func (c *checkoutRun) poll(ctx context.Context, settled bool) wire.Order {
	ctx, cancel := context.WithTimeout(ctx, pollInterval*10)
	defer cancel()
	o, err := c.api.GetOrder(ctx, c.orderID)
	if err == nil {
		c.out.show(o, settled)
	}
	return o
}

// waitSettled keeps reading the order after a 202 until it leaves
// payment_pending or the wait times out.
func (c *checkoutRun) waitSettled(ctx context.Context, res checkoutResult) (checkoutResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.waitTimeout)
	defer cancel()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			res.OrderStatus = "payment_pending"
			res.Timeline = c.out.lines
			c.out.printf("still pending after %s; ask again with: starter status --order %d\n", c.waitTimeout, c.orderID)
			return res, nil
		case <-ticker.C:
		}
		o := c.poll(ctx, true)
		if o.Status == "" || o.Status == "payment_pending" {
			continue
		}
		res.OrderStatus = o.Status
		res.Timeline = c.out.lines
		last := attemptWithKey(o, res.IdempotencyKey)
		switch {
		case o.Status == "paid":
			res.Outcome, res.ProviderPaymentID = "paid", deref(o.ProviderPaymentID)
			c.out.printf("paid %s\n", res.ProviderPaymentID)
		case o.Status == "authorized":
			res.Outcome, res.ProviderPaymentID = "authorized", deref(last.ProviderPaymentID)
			c.out.printf("authorized %s\n", res.ProviderPaymentID)
		case last.Status == "declined":
			res.Outcome = "declined"
			c.out.printf("declined\n")
		case last.Status == "not_processed":
			res.Outcome = last.Status
			c.out.printf("not charged: the provider processed no request under key %s; the order may be paid again\n", res.IdempotencyKey)
		default:
			res.Outcome = last.Status
			c.out.printf("%s: no charge was found for key %s; the order may be paid again\n", last.Status, res.IdempotencyKey)
		}
		return res, nil
	}
}

func attemptWithKey(o wire.Order, key string) wire.Attempt {
	for _, a := range o.Attempts {
		if a.IdempotencyKey == key {
			return a
		}
	}
	return wire.Attempt{}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// printOrder prints an order with its attempts and their request logs, its
// hold with its captures and voids, and its refunds.
func printOrder(w io.Writer, o wire.Order) {
	fmt.Fprintf(w, "order %d  %s  %s %s", o.ID, o.Status, o.Total, o.Currency)
	if o.ProviderPaymentID != nil {
		fmt.Fprintf(w, "  %s", *o.ProviderPaymentID)
	}
	fmt.Fprintln(w)
	for i, a := range o.Attempts {
		fmt.Fprintf(w, "key %s  %s  created %s", a.IdempotencyKey, a.Status, a.CreatedAt.Format(time.RFC3339))
		if a.Status == "open" {
			fmt.Fprintf(w, "  abandon at %s", a.AbandonAt.Format(time.RFC3339))
		}
		fmt.Fprintln(w, movedTo(o.Attempts, i))
		for i, r := range a.Requests {
			fmt.Fprintf(w, "  attempt %d  %s\n", i+1, describe(r, chargeWords))
		}
	}
	if o.Hold != nil {
		printHold(w, *o.Hold)
	}
	for _, m := range o.Moves {
		printMove(w, m)
	}
	for _, r := range o.Refunds {
		printRefund(w, r)
	}
}
