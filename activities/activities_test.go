package activities_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/activities/activitiestest"
	"chargeonce/fakeprovider"
	"chargeonce/internal/alert"
	"chargeonce/provider"
	"chargeonce/store"
)

var amount = chargeonce.Money{Minor: 54890, Currency: "TRY"}

// acts names the activities for ExecuteActivity; it is never dereferenced.
var acts *activities.Activities

// newActivityEnv returns a Temporal activity environment running env's
// activities. A positive deadline bounds each activity execution, as an
// attempt's StartToClose timeout does.
// timeoutDeadline is the activity deadline of the tests of a request that
// gets no answer. It is long enough that a loaded machine lists the request
// before it goes out, and the environment that carries it is made right
// before the activity runs, so that no set-up eats into it.
const timeoutDeadline = 2 * time.Second

func newActivityEnv(t *testing.T, env *activitiestest.Env, deadline time.Duration) *testsuite.TestActivityEnvironment {
	t.Helper()
	ctx := context.Background()
	if deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, deadline)
		t.Cleanup(cancel)
	}
	return activityEnvWithin(env, ctx)
}

// activityEnvWithin is a test environment of env's activities whose
// executions end when ctx does, as at an activity's deadline.
func activityEnvWithin(env *activitiestest.Env, ctx context.Context) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	aenv := suite.NewTestActivityEnvironment()
	aenv.RegisterActivity(env.Activities)
	aenv.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx})
	return aenv
}

func charge(t *testing.T, aenv *testsuite.TestActivityEnvironment, intent chargeonce.PaymentIntent) (activities.ChargeResult, error) {
	t.Helper()
	val, err := aenv.ExecuteActivity(acts.Charge, activities.ChargeInput{Intent: intent})
	if err != nil {
		return activities.ChargeResult{}, err
	}
	var res activities.ChargeResult
	require.NoError(t, val.Get(&res))
	return res, nil
}

func appError(t *testing.T, err error) *temporal.ApplicationError {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	return appErr
}

func TestCharge_ApprovedSendsTheQuotedKeyOnce(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())

	res, err := charge(t, newActivityEnv(t, env, 0), intent)
	require.NoError(t, err)

	charges := env.Fake.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, activities.ChargeResult{Status: chargeonce.AttemptSucceeded, ProviderPaymentID: charges[0].ID}, res)
	require.Equal(t, intent.Key, charges[0].IdempotencyKey)
	require.Equal(t, amount.Minor, charges[0].Amount)
	require.Equal(t, intent.MerchantReference, charges[0].MerchantReference)
	require.Equal(t, []string{activitiestest.Quoted(intent.Key)}, env.ChargeKeys())

	logged := env.Attempt(t, intent.Key).Requests
	require.Len(t, logged, 1)
	require.Equal(t, intent.Key, logged[0].Key)
	require.Equal(t, http.StatusCreated, logged[0].StatusCode)
	require.Equal(t, string(provider.Approved), logged[0].Outcome)
	require.False(t, logged[0].Replayed)
	require.Positive(t, logged[0].Duration)
}

func TestCharge_SecondRequestGetsTheReplayOfTheFirst(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())
	aenv := newActivityEnv(t, env, 0)

	first, err := charge(t, aenv, intent)
	require.NoError(t, err)
	second, err := charge(t, aenv, intent)
	require.NoError(t, err)

	require.False(t, first.Replayed)
	require.True(t, second.Replayed)
	require.Equal(t, first.ProviderPaymentID, second.ProviderPaymentID)
	require.Len(t, env.Fake.Charges(), 1)
	quoted := activitiestest.Quoted(intent.Key)
	require.Equal(t, []string{quoted, quoted}, env.ChargeKeys())
	logged := env.Attempt(t, intent.Key).Requests
	require.Len(t, logged, 2)
	require.True(t, logged[1].Replayed)
	require.Equal(t, http.StatusCreated, logged[1].StatusCode)
}

