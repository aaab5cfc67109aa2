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
	"go.temporal.io/sdk/converter"

	"chargeonce"
	"chargeonce/activities/activitiestest"
	"chargeonce/api"
	"chargeonce/fakeprovider"
	"chargeonce/internal/idemkey"
	"chargeonce/internal/openapitest"
	"chargeonce/internal/syncbuf"
	"chargeonce/internal/webhook"
	"chargeonce/refund"
	"chargeonce/store"
	"chargeonce/workflows"
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

// refund sends one refund request of the order under the Idempotency-Key,
// which it quotes as the header's Structured Field String.
func (s *checkoutStack) refund(t *testing.T, id int64, key, body string) checkoutResponse {
	t.Helper()
	header := ""
	if key != "" {
		header = activitiestest.Quoted(key)
	}
	return s.refundWithHeader(t, id, header, body)
}

// refundWithHeader is refund with the Idempotency-Key header as it is
// sent; an empty one is not sent.
func (s *checkoutStack) refundWithHeader(t *testing.T, id int64, header, body string) checkoutResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/orders/%d/refunds", s.apiURL, id), strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set("Idempotency-Key", header)
	}
	if _, err := idemkey.Parse(req.Header.Values("Idempotency-Key")); err != nil {
		// The document requires a String: a request without one is sent
		// on purpose, and only its answer is checked.
		openapitest.ResponsesOnly(req)
	}
	resp, err := s.api.Do(req)
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

// operationOf is the Operation search attribute of the workflow, as its
// execution holds it: describing a workflow reads its own state, which
// needs no wait for the visibility store.
func (s *checkoutStack) operationOf(t *testing.T, workflowID string) string {
	t.Helper()
	desc, err := s.temporal.DescribeWorkflowExecution(t.Context(), workflowID, "")
	require.NoError(t, err)
	payload, ok := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.SearchAttrOperation.GetName()]
	require.True(t, ok, "workflow %s has no %s search attribute", workflowID, workflows.SearchAttrOperation.GetName())
	var operation string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(payload, &operation))
	return operation
}

