package workflows_test

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/activities/activitiestest"
	"chargeonce/fakeprovider"
	"chargeonce/internal/alert"
	"chargeonce/internal/logging"
	"chargeonce/internal/syncbuf"
	"chargeonce/provider"
	"chargeonce/store"
	"chargeonce/workflows"
)

var (
	amount = chargeonce.Money{Minor: 54890, Currency: "TRY"}
	// createdAt is when every test's attempt is created, and where the
	// workflow's clock starts.
	createdAt = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	// failing is a provider that answers every charge with 503, which
	// processes nothing.
	failing = fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeError, Rate: 1}}
	// patientBreaker never opens during a test, so that every retry reaches
	// the provider.
	patientBreaker = provider.BreakerConfig{ConsecutiveFailures: 1000}
	// dropping is a provider that never answers a charge, so that its
	// outcome is unknown, behind a breaker that lets a later request
	// through.
	dropping = activitiestest.Options{Fake: fakeprovider.Config{Mode: fakeprovider.Mode{Name: fakeprovider.ModeDrop}}, Breaker: patientBreaker}
	// shortCharge gives up on a dropped request and on the charge phase in
	// well under a second of real time.
	shortCharge = workflows.Timing{AttemptTimeout: 200 * time.Millisecond, SendBudget: time.Second, RetryInterval: 100 * time.Millisecond}
)

// activitiesStarted records the type of every activity and local activity
// that the workflow starts, but for the records of an outcome
// (RecordOutcome, RecordRefundOutcome), which reach no provider.
func activitiesStarted(wenv *testsuite.TestWorkflowEnvironment) func() []string {
	var mu sync.Mutex
	var types []string
	started := func(info *activity.Info) {
		mu.Lock()
		defer mu.Unlock()
		if !strings.HasPrefix(info.ActivityType.Name, "Record") {
			types = append(types, info.ActivityType.Name)
		}
	}
	wenv.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) { started(info) })
	wenv.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) { started(info) })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), types...)
	}
}

// countOf counts the occurrences of v in vs.
func countOf(vs []string, v string) int {
	n := 0
	for _, x := range vs {
		if x == v {
			n++
		}
	}
	return n
}

// firstThen500s is a provider whose first charge request is answered by
// first and every later one with a 500, which processes nothing.
func firstThen500s(first func(w http.ResponseWriter, r *http.Request, next http.Handler)) activitiestest.Options {
	var requests atomic.Int32
	return activitiestest.Options{
		Breaker: patientBreaker,
		Middleware: func(_ *fakeprovider.Provider, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method != http.MethodPost || r.URL.Path != "/v1/charges":
					next.ServeHTTP(w, r)
				case requests.Add(1) == 1:
					first(w, r, next)
				default:
					serverError(w, r, next)
				}
			})
		},
	}
}

func serverError(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = io.WriteString(w, `{"type": "about:blank", "title": "Internal error", "status": 500}`)
}

// rateLimited answers 429 with a Retry-After of three seconds.
func rateLimited(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
	w.Header().Set("Retry-After", "3")
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = io.WriteString(w, `{"type": "about:blank", "title": "Too many requests", "status": 429}`)
}

// chargedAnswerLost lets the provider charge, and then never answers, so
// that the request times out with the charge made.
func chargedAnswerLost(_ http.ResponseWriter, r *http.Request, next http.Handler) {
	next.ServeHTTP(httptest.NewRecorder(), r)
	<-r.Context().Done()
}

func newWorkflowEnv(t *testing.T, env *activitiestest.Env, start time.Time) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	wenv := suite.NewTestWorkflowEnvironment()
	workflows.Register(wenv, env.Activities)
	wenv.SetStartTime(start)
	return wenv
}

// newLoggedWorkflowEnv is newWorkflowEnv whose workflow and activities log
// into the returned buffer at info, as a process does by default.
func newLoggedWorkflowEnv(t *testing.T, env *activitiestest.Env, start time.Time) (*testsuite.TestWorkflowEnvironment, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	logger, err := logging.New(logs, "text", "info")
	require.NoError(t, err)
	env.Activities.Logger = logger
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(logger))
	wenv := suite.NewTestWorkflowEnvironment()
	workflows.Register(wenv, env.Activities)
	wenv.SetStartTime(start)
	return wenv, logs
}

// requireOneError checks that the log holds exactly one error line, and
// that it raises the alert n.
func requireOneError(t *testing.T, logs string, n alert.Name) {
	t.Helper()
	var errs []string
	for line := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(line, "level=ERROR") {
			errs = append(errs, line)
		}
	}
	require.Len(t, errs, 1, "one error line: %s", logs)
	require.Contains(t, errs[0], "alert="+string(n))
}

// run executes the payment workflow to its end and returns its result.
func run(t *testing.T, wenv *testsuite.TestWorkflowEnvironment, in workflows.PaymentInput) workflows.PaymentResult {
	t.Helper()
	wenv.ExecuteWorkflow(workflows.PaymentWorkflow, in)
	require.True(t, wenv.IsWorkflowCompleted())
	require.NoError(t, wenv.GetWorkflowError())
	var res workflows.PaymentResult
	require.NoError(t, wenv.GetWorkflowResult(&res))
	return res
}

func queryStatus(t *testing.T, wenv *testsuite.TestWorkflowEnvironment) workflows.Status {
	t.Helper()
	val, err := wenv.QueryWorkflow(chargeonce.QueryStatus)
	require.NoError(t, err)
	var st workflows.Status
	require.NoError(t, val.Get(&st))
	return st
}

// requireOneKey checks that every charge request carried the intent's key as
// a Structured Field String, and that there were n of them.
func requireOneKey(t *testing.T, env *activitiestest.Env, intent chargeonce.PaymentIntent, n int) {
	t.Helper()
	keys := env.ChargeKeys()
	require.Len(t, keys, n)
	for _, k := range keys {
		require.Equal(t, activitiestest.Quoted(intent.Key), k)
	}
}