// TestCharge_DeclineIsAResult covers a card's decline and one that is the
// provider's own trouble: both are results, and the result and the log
// line say whose decline it is.
func TestCharge_DeclineIsAResult(t *testing.T) {
	cases := []struct {
		token, code string
		trouble     bool
		msg         string
	}{
		{"tok_chargeDeclinedInsufficientFunds", "insufficient_funds", false, "card declined"},
		{"tok_chargeDeclinedIssuerNotAvailable", "issuer_not_available", true, "declined for the provider's own trouble, not the card's"},
	}
	for _, tc := range cases {
		t.Run(tc.token, func(t *testing.T) {
			logs := &bytes.Buffer{}
			env := activitiestest.New(t, activitiestest.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
			intent := env.NewIntent(t, tc.token, amount, time.Now())

			res, err := charge(t, newActivityEnv(t, env, 0), intent)
			require.NoError(t, err)

			charges := env.Fake.Charges()
			require.Len(t, charges, 1)
			require.Equal(t, fakeprovider.ChargeFailed, charges[0].Status)
			require.Equal(t, activities.ChargeResult{
				Status:            chargeonce.AttemptDeclined,
				ProviderPaymentID: charges[0].ID,
				DeclineCode:       tc.code,
				ProviderTrouble:   tc.trouble,
			}, res)
			requireOneDecline(t, env, intent.Key)
			line := declineLogLine(t, logs)
			require.Equal(t, tc.msg, line.Msg)
			require.Equal(t, tc.code, line.DeclineCode)
			require.Equal(t, tc.trouble, line.ProviderTrouble)
		})
	}
}

// declineLogLine is the one log line of a decline among the JSON logs.
func declineLogLine(t *testing.T, logs *bytes.Buffer) (line struct {
	Msg             string `json:"msg"`
	DeclineCode     string `json:"decline_code"`
	ProviderTrouble bool   `json:"provider_trouble"`
}) {
	t.Helper()
	found := 0
	for raw := range bytes.Lines(logs.Bytes()) {
		if bytes.Contains(raw, []byte(`"provider_trouble":`)) {
			require.NoError(t, json.Unmarshal(raw, &line))
			found++
		}
	}
	require.Equal(t, 1, found, "one log line says whose decline it is:\n%s", logs)
	return line
}

func TestCharge_RefusedCardIsADeclineWithoutACharge(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "visa", amount, time.Now())

	res, err := charge(t, newActivityEnv(t, env, 0), intent)
	require.NoError(t, err, "the customer's card is a result, not an error")

	require.Empty(t, env.Fake.Charges())
	require.Equal(t, activities.ChargeResult{
		Status:      chargeonce.AttemptDeclined,
		DeclineCode: provider.DeclineInvalidPaymentMethod,
	}, res)
	requireOneDecline(t, env, intent.Key)
}

// requireOneDecline checks that the key's request log lists one request,
// answered with a 402 read as a decline.
func requireOneDecline(t *testing.T, env *activitiestest.Env, key string) {
	t.Helper()
	logged := env.Attempt(t, key).Requests
	require.Len(t, logged, 1)
	require.Equal(t, http.StatusPaymentRequired, logged[0].StatusCode)
	require.Equal(t, string(provider.Declined), logged[0].Outcome)
}

