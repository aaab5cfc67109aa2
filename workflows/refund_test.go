package workflows_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"chargeonce"
	"chargeonce/activities/activitiestest"
	"chargeonce/fakeprovider"
	"chargeonce/internal/alert"
	"chargeonce/provider"
	"chargeonce/workflows"
)

// refundMinor is what the refunds of the tests return of the 548.90 charge.
const refundMinor = 10000

// newPaidRefund stores a refund of refundMinor of an order that was paid an
// hour before createdAt; the refund is created at createdAt.
func newPaidRefund(t *testing.T, env *activitiestest.Env) chargeonce.RefundIntent {
	t.Helper()
	intent, _ := env.NewPaidIntent(t, "tok_visa", amount, createdAt.Add(-time.Hour))
	return env.NewRefund(t, intent.OrderID, refundMinor, createdAt)
}

// runRefund executes the refund workflow to its end and returns its result.
func runRefund(t *testing.T, wenv *testsuite.TestWorkflowEnvironment, in workflows.RefundInput) workflows.RefundResult {
	t.Helper()
	wenv.ExecuteWorkflow(workflows.RefundWorkflow, in)
	require.True(t, wenv.IsWorkflowCompleted())
	require.NoError(t, wenv.GetWorkflowError())
	var res workflows.RefundResult
	require.NoError(t, wenv.GetWorkflowResult(&res))
	return res
}

// refundUpdate is the caller of a "refund" update and what it got.
type refundUpdate = updateCallbacks[workflows.RefundResult]

// requireRefundKeys checks that every refund request carried the refund's
// key, and that there were n of them.
func requireRefundKeys(t *testing.T, env *activitiestest.Env, r chargeonce.RefundIntent, n int) {
	t.Helper()
	keys := env.RefundKeys()
	require.Len(t, keys, n)
	for _, k := range keys {
		require.Equal(t, activitiestest.Quoted(r.Key), k)
	}
}

// requireRefundStored checks the refund and its order in the database.
func requireRefundStored(t *testing.T, env *activitiestest.Env, r chargeonce.RefundIntent, status chargeonce.RefundStatus, providerRefundID string, orderStatus chargeonce.OrderStatus) {
	t.Helper()
	stored := env.Refund(t, r.Key)
	require.Equal(t, status, stored.Status)
	require.Equal(t, providerRefundID, stored.ProviderRefundID)
	order, _, err := env.Store.GetOrder(context.Background(), r.OrderID)
	require.NoError(t, err)
	require.Equal(t, orderStatus, order.Status)
}

func TestRefundWorkflow_SucceededRefundSettlesTheRefundAndItsOrder(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	r := newPaidRefund(t, env)
	wenv := newWorkflowEnv(t, env, createdAt)
	require.NoError(t, wenv.SetTypedSearchAttributesOnStart(workflows.RefundStartSearchAttributes(r)))
	var upserts []map[string]string
	wenv.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		upserts = append(upserts, keywords(args.Get(0).(temporal.SearchAttributes)))
	})
	started := activitiesStarted(wenv)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r})

	refunds := env.Fake.Refunds()
	require.Len(t, refunds, 1)
	require.Equal(t, chargeonce.RefundSucceeded, res.Status)
	require.Equal(t, refunds[0].ID, res.ProviderRefundID)
	require.Equal(t, r.ChargeID, refunds[0].Charge)
	require.Equal(t, r.Amount.Minor, refunds[0].Amount)
	requireRefundKeys(t, env, r, 1)
	requireRefundStored(t, env, r, chargeonce.RefundSucceeded, res.ProviderRefundID, chargeonce.OrderPartiallyRefunded)
	require.Len(t, env.Refund(t, r.Key).Requests, 1, "the request is in the refund's log")
	require.Equal(t, []string{"Refund"}, started(), "a definite answer is not looked up")
	require.Equal(t, workflows.Status{Phase: workflows.PhaseCompleted}, queryStatus(t, wenv))
	require.Equal(t, []map[string]string{{
		workflows.SearchAttrOrderID.GetName():           strconv.FormatInt(r.OrderID, 10),
		workflows.SearchAttrPaymentStatus.GetName():     "succeeded",
		workflows.SearchAttrMerchantReference.GetName(): r.MerchantReference,
		workflows.SearchAttrProviderPaymentID.GetName(): res.ProviderRefundID,
	}}, upserts, "started with its attributes, it upserts only the outcome")
}