// requireSettled checks the attempt and its order in the database.
func requireSettled(t *testing.T, env *activitiestest.Env, intent chargeonce.PaymentIntent, status chargeonce.AttemptStatus, chargeID string) {
	t.Helper()
	order, attempts, err := env.Store.GetOrder(context.Background(), intent.OrderID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	require.Equal(t, status, attempts[0].Status)
	require.Equal(t, chargeID, attempts[0].ProviderPaymentID)
	require.Equal(t, chargeonce.OrderStatusAfter(status), order.Status)
}

// lookupTimes are the times at which the intent is looked up with the
// default timing while the provider holds no charge for it.
func lookupTimes(intent chargeonce.PaymentIntent) []time.Time {
	return workflows.DefaultTiming().LookupTimes(intent.Key, intent.CreatedAt)
}

// chargeBehindTheWorkflowsBack makes the provider hold a charge of the
// intent whose answer never reached the workflow.
func chargeBehindTheWorkflowsBack(t *testing.T, env *activitiestest.Env, intent chargeonce.PaymentIntent) {
	t.Helper()
	require.NoError(t, env.ChargeBehindTheBack(context.Background(), intent))
	require.Len(t, env.Fake.Charges(), 1)
}

func TestPaymentWorkflow_ApprovedChargeMarksTheOrderPaid(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	var upserts []map[string]string
	wenv.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		upserts = append(upserts, keywords(args.Get(0).(temporal.SearchAttributes)))
	})
	var local []string
	wenv.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		local = append(local, info.ActivityType.Name)
	})

	res := run(t, wenv, workflows.PaymentInput{Intent: intent})

	// The charge request is a local activity that settles the attempt
	// with the answer; nothing records it again.
	require.Equal(t, []string{"Charge"}, local)
	charges := env.Fake.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	require.Equal(t, charges[0].ID, res.ProviderPaymentID)
	requireOneKey(t, env, intent, 1)
	requireSettled(t, env, intent, chargeonce.AttemptSucceeded, charges[0].ID)
	require.Equal(t, workflows.Status{Phase: workflows.PhaseCompleted}, queryStatus(t, wenv))
	order := strconv.FormatInt(intent.OrderID, 10)
	require.Equal(t, []map[string]string{
		{workflows.SearchAttrOrderID.GetName(): order, workflows.SearchAttrPaymentStatus.GetName(): "open", workflows.SearchAttrMerchantReference.GetName(): intent.MerchantReference},
		{workflows.SearchAttrOrderID.GetName(): order, workflows.SearchAttrPaymentStatus.GetName(): "succeeded", workflows.SearchAttrMerchantReference.GetName(): intent.MerchantReference, workflows.SearchAttrProviderPaymentID.GetName(): charges[0].ID},
	}, upserts)
}

func TestPaymentWorkflow_StartedWithItsSearchAttributesUpsertsOnlyTheOutcome(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	order := strconv.FormatInt(intent.OrderID, 10)
	// As the checkout and the outbox sweep start it.
	require.NoError(t, wenv.SetTypedSearchAttributesOnStart(workflows.StartSearchAttributes(intent)))
	var upserts []map[string]string
	wenv.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(func(args mock.Arguments) {
		upserts = append(upserts, keywords(args.Get(0).(temporal.SearchAttributes)))
	})

	res := run(t, wenv, workflows.PaymentInput{Intent: intent})

	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	requireSettled(t, env, intent, chargeonce.AttemptSucceeded, res.ProviderPaymentID)
	require.Equal(t, []map[string]string{
		{workflows.SearchAttrOrderID.GetName(): order, workflows.SearchAttrPaymentStatus.GetName(): "succeeded", workflows.SearchAttrMerchantReference.GetName(): intent.MerchantReference, workflows.SearchAttrProviderPaymentID.GetName(): res.ProviderPaymentID},
	}, upserts)
}

// awayStore is the test's real store with the database away for the first
// failures settlements.
type awayStore struct {
	activities.Store
	mu       sync.Mutex
	failures int
	calls    int
}

func (s *awayStore) SettleAttempt(ctx context.Context, key string, status chargeonce.AttemptStatus, providerPaymentID string, at time.Time) (store.Settlement, error) {
	s.mu.Lock()
	s.calls++
	away := s.calls <= s.failures
	s.mu.Unlock()
	if away {
		return store.Settlement{}, errors.New("database is away")
	}
	return s.Store.SettleAttempt(ctx, key, status, providerPaymentID, at)
}

func TestPaymentWorkflow_OutcomeOutlastsADatabaseAwayPastTheLocalBudget(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	// Ten failed settlements back off for 1+2+4+...+256s: far longer than
	// the local activity's retries may take.
	store := &awayStore{Store: env.Store, failures: 10}
	acts := *env.Activities
	acts.Store = store
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	wenv := suite.NewTestWorkflowEnvironment()
	workflows.Register(wenv, &acts)
	wenv.SetStartTime(createdAt)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent})

	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	requireSettled(t, env, intent, chargeonce.AttemptSucceeded, res.ProviderPaymentID)
	require.Equal(t, 11, store.calls)
}

// keywords reads the payment's keyword search attributes that are set.
func keywords(sa temporal.SearchAttributes) map[string]string {
	out := map[string]string{}
	for _, key := range []temporal.SearchAttributeKeyKeyword{workflows.SearchAttrOrderID, workflows.SearchAttrPaymentStatus, workflows.SearchAttrMerchantReference, workflows.SearchAttrProviderPaymentID} {
		if v, ok := sa.GetKeyword(key); ok {
			out[key.GetName()] = v
		}
	}
	return out
}