// TestCharge_FailuresAreTypedErrors covers every outcome that is not a
// charge result: its error type, whether Temporal may retry it, the
// Retry-After it carries, and what reached the provider and the request log.
func TestCharge_FailuresAreTypedErrors(t *testing.T) {
	tests := []struct {
		name    string
		token   string
		opts    activitiestest.Options
		setup   func(t *testing.T, env *activitiestest.Env, intent chargeonce.PaymentIntent)
		errType string
		// retryable is whether the error lets Temporal retry.
		retryable  bool
		retryDelay time.Duration
		// sent is how many charge requests of the activity reach the provider.
		sent int
		// status is the HTTP status in the request log, 0 for no answer.
		status int
	}{
		{
			name: "409 while the first request is in flight",
			// The first request gives up after 50ms; its charge takes 300ms.
			opts: activitiestest.Options{Fake: fakeprovider.Config{
				Mode: fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 300 * time.Millisecond},
			}},
			setup: func(t *testing.T, env *activitiestest.Env, intent chargeonce.PaymentIntent) {
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				res := env.Client.Charge(ctx, chargeRequest(intent, intent.Amount.Minor))
				require.Equal(t, provider.Timeout, res.Outcome)
			},
			errType: activities.ErrTypeInFlight, retryable: true, retryDelay: time.Second,
			sent: 1, status: http.StatusConflict,
		},
		{
			name: "422 for the key reused with another amount",
			setup: func(t *testing.T, env *activitiestest.Env, intent chargeonce.PaymentIntent) {
				res := env.Client.Charge(context.Background(), chargeRequest(intent, intent.Amount.Minor+1))
				require.Equal(t, provider.Approved, res.Outcome)
			},
			errType: activities.ErrTypeContractViolation, retryable: false,
			sent: 1, status: http.StatusUnprocessableEntity,
		},
		{
			name:    "503 from the provider processed nothing",
			opts:    activitiestest.Options{Fake: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}}},
			errType: activities.ErrTypeNotProcessed, retryable: true,
			sent: 1, status: http.StatusServiceUnavailable,
		},
		{
			name:    "429 with Retry-After processed nothing",
			opts:    activitiestest.Options{Fake: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeRateLimit, Rate: 1}}},
			errType: activities.ErrTypeNotProcessed, retryable: true, retryDelay: time.Second,
			sent: 1, status: http.StatusTooManyRequests,
		},
		{
			// A gateway's 504: the provider behind it may have the request.
			name:    "504 after a dropped request may hide a charge",
			opts:    activitiestest.Options{Fake: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeDrop, Delay: 50 * time.Millisecond}}},
			errType: activities.ErrTypeUnavailable, retryable: true,
			sent: 1, status: http.StatusGatewayTimeout,
		},
		{
			name:    "no card token",
			token:   "-",
			errType: activities.ErrTypeNoCardToken, retryable: false,
			sent: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := activitiestest.New(t, tt.opts)
			intent := env.NewIntent(t, "tok_visa", amount, time.Now())
			if tt.setup != nil {
				tt.setup(t, env, intent)
			}
			before := len(env.ChargeKeys())
			if tt.token == "-" {
				intent.CardToken = ""
			}

			_, err := charge(t, newActivityEnv(t, env, 0), intent)

			appErr := appError(t, err)
			require.Equal(t, tt.errType, appErr.Type())
			require.Equal(t, !tt.retryable, appErr.NonRetryable())
			require.Equal(t, tt.retryDelay, appErr.NextRetryDelay())
			keys := env.ChargeKeys()[before:]
			require.Len(t, keys, tt.sent)
			for _, k := range keys {
				require.Equal(t, activitiestest.Quoted(intent.Key), k)
			}
			logged := env.Attempt(t, intent.Key).Requests
			require.Len(t, logged, tt.sent)
			if tt.sent > 0 {
				require.Equal(t, tt.status, logged[0].StatusCode)
			}
		})
	}
}

func chargeRequest(intent chargeonce.PaymentIntent, minor int64) provider.ChargeRequest {
	return provider.ChargeRequest{
		Key:               intent.Key,
		Amount:            minor,
		Currency:          intent.Amount.Currency,
		Source:            intent.CardToken,
		Description:       intent.Description,
		MerchantReference: intent.MerchantReference,
	}
}

