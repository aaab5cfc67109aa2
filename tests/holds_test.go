package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"

	"chargeonce"
	"chargeonce/activities/activitiestest"
	"chargeonce/api/wire"
	"chargeonce/fakeprovider"
	"chargeonce/internal/openapitest"
	"chargeonce/workflows"
)

// heldOrder is an order as the API shows it, with its hold and moves.
type heldOrder struct {
	Status string      `json:"status"`
	Hold   *wire.Hold  `json:"hold"`
	Moves  []wire.Move `json:"moves"`
}

// move sends a capture or a void of the order under the Idempotency-Key.
func (s *checkoutStack) move(t *testing.T, kind chargeonce.MoveKind, id int64, key, body string) checkoutResponse {
	t.Helper()
	return s.sendMove(t, kind, id, key, body, false)
}

// sendMove is move; invalid marks a request that the OpenAPI document
// forbids on purpose, whose answer alone is checked against it.
func (s *checkoutStack) sendMove(t *testing.T, kind chargeonce.MoveKind, id int64, key, body string, invalid bool) checkoutResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/orders/%d/%s", s.apiURL, id, kind), strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.apiKey)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Idempotency-Key", activitiestest.Quoted(key))
	if invalid {
		openapitest.ResponsesOnly(req)
	}
	res, err := s.api.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return checkoutResponse{status: res.StatusCode, header: res.Header, body: data}
}

// manualCheckout pays the order by a manual capture, which authorizes it.
func (s *checkoutStack) manualCheckout(t *testing.T, id int64) {
	t.Helper()
	res, err := s.send(http.MethodPost, fmt.Sprintf("/api/orders/%d/checkout", id), `{"card_token": "tok_visa", "capture": "manual"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	var answer struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(res.body, &answer))
	require.Equal(t, string(chargeonce.OrderAuthorized), answer.Status)
}

func (s *checkoutStack) heldOrder(t *testing.T, id int64) heldOrder {
	t.Helper()
	res, err := s.send(http.MethodGet, fmt.Sprintf("/api/orders/%d", id), "")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	var o heldOrder
	require.NoError(t, json.Unmarshal(res.body, &o))
	return o
}

// requireWorkflowClosed waits until the payment workflow of the attempt
// has completed, which it does once its hold has ended.
func (s *checkoutStack) requireWorkflowClosed(t *testing.T, attemptKey string) {
	t.Helper()
	require.Eventually(t, func() bool {
		desc, err := s.temporal.DescribeWorkflowExecution(context.Background(), workflows.WorkflowID(attemptKey), "")
		return err == nil && desc.GetWorkflowExecutionInfo().GetStatus() == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, 20*time.Second, 50*time.Millisecond, "the payment workflow of %s keeps waiting for a hold that ended", attemptKey)
}

// A hold is captured or voided once, through the API, under the rules of
// Idempotency-Keys; each move ends the payment's wait for its deadline,
// tells the merchant, and leaves the provider's books as ours.
func TestHolds_CaptureAndVoidEndAHoldOnceThroughTheAPI(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: articleTiming(), Budget: articleBudget})

	captured := s.createOrder(t, "100.00", "TRY")
	s.manualCheckout(t, captured)
	o := s.heldOrder(t, captured)
	require.Equal(t, "authorized", o.Status)
	require.NotNil(t, o.Hold)
	require.Equal(t, "authorized", o.Hold.Status)
	require.Equal(t, fakeprovider.ChargeAuthorized, s.onlyCharge(t).Status)

	// Bad input changes nothing.
	require.Equal(t, http.StatusUnprocessableEntity, s.move(t, chargeonce.MoveCapture, captured, uuid.NewString(), `{"amount": "150.00"}`).status)
	require.Equal(t, http.StatusBadRequest, s.sendMove(t, chargeonce.MoveCapture, captured, uuid.NewString(), `{"amount": "ten"}`, true).status)
	require.Equal(t, "authorized", s.heldOrder(t, captured).Status)

	key := uuid.NewString()
	first := s.move(t, chargeonce.MoveCapture, captured, key, `{"amount": "40.00"}`)
	require.Equal(t, http.StatusOK, first.status)
	replay := s.move(t, chargeonce.MoveCapture, captured, key, `{"amount": "40.00"}`)
	require.Equal(t, http.StatusOK, replay.status)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	require.Equal(t, http.StatusUnprocessableEntity, s.move(t, chargeonce.MoveCapture, captured, key, `{"amount": "30.00"}`).status)
	again := s.move(t, chargeonce.MoveCapture, captured, uuid.NewString(), "")
	require.Equal(t, http.StatusConflict, again.status, "a second capture: %s", again.body)
	require.Equal(t, string(wire.ProblemNotHeld), problemOf(t, again).Type)
	late := s.move(t, chargeonce.MoveVoid, captured, uuid.NewString(), "")
	require.Equal(t, http.StatusConflict, late.status, "a void after the capture: %s", late.body)
	require.Contains(t, problemOf(t, late).Detail, "refund", "a void after a capture names refunds as the way back")

	o = s.heldOrder(t, captured)
	require.Equal(t, "captured", o.Status)
	require.Equal(t, "40.00", o.Hold.Captured)
	require.Len(t, o.Moves, 1)
	require.Equal(t, "succeeded", o.Moves[0].Status)
	got := s.onlyCharge(t)
	require.Equal(t, fakeprovider.ChargeSucceeded, got.Status)
	require.NotNil(t, got.AmountCaptured)
	require.Equal(t, int64(4000), *got.AmountCaptured)

	// Refunds return the captured money, and no more.
	require.Equal(t, http.StatusUnprocessableEntity, s.refund(t, captured, uuid.NewString(), `{"amount": "50.00", "reason": "damaged"}`).status)
	require.Equal(t, http.StatusOK, s.refund(t, captured, uuid.NewString(), `{"amount": "40.00", "reason": "damaged"}`).status)
	require.Equal(t, "refunded", s.heldOrder(t, captured).Status)

	voided := s.createOrder(t, "25.00", "TRY")
	s.manualCheckout(t, voided)
	require.Equal(t, http.StatusOK, s.move(t, chargeonce.MoveVoid, voided, uuid.NewString(), "").status)
	require.Equal(t, http.StatusConflict, s.move(t, chargeonce.MoveCapture, voided, uuid.NewString(), "").status, "a capture after the void")
	require.Equal(t, "voided", s.heldOrder(t, voided).Status)

	// Each move told the payment workflow, which closed with its hold.
	for _, id := range []int64{captured, voided} {
		_, attempts, err := s.store.GetOrder(t.Context(), id)
		require.NoError(t, err)
		s.requireWorkflowClosed(t, attempts[0].Key)
	}

	// The merchant heard of each.
	types := func(id int64) []string {
		var out []string
		for _, e := range s.orderEvents(t, id) {
			out = append(out, e.Type)
		}
		return out
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, []string{"payment.authorized", "payment.captured", "refund.succeeded"}, types(captured))
		assert.Equal(c, []string{"payment.authorized", "payment.voided"}, types(voided))
	}, 10*time.Second, 50*time.Millisecond)
}

// onlyCharge is the one charge the provider holds.
func (s *checkoutStack) onlyCharge(t *testing.T) fakeprovider.Charge {
	t.Helper()
	charges := s.provider.Charges()
	require.Len(t, charges, 1)
	return charges[0]
}
