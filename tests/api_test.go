package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/internal/syncbuf"
	"chargeonce/workflows"
)

// apiTableTiming makes a checkout give up quickly (three seconds of charge
// phase) and keeps reconciliation out of the way, so that each row of the
// contract's table is reached by the checkout itself. The provider answers
// in milliseconds, but the way there and back through Temporal takes
// seconds on a loaded 2-core machine running the whole suite, and a
// definite answer must still arrive within the budgets.
func apiTableTiming() workflows.Timing {
	return workflows.Timing{
		AttemptTimeout: time.Second,
		SendBudget:     3 * time.Second,
		RetryInterval:  100 * time.Millisecond,
		MinAge:         2 * time.Minute,
		Interval:       time.Minute,
		AbandonAfter:   30 * time.Minute,
	}
}

// apiTableBudget is the checkout's wait with apiTableTiming: it outlasts the
// charge phase, so that a checkout answers pending only when the phase ended
// without an outcome.
const apiTableBudget = 5 * time.Second

// TestAPI_CheckoutAnswersEveryRowOfTheContract walks the status table of
// docs/checkout-api.md on one running stack.
func TestAPI_CheckoutAnswersEveryRowOfTheContract(t *testing.T) {
	logs := &syncbuf.Buffer{}
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget, Logs: logs})

	t.Run("200 paid", func(t *testing.T) {
		id := s.createOrder(t, "548.90", "TRY")
		res := s.checkout(t, id, "tok_visa")
		require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
		require.Equal(t, "application/json", res.header.Get("Content-Type"))
		var body map[string]any
		require.NoError(t, json.Unmarshal(res.body, &body))
		require.ElementsMatch(t, []string{"orderId", "status", "total", "currency", "providerPaymentId", "idempotencyKey"}, keysOf(body))
		require.Equal(t, float64(id), body["orderId"])
		require.Equal(t, "paid", body["status"])
		require.Equal(t, "548.90", body["total"])
		require.Equal(t, "TRY", body["currency"])
		charge := s.chargeOf(t, body["idempotencyKey"].(string))
		require.Equal(t, charge.ID, body["providerPaymentId"])
		require.Equal(t, "paid", s.order(t, id).Status)
	})

	t.Run("200 already paid charges nothing", func(t *testing.T) {
		id := s.createOrder(t, "12.00", "TRY")
		first := s.checkout(t, id, "tok_visa")
		require.Equal(t, http.StatusOK, first.status, "body: %s", first.body)
		before := len(s.provider.Requests())

		again := s.checkout(t, id, "tok_mastercard")
		require.Equal(t, http.StatusOK, again.status, "body: %s", again.body)
		require.JSONEq(t, string(first.body), string(again.body), "the paid order, as first answered")
		require.Len(t, s.provider.Requests(), before, "nothing was sent to the provider")
	})

	t.Run("402 declined, then another card pays", func(t *testing.T) {
		id := s.createOrder(t, "30.00", "TRY")
		res := s.checkout(t, id, "tok_chargeDeclined")
		require.Equal(t, http.StatusPaymentRequired, res.status, "body: %s", res.body)
		p := problemOf(t, res)
		require.Equal(t, "do_not_honor", p.DeclineCode)
		o := s.order(t, id)
		require.Equal(t, "placed", o.Status, "a declined order can be paid again")
		require.Equal(t, "declined", o.Attempts[0].Status)

		paid := s.checkout(t, id, "tok_visa")
		require.Equal(t, http.StatusOK, paid.status, "body: %s", paid.body)
		o = s.order(t, id)
		require.Len(t, o.Attempts, 2, "the other card is a new attempt with a new key")
		require.NotEqual(t, o.Attempts[0].IdempotencyKey, o.Attempts[1].IdempotencyKey)
	})

	t.Run("202 pending, 409 for another card, 500 when the provider says 422", func(t *testing.T) {
		// The provider loses every request: the outcome stays unknown.
		require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeDrop}))
		t.Cleanup(func() { require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal})) })
		id := s.createOrder(t, "548.90", "TRY")

		pending := s.checkout(t, id, "tok_visa")
		require.Equal(t, http.StatusAccepted, pending.status, "body: %s", pending.body)
		require.Equal(t, fmt.Sprintf("/api/orders/%d", id), pending.header.Get("Location"))
		var body paidBody
		require.NoError(t, json.Unmarshal(pending.body, &body))
		require.Equal(t, "payment_pending", body.Status)
		require.Empty(t, body.ProviderPaymentID)
		key := body.IdempotencyKey

		conflict := s.checkout(t, id, "tok_mastercard")
		require.Equal(t, http.StatusConflict, conflict.status, "body: %s", conflict.body)
		require.Equal(t, "A previous payment for this order is still being verified.", problemOf(t, conflict).Title)

		// Someone sends another body under the attempt's key, straight to
		// the provider; our next request with that key is then a 422.
		require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
		s.postToProvider(t, key, `{"amount": 100, "currency": "TRY", "source": "tok_visa", "description": "another body", "merchant_reference": "other-1-00000000000000000000000000000000"}`)

		failed := s.checkout(t, id, "tok_visa")
		require.Equal(t, http.StatusInternalServerError, failed.status, "body: %s", failed.body)
		p := problemOf(t, failed)
		require.Contains(t, p.Type, "payment-failed")
		posts := s.provider.ChargeRequests()
		require.Equal(t, http.StatusUnprocessableEntity, posts[len(posts)-1].Status)
		o := s.order(t, id)
		require.Equal(t, "failed", o.Attempts[0].Status, "the attempt is marked failed")
		require.Equal(t, "payment_pending", o.Status, "only a human may offer the order again")
		// The activity, the workflow, the checkout and the API all see the
		// 422; the workflow, which marks the attempt failed, tells it.
		errs := errorLinesOf(logs.String(), key)
		require.Len(t, errs, 1, "one error line for the 422: %s", logs)
		require.Contains(t, errs[0], "alert=contract_violation")
		require.Contains(t, s.metrics(t), `chargeonce_alerts_total{alert="contract_violation"} 1`)

		review := s.checkout(t, id, "tok_visa")
		require.Equal(t, http.StatusInternalServerError, review.status, "body: %s", review.body)
		require.Contains(t, problemOf(t, review).Type, "payment-needs-review")
		errs = errorLinesOf(logs.String(), key)
		require.Len(t, errs, 2, "one more error line for the refused checkout: %s", logs)
		require.Contains(t, errs[1], "alert=needs_review")
		require.Contains(t, s.metrics(t), `chargeonce_alerts_total{alert="needs_review"} 1`)
	})

	t.Run("404 unknown order", func(t *testing.T) {
		res := s.checkout(t, 987654321, "tok_visa")
		require.Equal(t, http.StatusNotFound, res.status, "body: %s", res.body)
		problemOf(t, res)
	})

	t.Run("400 bad body", func(t *testing.T) {
		id := s.createOrder(t, "5.00", "TRY")
		before := len(s.provider.Requests())
		res, err := s.sendInvalid(http.MethodPost, fmt.Sprintf("/api/orders/%d/checkout", id), `{"card_token": "tok_visa", "cvv": "123"}`)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, res.status, "body: %s", res.body)
		require.Contains(t, problemOf(t, res).Detail, `unknown field "cvv"`)
		require.Equal(t, "placed", s.order(t, id).Status)
		require.Len(t, s.provider.Requests(), before)
	})
}

