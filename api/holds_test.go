package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"chargeonce"
	"chargeonce/internal/apikey"
	"chargeonce/store"
	"chargeonce/workflows"
)

// These tests need the store's holds (store.HoldStore): an order is
// authorized through the store, as the payment workflow would, and the
// move's workflow is a mock that answers the update with the result each
// test names; a test that expects nothing sent sets no expectation, so
// that any call to Temporal fails it.

// holdsAPI is the API whose Temporal is a mock.
type holdsAPI struct {
	*testAPI
	temporal *mocks.Client
}

func startHoldsAPI(t *testing.T) *holdsAPI {
	t.Helper()
	temporal := &mocks.Client{}
	t.Cleanup(func() { temporal.AssertExpectations(t) })
	a := &holdsAPI{testAPI: startTestAPIWith(t, nil, temporal, nil, nil), temporal: temporal}
	timing, err := workflows.DefaultTiming().Encode()
	require.NoError(t, err)
	_, err = a.store.PublishTiming(context.Background(), timing, false)
	require.NoError(t, err)
	return a
}

// started is a start of Update-With-Start that the server accepted.
type started struct{}

func (started) Get(context.Context) (client.WorkflowRun, error) { return nil, nil }

// expectMove expects one Update-With-Start of a move's workflow of kind,
// answered with res.
func (a *holdsAPI) expectMove(kind chargeonce.MoveKind, res workflows.MoveResult) {
	a.temporal.On("NewWithStartWorkflowOperation", mock.MatchedBy(func(o client.StartWorkflowOptions) bool {
		return chargeonce.ValidKey(o.ID) && o.TaskQueue == chargeonce.TaskQueue
	}), mock.Anything, mock.MatchedBy(func(in workflows.MoveInput) bool { return in.Intent.Kind == kind })).
		Return(started{}).Once()
	handle := &mocks.WorkflowUpdateHandle{}
	handle.On("Get", mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		*args.Get(1).(*workflows.MoveResult) = res
	}).Return(nil).Once()
	a.temporal.On("UpdateWithStartWorkflow", mock.Anything, mock.MatchedBy(func(o client.UpdateWithStartWorkflowOptions) bool {
		return o.UpdateOptions.UpdateName == chargeonce.UpdateMove
	})).Return(handle, nil).Once()
}

// authorizedOrder stores an order of 548.90 TRY whose manual capture's
// attempt authorized a hold, and returns it with the attempt's key.
func (a *holdsAPI) authorizedOrder(t *testing.T) (int64, string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	order, err := a.store.CreateOrder(ctx, chargeonce.Money{Minor: 54890, Currency: "TRY"}, "Collected works")
	require.NoError(t, err)
	_, attempt, _, err := a.store.GetOrStartAttempt(ctx, store.NewAttempt{
		OrderID: order.ID, CardHash: chargeonce.LegacyCardHash("tok_visa"), Key: uuid.Must(uuid.NewV7()).String(),
		ReferencePrefix: "chargeonce", Now: now, AbandonAfter: 30 * time.Minute, Provider: chargeonce.DefaultProvider,
		Capture: chargeonce.CaptureManual, OnDeadline: chargeonce.DeadlineVoid,
	})
	require.NoError(t, err)
	_, err = a.store.SettleAuthorization(ctx, attempt.Key, store.NewHold{
		ChargeID: "ch_000001", Deadline: now.Add(6 * 24 * time.Hour), OnDeadline: chargeonce.DeadlineVoid, At: now,
	})
	require.NoError(t, err)
	return order.ID, attempt.Key
}

// move posts a capture (path "capture") or a void of the order under the
// Idempotency-Key key.
func (a *holdsAPI) move(t *testing.T, orderID int64, path, key, body string) (int, http.Header, []byte) {
	t.Helper()
	contentType := "application/json"
	if body == "" {
		contentType = ""
	}
	return a.sendWith(t, map[string]string{"Authorization": "Bearer " + a.key, "Content-Type": contentType, "Idempotency-Key": strconv.Quote(key)},
		http.MethodPost, fmt.Sprintf("/api/orders/%d/%s", orderID, path), body)
}