// TestPaymentWorkflow_DeclineReturnsTheOrderToPlaced covers a card's
// decline and one that is the provider's own trouble: both settle the
// attempt declined, and the result says whose decline it is.
func TestPaymentWorkflow_DeclineReturnsTheOrderToPlaced(t *testing.T) {
	cases := []struct {
		token, code string
		trouble     bool
		message     string
	}{
		{"tok_chargeDeclined", "do_not_honor", false, "card declined by the provider: do_not_honor"},
		{"tok_chargeDeclinedTryAgainLater", "try_again_later", true, "declined for the provider's own trouble, not the card's; nothing was charged: try_again_later"},
	}
	for _, tc := range cases {
		t.Run(tc.token, func(t *testing.T) {
			env := activitiestest.New(t, activitiestest.Options{})
			intent := env.NewIntent(t, tc.token, amount, createdAt)
			wenv := newWorkflowEnv(t, env, createdAt)

			res := run(t, wenv, workflows.PaymentInput{Intent: intent})

			require.Equal(t, chargeonce.AttemptDeclined, res.Status)
			require.Equal(t, tc.code, res.DeclineCode)
			require.Equal(t, tc.trouble, res.ProviderTrouble)
			require.Equal(t, tc.message, res.Message)
			requireOneKey(t, env, intent, 1)
			requireSettled(t, env, intent, chargeonce.AttemptDeclined, env.Fake.Charges()[0].ID)
		})
	}
}

// TestPaymentWorkflow_409IsRetriedWithTheSameKey replays the slow provider:
// the first request times out while the provider goes on charging, the retry
// gets 409, and the next one gets the stored 201 as a replay. The test clock
// skips the retry intervals but not the HTTP exchanges, so the fake finishes
// the charge right when it answers the 409 (see activitiestest.SlowProvider).
func TestPaymentWorkflow_409IsRetriedWithTheSameKey(t *testing.T) {
	env := activitiestest.New(t, activitiestest.SlowProvider())
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: workflows.Timing{AttemptTimeout: 300 * time.Millisecond}})

	charges := env.Fake.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	require.Equal(t, charges[0].ID, res.ProviderPaymentID)
	requireOneKey(t, env, intent, 3)
	var statuses []int
	var replayed []bool
	for _, r := range env.Fake.ChargeRequests() {
		statuses = append(statuses, r.Status)
		replayed = append(replayed, r.Replayed)
	}
	require.Equal(t, []int{0, http.StatusConflict, http.StatusCreated}, statuses)
	require.Equal(t, []bool{false, false, true}, replayed)
	var outcomes []string
	for _, r := range env.Attempt(t, intent.Key).Requests {
		outcomes = append(outcomes, r.Outcome)
	}
	require.Equal(t, []string{string(provider.Timeout), string(provider.InFlight), string(provider.Approved)}, outcomes)
	requireSettled(t, env, intent, chargeonce.AttemptSucceeded, charges[0].ID)
}

func TestPaymentWorkflow_422IsNotRetried(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	// A bug sent this key with another amount before.
	earlier := env.Client.Charge(context.Background(), provider.ChargeRequest{
		Key: intent.Key, Amount: intent.Amount.Minor + 100, Currency: intent.Amount.Currency,
		Source: intent.CardToken, MerchantReference: intent.MerchantReference,
	})
	require.Equal(t, provider.Approved, earlier.Outcome)
	wenv, logs := newLoggedWorkflowEnv(t, env, createdAt)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent})

	require.Equal(t, chargeonce.AttemptFailed, res.Status)
	requests := env.Fake.ChargeRequests()
	require.Len(t, requests, 2)
	require.Equal(t, http.StatusUnprocessableEntity, requests[1].Status)
	requireSettled(t, env, intent, chargeonce.AttemptFailed, "")
	requireOneError(t, logs.String(), alert.ContractViolation)
}

// TestPaymentWorkflow_ATimeoutAmong500sKeepsTheOutcomeUnknown: 500s
// processed nothing, but the request that timed out may have been processed,
// and was: the outcome is unknown, a customer retry whose requests get 500s
// too leaves it so, and reconciliation finds the charge.
func TestPaymentWorkflow_ATimeoutAmong500sKeepsTheOutcomeUnknown(t *testing.T) {
	env := activitiestest.New(t, firstThen500s(chargedAnswerLost))
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	started := activitiesStarted(wenv)
	retry := &chargeUpdate{t: t}
	var sentBefore int
	wenv.RegisterDelayedCallback(func() {
		sentBefore = len(env.ChargeKeys())
		wenv.UpdateWorkflow(chargeonce.UpdateCharge, "retry", retry.callbacks(), workflows.ChargeRequest{CardToken: intent.CardToken, CardHash: intent.CardHash})
	}, 30*time.Second)
	var during workflows.Status
	wenv.RegisterDelayedCallback(func() { during = queryStatus(t, wenv) }, time.Minute)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: workflows.Timing{AttemptTimeout: 300 * time.Millisecond}})

	require.NoError(t, retry.rejected)
	require.NotNil(t, retry.result)
	require.Equal(t, chargeonce.AttemptOpen, retry.result.Status, "the retry processed nothing, which tells nothing")
	require.Greater(t, len(env.ChargeKeys()), sentBefore+1, "the retry was sent, and retried within its budget")
	require.Equal(t, workflows.PhaseReconciling, during.Phase)
	require.Contains(t, during.LastError, activities.ErrTypeNotProcessed, "the last request got a 500")
	var outcomes []string
	for _, r := range env.Attempt(t, intent.Key).Requests {
		outcomes = append(outcomes, r.Outcome)
	}
	require.Greater(t, sentBefore, 2, "the 500s were retried within the budget")
	require.Equal(t, string(provider.Timeout), outcomes[0])
	for _, o := range outcomes[1:] {
		require.Equal(t, string(provider.Unavailable), o)
	}
	requireOneKey(t, env, intent, len(outcomes))
	charges := env.Fake.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	require.Equal(t, charges[0].ID, res.ProviderPaymentID)
	// Found by the first lookup, at CreatedAt+MinAge plus the key's jitter.
	require.Equal(t, lookupTimes(intent)[0], wenv.Now().UTC())
	require.Equal(t, 1, countOf(started(), "FindCharge"))
	require.Equal(t, workflows.Status{Phase: workflows.PhaseCompleted, Checks: 1}, queryStatus(t, wenv))
	requireSettled(t, env, intent, chargeonce.AttemptSucceeded, charges[0].ID)
}