func TestCharge_NoAnswerBeforeTheDeadlineIsARecordedTimeout(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{Fake: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeDrop}}})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())

	started := time.Now()
	_, err := charge(t, newActivityEnv(t, env, timeoutDeadline), intent)
	elapsed := time.Since(started)

	appErr := appError(t, err)
	require.Equal(t, activities.ErrTypeTimeout, appErr.Type())
	require.False(t, appErr.NonRetryable())
	// The activity gave up on the request itself, before its own deadline,
	// and had the time left to write the timeout down.
	require.Less(t, elapsed, timeoutDeadline)
	require.Equal(t, []string{activitiestest.Quoted(intent.Key)}, env.ChargeKeys())
	require.Empty(t, env.Fake.Charges())
	logged := env.Attempt(t, intent.Key).Requests
	require.Len(t, logged, 1)
	require.Zero(t, logged[0].StatusCode)
	require.Equal(t, string(provider.Timeout), logged[0].Outcome)
}

func TestCharge_OpenBreakerSendsNothing(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{
		Fake:    fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}},
		Breaker: provider.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: time.Hour},
	})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())
	aenv := newActivityEnv(t, env, 0)

	var types, messages []string
	for range 3 {
		_, err := charge(t, aenv, intent)
		appErr := appError(t, err)
		types = append(types, appErr.Type())
		messages = append(messages, appErr.Message())
	}

	// Two 503s and a request held back: none of them processed anything.
	require.Equal(t, []string{activities.ErrTypeNotProcessed, activities.ErrTypeNotProcessed, activities.ErrTypeNotProcessed}, types)
	require.Contains(t, messages[2], string(provider.BreakerOpen))
	require.Len(t, env.ChargeKeys(), 2)
	require.Len(t, env.Attempt(t, intent.Key).Requests, 2)
}

// faultyLog is the real store whose request log fails where its errors
// say, and writes a request's end only once busy, when set, has ended, as
// a database busy with other writers would.
type faultyLog struct {
	activities.Store
	begin, end, unanswered error
	busy                   <-chan struct{}
}

func (s faultyLog) Requests(op chargeonce.Operation) (store.RequestLog, error) {
	l, err := s.Store.Requests(op)
	return faultyRequests{l, s}, err
}

type faultyRequests struct {
	store.RequestLog
	f faultyLog
}

func (r faultyRequests) Begin(ctx context.Context, key string, at time.Time) (store.LoggedRequest, error) {
	if r.f.begin != nil {
		return store.LoggedRequest{}, r.f.begin
	}
	return r.RequestLog.Begin(ctx, key, at)
}

func (r faultyRequests) End(ctx context.Context, lr store.LoggedRequest, req chargeonce.ProviderRequest) error {
	if r.f.busy != nil {
		<-r.f.busy
	}
	if r.f.end != nil {
		return r.f.end
	}
	return r.RequestLog.End(ctx, lr, req)
}

func (r faultyRequests) Unanswered(ctx context.Context, lr store.LoggedRequest) (int, error) {
	if r.f.unanswered != nil {
		return 0, r.f.unanswered
	}
	return r.RequestLog.Unanswered(ctx, lr)
}

func TestCharge_RequestLogFailureAfterTheRequestKeepsTheOutcome(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())
	env.Activities.Store = faultyLog{Store: env.Store, end: errors.New("disk full")}

	res, err := charge(t, newActivityEnv(t, env, 0), intent)

	require.NoError(t, err)
	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	require.Len(t, env.Fake.Charges(), 1)
	logged := env.Attempt(t, intent.Key).Requests
	require.Len(t, logged, 1)
	require.Equal(t, chargeonce.RequestUnanswered, logged[0].Outcome, "the request stays listed, unanswered")
}

func TestCharge_RequestThatCannotBeListedIsNotSentAndItsOutcomeIsUnknown(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())
	env.Activities.Store = faultyLog{Store: env.Store, begin: errors.New("database restarting")}

	_, err := charge(t, newActivityEnv(t, env, 0), intent)

	appErr := appError(t, err)
	require.Equal(t, activities.ErrTypeRequestLogUnavailable, appErr.Type(), "without the log, an earlier request that went out unanswered cannot be ruled out")
	require.False(t, appErr.NonRetryable())
	require.Empty(t, env.ChargeKeys(), "a request that is not listed is not sent")
}

