package activities_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/activities/activitiestest"
	"chargeonce/fakeprovider"
	"chargeonce/internal/alert"
	"chargeonce/provider"
	"chargeonce/store"
)

// refundMinor is what the refunds of the tests return of the charge.
const refundMinor = 10000

// newRefund stores a refund of refundMinor of a paid order.
func newRefund(t *testing.T, env *activitiestest.Env) chargeonce.RefundIntent {
	t.Helper()
	intent, _ := env.NewPaidIntent(t, "tok_visa", amount, time.Now())
	return env.NewRefund(t, intent.OrderID, refundMinor, time.Now())
}

func refund(t *testing.T, aenv *testsuite.TestActivityEnvironment, r chargeonce.RefundIntent) (activities.RefundResult, error) {
	t.Helper()
	val, err := aenv.ExecuteActivity(acts.Refund, activities.RefundInput{Intent: r})
	if err != nil {
		return activities.RefundResult{}, err
	}
	var res activities.RefundResult
	require.NoError(t, val.Get(&res))
	return res, nil
}

// refundBehindTheBack refunds minor of the refund's charge under another key
// and reference, and returns the provider's refund.
func refundBehindTheBack(t *testing.T, env *activitiestest.Env, r chargeonce.RefundIntent, minor int64, reference string) provider.RefundResult {
	t.Helper()
	key := uuid.Must(uuid.NewV7()).String()
	if reference == "" {
		reference = chargeonce.RefundReference(activitiestest.ReferencePrefix, key)
	}
	res := env.Client.Refund(context.Background(), provider.RefundRequest{
		Key: key, ChargeID: r.ChargeID, Amount: minor, Currency: r.Amount.Currency, MerchantReference: reference,
	})
	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	return res
}

func TestRefund_AcceptedRefundIsAResultAndItsRetryTheReplay(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	r := newRefund(t, env)
	aenv := newActivityEnv(t, env, 0)

	first, err := refund(t, aenv, r)
	require.NoError(t, err)
	second, err := refund(t, aenv, r)
	require.NoError(t, err)

	refunds := env.Fake.Refunds()
	require.Len(t, refunds, 1, "the same key refunds once")
	require.Equal(t, activities.RefundResult{Status: chargeonce.RefundSucceeded, ProviderRefundID: refunds[0].ID}, first)
	require.Equal(t, activities.RefundResult{Status: chargeonce.RefundSucceeded, ProviderRefundID: refunds[0].ID, Replayed: true}, second)
	require.Equal(t, []string{activitiestest.Quoted(r.Key), activitiestest.Quoted(r.Key)}, env.RefundKeys())
	requests := env.Refund(t, r.Key).Requests
	require.Len(t, requests, 2, "both exchanges are in the refund's log")
	require.Equal(t, http.StatusCreated, requests[0].StatusCode)
	require.True(t, requests[1].Replayed)
}

func TestRefund_PendingAtTheProviderIsAResult(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	r := newRefund(t, env)
	env.Fake.HoldRefunds(true)

	res, err := refund(t, newActivityEnv(t, env, 0), r)

	require.NoError(t, err)
	require.Equal(t, chargeonce.RefundPending, res.Status)
	require.Equal(t, env.Fake.Refunds()[0].ID, res.ProviderRefundID)
}

func TestRefund_RefusalIsAFailedResult(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	r := newRefund(t, env)
	refundBehindTheBack(t, env, r, amount.Minor, "")

	res, err := refund(t, newActivityEnv(t, env, 0), r)

	require.NoError(t, err)
	require.Equal(t, chargeonce.RefundFailed, res.Status)
	require.Equal(t, "charge_already_refunded", res.FailureReason)
}