// TestPaymentWorkflow_NothingProcessedSettlesNotProcessedAtOnce: when no
// request of the charge phase can have been processed, the attempt is
// settled not_processed within the budget, the order is placed again, and
// the provider is never asked about a charge that cannot exist.
func TestPaymentWorkflow_NothingProcessedSettlesNotProcessedAtOnce(t *testing.T) {
	// A request goes out every second while a whole 2.5s attempt still
	// fits in the 10s budget: at 0s, 1s, ... 7s.
	timing := workflows.Timing{AttemptTimeout: 2500 * time.Millisecond}
	tests := []struct {
		name string
		opts activitiestest.Options
		// openBreaker opens the breaker before the payment starts.
		openBreaker bool
		// requests is how many charge requests the workflow makes, and sent
		// how many of them reach the provider.
		requests, sent int
	}{
		{
			name:        "the breaker is open from the first request",
			opts:        activitiestest.Options{Fake: failing, Breaker: provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}},
			openBreaker: true,
			requests:    8, sent: 0,
		},
		{
			name:     "503s open the breaker",
			opts:     activitiestest.Options{Fake: failing, Breaker: provider.BreakerConfig{ConsecutiveFailures: 3, OpenTimeout: time.Hour}},
			requests: 8, sent: 3,
		},
		{
			name:     "500s",
			opts:     firstThen500s(serverError),
			requests: 8, sent: 8,
		},
		{
			// The 3s Retry-After leaves out the requests of 1s and 2s.
			name:     "a 429 with Retry-After, then 500s",
			opts:     firstThen500s(rateLimited),
			requests: 6, sent: 6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := activitiestest.New(t, tt.opts)
			intent := env.NewIntent(t, "tok_visa", amount, createdAt)
			if tt.openBreaker {
				other := env.NewIntent(t, "tok_visa", amount, createdAt)
				port, err := env.Activities.Providers.Get("")
				require.NoError(t, err)
				opened := port.Charge(context.Background(), provider.ChargeRequestOf(other))
				require.Equal(t, http.StatusServiceUnavailable, opened.StatusCode)
			}
			sentBefore := len(env.ChargeKeys())
			wenv := newWorkflowEnv(t, env, createdAt)
			started := activitiesStarted(wenv)

			res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: timing})

			require.Equal(t, chargeonce.AttemptNotProcessed, res.Status, res.Message)
			require.Contains(t, res.Message, "nothing was charged")
			require.LessOrEqual(t, wenv.Now().Sub(createdAt), workflows.DefaultTiming().SendBudget, "settled within the charge budget")
			require.Equal(t, []string{"Charge"}, slices.Compact(started()), "the provider is never asked for the charge")
			require.Len(t, started(), tt.requests)
			require.Equal(t, tt.sent, countOf(env.ChargeKeys(), activitiestest.Quoted(intent.Key)))
			require.Len(t, env.ChargeKeys(), sentBefore+tt.sent)
			require.Len(t, env.Attempt(t, intent.Key).Requests, tt.sent)
			require.Empty(t, env.Fake.Charges())
			require.Equal(t, workflows.PhaseCompleted, queryStatus(t, wenv).Phase)
			requireSettled(t, env, intent, chargeonce.AttemptNotProcessed, "")
		})
	}
}

// TestPaymentWorkflow_FailOverEndsAtTheFirstRefusal: a payment that
// another provider may take ends not_processed at the first request its
// provider certainly did not process, with no retry, so that the checkout
// moves it on at once.
func TestPaymentWorkflow_FailOverEndsAtTheFirstRefusal(t *testing.T) {
	tests := []struct {
		name string
		opts activitiestest.Options
	}{
		{"a 503", activitiestest.Options{Fake: failing, Breaker: patientBreaker}},
		{"a 429", firstThen500s(rateLimited)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := activitiestest.New(t, tt.opts)
			intent := env.NewIntent(t, "tok_visa", amount, createdAt)
			wenv := newWorkflowEnv(t, env, createdAt)
			started := activitiesStarted(wenv)

			res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: workflows.Timing{AttemptTimeout: 2500 * time.Millisecond}, FailOver: true})

			require.Equal(t, chargeonce.AttemptNotProcessed, res.Status, res.Message)
			require.Equal(t, 1, countOf(env.ChargeKeys(), activitiestest.Quoted(intent.Key)))
			require.Equal(t, []string{"Charge"}, started(), "one request, and no lookup")
			require.Equal(t, createdAt, wenv.Now().UTC(), "settled at once")
			require.Empty(t, env.Fake.Charges())
			requireSettled(t, env, intent, chargeonce.AttemptNotProcessed, "")
		})
	}
}