// TestCharge_EarlierUnansweredRequestMakesNothingProcessedUnknown is the
// worker that stopped while its request was in flight: the request was
// listed and charged the card, and its answer was never written. The next
// request, refused by a provider that processes nothing, does not prove
// that nothing was charged.
func TestCharge_EarlierUnansweredRequestMakesNothingProcessedUnknown(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())
	charges, err := env.Store.Requests(chargeonce.OperationCharge)
	require.NoError(t, err)
	_, err = charges.Begin(context.Background(), intent.Key, time.Now())
	require.NoError(t, err)
	require.NoError(t, env.ChargeBehindTheBack(context.Background(), intent))
	require.NoError(t, env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}))

	_, err = charge(t, newActivityEnv(t, env, 0), intent)

	appErr := appError(t, err)
	require.Equal(t, activities.ErrTypeEarlierRequestUnanswered, appErr.Type())
	require.False(t, appErr.NonRetryable())
	require.Len(t, env.Fake.Charges(), 1, "the lost request charged the card")
	logged := env.Attempt(t, intent.Key).Requests
	require.Len(t, logged, 2)
	require.Equal(t, chargeonce.RequestUnanswered, logged[0].Outcome)
	require.Equal(t, http.StatusServiceUnavailable, logged[1].StatusCode)

	env.Activities.Store = faultyLog{Store: env.Store, unanswered: errors.New("database restarting")}
	_, err = charge(t, newActivityEnv(t, env, 0), intent)
	require.Equal(t, activities.ErrTypeRequestLogUnavailable, appError(t, err).Type(), "a log that cannot be read rules nothing out")
}

func TestCharge_TimedOutRequestIsLoggedAfterTheActivityDeadline(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{Fake: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 2 * timeoutDeadline}}})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())
	// The database stays busy until the activity's deadline has passed:
	// the request has used the activity's whole time by the moment its
	// record can be written.
	deadline, cancel := context.WithTimeout(context.Background(), timeoutDeadline)
	t.Cleanup(cancel)
	env.Activities.Store = faultyLog{Store: env.Store, busy: deadline.Done()}

	_, err := charge(t, activityEnvWithin(env, deadline), intent)

	// The activity ended after its deadline, which Temporal reports as
	// its timeout.
	var timeout *temporal.TimeoutError
	require.ErrorAs(t, err, &timeout)
	require.Equal(t, []string{activitiestest.Quoted(intent.Key)}, env.ChargeKeys())
	logged := env.Attempt(t, intent.Key).Requests
	require.Len(t, logged, 1, "the request sent is listed although it used the activity's time up")
	require.Equal(t, string(provider.Timeout), logged[0].Outcome)
}