func TestRefundWorkflow_ProviderRefusalIsAFailedRefund(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent, chargeID := env.NewPaidIntent(t, "tok_visa", amount, createdAt.Add(-time.Hour))
	// Someone refunded the whole charge at the provider, behind our back.
	other := uuid.Must(uuid.NewV7()).String()
	behind := env.Client.Refund(context.Background(), provider.RefundRequest{
		Key: other, ChargeID: chargeID, Amount: amount.Minor, Currency: amount.Currency,
		MerchantReference: chargeonce.RefundReference(activitiestest.ReferencePrefix, other),
	})
	require.Equal(t, provider.Approved, behind.Outcome)
	r := env.NewRefund(t, intent.OrderID, refundMinor, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	started := activitiesStarted(wenv)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r})

	require.Equal(t, chargeonce.RefundFailed, res.Status)
	require.Equal(t, "charge_already_refunded", res.FailureReason)
	require.Equal(t, []string{activitiestest.Quoted(other), activitiestest.Quoted(r.Key)}, env.RefundKeys(), "one request after the refund behind its back")
	requireRefundStored(t, env, r, chargeonce.RefundFailed, res.ProviderRefundID, chargeonce.OrderPaid)
	require.Equal(t, "charge_already_refunded", env.Refund(t, r.Key).FailureReason)
	require.Equal(t, []string{"Refund"}, started(), "a refusal is a result, not looked up")
}

func TestRefundWorkflow_NothingProcessedIsNotProcessedAtOnce(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{Breaker: patientBreaker})
	r := newPaidRefund(t, env)
	require.NoError(t, env.Fake.SetMode(failing.Mode))
	wenv := newWorkflowEnv(t, env, createdAt)
	started := activitiesStarted(wenv)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r, Timing: shortCharge})

	require.Equal(t, chargeonce.RefundNotProcessed, res.Status)
	require.Greater(t, countOf(started(), "Refund"), 1, "the 503s were retried within the budget")
	require.Zero(t, countOf(started(), "FindRefund"), "nothing processed is never looked up")
	require.Empty(t, env.Fake.Refunds())
	requireRefundStored(t, env, r, chargeonce.RefundNotProcessed, "", chargeonce.OrderPaid)
}

func TestRefundWorkflow_UnknownOutcomeIsFoundByALookup(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{Breaker: patientBreaker})
	r := newPaidRefund(t, env)
	require.NoError(t, env.Fake.SetMode(dropping.Fake.Mode))
	wenv := newWorkflowEnv(t, env, createdAt)
	started := activitiesStarted(wenv)
	caller, wrongKey := &refundUpdate{t: t}, &refundUpdate{t: t}
	wenv.RegisterDelayedCallback(func() {
		wenv.UpdateWorkflow(chargeonce.UpdateRefund, "caller", caller.callbacks(), workflows.RefundUpdate{Key: r.Key})
		wenv.UpdateWorkflow(chargeonce.UpdateRefund, "wrong-key", wrongKey.callbacks(), workflows.RefundUpdate{Key: uuid.Must(uuid.NewV7()).String()})
	}, 100*time.Millisecond)
	var during workflows.Status
	wenv.RegisterDelayedCallback(func() {
		during = queryStatus(t, wenv)
		require.NoError(t, env.RefundBehindTheBack(context.Background(), r))
	}, time.Minute)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r, Timing: shortCharge})

	require.NoError(t, caller.rejected)
	require.NoError(t, caller.err)
	require.Equal(t, chargeonce.RefundPending, caller.result.Status, "the update answers the send phase's outcome: unknown")
	require.ErrorContains(t, wrongKey.rejected, "the update is for refund")
	require.Equal(t, workflows.PhaseReconciling, during.Phase)
	refunds := env.Fake.Refunds()
	require.Len(t, refunds, 1)
	require.Equal(t, chargeonce.RefundSucceeded, res.Status)
	require.Equal(t, refunds[0].ID, res.ProviderRefundID)
	require.Equal(t, 1, countOf(started(), "FindRefund"), "the first lookup finds it")
	requireRefundStored(t, env, r, chargeonce.RefundSucceeded, res.ProviderRefundID, chargeonce.OrderPartiallyRefunded)
	for _, k := range env.RefundKeys() {
		require.Equal(t, activitiestest.Quoted(r.Key), k)
	}
}