func TestRefund_FailuresAreTypedErrors(t *testing.T) {
	tests := []struct {
		name      string
		mode      fakeprovider.Mode
		deadline  time.Duration
		intent    func(r chargeonce.RefundIntent) chargeonce.RefundIntent
		errType   string
		retryable bool
		// sent is how many refund requests reach the provider.
		sent int
	}{
		{name: "503 processed nothing", mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}, errType: activities.ErrTypeNotProcessed, retryable: true, sent: 1},
		{name: "no answer in time", mode: fakeprovider.Mode{Name: fakeprovider.ModeDrop}, deadline: timeoutDeadline, errType: activities.ErrTypeTimeout, retryable: true, sent: 1},
		{name: "lost answer", mode: fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 1}, errType: activities.ErrTypeTransport, retryable: true, sent: 1},
		{
			name:    "invalid intent",
			intent:  func(r chargeonce.RefundIntent) chargeonce.RefundIntent { r.ChargeID = ""; return r },
			errType: activities.ErrTypeInvalidRequest, retryable: false, sent: 0,
		},
		{
			name:    "the key reused with another amount",
			intent:  func(r chargeonce.RefundIntent) chargeonce.RefundIntent { r.Amount.Minor++; return r },
			errType: activities.ErrTypeContractViolation, retryable: false, sent: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := activitiestest.New(t, activitiestest.Options{Breaker: provider.BreakerConfig{ConsecutiveFailures: 1000}})
			r := newRefund(t, env)
			if tt.intent != nil {
				if tt.sent == 2 {
					_, err := refund(t, newActivityEnv(t, env, 0), r)
					require.NoError(t, err)
				}
				r = tt.intent(r)
			}
			if tt.mode.Name != "" {
				require.NoError(t, env.Fake.SetMode(tt.mode))
			}

			_, err := refund(t, newActivityEnv(t, env, tt.deadline), r)

			appErr := appError(t, err)
			require.Equal(t, tt.errType, appErr.Type())
			require.Equal(t, tt.retryable, !appErr.NonRetryable())
			require.Len(t, env.RefundKeys(), tt.sent)
		})
	}
}

func TestFindRefund_ReadsWhatTheProviderHolds(t *testing.T) {
	tests := []struct {
		name string
		// make acts at the provider before the lookup.
		make    func(t *testing.T, env *activitiestest.Env, r chargeonce.RefundIntent)
		want    string
		errType string
	}{
		{name: "nothing", want: activities.FoundNone},
		{name: "a refund under another reference", make: func(t *testing.T, env *activitiestest.Env, r chargeonce.RefundIntent) {
			refundBehindTheBack(t, env, r, refundMinor, "")
		}, want: activities.FoundNone},
		{name: "a succeeded refund", make: func(t *testing.T, env *activitiestest.Env, r chargeonce.RefundIntent) {
			require.NoError(t, env.RefundBehindTheBack(context.Background(), r))
		}, want: activities.FoundSucceeded},
		{name: "a pending refund", make: func(t *testing.T, env *activitiestest.Env, r chargeonce.RefundIntent) {
			env.Fake.HoldRefunds(true)
			require.NoError(t, env.RefundBehindTheBack(context.Background(), r))
		}, want: activities.FoundPending},
		{name: "a refund that failed after it succeeded", make: func(t *testing.T, env *activitiestest.Env, r chargeonce.RefundIntent) {
			require.NoError(t, env.RefundBehindTheBack(context.Background(), r))
			_, err := env.Fake.SettleRefund(env.Fake.Refunds()[0].ID, fakeprovider.RefundFailed, "lost_or_stolen_card")
			require.NoError(t, err)
		}, want: activities.FoundFailed},
		{name: "a refund for another amount", make: func(t *testing.T, env *activitiestest.Env, r chargeonce.RefundIntent) {
			refundBehindTheBack(t, env, r, refundMinor+1, r.MerchantReference)
		}, errType: activities.ErrTypeRefundMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := activitiestest.New(t, activitiestest.Options{})
			r := newRefund(t, env)
			if tt.make != nil {
				tt.make(t, env, r)
			}

			val, err := newActivityEnv(t, env, 0).ExecuteActivity(acts.FindRefund, activities.FindRefundInput{
				Key: r.Key, ChargeID: r.ChargeID, MerchantReference: r.MerchantReference, Amount: r.Amount,
			})

			if tt.errType != "" {
				appErr := appError(t, err)
				require.Equal(t, tt.errType, appErr.Type())
				require.True(t, appErr.NonRetryable())
				var id string
				require.NoError(t, appErr.Details(&id))
				require.Equal(t, env.Fake.Refunds()[0].ID, id)
				return
			}
			require.NoError(t, err)
			var res activities.FindRefundResult
			require.NoError(t, val.Get(&res))
			require.Equal(t, tt.want, res.Found)
			if tt.want != activities.FoundNone {
				require.Equal(t, env.Fake.Refunds()[0].ID, res.ProviderRefundID)
			}
			if tt.want == activities.FoundFailed {
				require.Equal(t, "lost_or_stolen_card", res.FailureReason)
			}
			require.NotNil(t, env.Refund(t, r.Key).LastCheckedAt, "the check's time is recorded")
		})
	}
}

