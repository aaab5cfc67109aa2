package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"chargeonce"
	"chargeonce/fakeprovider"
	"chargeonce/store"
	"chargeonce/verify/invariant"
)

// checkInterval is the reconciliation interval the checker allows past an
// abandon deadline in these tests.
const checkInterval = time.Second

// checkInvariants runs the checker over the stack, reading the provider
// over HTTP as it would read one in another process.
func checkInvariants(t *testing.T, s *checkoutStack, st store.Store, now time.Time, ids ...int64) invariant.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	report, err := invariant.Check(ctx, invariant.Config{
		Store:    st,
		Provider: invariant.OverHTTP{BaseURL: s.providerURL, Client: testHTTP},
		Temporal: s.temporal,
		Interval: checkInterval,
		Now:      func() time.Time { return now },
	}, ids)
	require.NoError(t, err)
	return report
}

func TestInvariant_CleanRunReportsNothing(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	paid := s.createOrder(t, "548.90", "TRY")
	require.Equal(t, http.StatusOK, s.checkout(t, paid, "tok_visa").status)
	declinedThenPaid := s.createOrder(t, "1500", "JPY")
	require.Equal(t, http.StatusPaymentRequired, s.checkout(t, declinedThenPaid, "tok_chargeDeclined").status)
	require.Equal(t, http.StatusOK, s.checkout(t, declinedThenPaid, "tok_mastercard").status)
	untouched := s.createOrder(t, "1.005", "KWD")

	report := checkInvariants(t, s, s.store, time.Now(), paid, declinedThenPaid, untouched)
	require.True(t, report.OK(), "%s", report)
	require.Equal(t, invariant.Report{Orders: 3, Attempts: 3, Charges: 3, ChargeRequests: 3, Workflows: 3, Histories: 3,
		RefundsByStatus: map[chargeonce.RefundStatus]int{}, LateCharges: map[chargeonce.LateChargeDecision]int{},
		Holds: map[chargeonce.HoldStatus]int{}, Moves: map[string]int{}}, report,
		"everything was looked at")
	require.Contains(t, report.String(), "0 violations")

	// The provider read in process gives the same report.
	inProcess, err := invariant.Check(t.Context(), invariant.Config{
		Store: s.store, Provider: invariant.InProcess{Provider: s.provider}, Temporal: s.temporal, Interval: checkInterval,
	}, []int64{paid, declinedThenPaid, untouched})
	require.NoError(t, err)
	require.Equal(t, report, inProcess)
}

func TestInvariant_SecondChargeWithAnotherKeyIsADoubleCharge(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	id := s.createOrder(t, "548.90", "TRY")
	res := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, res.status, "body: %s", res.body)
	var body paidBody
	require.NoError(t, json.Unmarshal(res.body, &body))
	_, attempts, err := s.store.GetOrder(t.Context(), id)
	require.NoError(t, err)
	ref := attempts[0].MerchantReference

	// Someone charges the same order again, straight at the provider, under
	// a key that is not the attempt's.
	otherKey := "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"
	s.postToProvider(t, otherKey, fmt.Sprintf(`{"amount": 54890, "currency": "TRY", "source": "tok_visa", "merchant_reference": %q}`, ref))
	second := s.chargeOf(t, otherKey)

	report := checkInvariants(t, s, s.store, time.Now(), id)
	require.False(t, report.OK())
	double := report.Of(invariant.NoDoubleCharge)
	require.Len(t, double, 1, "%s", report)
	require.Equal(t, invariant.Violation{Invariant: invariant.NoDoubleCharge, Order: id, Key: otherKey, ChargeID: second.ID},
		invariant.Violation{Invariant: double[0].Invariant, Order: double[0].Order, Key: double[0].Key, ChargeID: double[0].ChargeID})
	require.Contains(t, double[0].Message, fmt.Sprintf("order keeps 2 net charges: %s, %s; no repair recorded for it", body.ProviderPaymentID, second.ID))

	// Within the repair's window the second charge is not yet a double
	// charge; refunded in whole at the provider it is none at all, but a
	// refund that no refund intent of ours made is a violation of its own.
	windowed, err := invariant.Check(t.Context(), invariant.Config{Store: s.store, Provider: invariant.InProcess{Provider: s.provider},
		Temporal: s.temporal, Interval: checkInterval, RepairWindow: time.Hour}, []int64{id})
	require.NoError(t, err)
	require.Empty(t, windowed.Of(invariant.NoDoubleCharge), "%s", windowed)
	refundKey := "0199aaaa-bbbb-7ccc-8ddd-ffffffffffff"
	s.postRefundToProvider(t, refundKey, fmt.Sprintf(`{"charge": %q, "amount": 54890, "currency": "TRY", "merchant_reference": "by hand"}`, second.ID))
	refunded := checkInvariants(t, s, s.store, time.Now(), id)
	require.Empty(t, refunded.Of(invariant.NoDoubleCharge), "%s", refunded)
	require.Empty(t, refunded.Of(invariant.NoOverRefund), "%s", refunded)
	require.ElementsMatch(t, []invariant.Violation{
		{Invariant: invariant.RefundsMatchIntents, Key: refundKey, ChargeID: second.ID, Message: "refund re_000001 under a key that belongs to no refund intent"},
		{Invariant: invariant.RefundsMatchIntents, Key: refundKey, Message: "the provider received a refund under a key that belongs to no refund intent"},
	}, refunded.Of(invariant.RefundsMatchIntents))
	require.Equal(t, 1, refunded.Refunds)

	require.ElementsMatch(t, []invariant.Violation{
		{Invariant: invariant.ChargesMatchAttempts, Order: id, Key: otherKey, ChargeID: second.ID,
			Message: "successful charge under a key that belongs to no attempt"},
		{Invariant: invariant.ChargesMatchAttempts, Order: id, Key: body.IdempotencyKey, ChargeID: body.ProviderPaymentID,
			Message: "attempt marked succeeded has 2 successful charges at the provider"},
	}, report.Of(invariant.ChargesMatchAttempts))
	require.ElementsMatch(t, []invariant.Violation{
		{Invariant: invariant.OneKeyPerAttempt, Order: id, Key: otherKey, ChargeID: second.ID,
			Message: fmt.Sprintf("charge sent with key %s under the reference of key %s", otherKey, body.IdempotencyKey)},
		{Invariant: invariant.OneKeyPerAttempt, Key: otherKey,
			Message: "the provider received a charge under a key that belongs to no attempt"},
	}, report.Of(invariant.OneKeyPerAttempt))
	require.Empty(t, report.Of(invariant.AmountsAgree), "the amounts agree")
	require.Contains(t, report.String(), "1 no double charge")
}