// TestAPI_ProviderOutageIs503NothingChargedAndTheNextCheckoutPaysUnderANewKey:
// a provider that answers every request with 503 processes none of them, so
// the customer hears at once that nothing was charged, and pays again later
// under a new key.
func TestAPI_ProviderOutageIs503NothingChargedAndTheNextCheckoutPaysUnderANewKey(t *testing.T) {
	timing := apiTableTiming()
	// At most three requests, at 0s, 0.7s and 1.4s if the timers fire on
	// time: fewer than the five failures in a row that open the worker's
	// breaker for 10s, so that the next checkout is not held back by it.
	timing.RetryInterval = 700 * time.Millisecond
	s := startCheckoutStack(t, checkoutStackConfig{Timing: timing, Budget: apiTableBudget,
		Mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "tok_visa")

	require.Equal(t, http.StatusServiceUnavailable, res.status, "body: %s", res.body)
	require.Equal(t, "10", res.header.Get("Retry-After"))
	p := problemOf(t, res)
	require.Equal(t, "urn:chargeonce:problem:provider-unavailable", p.Type)
	require.Equal(t, "The payment provider is unavailable; nothing was charged.", p.Title)
	o := s.order(t, id)
	require.Equal(t, "placed", o.Status, "the order may be paid again")
	require.Len(t, o.Attempts, 1)
	first := o.Attempts[0]
	require.Equal(t, "not_processed", first.Status)
	require.NotEmpty(t, first.Requests)
	for _, r := range first.Requests {
		require.Equal(t, http.StatusServiceUnavailable, *r.Status)
	}
	require.Nil(t, first.LastCheckedAt, "the provider is never asked for a charge that cannot exist")
	require.Empty(t, s.provider.Charges())

	require.NoError(t, s.provider.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
	paid := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, paid.status, "body: %s", paid.body)
	var body paidBody
	require.NoError(t, json.Unmarshal(paid.body, &body))
	require.NotEqual(t, first.IdempotencyKey, body.IdempotencyKey, "the same card pays under a new key")
	o = s.order(t, id)
	require.Equal(t, "paid", o.Status)
	require.Len(t, o.Attempts, 2)
	charges := s.provider.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, body.IdempotencyKey, charges[0].IdempotencyKey)
	report := checkInvariants(t, s, s.store, time.Now(), id)
	require.True(t, report.OK(), "%s", report)
}