func TestPaymentWorkflow_DroppedRequestsAreAbandonedAtTheDeadline(t *testing.T) {
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	timing := shortCharge

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	require.Equal(t, chargeonce.AttemptAbandoned, res.Status)
	// The test environment skipped the 30 minutes of workflow time.
	require.Equal(t, 30*time.Minute, wenv.Now().Sub(intent.CreatedAt))
	// Every lookup of the grid, the last at the deadline.
	require.Equal(t, workflows.Status{Phase: workflows.PhaseCompleted, Checks: len(timing.WithDefaults().LookupTimes(intent.Key, intent.CreatedAt))}, queryStatus(t, wenv))
	require.GreaterOrEqual(t, len(env.ChargeKeys()), 2)
	requireOneKey(t, env, intent, len(env.ChargeKeys()))
	for _, r := range env.Fake.ChargeRequests() {
		require.Zero(t, r.Status)
	}
	require.Empty(t, env.Fake.Charges())
	requireSettled(t, env, intent, chargeonce.AttemptAbandoned, "")
	require.NotNil(t, env.Attempt(t, intent.Key).LastCheckedAt)
}

// updateCallbacks collects the outcome of one update whose answer is a T:
// a charge update's PaymentResult, a refund update's RefundResult.
type updateCallbacks[T any] struct {
	t        *testing.T
	rejected error
	result   *T
	err      error
}

func (u *updateCallbacks[T]) callbacks() *testsuite.TestUpdateCallback {
	return &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { u.rejected = err },
		OnComplete: func(v any, err error) {
			u.err = err
			if err != nil {
				return
			}
			res, ok := v.(T)
			if !ok {
				require.NoError(u.t, v.(converter.EncodedValue).Get(&res))
			}
			u.result = &res
		},
	}
}

// chargeUpdate is the caller of a "charge" update and what it got.
type chargeUpdate = updateCallbacks[workflows.PaymentResult]

func TestPaymentWorkflow_CustomerRetryResendsTheStoredKey(t *testing.T) {
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	first, second := &chargeUpdate{t: t}, &chargeUpdate{t: t}
	var sentBefore int
	var statusBefore workflows.Status
	wenv.RegisterDelayedCallback(func() {
		sentBefore = len(env.ChargeKeys())
		statusBefore = queryStatus(t, wenv)
		require.NoError(t, env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
		// A double click: two retries at once send one request.
		wenv.UpdateWorkflow(chargeonce.UpdateCharge, "retry-1", first.callbacks(), workflows.ChargeRequest{CardToken: intent.CardToken, CardHash: intent.CardHash})
		wenv.UpdateWorkflow(chargeonce.UpdateCharge, "retry-2", second.callbacks(), workflows.ChargeRequest{})
	}, 30*time.Second)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	require.Equal(t, workflows.PhaseReconciling, statusBefore.Phase)
	require.Equal(t, lookupTimes(intent)[0], statusBefore.NextCheckAt)
	require.NotEmpty(t, statusBefore.LastError)
	charges := env.Fake.Charges()
	require.Len(t, charges, 1)
	want := workflows.PaymentResult{Status: chargeonce.AttemptSucceeded, ProviderPaymentID: charges[0].ID, Message: res.Message}
	require.Equal(t, want, res)
	for _, u := range []*chargeUpdate{first, second} {
		require.NoError(t, u.rejected)
		require.NoError(t, u.err)
		require.Equal(t, want, *u.result)
	}
	requireOneKey(t, env, intent, sentBefore+1)
	// Paid at the retry, before any lookup.
	require.Equal(t, createdAt.Add(30*time.Second), wenv.Now().UTC())
	require.Equal(t, workflows.Status{Phase: workflows.PhaseCompleted}, queryStatus(t, wenv))
	requireSettled(t, env, intent, chargeonce.AttemptSucceeded, charges[0].ID)
}

func TestPaymentWorkflow_ProviderEventChecksAtOnce(t *testing.T) {
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	accepted := 0
	event := &testsuite.TestUpdateCallback{
		OnAccept:   func() { accepted++ },
		OnReject:   func(err error) { t.Errorf("the provider event was rejected: %v", err) },
		OnComplete: func(any, error) {},
	}
	wenv.RegisterDelayedCallback(func() {
		// The event alone settles nothing: a bogus event finds no charge.
		wenv.UpdateWorkflow(chargeonce.UpdateProviderEvent, "evt_1", event, workflows.ProviderEvent{ChargeID: "ch_bogus"})
	}, 20*time.Second)
	wenv.RegisterDelayedCallback(func() {
		require.Equal(t, workflows.Status{Phase: workflows.PhaseReconciling, Checks: 1, NextCheckAt: lookupTimes(intent)[0]}, queryStatus(t, wenv))
		chargeBehindTheWorkflowsBack(t, env, intent)
		wenv.UpdateWorkflow(chargeonce.UpdateProviderEvent, "evt_2", event, workflows.ProviderEvent{ChargeID: env.Fake.Charges()[0].ID})
	}, 40*time.Second)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	require.Equal(t, 2, accepted, "both events were taken")

	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	require.Equal(t, env.Fake.Charges()[0].ID, res.ProviderPaymentID)
	require.Equal(t, createdAt.Add(40*time.Second), wenv.Now().UTC())
	require.Equal(t, workflows.Status{Phase: workflows.PhaseCompleted, Checks: 2}, queryStatus(t, wenv))
}

// TestPaymentWorkflow_ProviderEventDuringTheChargePhaseIsNotLost: an event
// that arrives while the charge requests are still going out makes the first
// lookup happen as soon as the phase ends unknown, not at MinAge, and the
// attempt settles from what that lookup finds. It comes as the signal that
// API processes of earlier releases send.
func TestPaymentWorkflow_ProviderEventDuringTheChargePhaseIsNotLost(t *testing.T) {
	tests := []struct {
		name  string
		found activities.FindChargeResult
		want  chargeonce.AttemptStatus
	}{
		{"the lookup finds the charge", activities.FindChargeResult{Found: activities.FoundSucceeded, ProviderPaymentID: "ch_000001"}, chargeonce.AttemptSucceeded},
		{"the lookup finds nothing: a bogus event settles nothing", activities.FindChargeResult{Found: activities.FoundNone}, chargeonce.AttemptAbandoned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := activitiestest.New(t, dropping)
			intent := env.NewIntent(t, "tok_visa", amount, createdAt)
			wenv := newWorkflowEnv(t, env, createdAt)
			var acts *activities.Activities
			var lookups []time.Time
			wenv.OnActivity(acts.FindCharge, mock.Anything, mock.Anything).Return(
				func(context.Context, activities.FindChargeInput) (activities.FindChargeResult, error) {
					lookups = append(lookups, wenv.Now().UTC())
					return tt.found, nil
				})
			var phase string
			wenv.RegisterDelayedCallback(func() {
				phase = queryStatus(t, wenv).Phase
				wenv.SignalWorkflow(chargeonce.SignalProviderEvent, workflows.ProviderEvent{ChargeID: "ch_000001"})
			}, time.Millisecond)

			res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

			require.Equal(t, workflows.PhaseCharging, phase, "the event came during the charge phase")
			require.Equal(t, tt.want, res.Status)
			require.NotEmpty(t, lookups)
			timing := shortCharge.WithDefaults()
			require.Less(t, lookups[0], createdAt.Add(timing.MinAge), "looked up at once, not at MinAge")
			if tt.want == chargeonce.AttemptSucceeded {
				require.Equal(t, "ch_000001", res.ProviderPaymentID)
				require.Len(t, lookups, 1)
				require.Equal(t, lookups[0], wenv.Now().UTC(), "settled by that lookup")
				return
			}
			// Nothing found: the lookups go on on the key's grid, as without
			// the event.
			require.Equal(t, timing.LookupTimes(intent.Key, intent.CreatedAt), lookups[1:])
		})
	}
}

