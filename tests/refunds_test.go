package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
)

// refundView is a refund as the API answers it.
type refundView struct {
	ID               string  `json:"id"`
	OrderID          int64   `json:"orderId"`
	ChargeID         string  `json:"chargeId"`
	Status           string  `json:"status"`
	Amount           string  `json:"amount"`
	Origin           string  `json:"origin"`
	ProviderRefundID *string `json:"providerRefundId"`
	FailureReason    *string `json:"failureReason"`
}

// refund sends one refund request of the order under the Idempotency-Key.
func (s *checkoutStack) refund(t *testing.T, id int64, key, body string) checkoutResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/orders/%d/refunds", s.apiURL, id), strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return checkoutResponse{status: resp.StatusCode, header: resp.Header, body: data}
}

func refundOf(t *testing.T, r checkoutResponse) refundView {
	t.Helper()
	var v refundView
	require.NoError(t, json.Unmarshal(r.body, &v), "body: %s", r.body)
	return v
}

// paidOrder creates an order of amount TRY and pays it with tok_visa.
func (s *checkoutStack) paidOrder(t *testing.T, amount string) int64 {
	t.Helper()
	id := s.createOrder(t, amount, "TRY")
	res := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	return id
}

func TestRefund_SucceedsInPartsAndTheKeyRulesHold(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget})
	id := s.paidOrder(t, "100.00")

	missing := s.refund(t, id, "", `{"amount": "10.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusBadRequest, missing.status)
	require.Equal(t, "urn:chargeonce:problem:idempotency-key-required", problemOf(t, missing).Type)

	key := uuid.NewString()
	first := s.refund(t, id, key, `{"amount": "30.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusOK, first.status, "body: %s", first.body)
	r := refundOf(t, first)
	require.Equal(t, "succeeded", r.Status)
	require.Equal(t, "30.00", r.Amount)
	require.NotNil(t, r.ProviderRefundID)
	require.Equal(t, "partially_refunded", s.order(t, id).Status)

	again := s.refund(t, id, key, `{"amount": "30.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusOK, again.status, "body: %s", again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, r.ID, refundOf(t, again).ID, "the same key and body answer the same refund")

	other := s.refund(t, id, key, `{"amount": "31.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusUnprocessableEntity, other.status)
	require.Equal(t, "urn:chargeonce:problem:idempotency-key-reused", problemOf(t, other).Type)

	over := s.refund(t, id, uuid.NewString(), `{"amount": "70.01", "reason": "too much"}`)
	require.Equal(t, http.StatusUnprocessableEntity, over.status)
	require.Equal(t, "urn:chargeonce:problem:refund-exceeds-charge", problemOf(t, over).Type)

	rest := s.refund(t, id, uuid.NewString(), `{"reason": "returned"}`)
	require.Equal(t, http.StatusOK, rest.status, "body: %s", rest.body)
	require.Equal(t, "70.00", refundOf(t, rest).Amount, "no amount refunds the rest")
	require.Equal(t, "refunded", s.order(t, id).Status)

	nothing := s.refund(t, id, uuid.NewString(), `{"reason": "again"}`)
	require.Equal(t, http.StatusUnprocessableEntity, nothing.status, "body: %s", nothing.body)
	require.Len(t, s.provider.Refunds(), 2, "one refund at the provider per refund intent")
}

func TestRefund_TenConcurrentRefundsNeverPassTheCharge(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget})
	id := s.paidOrder(t, "100.00")

	var wg sync.WaitGroup
	statuses := make([]int, 10)
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = s.refundNoFatal(id, uuid.NewString(), `{"amount": "30.00", "reason": "race"}`)
		})
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, st := range statuses {
		switch st {
		case http.StatusOK:
			ok++
		case http.StatusUnprocessableEntity:
			refused++
		}
	}
	require.Equal(t, 3, ok, "statuses %v", statuses)
	require.Equal(t, 7, refused, "statuses %v", statuses)
	var total int64
	for _, r := range s.provider.Refunds() {
		total += r.Amount
	}
	require.EqualValues(t, 9000, total, "the provider refunded three times 30.00 of the 100.00")
}

// refundNoFatal is refund for goroutines: a failed exchange is status 0.
func (s *checkoutStack) refundNoFatal(id int64, key, body string) int {
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/orders/%d/refunds", s.apiURL, id), strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := testHTTP.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestRefund_PendingIsSettledByTheEventAndAFailureAfterSuccessIsShown(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget, ProviderEvents: true})
	id := s.paidOrder(t, "50.00")
	s.provider.HoldRefunds(true)

	key := uuid.NewString()
	held := s.refund(t, id, key, `{"reason": "held"}`)
	require.Equal(t, http.StatusAccepted, held.status, "body: %s", held.body)
	r := refundOf(t, held)
	require.Equal(t, "pending", r.Status)
	require.Equal(t, "/api/refunds/"+r.ID, held.header.Get("Location"))

	refunds := s.provider.Refunds()
	require.Len(t, refunds, 1)
	_, err := s.provider.SettleRefund(refunds[0].ID, fakeprovider.RefundSucceeded, "")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.getRefund(t, r.ID).Status == "succeeded" }, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, "refunded", s.order(t, id).Status)

	_, err = s.provider.SettleRefund(refunds[0].ID, fakeprovider.RefundFailed, "expired_or_canceled_card")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.getRefund(t, r.ID).Status == "failed" }, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, "paid", s.order(t, id).Status, "the money is not back")
	require.Contains(t, s.metrics(t), `chargeonce_alerts_total{alert="refund_failed_after_success"} 1`)
}

func (s *checkoutStack) getRefund(t *testing.T, id string) refundView {
	t.Helper()
	res, err := s.send(http.MethodGet, "/api/refunds/"+id, "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	return refundOf(t, res)
}