// postRefundToProvider refunds at the provider behind chargeonce's back.
func (s *checkoutStack) postRefundToProvider(t *testing.T, key, body string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.providerURL+"/v1/refunds", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", `"`+key+`"`)
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}

// pastAttempt stores, in a database of its own that no sweep visits, an
// order with an open attempt created an hour ago that was to be abandoned
// after a minute, and no workflow.
func pastAttempt(t *testing.T) (store.Store, store.Attempt) {
	t.Helper()
	st, err := store.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "app.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	amount, err := chargeonce.ParseMoney("25.00", "EUR")
	require.NoError(t, err)
	o, err := st.CreateOrder(t.Context(), amount, "forgotten")
	require.NoError(t, err)
	_, a, decision, err := st.GetOrStartAttempt(t.Context(), store.NewAttempt{
		OrderID:         o.ID,
		CardHash:        chargeonce.LegacyCardHash("tok_visa"),
		Key:             "0199aaaa-0000-7000-8000-000000000001",
		ReferencePrefix: "shop",
		Now:             time.Now().Add(-time.Hour),
		AbandonAfter:    time.Minute,
		Provider:        chargeonce.DefaultProvider,
	})
	require.NoError(t, err)
	require.Equal(t, store.DecisionCreated, decision)
	return st, a
}

func TestInvariant_AttemptOpenPastItsDeadlineIsReported(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	st, a := pastAttempt(t)

	withinInterval := checkInvariants(t, s, st, a.AbandonAt.Add(checkInterval/2), a.OrderID)
	require.True(t, withinInterval.OK(), "one interval of grace: %s", withinInterval)

	report := checkInvariants(t, s, st, time.Now(), a.OrderID)
	require.Len(t, report.Violations, 1, "%s", report)
	v := report.Violations[0]
	require.Equal(t, invariant.NoOverdueAttempt, v.Invariant)
	require.Equal(t, a.OrderID, v.Order)
	require.Equal(t, a.Key, v.Key)
	require.Contains(t, v.Message, "past its abandon deadline")
}

func TestInvariant_ChargeOfAnotherAmountIsReported(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	st, a := pastAttempt(t)
	// The attempt's own key and reference, with one cent more.
	s.postToProvider(t, a.Key, fmt.Sprintf(`{"amount": 2501, "currency": "EUR", "source": "tok_visa", "merchant_reference": %q}`, a.MerchantReference))
	charge := s.chargeOf(t, a.Key)

	report := checkInvariants(t, s, st, a.AbandonAt, a.OrderID)
	require.Len(t, report.Violations, 1, "%s", report)
	require.Equal(t, invariant.Violation{Invariant: invariant.AmountsAgree, Order: a.OrderID, Key: a.Key, ChargeID: charge.ID,
		Message: "charge of 2501 EUR for an order of 2500 EUR"}, report.Violations[0])
}