func TestPaymentWorkflow_MismatchingChargeFailsTheAttempt(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{Breaker: patientBreaker})
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	// A charge for this reference, but for another amount and under another key.
	other := env.Client.Charge(context.Background(), provider.ChargeRequest{
		Key: "01a1d96c-e23d-77bf-801e-9df969c1d378", Amount: 100, Currency: intent.Amount.Currency,
		Source: intent.CardToken, MerchantReference: intent.MerchantReference,
	})
	require.Equal(t, provider.Approved, other.Outcome)
	require.NoError(t, env.Fake.SetMode(dropping.Fake.Mode))
	wenv, logs := newLoggedWorkflowEnv(t, env, createdAt)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	require.Equal(t, chargeonce.AttemptFailed, res.Status)
	require.Equal(t, other.ChargeID, res.ProviderPaymentID)
	require.Contains(t, res.Message, "does not match")
	require.Len(t, env.Fake.Charges(), 1)
	requireSettled(t, env, intent, chargeonce.AttemptFailed, other.ChargeID)
	requireOneError(t, logs.String(), alert.ChargeMismatch)
}

func TestPaymentWorkflow_ContinueAsNewKeepsTheState(t *testing.T) {
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	wenv.SetCurrentHistoryLength(workflows.MaxHistoryLength)

	wenv.ExecuteWorkflow(workflows.PaymentWorkflow, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	var canErr *workflow.ContinueAsNewError
	require.ErrorAs(t, wenv.GetWorkflowError(), &canErr)
	var next workflows.PaymentInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(canErr.Input, &next))
	require.Equal(t, intent, next.Intent)
	require.Equal(t, shortCharge, next.Timing)
	require.Equal(t, &workflows.CarriedState{Checks: 1}, next.Carried)
	continuedAt := wenv.Now().UTC()
	require.Equal(t, lookupTimes(intent)[0], continuedAt)
	sent := len(env.ChargeKeys())

	wenv = newWorkflowEnv(t, env, continuedAt)
	res := run(t, wenv, next)

	require.Equal(t, chargeonce.AttemptAbandoned, res.Status)
	// The lookups go on from the carried count, over the whole grid.
	require.Equal(t, workflows.Status{Phase: workflows.PhaseCompleted, Checks: len(lookupTimes(intent))}, queryStatus(t, wenv))
	// The continued run reconciles; it never charges again.
	requireOneKey(t, env, intent, sent)
}

// A run continued as new while the input still had a history limit of its
// own carries it in its input: the input still decodes, the field is
// ignored, and the run continues as new only at MaxHistoryLength.
func TestPaymentWorkflow_AnInputWithTheOldHistoryLimitStillRuns(t *testing.T) {
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	wenv.SetCurrentHistoryLength(200)
	old := struct {
		Intent           chargeonce.PaymentIntent `json:"intent"`
		Timing           workflows.Timing         `json:"timing"`
		Carried          *workflows.CarriedState  `json:"carried"`
		MaxHistoryLength int                      `json:"maxHistoryLength"`
	}{intent, shortCharge, &workflows.CarriedState{Checks: 1}, 100}

	wenv.ExecuteWorkflow("PaymentWorkflow", old)

	require.NoError(t, wenv.GetWorkflowError(), "settled, not continued as new")
	var res workflows.PaymentResult
	require.NoError(t, wenv.GetWorkflowResult(&res))
	require.Equal(t, chargeonce.AttemptAbandoned, res.Status)
	require.Empty(t, env.ChargeKeys(), "a carried run only reconciles")
}