func TestAPI_OrderShowsItsAttemptsAndRequestLog(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	id := s.createOrder(t, "548.90", "TRY")
	res := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)

	got, err := s.send(http.MethodGet, fmt.Sprintf("/api/orders/%d", id), "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, got.status)
	var o map[string]any
	require.NoError(t, json.Unmarshal(got.body, &o))
	for _, k := range []string{"id", "status", "total", "currency", "providerPaymentId", "attempts"} {
		require.Contains(t, o, k)
	}
	attempts := o["attempts"].([]any)
	require.Len(t, attempts, 1)
	a := attempts[0].(map[string]any)
	for _, k := range []string{"idempotencyKey", "status", "merchantReference", "createdAt", "lastCheckedAt", "abandonAt", "requests"} {
		require.Contains(t, a, k)
	}
	prefix, orderID, key, err := chargeonce.ParseMerchantReference(a["merchantReference"].(string))
	require.NoError(t, err)
	require.Equal(t, "chargeonce", prefix)
	require.Equal(t, id, orderID)
	require.Equal(t, a["idempotencyKey"], key)
	requests := a["requests"].([]any)
	require.Len(t, requests, 1)
	r := requests[0].(map[string]any)
	for _, k := range []string{"at", "status", "replayed", "durationMs"} {
		require.Contains(t, r, k)
	}
	require.Equal(t, float64(http.StatusCreated), r["status"])
	require.Equal(t, false, r["replayed"])
}

func keysOf(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// chargeOf returns the provider's only charge under key.
func (s *checkoutStack) chargeOf(t *testing.T, key string) fakeprovider.Charge {
	t.Helper()
	var found []fakeprovider.Charge
	for _, c := range s.provider.Charges() {
		if c.IdempotencyKey == key {
			found = append(found, c)
		}
	}
	require.Len(t, found, 1, "charges under key %s", key)
	return found[0]
}

// postToProvider sends a charge straight to the fake provider.
func (s *checkoutStack) postToProvider(t *testing.T, key, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.providerURL+"/v1/charges", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}