func TestRefundWorkflow_PendingRefundThatFailsIsFollowedToFailed(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	r := newPaidRefund(t, env)
	env.Fake.HoldRefunds(true)
	wenv := newWorkflowEnv(t, env, createdAt)
	started := activitiesStarted(wenv)
	caller := &refundUpdate{t: t}
	wenv.RegisterDelayedCallback(func() {
		// As the refund API asks: without an argument.
		wenv.UpdateWorkflow(chargeonce.UpdateRefund, "caller", caller.callbacks())
	}, time.Second)
	var during workflows.Status
	wenv.RegisterDelayedCallback(func() {
		during = queryStatus(t, wenv)
		refunds := env.Fake.Refunds()
		require.Len(t, refunds, 1)
		_, err := env.Fake.SettleRefund(refunds[0].ID, fakeprovider.RefundFailed, "expired_or_canceled_card")
		require.NoError(t, err)
	}, 20*time.Minute)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r})

	refunds := env.Fake.Refunds()
	require.Len(t, refunds, 1)
	require.NotNil(t, caller.result)
	require.Equal(t, workflows.RefundResult{Status: chargeonce.RefundPending, ProviderRefundID: refunds[0].ID, Message: caller.result.Message}, *caller.result,
		"the update answers that the provider holds the refund pending")
	require.Equal(t, workflows.PhaseReconciling, during.Phase)
	require.Greater(t, during.Checks, 1, "a pending refund is looked up again and again")
	require.Equal(t, chargeonce.RefundFailed, res.Status)
	require.Equal(t, "expired_or_canceled_card", res.FailureReason)
	require.Equal(t, 1, countOf(started(), "Refund"), "a pending refund is never sent again")
	requireRefundStored(t, env, r, chargeonce.RefundFailed, refunds[0].ID, chargeonce.OrderPaid)
}

func TestRefundWorkflow_UnknownAtTheRetentionHorizonAlertsAndWaitsForAnEvent(t *testing.T) {
	const retention = time.Hour
	env := activitiestest.New(t, activitiestest.Options{Fake: fakeprovider.Config{Retention: retention}, Breaker: patientBreaker})
	r := newPaidRefund(t, env)
	require.NoError(t, env.Fake.SetMode(dropping.Fake.Mode))
	wenv, logs := newLoggedWorkflowEnv(t, env, createdAt)
	started := activitiesStarted(wenv)
	var during workflows.Status
	var lookupsBefore, sentBefore int
	var logsBefore string
	// Long after the horizon (an hour less a longest lookup gap).
	wenv.RegisterDelayedCallback(func() {
		during = queryStatus(t, wenv)
		lookupsBefore = countOf(started(), "FindRefund")
		sentBefore = len(env.RefundKeys())
		logsBefore = logs.String()
		require.NoError(t, env.RefundBehindTheBack(context.Background(), r))
		wenv.SignalWorkflow(chargeonce.SignalRefundEvent, workflows.RefundEvent{Type: "refund.succeeded"})
	}, 5*time.Hour)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r, Timing: shortCharge})

	require.Equal(t, workflows.PhaseUnresolved, during.Phase)
	require.Zero(t, during.NextCheckAt, "no timed lookup after the alert")
	requireOneError(t, logsBefore, alert.RefundUnknown)
	require.Contains(t, logsBefore, r.MerchantReference, "the alert names the refund's reference")
	require.Equal(t, lookupsBefore, during.Checks)
	require.Greater(t, lookupsBefore, 5, "looked up on the grid until the horizon")
	require.Equal(t, lookupsBefore+1, countOf(started(), "FindRefund"), "the event's lookup")
	require.Equal(t, sentBefore+1, len(env.RefundKeys()), "nothing sent after the send phase but the refund made behind its back")
	require.Equal(t, chargeonce.RefundSucceeded, res.Status)
	requireRefundStored(t, env, r, chargeonce.RefundSucceeded, res.ProviderRefundID, chargeonce.OrderPartiallyRefunded)
}