func TestFindCharge_ReadsWhatTheProviderHolds(t *testing.T) {
	tests := []struct {
		name string
		// tokens are charged, in order, under fresh keys with the attempt's
		// reference; amounts gives each one's amount (the attempt's when 0).
		tokens  []string
		amounts []int64
		want    activities.FindChargeResult
		errType string
		// alert is the alert the activity raises, if any: a mismatch is
		// the workflow's to raise, since it marks the attempt failed.
		alert alert.Name
	}{
		{name: "nothing", want: activities.FindChargeResult{Found: activities.FoundNone}},
		{name: "a succeeded charge", tokens: []string{"tok_visa"}, want: activities.FindChargeResult{Found: activities.FoundSucceeded, ProviderPaymentID: "ch_000001"}},
		{name: "only failed charges", tokens: []string{"tok_chargeDeclined"}, want: activities.FindChargeResult{Found: activities.FoundFailedOnly}},
		{name: "a failed then a succeeded charge", tokens: []string{"tok_chargeDeclined", "tok_visa"}, want: activities.FindChargeResult{Found: activities.FoundSucceeded, ProviderPaymentID: "ch_000002"}},
		{name: "a charge for another amount", tokens: []string{"tok_visa"}, amounts: []int64{100}, errType: activities.ErrTypeChargeMismatch},
		{name: "two succeeded charges", tokens: []string{"tok_visa", "tok_visa"}, want: activities.FindChargeResult{Found: activities.FoundSucceeded, ProviderPaymentID: "ch_000001"}, alert: alert.DoubleCharge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := activitiestest.New(t, activitiestest.Options{})
			var logs bytes.Buffer
			env.Activities.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			intent := env.NewIntent(t, "tok_visa", amount, time.Now())
			for i, token := range tt.tokens {
				req := chargeRequest(intent, intent.Amount.Minor)
				req.Key = intent.Key[:len(intent.Key)-1] + string(rune('a'+i))
				req.Source = token
				if i < len(tt.amounts) {
					req.Amount = tt.amounts[i]
				}
				require.NotEqual(t, provider.TransportError, env.Client.Charge(context.Background(), req).Outcome)
			}
			require.Nil(t, env.Attempt(t, intent.Key).LastCheckedAt)

			val, err := newActivityEnv(t, env, 0).ExecuteActivity(acts.FindCharge, activities.FindChargeInput{
				Key: intent.Key, MerchantReference: intent.MerchantReference, Amount: intent.Amount,
			})

			if tt.errType != "" {
				appErr := appError(t, err)
				require.Equal(t, tt.errType, appErr.Type())
				require.True(t, appErr.NonRetryable())
				var chargeID string
				require.NoError(t, appErr.Details(&chargeID))
				require.Equal(t, env.Fake.Charges()[0].ID, chargeID)
			} else {
				require.NoError(t, err)
				var got activities.FindChargeResult
				require.NoError(t, val.Get(&got))
				require.Equal(t, tt.want, got)
			}
			require.NotNil(t, env.Attempt(t, intent.Key).LastCheckedAt)
			if tt.alert == "" {
				require.NotContains(t, logs.String(), "alert=")
			} else {
				require.Regexp(t, `level=ERROR .* alert=`+string(tt.alert)+` `, logs.String())
			}
		})
	}
}

func TestRecordOutcome_SettlesOnce(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())
	aenv := newActivityEnv(t, env, 0)
	record := func(in activities.RecordOutcomeInput) (activities.RecordOutcomeResult, error) {
		val, err := aenv.ExecuteActivity(acts.RecordOutcome, in)
		if err != nil {
			return activities.RecordOutcomeResult{}, err
		}
		var res activities.RecordOutcomeResult
		require.NoError(t, val.Get(&res))
		return res, nil
	}

	first, err := record(activities.RecordOutcomeInput{Key: intent.Key, Status: chargeonce.AttemptSucceeded, ProviderPaymentID: "ch_000001"})
	require.NoError(t, err)
	second, err := record(activities.RecordOutcomeInput{Key: intent.Key, Status: chargeonce.AttemptAbandoned})
	require.NoError(t, err)

	require.True(t, first.Changed)
	require.False(t, second.Changed)
	order, attempts, err := env.Store.GetOrder(context.Background(), intent.OrderID)
	require.NoError(t, err)
	require.Equal(t, chargeonce.OrderPaid, order.Status)
	require.Equal(t, "ch_000001", order.ProviderPaymentID)
	require.Len(t, attempts, 1)
	require.Equal(t, chargeonce.AttemptSucceeded, attempts[0].Status)
}

func TestRecordOutcome_RefusesWhatCannotBeRecorded(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())
	aenv := newActivityEnv(t, env, 0)
	tests := []struct {
		name    string
		in      activities.RecordOutcomeInput
		errType string
	}{
		{"open is not terminal", activities.RecordOutcomeInput{Key: intent.Key, Status: chargeonce.AttemptOpen}, activities.ErrTypeInvalidRequest},
		{"unknown status", activities.RecordOutcomeInput{Key: intent.Key, Status: "paid"}, activities.ErrTypeInvalidRequest},
		{"unknown attempt", activities.RecordOutcomeInput{Key: "01a1d96c-e23d-77bf-801e-9df969c1d378", Status: chargeonce.AttemptAbandoned}, activities.ErrTypeAttemptNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := aenv.ExecuteActivity(acts.RecordOutcome, tt.in)
			appErr := appError(t, err)
			require.Equal(t, tt.errType, appErr.Type())
			require.True(t, appErr.NonRetryable())
		})
	}
	require.Equal(t, chargeonce.AttemptOpen, env.Attempt(t, intent.Key).Status)
}