func TestPaymentWorkflow_ChargeUpdateOfAnotherCardIsRefused(t *testing.T) {
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	wrongCard, rightCard := &chargeUpdate{t: t}, &chargeUpdate{t: t}
	var sentBefore int
	wenv.RegisterDelayedCallback(func() {
		sentBefore = len(env.ChargeKeys())
		require.NoError(t, env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
		wenv.UpdateWorkflow(chargeonce.UpdateCharge, "wrong-card", wrongCard.callbacks(), workflows.ChargeRequest{CardToken: "tok_mastercard", CardHash: activitiestest.CardHasher.Hash("tok_mastercard")})
		wenv.UpdateWorkflow(chargeonce.UpdateCharge, "right-card", rightCard.callbacks(), workflows.ChargeRequest{CardToken: "tok_visa", CardHash: activitiestest.CardHasher.Hash("tok_visa")})
	}, 90*time.Second)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	require.ErrorContains(t, wrongCard.rejected, "card differs")
	require.Nil(t, wrongCard.result)
	require.NoError(t, rightCard.rejected)
	charges := env.Fake.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	require.Equal(t, res, *rightCard.result)
	requireOneKey(t, env, intent, sentBefore+1)
	require.Equal(t, createdAt.Add(90*time.Second), wenv.Now().UTC())
	requireSettled(t, env, intent, chargeonce.AttemptSucceeded, charges[0].ID)
}

func TestPaymentWorkflow_NoChargeIsSentTooCloseToTheAbandonDeadline(t *testing.T) {
	// A request sent just before the deadline could still be processing when
	// the deadline's lookup finds nothing: the attempt would be abandoned and
	// the charge would arrive behind it. So a customer retry that late sends
	// nothing, and the last lookup decides.
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	timing := shortCharge.WithDefaults()
	// The last moment a charge may go out: abandon deadline minus the charge
	// budget minus the time the provider is given to finish (MinAge).
	lastSend := timing.AbandonAfter - timing.SendBudget - timing.MinAge
	late := &chargeUpdate{t: t}
	var sentBefore int
	wenv.RegisterDelayedCallback(func() {
		sentBefore = len(env.ChargeKeys())
		require.NoError(t, env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
		wenv.UpdateWorkflow(chargeonce.UpdateCharge, "late", late.callbacks(), workflows.ChargeRequest{CardToken: "tok_visa", CardHash: activitiestest.CardHasher.Hash("tok_visa")})
	}, lastSend+time.Second)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	require.NoError(t, late.rejected)
	require.NotNil(t, late.result)
	require.Equal(t, chargeonce.AttemptOpen, late.result.Status, "the late retry is answered pending")
	require.Positive(t, sentBefore)
	require.Len(t, env.ChargeKeys(), sentBefore, "nothing is sent after the last send time")
	require.Equal(t, chargeonce.AttemptAbandoned, res.Status)
	require.Equal(t, timing.AbandonAfter, wenv.Now().Sub(intent.CreatedAt))
	require.Empty(t, env.Fake.Charges())
	requireSettled(t, env, intent, chargeonce.AttemptAbandoned, "")
}

// TestPaymentWorkflow_WithoutCardTokenSettlesNotProcessedAtOnce: the outbox
// sweep starts the workflow of a lost start without the card token. No run
// of the key can have sent anything, so the attempt settles not_processed
// at once, and the order may be paid again under a new attempt.
func TestPaymentWorkflow_WithoutCardTokenSettlesNotProcessedAtOnce(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	intent.CardToken = ""
	wenv := newWorkflowEnv(t, env, createdAt)
	started := activitiesStarted(wenv)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent})

	require.Equal(t, chargeonce.AttemptNotProcessed, res.Status)
	require.Equal(t, createdAt, wenv.Now().UTC(), "settled at once")
	require.Empty(t, started(), "nothing is sent, nothing is looked up")
	require.Empty(t, env.ChargeKeys())
	require.Equal(t, workflows.Status{Phase: workflows.PhaseCompleted}, queryStatus(t, wenv))
	requireSettled(t, env, intent, chargeonce.AttemptNotProcessed, "")
}

func TestPaymentWorkflow_InvalidInputFailsBeforeSending(t *testing.T) {
	env := activitiestest.New(t, activitiestest.Options{})
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	// Workflow code holds no card-hash key: only the legacy hash of an
	// input from before keyed hashes can be checked against a token.
	legacy := intent
	legacy.CardHash, legacy.CardHashKeyed = chargeonce.LegacyCardHash("tok_visa"), false
	tests := []struct {
		name string
		in   workflows.PaymentInput
		want string
	}{
		{"bad timing", workflows.PaymentInput{Intent: intent, Timing: workflows.Timing{AttemptTimeout: time.Minute}}, "--attempt-timeout 1m0s exceeds --charge-budget 10s"},
		{"another card's token under a legacy hash", workflows.PaymentInput{Intent: withToken(legacy, "tok_mastercard")}, "card token does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wenv := newWorkflowEnv(t, env, createdAt)
			wenv.ExecuteWorkflow(workflows.PaymentWorkflow, tt.in)
			err := wenv.GetWorkflowError()
			require.ErrorContains(t, err, tt.want)
			var appErr interface{ Type() string }
			require.True(t, errors.As(err, &appErr))
			require.Equal(t, workflows.ErrTypeInvalidInput, appErr.Type())
		})
	}
	require.Empty(t, env.ChargeKeys())
}

func withToken(intent chargeonce.PaymentIntent, token string) chargeonce.PaymentIntent {
	intent.CardToken = token
	return intent
}