func TestRecordRefundOutcome_SettlesOnceAndAlertsAFailureAfterSuccess(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	reg := prometheus.NewRegistry()
	env.Activities.Metrics = activities.NewMetrics(reg)
	r := newRefund(t, env)
	aenv := newActivityEnv(t, env, 0)
	record := func(in activities.RecordRefundOutcomeInput) (activities.RecordRefundOutcomeResult, error) {
		val, err := aenv.ExecuteActivity(acts.RecordRefundOutcome, in)
		if err != nil {
			return activities.RecordRefundOutcomeResult{}, err
		}
		var res activities.RecordRefundOutcomeResult
		require.NoError(t, val.Get(&res))
		return res, nil
	}

	var logs bytes.Buffer
	env.Activities.Logger = slog.New(slog.NewTextHandler(&logs, nil))

	first, err := record(activities.RecordRefundOutcomeInput{Key: r.Key, Status: chargeonce.RefundSucceeded, ProviderRefundID: "re_000001"})
	require.NoError(t, err)
	second, err := record(activities.RecordRefundOutcomeInput{Key: r.Key, Status: chargeonce.RefundNotProcessed})
	require.NoError(t, err)

	require.True(t, first.Changed)
	require.False(t, second.Changed, "a settled refund is not settled again")
	stored := env.Refund(t, r.Key)
	require.Equal(t, chargeonce.RefundSucceeded, stored.Status)
	require.Equal(t, "re_000001", stored.ProviderRefundID)
	order, _, err := env.Store.GetOrder(context.Background(), r.OrderID)
	require.NoError(t, err)
	require.Equal(t, chargeonce.OrderPartiallyRefunded, order.Status)
	require.NotContains(t, logs.String(), "alert=")

	third, err := record(activities.RecordRefundOutcomeInput{Key: r.Key, Status: chargeonce.RefundFailed, ProviderRefundID: "re_000001", FailureReason: "lost_or_stolen_card"})
	require.NoError(t, err)

	require.True(t, third.Changed, "a succeeded refund may still fail")
	require.Equal(t, chargeonce.RefundFailed, env.Refund(t, r.Key).Status)
	order, _, err = env.Store.GetOrder(context.Background(), r.OrderID)
	require.NoError(t, err)
	require.Equal(t, chargeonce.OrderPaid, order.Status, "the money is not back")
	require.Equal(t, 1, strings.Count(logs.String(), "alert="+string(alert.RefundFailedAfterSuccess)))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP chargeonce_refunds_total Refunds settled in the merchant database, by status (succeeded, failed, not_processed).
# TYPE chargeonce_refunds_total counter
chargeonce_refunds_total{status="failed"} 1
chargeonce_refunds_total{status="not_processed"} 0
chargeonce_refunds_total{status="succeeded"} 1
`), "chargeonce_refunds_total"))

	for _, tt := range []struct {
		name    string
		in      activities.RecordRefundOutcomeInput
		errType string
	}{
		{"pending is not settled", activities.RecordRefundOutcomeInput{Key: r.Key, Status: chargeonce.RefundPending}, activities.ErrTypeInvalidRequest},
		{"unknown status", activities.RecordRefundOutcomeInput{Key: r.Key, Status: "refunded"}, activities.ErrTypeInvalidRequest},
		{"unknown refund", activities.RecordRefundOutcomeInput{Key: uuid.Must(uuid.NewV7()).String(), Status: chargeonce.RefundFailed}, activities.ErrTypeRefundNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := record(tt.in)
			appErr := appError(t, err)
			require.Equal(t, tt.errType, appErr.Type())
			require.True(t, appErr.NonRetryable())
		})
	}
}

func TestKeyRetention_ReadsWhatTheProviderPublishes(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{Fake: fakeprovider.Config{Retention: 90 * time.Minute}})

	val, err := newActivityEnv(t, env, 0).ExecuteActivity(acts.KeyRetention, activities.KeyRetentionInput{})

	require.NoError(t, err)
	var res activities.KeyRetentionResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, 90*time.Minute, res.KeyRetention)
}

// lateCharge leaves an order whose first attempt was abandoned, and whose
// charge then arrived at the provider; with repaid, a second attempt paid
// the order meanwhile. It returns the first attempt and its late charge.
func lateCharge(t *testing.T, env *activitiestest.Env, repaid bool) (chargeonce.PaymentIntent, string) {
	t.Helper()
	ctx := context.Background()
	first := env.NewIntent(t, "tok_visa", amount, time.Now())
	_, err := env.Store.SettleAttempt(ctx, first.Key, chargeonce.AttemptAbandoned, "", time.Now())
	require.NoError(t, err)
	if repaid {
		_, second, decision, err := env.Store.GetOrStartAttempt(ctx, store.NewAttempt{
			OrderID: first.OrderID, CardHash: first.CardHash, Key: uuid.Must(uuid.NewV7()).String(),
			ReferencePrefix: activitiestest.ReferencePrefix, Now: time.Now(), AbandonAfter: time.Hour,
			Provider: chargeonce.DefaultProvider,
		})
		require.NoError(t, err)
		require.Equal(t, store.DecisionCreated, decision)
		intent := first
		intent.Key, intent.MerchantReference = second.Key, second.MerchantReference
		res := env.Client.Charge(ctx, provider.ChargeRequestOf(intent))
		require.Equal(t, provider.Approved, res.Outcome)
		_, err = env.Store.SettleAttempt(ctx, second.Key, chargeonce.AttemptSucceeded, res.ChargeID, time.Now())
		require.NoError(t, err)
	}
	require.NoError(t, env.ChargeBehindTheBack(ctx, first))
	charges := env.Fake.Charges()
	return first, charges[len(charges)-1].ID
}

func recordLateSuccess(t *testing.T, env *activitiestest.Env, key, chargeID string) (activities.RecordOutcomeResult, string) {
	t.Helper()
	var logs bytes.Buffer
	env.Activities.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	val, err := newActivityEnv(t, env, 0).ExecuteActivity(acts.RecordOutcome, activities.RecordOutcomeInput{Key: key, Status: chargeonce.AttemptSucceeded, ProviderPaymentID: chargeID})
	require.NoError(t, err)
	var res activities.RecordOutcomeResult
	require.NoError(t, val.Get(&res))
	return res, logs.String()
}

func TestRecordOutcome_LateChargeOfAnOrderPaidMeanwhileIsRefunded(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	first, late := lateCharge(t, env, true)
	before, _, err := env.Store.GetOrder(context.Background(), first.OrderID)
	require.NoError(t, err)

	res, logs := recordLateSuccess(t, env, first.Key, late)
	_, again := recordLateSuccess(t, env, first.Key, late)

	require.False(t, res.Changed, "the abandoned attempt stays abandoned")
	require.Equal(t, chargeonce.AttemptAbandoned, env.Attempt(t, first.Key).Status)
	order, _, err := env.Store.GetOrder(context.Background(), first.OrderID)
	require.NoError(t, err)
	require.Equal(t, chargeonce.OrderPaid, order.Status)
	require.Equal(t, before.ProviderPaymentID, order.ProviderPaymentID, "the order stays paid by the charge that paid it")
	refunds, err := env.Store.OrderRefunds(context.Background(), first.OrderID)
	require.NoError(t, err)
	require.Len(t, refunds, 1, "one refund however often the charge is found")
	require.Equal(t, late, refunds[0].ChargeID)
	require.Equal(t, amount, refunds[0].Amount, "the whole late charge")
	require.Equal(t, chargeonce.RefundLateCharge, refunds[0].Origin)
	require.Equal(t, chargeonce.RefundPending, refunds[0].Status)
	require.False(t, refunds[0].WorkflowStarted, "the refund outbox sweep starts its workflow")
	require.Contains(t, logs, "alert="+string(alert.LateChargeRefunded))
	require.NotContains(t, again, "alert=", "the alert is raised once")
}

func TestRecordOutcome_LateChargeOfAnUnpaidOrderIsAdopted(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	first, late := lateCharge(t, env, false)

	_, logs := recordLateSuccess(t, env, first.Key, late)

	order, _, err := env.Store.GetOrder(context.Background(), first.OrderID)
	require.NoError(t, err)
	require.Equal(t, chargeonce.OrderPaid, order.Status)
	require.Equal(t, late, order.ProviderPaymentID, "the late charge pays the order")
	refunds, err := env.Store.OrderRefunds(context.Background(), first.OrderID)
	require.NoError(t, err)
	require.Empty(t, refunds)
	require.NotContains(t, logs, "alert=", "no alert when no refund was needed")
}