func TestRefundWorkflow_RefundStartedAfterItsLastSendOnlyLooksUp(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	r := newPaidRefund(t, env)
	// The fake provider keeps keys for a day: the last send time is the
	// horizon, a day less a longest lookup gap, less SendBudget and
	// MinAge.
	start := createdAt.Add(fakeprovider.DefaultRetention)
	wenv := newWorkflowEnv(t, env, start)
	started := activitiesStarted(wenv)
	wenv.RegisterDelayedCallback(func() {
		require.NoError(t, env.RefundBehindTheBack(context.Background(), r))
		wenv.SignalWorkflow(chargeonce.SignalRefundEvent, workflows.RefundEvent{Type: "refund.succeeded"})
	}, 2*time.Hour)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r})

	require.Zero(t, countOf(started(), "Refund"), "never sent after its last send time")
	require.Equal(t, chargeonce.RefundSucceeded, res.Status)
}

func TestRefundWorkflow_InvalidInputFailsTheWorkflow(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	r := newPaidRefund(t, env)
	r.MerchantReference = ""
	wenv := newWorkflowEnv(t, env, createdAt)

	wenv.ExecuteWorkflow(workflows.RefundWorkflow, workflows.RefundInput{Intent: r})

	require.True(t, wenv.IsWorkflowCompleted())
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, wenv.GetWorkflowError(), &appErr)
	require.Equal(t, workflows.ErrTypeInvalidRefundInput, appErr.Type())
	require.Empty(t, env.RefundKeys())
}

func TestRefundWorkflow_RefundOfAnotherAmountUnderItsReferenceIsFailedForAHuman(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{Breaker: patientBreaker})
	r := newPaidRefund(t, env)
	require.NoError(t, env.Fake.SetMode(dropping.Fake.Mode))
	wenv, logs := newLoggedWorkflowEnv(t, env, createdAt)
	wenv.RegisterDelayedCallback(func() {
		// A refund under the refund's reference, of another amount: a bug
		// somewhere, which no lookup may take for this refund.
		require.NoError(t, env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
		other := uuid.Must(uuid.NewV7()).String()
		res := env.Client.Refund(context.Background(), provider.RefundRequest{
			Key: other, ChargeID: r.ChargeID, Amount: r.Amount.Minor + 1, Currency: r.Amount.Currency, MerchantReference: r.MerchantReference,
		})
		require.Equal(t, provider.Approved, res.Outcome)
	}, time.Minute)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r, Timing: shortCharge})

	refunds := env.Fake.Refunds()
	require.Len(t, refunds, 1)
	require.Equal(t, chargeonce.RefundFailed, res.Status)
	require.Equal(t, refunds[0].ID, res.ProviderRefundID)
	requireOneError(t, logs.String(), alert.RefundMismatch)
	requireRefundStored(t, env, r, chargeonce.RefundFailed, refunds[0].ID, chargeonce.OrderPaid)
}