func TestRefund_SucceedsInPartsAndTheKeyRulesHold(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget})
	id := s.paidOrder(t, "100.00")

	missing := s.refund(t, id, "", `{"amount": "10.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusBadRequest, missing.status)
	require.Equal(t, "urn:chargeonce:problem:idempotency-key-required", problemOf(t, missing).Type)

	key := uuid.NewString()
	// The header is a Structured Field String: the key without its
	// quotes is a Token, refused with a problem that names the form.
	bare := s.refundWithHeader(t, id, key, `{"amount": "30.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusBadRequest, bare.status, "body: %s", bare.body)
	require.Equal(t, "urn:chargeonce:problem:idempotency-key-required", problemOf(t, bare).Type)
	require.Contains(t, problemOf(t, bare).Detail, "Structured Field String")

	first := s.refund(t, id, key, `{"amount": "30.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusOK, first.status, "body: %s", first.body)
	r := refundOf(t, first)
	require.Equal(t, "succeeded", r.Status)
	require.Equal(t, "30.00", r.Amount)
	require.NotNil(t, r.ProviderRefundID)
	require.Equal(t, "partially_refunded", s.order(t, id).Status)
	_, attempts, err := s.store.GetOrder(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, string(chargeonce.OperationCharge), s.operationOf(t, workflows.WorkflowID(attempts[0].Key)),
		"the Web UI tells a charge from a refund")
	require.Equal(t, string(chargeonce.OperationRefund), s.operationOf(t, workflows.RefundWorkflowID(r.ID)))

	again := s.refund(t, id, key, `{"amount": "30.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusOK, again.status, "body: %s", again.body)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, r.ID, refundOf(t, again).ID, "the same key and body answer the same refund")

	other := s.refund(t, id, key, `{"amount": "31.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusUnprocessableEntity, other.status)
	require.Equal(t, "urn:chargeonce:problem:idempotency-key-reused", problemOf(t, other).Type)
	unpaid := s.refund(t, s.createOrder(t, "100.00", "TRY"), key, `{"amount": "30.00", "reason": "damaged"}`)
	require.Equal(t, http.StatusUnprocessableEntity, unpaid.status, "another order, never paid: body: %s", unpaid.body)
	require.Equal(t, "urn:chargeonce:problem:idempotency-key-reused", problemOf(t, unpaid).Type)

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

	// A key stored before the header was read as a String was stored as
	// it was sent, bare; sent now as a String, it finds its refund.
	legacyOrder := s.paidOrder(t, "10.00")
	legacy := refund.Request{OrderID: legacyOrder, Reason: "legacy", RequestKey: "legacy-key-1"}
	stored, _, err := s.store.StartRefund(t.Context(), store.NewRefund{
		OrderID: legacyOrder, Reason: legacy.Reason, Origin: chargeonce.RefundByMerchant, Key: uuid.NewString(),
		ReferencePrefix: "shop", RequestKey: legacy.RequestKey, RequestFingerprint: legacy.Fingerprint(), Now: time.Now().Add(-time.Hour),
	})
	require.NoError(t, err)
	_, err = s.store.SettleRefund(t.Context(), stored.Key, chargeonce.RefundSucceeded, "re_legacy", "", time.Now())
	require.NoError(t, err)
	found := s.refund(t, legacyOrder, legacy.RequestKey, `{"reason": "legacy"}`)
	require.Equal(t, http.StatusOK, found.status, "body: %s", found.body)
	require.Equal(t, "true", found.header.Get("Idempotent-Replayed"))
	require.Equal(t, stored.Key, refundOf(t, found).ID)
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
	req.Header.Set("Idempotency-Key", activitiestest.Quoted(key))
	resp, err := s.api.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestRefund_PendingIsSettledByTheEventAndAFailureAfterSuccessIsShown(t *testing.T) {
	// A budget far longer than the test keeps the first request "in
	// flight" for every retry below, whatever the machine's speed.
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: 10 * time.Minute, ProviderEvents: true})
	id := s.paidOrder(t, "50.00")
	s.provider.HoldRefunds(true)

	key := uuid.NewString()
	held := s.refund(t, id, key, `{"reason": "held"}`)
	require.Equal(t, http.StatusAccepted, held.status, "body: %s", held.body)
	r := refundOf(t, held)
	require.Equal(t, "pending", r.Status)
	require.Equal(t, "/api/refunds/"+r.ID, held.header.Get("Location"))

	inFlight := s.refund(t, id, key, `{"reason": "held"}`)
	require.Equal(t, http.StatusConflict, inFlight.status, "body: %s", inFlight.body)
	require.Equal(t, "urn:chargeonce:problem:request-in-progress", problemOf(t, inFlight).Type)
	require.NotEmpty(t, inFlight.header.Get("Retry-After"))

	refunds := s.provider.Refunds()
	require.Len(t, refunds, 1)
	_, err := s.provider.SettleRefund(refunds[0].ID, fakeprovider.RefundSucceeded, "")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.getRefund(t, r.ID).Status == "succeeded" }, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, "refunded", s.order(t, id).Status)
	replay := s.refund(t, id, key, `{"reason": "held"}`)
	require.Equal(t, http.StatusOK, replay.status, "a settled refund is answered as it stands: %s", replay.body)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))

	_, err = s.provider.SettleRefund(refunds[0].ID, fakeprovider.RefundFailed, "expired_or_canceled_card")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.getRefund(t, r.ID).Status == "failed" }, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, "paid", s.order(t, id).Status, "the money is not back")
	require.Contains(t, s.metrics(t), `chargeonce_alerts_total{alert="refund_failed_after_success"} 1`)
}

// TestRefund_ARefundFailedEventTheProviderDoesNotConfirmChangesNothing
// delivers a correctly signed refund.failed for a refund that the provider
// holds as succeeded: a hint, which the lookup does not confirm, so the
// refund stays succeeded, the order refunded, and nothing more can be
// refunded of the charge.
func TestRefund_ARefundFailedEventTheProviderDoesNotConfirmChangesNothing(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget, ProviderEvents: true})
	id := s.paidOrder(t, "100.00")
	whole := s.refund(t, id, uuid.NewString(), `{"reason": "returned"}`)
	require.Equal(t, http.StatusOK, whole.status, "body: %s", whole.body)
	r := refundOf(t, whole)
	require.Equal(t, "succeeded", r.Status)
	refunds := s.provider.Refunds()
	require.Len(t, refunds, 1)
	at := refunds[0]

	status, result := s.deliverEvent(t, fmt.Sprintf(`{"type":"refund.failed","data":{"id":%q,"object":"refund","charge":%q,"amount":%d,"currency":%q,"status":"failed","failure_reason":"expired_or_canceled_card","merchant_reference":%q}}`,
		at.ID, at.Charge, at.Amount, at.Currency, at.MerchantReference))

	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "unconfirmed", result)
	require.Contains(t, s.metrics(t), `chargeonce_provider_events_total{result="unconfirmed"} 1`)
	require.Equal(t, "succeeded", s.getRefund(t, r.ID).Status)
	require.Equal(t, "refunded", s.order(t, id).Status)
	again := s.refund(t, id, uuid.NewString(), `{"amount": "10.00", "reason": "again"}`)
	require.Equal(t, http.StatusUnprocessableEntity, again.status, "body: %s", again.body)
	require.Equal(t, "urn:chargeonce:problem:refund-exceeds-charge", problemOf(t, again).Type)
	require.Len(t, s.provider.Refunds(), 1)
}

// deliverEvent posts body to the API as the provider's event, signed with
// the stack's webhook secret, and returns the status and the result.
func (s *checkoutStack) deliverEvent(t *testing.T, body string) (int, string) {
	t.Helper()
	secret, _, err := webhook.LoadOrCreateSecretFile(s.stack.WebhookSecretFile())
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, s.apiURL+api.WebhookPath, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	webhook.Sign(req.Header, "msg_"+strings.ReplaceAll(uuid.NewString(), "-", ""), time.Now(), []byte(body), secret)
	resp, err := s.api.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var receipt struct {
		Result string `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&receipt))
	return resp.StatusCode, receipt.Result
}

func (s *checkoutStack) getRefund(t *testing.T, id string) refundView {
	t.Helper()
	res, err := s.send(http.MethodGet, "/api/refunds/"+id, "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	return refundOf(t, res)
}

// TestRefund_LateChargeIsAdoptedOrRefundedByArrival plants, through the
// fake provider, a succeeded charge for a declined attempt and announces it
// as a provider that finished the charge late would: before the customer
// paid again, the order adopts it; after, it is refunded under its own key
// with the alert late_charge_refunded. Each order ends with one net charge.
func TestRefund_LateChargeIsAdoptedOrRefundedByArrival(t *testing.T) {
	logs := &syncbuf.Buffer{}
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget, ProviderEvents: true, Logs: logs})
	t.Cleanup(func() {
		if t.Failed() {
			for line := range strings.SplitSeq(logs.String(), "\n") {
				if strings.Contains(line, "event") || strings.Contains(line, "late") || strings.Contains(line, "level=ERROR") || strings.Contains(line, "level=WARN") {
					t.Log(line)
				}
			}
		}
	})
	// declined returns the declined attempt's key and merchant reference.
	declined := func(id int64) [2]string {
		res := s.checkout(t, id, "tok_chargeDeclined")
		require.Equal(t, http.StatusPaymentRequired, res.status, "body: %s", res.body)
		a := s.order(t, id).Attempts[0]
		return [2]string{a.IdempotencyKey, a.MerchantReference}
	}
	// plant makes the charge the provider finished late for the attempt.
	plant := func(attempt [2]string) fakeprovider.Charge {
		c, err := s.provider.PlantCharge(fakeprovider.PlantedCharge{
			Amount: 2000, Currency: "TRY", IdempotencyKey: attempt[0], MerchantReference: attempt[1],
			Status: fakeprovider.ChargeSucceeded, SendEvent: true,
		})
		require.NoError(t, err)
		return c
	}

	t.Run("before the customer pays again", func(t *testing.T) {
		id := s.createOrder(t, "20.00", "TRY")
		late := plant(declined(id))
		o := s.waitPaid(t, id)
		require.Equal(t, late.ID, *o.ProviderPaymentID, "the late charge pays the order")
		require.Empty(t, s.orderRefunds(t, id), "nothing is refunded")
		require.NotContains(t, s.metrics(t), `chargeonce_alerts_total{alert="late_charge_refunded"} 1`)
	})

	t.Run("after the customer paid again", func(t *testing.T) {
		id := s.createOrder(t, "20.00", "TRY")
		attempt := declined(id)
		paid := s.checkout(t, id, "tok_visa")
		require.Equal(t, http.StatusOK, paid.status, "body: %s", paid.body)
		late := plant(attempt)
		var refunds []refundView
		require.Eventually(t, func() bool {
			refunds = s.orderRefunds(t, id)
			return len(refunds) == 1 && refunds[0].Status == "succeeded"
		}, 20*time.Second, 100*time.Millisecond)
		require.Equal(t, late.ID, refunds[0].ChargeID)
		require.Equal(t, "late_charge", refunds[0].Origin)
		require.Equal(t, "20.00", refunds[0].Amount, "the whole late charge")
		o := s.order(t, id)
		require.Equal(t, "paid", o.Status, "the order stays paid by the charge the customer made")
		require.NotEqual(t, late.ID, *o.ProviderPaymentID)
		require.Contains(t, s.metrics(t), `chargeonce_alerts_total{alert="late_charge_refunded"} 1`)
	})
}

// orderRefunds returns the order's refunds as GET /api/orders/{id} shows
// them.
func (s *checkoutStack) orderRefunds(t *testing.T, id int64) []refundView {
	t.Helper()
	res, err := s.send(http.MethodGet, fmt.Sprintf("/api/orders/%d", id), "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	var o struct {
		Refunds []refundView `json:"refunds"`
	}
	require.NoError(t, json.Unmarshal(res.body, &o))
	return o.Refunds
}