// TestPaymentWorkflow_FailingLookupsAreRetriedAtTheNextCheck mocks FindCharge:
// the fake provider always answers lookups, and this is about a provider
// whose lookups fail.
func TestPaymentWorkflow_FailingLookupsAreRetriedAtTheNextCheck(t *testing.T) {
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	var acts *activities.Activities
	lookups := 0
	wenv.OnActivity(acts.FindCharge, mock.Anything, mock.Anything).Return(
		func(context.Context, activities.FindChargeInput) (activities.FindChargeResult, error) {
			lookups++
			if lookups <= 6 {
				return activities.FindChargeResult{}, errors.New("lookup failed: connection refused")
			}
			return activities.FindChargeResult{Found: activities.FoundSucceeded, ProviderPaymentID: "ch_000042"}, nil
		})
	times := lookupTimes(intent)
	var during workflows.Status
	// Between the second check, whose three attempts take 3s, and the third.
	wenv.RegisterDelayedCallback(func() { during = queryStatus(t, wenv) }, times[1].Add(time.Minute).Sub(createdAt))

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	// Two checks of three attempts each failed, the third check found the charge.
	require.Equal(t, 7, lookups)
	require.Equal(t, workflows.PhaseReconciling, during.Phase)
	require.Equal(t, 2, during.Checks)
	require.Contains(t, during.LastError, "connection refused")
	require.Equal(t, times[2], wenv.Now().UTC())
	require.Equal(t, workflows.PaymentResult{Status: chargeonce.AttemptSucceeded, ProviderPaymentID: "ch_000042", Message: res.Message}, res)
	requireSettled(t, env, intent, chargeonce.AttemptSucceeded, "ch_000042")
}

// lookup is one FindCharge as a mock saw it.
type lookup struct {
	at    time.Time
	queue string
}

// recordLookups mocks FindCharge with a provider that holds no charge, and
// records when and on which task queue each lookup ran.
func recordLookups(wenv *testsuite.TestWorkflowEnvironment) *[]lookup {
	var acts *activities.Activities
	var lookups []lookup
	wenv.OnActivity(acts.FindCharge, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ activities.FindChargeInput) (activities.FindChargeResult, error) {
			lookups = append(lookups, lookup{at: wenv.Now().UTC(), queue: activity.GetInfo(ctx).TaskQueue})
			return activities.FindChargeResult{Found: activities.FoundNone}, nil
		})
	return &lookups
}

func TestPaymentWorkflow_LookupsRunOnTheLookupQueueOnTheKeysBackoffGrid(t *testing.T) {
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	wenv := newWorkflowEnv(t, env, createdAt)
	wenv.SetStartWorkflowOptions(client.StartWorkflowOptions{TaskQueue: chargeonce.TaskQueue})
	lookups := recordLookups(wenv)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	require.Equal(t, chargeonce.AttemptAbandoned, res.Status)
	timing := shortCharge.WithDefaults()
	var times []time.Time
	for _, l := range *lookups {
		require.Equal(t, chargeonce.LookupTaskQueue, l.queue)
		times = append(times, l.at)
	}
	require.Equal(t, timing.LookupTimes(intent.Key, intent.CreatedAt), times)
	jitter := timing.LookupJitter(intent.Key)
	require.NotZero(t, jitter, "a key's lookups are off the bare MinAge grid")
	require.Equal(t, createdAt.Add(timing.MinAge+jitter), times[0])
	require.Equal(t, createdAt.Add(timing.AbandonAfter), times[len(times)-1])
	require.Equal(t, createdAt.Add(timing.AbandonAfter), wenv.Now().UTC(), "abandoned at the deadline's lookup")
}

// Each provider's lookups have a queue of their own, paced at that
// provider's rate; the runs of the default provider's name, and those
// recorded before intents named their provider, keep the shared one.
func TestPaymentWorkflow_LookupsRunOnTheQueueOfTheIntentsProvider(t *testing.T) {
	tests := []struct {
		name, provider, queue string
	}{
		{"named eu", "eu", "chargeonce-lookups-eu"},
		{"named default", chargeonce.DefaultProvider, "chargeonce-lookups"},
		{"unnamed", "", "chargeonce-lookups"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := dropping
			opts.ProviderName = cmp.Or(tt.provider, chargeonce.DefaultProvider)
			env := activitiestest.New(t, opts)
			intent := env.NewIntent(t, "tok_visa", amount, createdAt)
			intent.Provider = tt.provider
			wenv := newWorkflowEnv(t, env, createdAt)
			lookups := recordLookups(wenv)

			res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

			require.Equal(t, chargeonce.AttemptAbandoned, res.Status)
			require.NotEmpty(t, *lookups)
			for _, l := range *lookups {
				require.Equal(t, tt.queue, l.queue)
			}
		})
	}
}

// A workflow started before card hashes were keyed carries the legacy hash
// in its input: a charge update from a current API, with the keyed hash,
// is still checked against it by the token, so the same card is taken and
// another refused.
func TestPaymentWorkflow_ALegacyHashInputStillTellsTheCardByItsToken(t *testing.T) {
	env := activitiestest.New(t, dropping)
	intent := env.NewIntent(t, "tok_visa", amount, createdAt)
	intent.CardHash, intent.CardHashKeyed = chargeonce.LegacyCardHash("tok_visa"), false
	wenv := newWorkflowEnv(t, env, createdAt)
	wrongCard, rightCard := &chargeUpdate{t: t}, &chargeUpdate{t: t}
	wenv.RegisterDelayedCallback(func() {
		require.NoError(t, env.Fake.SetMode(fakeprovider.Mode{Name: fakeprovider.ModeNormal}))
		wenv.UpdateWorkflow(chargeonce.UpdateCharge, "wrong-card", wrongCard.callbacks(), workflows.ChargeRequest{CardToken: "tok_mastercard", CardHash: activitiestest.CardHasher.Hash("tok_mastercard")})
		wenv.UpdateWorkflow(chargeonce.UpdateCharge, "right-card", rightCard.callbacks(), workflows.ChargeRequest{CardToken: "tok_visa", CardHash: activitiestest.CardHasher.Hash("tok_visa")})
	}, 90*time.Second)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent, Timing: shortCharge})

	require.ErrorContains(t, wrongCard.rejected, "card differs")
	require.NoError(t, rightCard.rejected)
	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
}