func TestRefundWorkflow_ContinuedRunKeepsWaitingWithoutSending(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	r := newPaidRefund(t, env)
	wenv := newWorkflowEnv(t, env, createdAt.Add(30*time.Hour))
	started := activitiesStarted(wenv)
	var during workflows.Status
	wenv.RegisterDelayedCallback(func() {
		during = queryStatus(t, wenv)
		require.NoError(t, env.RefundBehindTheBack(context.Background(), r))
		wenv.SignalWorkflow(chargeonce.SignalRefundEvent, workflows.RefundEvent{Type: "refund.succeeded"})
	}, time.Hour)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r, Carried: &workflows.RefundCarried{
		Checks: 181, KeyRetention: 24 * time.Hour, Unresolved: true,
	}})

	require.Equal(t, workflows.Status{Phase: workflows.PhaseUnresolved, Checks: 181}, during, "the alert's state is carried, and not raised again")
	require.Equal(t, []string{"FindRefund"}, started(), "no send, no timed lookup, the retention known: only the event's lookup")
	require.Equal(t, chargeonce.RefundSucceeded, res.Status)
}

// readmeTiming is the timing of the README's dev stack: an abandon deadline
// of 40 s, shorter than the refund sweep's period plus its wait.
var readmeTiming = workflows.Timing{MinAge: 10 * time.Second, Interval: 5 * time.Second, AbandonAfter: 40 * time.Second}

func TestRefundWorkflow_RefundTheSweepStartsAfterTheAbandonDeadlineIsSent(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	r := newPaidRefund(t, env)
	// The sweep started the settlement's repair refund 38.6 s after it was
	// created: past CreatedAt + AbandonAfter − SendBudget, long before the
	// key's retention ends.
	wenv := newWorkflowEnv(t, env, createdAt.Add(38600*time.Millisecond))
	started := activitiesStarted(wenv)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r, Timing: readmeTiming})

	require.Equal(t, chargeonce.RefundSucceeded, res.Status)
	require.Equal(t, []string{"KeyRetention", "Refund"}, started(), "the key's retention bounds the send window, then the refund is sent")
	requireRefundKeys(t, env, r, 1)
	requireRefundStored(t, env, r, chargeonce.RefundSucceeded, res.ProviderRefundID, chargeonce.OrderPartiallyRefunded)
}

func TestRefundWorkflow_RefundTheProviderNeverGotIsSentAgainUntilItSucceeds(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{Breaker: patientBreaker})
	r := newPaidRefund(t, env)
	require.NoError(t, env.Fake.SetMode(dropping.Fake.Mode))
	wenv, logs := newLoggedWorkflowEnv(t, env, createdAt)
	started := activitiesStarted(wenv)
	var during workflows.Status
	var sentWhileDropping, heldWhileDropping int
	// The provider loses every request for a while, as one that a kill
	// cut off in flight, then works again.
	wenv.RegisterDelayedCallback(func() {
		during = queryStatus(t, wenv)
		sentWhileDropping = len(env.RefundKeys())
		heldWhileDropping = len(env.Fake.Refunds())
		require.NoError(t, env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
	}, 5*time.Minute)

	res := runRefund(t, wenv, workflows.RefundInput{Intent: r, Timing: shortCharge})

	require.Equal(t, workflows.PhaseReconciling, during.Phase)
	require.Zero(t, heldWhileDropping, "the lost requests left nothing at the provider")
	require.Greater(t, sentWhileDropping, 1, "the lost requests were sent again while the provider lost them")
	require.Equal(t, chargeonce.RefundSucceeded, res.Status)
	require.Len(t, env.Fake.Refunds(), 1, "one refund under the key")
	require.Greater(t, countOf(started(), "FindRefund"), 1, "a resend follows only a lookup that found nothing")
	require.Greater(t, len(env.RefundKeys()), sentWhileDropping, "sent again once the lookups proved nothing arrived")
	requireRefundKeys(t, env, r, len(env.RefundKeys()))
	require.NotContains(t, logs.String(), string(alert.RefundUnknown), "no person is needed")
	requireRefundStored(t, env, r, chargeonce.RefundSucceeded, res.ProviderRefundID, chargeonce.OrderPartiallyRefunded)
}