type moveBody struct {
	ID          string  `json:"id"`
	Kind        string  `json:"kind"`
	Status      string  `json:"status"`
	Amount      string  `json:"amount"`
	DeclineCode *string `json:"declineCode"`
}

func decodeMove(t *testing.T, data []byte) moveBody {
	t.Helper()
	var m moveBody
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// requireUnmoved checks that the order's hold is still authorized and has
// no move.
func (a *holdsAPI) requireUnmoved(t *testing.T, orderID int64) {
	t.Helper()
	ctx := context.Background()
	h, err := a.store.OrderHold(ctx, orderID)
	require.NoError(t, err)
	require.Equal(t, chargeonce.HoldAuthorized, h.Status)
	moves, err := a.store.OrderMoves(ctx, orderID)
	require.NoError(t, err)
	require.Empty(t, moves)
}

func TestHolds_ACaptureThatSucceedsIs200(t *testing.T) {
	a := startHoldsAPI(t)
	id, _ := a.authorizedOrder(t)
	a.expectMove(chargeonce.MoveCapture, workflows.MoveResult{Status: chargeonce.MoveSucceeded, Hold: chargeonce.HoldCaptured, Captured: 50000})
	status, _, data := a.move(t, id, "capture", "cap-1", `{"amount": "500.00"}`)
	require.Equal(t, http.StatusOK, status, "body: %s", data)
	m := decodeMove(t, data)
	require.Equal(t, "capture", m.Kind)
	require.Equal(t, "succeeded", m.Status)
	require.Equal(t, "500.00", m.Amount)

	// The mock's workflow records nothing, so the database still holds
	// the move pending, as it stood before the workflow's answer.
	status, _, data = a.send(t, http.MethodGet, "/api/captures/"+m.ID, "", "")
	require.Equal(t, http.StatusOK, status, "body: %s", data)
	read := decodeMove(t, data)
	require.Equal(t, m.ID, read.ID)
	require.Equal(t, "capture", read.Kind)
	status, header, data := a.send(t, http.MethodGet, "/api/voids/"+m.ID, "", "")
	requireProblem(t, http.StatusNotFound, status, header, data)
}

func TestHolds_AWholeCaptureTakesNoBody(t *testing.T) {
	a := startHoldsAPI(t)
	id, _ := a.authorizedOrder(t)
	a.expectMove(chargeonce.MoveCapture, workflows.MoveResult{Status: chargeonce.MoveSucceeded, Hold: chargeonce.HoldCaptured, Captured: 54890})
	status, _, data := a.move(t, id, "capture", "cap-all", "")
	require.Equal(t, http.StatusOK, status, "body: %s", data)
	require.Equal(t, "548.90", decodeMove(t, data).Amount)
}

func TestHolds_AVoidOfAnEndedHoldIsDeclined200(t *testing.T) {
	a := startHoldsAPI(t)
	id, _ := a.authorizedOrder(t)
	a.expectMove(chargeonce.MoveVoid, workflows.MoveResult{Status: chargeonce.MoveDeclined, DeclineCode: "hold_expired", Hold: chargeonce.HoldExpired})
	status, _, data := a.move(t, id, "void", "void-1", `{}`)
	require.Equal(t, http.StatusOK, status, "body: %s", data)
	m := decodeMove(t, data)
	require.Equal(t, "declined", m.Status)
	require.NotNil(t, m.DeclineCode)
	require.Equal(t, "hold_expired", *m.DeclineCode)
}

func TestHolds_APendingMoveIs202WithLocation_AndKeepsOthersOut(t *testing.T) {
	a := startHoldsAPI(t)
	id, _ := a.authorizedOrder(t)
	a.expectMove(chargeonce.MoveCapture, workflows.MoveResult{Status: chargeonce.MovePending})
	status, header, data := a.move(t, id, "capture", "cap-1", "")
	require.Equal(t, http.StatusAccepted, status, "body: %s", data)
	m := decodeMove(t, data)
	require.Equal(t, "/api/captures/"+m.ID, header.Get("Location"))

	// The same request within its budget is still being answered.
	status, header, data = a.move(t, id, "capture", "cap-1", "")
	requireProblem(t, http.StatusConflict, status, header, data)
	require.Contains(t, string(data), "request-in-progress")
	require.NotEmpty(t, header.Get("Retry-After"))

	// Another move of the hold waits for the pending one.
	status, header, data = a.move(t, id, "void", "void-1", "")
	p := requireProblem(t, http.StatusConflict, status, header, data)
	require.Contains(t, string(data), "hold-moving")
	require.Contains(t, p.Detail, "pending")

	status, _, data = a.send(t, http.MethodGet, fmt.Sprintf("/api/orders/%d", id), "", "")
	require.Equal(t, http.StatusOK, status)
	var o struct {
		Status string `json:"status"`
		Hold   *struct {
			Status     string `json:"status"`
			Authorized string `json:"authorized"`
			OnDeadline string `json:"onDeadline"`
		} `json:"hold"`
		Moves []moveBody `json:"moves"`
	}
	require.NoError(t, json.Unmarshal(data, &o))
	require.Equal(t, "authorized", o.Status)
	require.NotNil(t, o.Hold)
	require.Equal(t, "authorized", o.Hold.Status)
	require.Equal(t, "548.90", o.Hold.Authorized)
	require.Equal(t, "void", o.Hold.OnDeadline)
	require.Len(t, o.Moves, 1)
	require.Equal(t, m.ID, o.Moves[0].ID)
	require.Equal(t, "pending", o.Moves[0].Status)
}

func TestHolds_ANotProcessedMoveIs503WithRetryAfter(t *testing.T) {
	a := startHoldsAPI(t)
	id, _ := a.authorizedOrder(t)
	a.expectMove(chargeonce.MoveVoid, workflows.MoveResult{Status: chargeonce.MoveNotProcessed})
	status, header, data := a.move(t, id, "void", "void-1", "")
	requireProblem(t, http.StatusServiceUnavailable, status, header, data)
	require.Contains(t, string(data), "nothing-moved")
	require.NotEmpty(t, header.Get("Retry-After"))
}

func TestHolds_AKeyReusedWithAnotherBodyIs422(t *testing.T) {
	a := startHoldsAPI(t)
	id, _ := a.authorizedOrder(t)
	a.expectMove(chargeonce.MoveCapture, workflows.MoveResult{Status: chargeonce.MoveSucceeded, Hold: chargeonce.HoldCaptured, Captured: 100})
	status, _, data := a.move(t, id, "capture", "k", `{"amount": "1.00"}`)
	require.Equal(t, http.StatusOK, status, "body: %s", data)
	status, header, data := a.move(t, id, "capture", "k", `{"amount": "2.00"}`)
	requireProblem(t, http.StatusUnprocessableEntity, status, header, data)
	require.Contains(t, string(data), "idempotency-key-reused")
}

func TestHolds_AnOrderWithoutAHoldIs409(t *testing.T) {
	a := startHoldsAPI(t)
	placed, _ := createOrder(t, a.testAPI, `{"amount": "10.00", "currency": "TRY"}`)
	status, header, data := a.move(t, placed, "capture", "k1", "")
	p := requireProblem(t, http.StatusConflict, status, header, data)
	require.Contains(t, string(data), "not-held")
	require.Contains(t, p.Detail, "never authorized")

	// A captured order's money comes back by a refund, not a void.
	id, attemptKey := a.authorizedOrder(t)
	_, err := a.store.EndHold(context.Background(), attemptKey, chargeonce.HoldCaptured, 54890, time.Now())
	require.NoError(t, err)
	status, header, data = a.move(t, id, "void", "k2", "")
	p = requireProblem(t, http.StatusConflict, status, header, data)
	require.Contains(t, string(data), "not-held")
	require.Contains(t, p.Detail, "refund")
}

func TestHolds_BadRequestsChangeNothing(t *testing.T) {
	a := startHoldsAPI(t)
	id, _ := a.authorizedOrder(t)
	capture := fmt.Sprintf("/api/orders/%d/capture", id)
	for _, tt := range []struct {
		name, path, key, body string
		status                int
		problem               string
	}{
		{"capture over the hold", capture, "k1", `{"amount": "548.91"}`, http.StatusUnprocessableEntity, "capture-exceeds-hold"},
		{"amount with too many decimals", capture, "k2", `{"amount": "1.001"}`, http.StatusBadRequest, "invalid-request"},
		{"amount zero", capture, "k3", `{"amount": "0.00"}`, http.StatusBadRequest, "not positive"},
		{"no such order", "/api/orders/99999/capture", "k4", "", http.StatusNotFound, "not-found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := a.snapshot(t)
			status, header, data := a.sendWith(t, map[string]string{"Authorization": "Bearer " + a.key, "Content-Type": contentTypeOf(tt.body),
				"Idempotency-Key": strconv.Quote(tt.key)}, http.MethodPost, tt.path, tt.body)
			requireProblem(t, tt.status, status, header, data)
			require.Contains(t, string(data), tt.problem)
			require.Equal(t, before, a.snapshot(t))
			a.requireUnmoved(t, id)
		})
	}
	for _, tt := range []struct {
		name, path, key, contentType, body, detail string
	}{
		{"no Idempotency-Key", capture, "", "application/json", `{}`, "with its quotes"},
		{"amount as a number", capture, `"k"`, "application/json", `{"amount": 12.5}`, `"amount"`},
		{"amount not a decimal", capture, `"k"`, "application/json", `{"amount": "twelve"}`, `"amount"`},
		{"empty amount", capture, `"k"`, "application/json", `{"amount": ""}`, `"amount"`},
		{"unknown field", capture, `"k"`, "application/json", `{"amount": "1.00", "reason": "x"}`, `unknown field "reason"`},
		{"a void with an amount", fmt.Sprintf("/api/orders/%d/void", id), `"k"`, "application/json", `{"amount": "1.00"}`, `unknown field "amount"`},
		{"not JSON", capture, `"k"`, "text/plain", `amount=1.00`, "Content-Type"},
		{"bad order id", "/api/orders/abc/capture", `"k"`, "application/json", `{}`, "positive integer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := a.snapshot(t)
			status, header, data := a.sendInvalidWith(t, map[string]string{"Authorization": "Bearer " + a.key, "Content-Type": tt.contentType,
				"Idempotency-Key": tt.key}, http.MethodPost, tt.path, tt.body)
			p := requireProblem(t, http.StatusBadRequest, status, header, data)
			require.Contains(t, p.Detail, tt.detail)
			require.Equal(t, before, a.snapshot(t))
			a.requireUnmoved(t, id)
		})
	}
}