// TestCharge_LostResponseIsOneRequest makes sure a lost answer on a kept-alive
// connection is reported, not silently resent: one activity attempt is one
// HTTP request, and the retry is Temporal's, recorded and paced by the policy.
func TestCharge_LostResponseIsOneRequest(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	aenv := newActivityEnv(t, env, 0)
	warmup := env.NewIntent(t, "tok_visa", amount, time.Now())
	_, err := charge(t, aenv, warmup)
	require.NoError(t, err)
	require.NoError(t, env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeLostResponse, Rate: 1}))
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())

	_, err = charge(t, aenv, intent)

	appErr := appError(t, err)
	require.Equal(t, activities.ErrTypeTransport, appErr.Type())
	require.False(t, appErr.NonRetryable())
	require.Len(t, env.ChargeKeys(), 2)
	require.Len(t, env.Fake.Charges(), 2)
}

func TestMetrics_CountRequestsReplaysAndLookupsByProviderAndOperation(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	reg := prometheus.NewRegistry()
	env.Activities.Metrics = activities.NewMetrics(reg)
	intent := env.NewIntent(t, "tok_visa", amount, time.Now())
	aenv := newActivityEnv(t, env, 0)

	for range 2 {
		_, err := charge(t, aenv, intent)
		require.NoError(t, err)
	}
	_, err := aenv.ExecuteActivity(acts.FindCharge, activities.FindChargeInput{Key: intent.Key, MerchantReference: intent.MerchantReference, Amount: intent.Amount})
	require.NoError(t, err)
	r := newRefund(t, env)
	_, err = refund(t, aenv, r)
	require.NoError(t, err)
	_, err = aenv.ExecuteActivity(acts.FindRefund, activities.FindRefundInput{
		Key: r.Key, ChargeID: r.ChargeID, MerchantReference: r.MerchantReference, Amount: r.Amount, Provider: r.Provider,
	})
	require.NoError(t, err)

	name, _ := env.Activities.Providers.Default()
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(strings.ReplaceAll(`
# HELP chargeonce_provider_requests_total Requests that create something at a provider (a charge, a refund), by provider, operation and outcome (approved, declined, in_flight, timeout, breaker_open, ...).
# TYPE chargeonce_provider_requests_total counter
chargeonce_provider_requests_total{operation="charge",outcome="approved",provider="NAME"} 2
chargeonce_provider_requests_total{operation="refund",outcome="approved",provider="NAME"} 1
# HELP chargeonce_provider_replays_total Answers that a provider replayed from its idempotency store, by provider and operation.
# TYPE chargeonce_provider_replays_total counter
chargeonce_provider_replays_total{operation="charge",provider="NAME"} 1
# HELP chargeonce_provider_lookups_total Lookups at a provider by merchant reference, by provider, operation and result (succeeded, failed_only, failed, pending, none, mismatch, double_charge, error).
# TYPE chargeonce_provider_lookups_total counter
chargeonce_provider_lookups_total{operation="charge",provider="NAME",result="succeeded"} 1
chargeonce_provider_lookups_total{operation="refund",provider="NAME",result="succeeded"} 1
# HELP chargeonce_refunds_total Refunds settled in the merchant database, by status (succeeded, failed, not_processed).
# TYPE chargeonce_refunds_total counter
chargeonce_refunds_total{status="failed"} 0
chargeonce_refunds_total{status="not_processed"} 0
chargeonce_refunds_total{status="succeeded"} 0
`, "NAME", name))))
}