func TestInvariant_ChargeOfANotProcessedAttemptIsReportedAfterItsKeyExpired(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	st, a := pastAttempt(t)
	settled, err := st.SettleAttempt(t.Context(), a.Key, chargeonce.AttemptNotProcessed, "", time.Now())
	require.NoError(t, err)
	require.True(t, settled.Changed)
	require.True(t, checkInvariants(t, s, st, time.Now(), a.OrderID).OK(), "nothing charged, nothing broken")

	// A charge under the attempt's key and reference after all, and then
	// the provider forgets the key.
	s.postToProvider(t, a.Key, fmt.Sprintf(`{"amount": 2500, "currency": "EUR", "source": "tok_visa", "merchant_reference": %q}`, a.MerchantReference))
	charge := s.chargeOf(t, a.Key)
	forgotten, err := s.provider.ExpireKeys(0)
	require.NoError(t, err)
	require.Equal(t, 1, forgotten)

	// The checker's clock stands at the charge's creation, so the age it
	// reports is exactly zero however long the steps above took; with no
	// repair window, that is already past it.
	report := checkInvariants(t, s, st, charge.Created, a.OrderID)
	require.Equal(t, []invariant.Violation{{Invariant: invariant.NothingChargedWhenNotProcessed, Order: a.OrderID, Key: a.Key, ChargeID: charge.ID,
		Message: "attempt marked not_processed has a succeeded charge at the provider"}}, report.Of(invariant.NothingChargedWhenNotProcessed))
	require.Equal(t, []invariant.Violation{{Invariant: invariant.ChargesMatchAttempts, Order: a.OrderID, Key: a.Key, ChargeID: charge.ID,
		Message: "successful charge for an attempt marked not_processed; no repair recorded for it 0s after it was made (window 0s)"}}, report.Of(invariant.ChargesMatchAttempts))
	require.Len(t, report.Violations, 2, "%s", report)
	require.Contains(t, report.String(), "7 nothing charged when not processed")
}

func TestInvariant_TerminatedWorkflowIsReported(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget,
		Mode: fakeprovider.Mode{Name: fakeprovider.ModeDrop}})
	id := s.createOrder(t, "548.90", "TRY")
	res := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusAccepted, res.status, "body: %s", res.body)
	var body paidBody
	require.NoError(t, json.Unmarshal(res.body, &body))

	require.True(t, checkInvariants(t, s, s.store, time.Now(), id).OK(), "an open payment breaks nothing")
	require.NoError(t, s.temporal.TerminateWorkflow(t.Context(), body.IdempotencyKey, "", "operator stopped the payment"))

	report := checkInvariants(t, s, s.store, time.Now(), id)
	require.Len(t, report.Violations, 1, "%s", report)
	v := report.Violations[0]
	require.Equal(t, invariant.WorkflowsHealthy, v.Invariant)
	require.Equal(t, id, v.Order)
	require.Equal(t, body.IdempotencyKey, v.Key)
	require.Contains(t, v.Message, "payment workflow was terminated")
}

func TestInvariant_NondeterminismErrorIsReported(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{Timing: apiTableTiming(), Budget: apiTableBudget})
	const queue, id = "nondeterminism", "diverged-payment"
	as := workflow.RegisterOptions{Name: "PaymentWorkflow"}

	// The first version starts a timer before it waits; a deploy drops the
	// timer, so replaying the first version's history diverges.
	first := sdkworker.New(s.temporal, queue, sdkworker.Options{})
	first.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		timer := workflow.NewTimer(ctx, time.Hour)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(timer, func(workflow.Future) {})
		sel.AddReceive(workflow.GetSignalChannel(ctx, "go"), func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		sel.Select(ctx)
		return nil
	}, as)
	require.NoError(t, first.Start())
	run, err := s.temporal.ExecuteWorkflow(t.Context(), client.StartWorkflowOptions{ID: id, TaskQueue: queue}, "PaymentWorkflow")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		events := historyOf(t, s, id)
		return events[len(events)-1].GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED
	}, 10*time.Second, 50*time.Millisecond)
	first.Stop()
	// No attempt leads to this workflow: the checker finds it only once
	// visibility lists it.
	var waiting invariant.Report
	require.Eventually(t, func() bool {
		waiting = checkInvariants(t, s, s.store, time.Now())
		return waiting.Workflows == 1
	}, 30*time.Second, 200*time.Millisecond, "visibility should list the workflow")
	require.True(t, waiting.OK(), "a waiting workflow is healthy: %s", waiting)

	second := sdkworker.New(s.temporal, queue, sdkworker.Options{})
	second.RegisterWorkflowWithOptions(func(ctx workflow.Context) error {
		workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
		return nil
	}, as)
	require.NoError(t, second.Start())
	t.Cleanup(second.Stop)
	require.NoError(t, s.temporal.SignalWorkflow(t.Context(), id, run.GetRunID(), "go", nil))

	var report invariant.Report
	require.Eventually(t, func() bool {
		report = checkInvariants(t, s, s.store, time.Now())
		return !report.OK()
	}, 30*time.Second, 200*time.Millisecond)
	require.Len(t, report.Violations, 1, "%s", report)
	v := report.Violations[0]
	require.Equal(t, invariant.WorkflowsHealthy, v.Invariant)
	require.Equal(t, id, v.Key)
	require.Contains(t, v.Message, "nondeterminism error")
}

func historyOf(t *testing.T, s *checkoutStack, id string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := s.temporal.GetWorkflowHistory(t.Context(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		events = append(events, ev)
	}
	return events
}