func contentTypeOf(body string) string {
	if body == "" {
		return ""
	}
	return "application/json"
}

func TestHolds_AVoidNeedsTheRefundScopeAndACaptureTheCheckoutScope(t *testing.T) {
	a := startHoldsAPI(t)
	id, _ := a.authorizedOrder(t)
	checkoutOnly := a.newKey(t, apikey.ScopeCheckout)
	status, header, data := a.sendWith(t, map[string]string{"Authorization": "Bearer " + checkoutOnly, "Idempotency-Key": `"k"`},
		http.MethodPost, fmt.Sprintf("/api/orders/%d/void", id), "")
	requireProblem(t, http.StatusForbidden, status, header, data)
	refundOnly := a.newKey(t, apikey.ScopeRefund)
	status, header, data = a.sendWith(t, map[string]string{"Authorization": "Bearer " + refundOnly, "Idempotency-Key": `"k"`},
		http.MethodPost, fmt.Sprintf("/api/orders/%d/capture", id), "")
	requireProblem(t, http.StatusForbidden, status, header, data)
	a.requireUnmoved(t, id)
}

func TestHolds_ReadingAMoveNeedsAKey(t *testing.T) {
	a := startHoldsAPI(t)
	status, header, data := a.sendInvalid(t, http.MethodGet, "/api/captures/not-a-key", "", "")
	requireProblem(t, http.StatusBadRequest, status, header, data)
	status, header, data = a.send(t, http.MethodGet, "/api/voids/"+uuid.Must(uuid.NewV7()).String(), "", "")
	requireProblem(t, http.StatusNotFound, status, header, data)
}
