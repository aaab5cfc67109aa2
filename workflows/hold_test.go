package workflows_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"chargeonce"
	"chargeonce/activities"
	"chargeonce/activities/activitiestest"
	"chargeonce/fakeprovider"
	"chargeonce/internal/alert"
	"chargeonce/internal/syncbuf"
	"chargeonce/provider"
	"chargeonce/store"
	"chargeonce/workflows"
)

// holdWindow is how long the fake provider of the hold tests keeps a hold.
const holdWindow = 7 * 24 * time.Hour

// newHoldEnv is an Env whose fake provider reads the workflow's clock, so
// that a hold expires at the provider when the workflow's timers say it
// does, and a workflow environment that logs into the returned buffer.
func newHoldEnv(t *testing.T, opts activitiestest.Options) (*activitiestest.Env, *testsuite.TestWorkflowEnvironment, *syncbuf.Buffer) {
	t.Helper()
	var wenv *testsuite.TestWorkflowEnvironment
	opts.Fake.HoldWindow = holdWindow
	opts.Fake.Now = func() time.Time { return wenv.Now() }
	env := activitiestest.New(t, opts)
	wenv, logs := newLoggedWorkflowEnv(t, env, createdAt)
	return env, wenv, logs
}

// told is one hold-moved signal that RecordMove sent.
type told struct {
	workflowID string
	moved      activities.HoldMoved
}

// signals records the signals that the activities send, in place of the
// Temporal client, which a test environment has none of.
type signals struct {
	mu   sync.Mutex
	sent []told
}

func (s *signals) SignalWorkflow(_ context.Context, workflowID, _, name string, arg any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == chargeonce.SignalHoldMoved {
		s.sent = append(s.sent, told{workflowID, arg.(activities.HoldMoved)})
	}
	return nil
}

// toldPayments records what the moves' records tell the payment workflows
// of their holds.
func toldPayments(env *activitiestest.Env) func() []told {
	s := &signals{}
	env.Activities.Temporal = s
	return func() []told {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Clone(s.sent)
	}
}

// requireHold checks the hold of the intent's order and the order in the
// database.
func requireHold(t *testing.T, env *activitiestest.Env, intent chargeonce.PaymentIntent, status chargeonce.HoldStatus, captured int64) store.Hold {
	t.Helper()
	h, err := env.Store.OrderHold(context.Background(), intent.OrderID)
	require.NoError(t, err)
	require.Equal(t, status, h.Status)
	require.Equal(t, captured, h.Captured)
	order, _, err := env.Store.GetOrder(context.Background(), intent.OrderID)
	require.NoError(t, err)
	require.Equal(t, status.OrderStatus(), order.Status)
	return h
}

// fakeCharge is the one charge the fake holds.
func fakeCharge(t *testing.T, env *activitiestest.Env) provider.Charge {
	t.Helper()
	charges := env.Fake.Charges()
	require.Len(t, charges, 1)
	c, err := env.Client.GetCharge(context.Background(), charges[0].ID)
	require.NoError(t, err)
	return c
}

func TestPaymentWorkflow_AManualCaptureIsAuthorizedAndItsDeadlineVoidsTheHold(t *testing.T) {
	env, wenv, logs := newHoldEnv(t, activitiestest.Options{})
	intent := env.NewHeldIntent(t, "tok_visa", amount, createdAt, "")
	sent := toldPayments(env)
	var authorized workflows.Status
	wenv.RegisterDelayedCallback(func() { authorized = queryStatus(t, wenv) }, time.Hour)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent})

	timing := workflows.DefaultTiming()
	charge := fakeCharge(t, env)
	deadline := createdAt.Add(holdWindow - timing.HoldMargin)
	require.Equal(t, workflows.PhaseHolding, authorized.Phase)
	require.True(t, deadline.Equal(authorized.HoldDeadline), "deadline %v, want %v", authorized.HoldDeadline, deadline)
	require.Equal(t, chargeonce.AttemptSucceeded, res.Status)
	require.Equal(t, charge.ID, res.ProviderPaymentID)
	require.NotNil(t, res.Hold)
	require.Equal(t, chargeonce.HoldVoided, res.Hold.Status)
	require.True(t, deadline.Equal(res.Hold.Deadline))

	// The provider released the hold: nothing was taken.
	require.Equal(t, provider.StatusVoided, charge.Status)
	h := requireHold(t, env, intent, chargeonce.HoldVoided, 0)
	require.True(t, deadline.Equal(h.Deadline))
	moves, err := env.Store.OrderMoves(context.Background(), intent.OrderID)
	require.NoError(t, err)
	require.Len(t, moves, 1)
	require.Equal(t, chargeonce.MoveVoid, moves[0].Kind)
	require.Equal(t, chargeonce.MoveByDeadline, moves[0].Origin)
	require.Equal(t, chargeonce.MoveSucceeded, moves[0].Status)
	require.True(t, moves[0].WorkflowStarted)
	require.NotEqual(t, intent.Key, moves[0].Key, "the void has a key of its own")
	require.Equal(t, chargeonce.MoveReference(activitiestest.ReferencePrefix, chargeonce.MoveVoid, moves[0].Key), moves[0].MerchantReference)

	// A person was told a day before the deadline, once.
	requireOneError(t, logs.String(), alert.AuthorizationExpiring)
	// The void's record told the payment, which is the test's root here
	// and takes the child's result instead.
	require.Equal(t, []told{{intent.Key, activities.HoldMoved{Key: moves[0].Key, Status: chargeonce.MoveSucceeded, Hold: chargeonce.HoldVoided}}}, sent())
}

func TestPaymentWorkflow_TheDeadlineCapturesTheHoldWhenTheCheckoutAskedForIt(t *testing.T) {
	env, wenv, _ := newHoldEnv(t, activitiestest.Options{})
	intent := env.NewHeldIntent(t, "tok_visa", amount, createdAt, chargeonce.DeadlineCapture)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent})

	require.Equal(t, chargeonce.HoldCaptured, res.Hold.Status)
	require.Equal(t, amount.Minor, res.Hold.Captured)
	charge := fakeCharge(t, env)
	require.Equal(t, provider.StatusSucceeded, charge.Status)
	require.Equal(t, amount.Minor, charge.AmountCaptured)
	requireHold(t, env, intent, chargeonce.HoldCaptured, amount.Minor)
}

func TestPaymentWorkflow_AMoveThatEndsTheHoldEndsTheWaitBeforeTheDeadline(t *testing.T) {
	env, wenv, logs := newHoldEnv(t, activitiestest.Options{})
	intent := env.NewHeldIntent(t, "tok_visa", amount, createdAt, "")
	wenv.RegisterDelayedCallback(func() {
		wenv.SignalWorkflow(chargeonce.SignalHoldMoved, activities.HoldMoved{Key: "capture", Status: chargeonce.MoveSucceeded, Hold: chargeonce.HoldCaptured, Captured: 100})
	}, 2*time.Hour)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent})

	require.Equal(t, chargeonce.HoldCaptured, res.Hold.Status)
	require.Equal(t, int64(100), res.Hold.Captured)
	// No deadline came: no alert, and no move of the deadline's.
	require.NotContains(t, logs.String(), "level=ERROR")
	moves, err := env.Store.OrderMoves(context.Background(), intent.OrderID)
	require.NoError(t, err)
	require.Empty(t, moves)
	require.Equal(t, provider.StatusAuthorized, fakeCharge(t, env).Status)
}

// authorize authorizes the intent's hold at the provider and settles its
// attempt with it, as the payment workflow does, and stores a merchant's
// move of it.
func authorize(t *testing.T, env *activitiestest.Env, intent chargeonce.PaymentIntent, kind chargeonce.MoveKind, minor int64) chargeonce.MoveIntent {
	t.Helper()
	ctx := context.Background()
	res := env.Client.Charge(ctx, provider.ChargeRequestOf(intent))
	require.Equal(t, provider.Approved, res.Outcome, res.Detail)
	_, err := env.Store.SettleAuthorization(ctx, intent.Key, store.NewHold{ChargeID: res.ChargeID, Deadline: createdAt.Add(holdWindow - time.Hour), At: createdAt})
	require.NoError(t, err)
	key, requestKey := uuid.Must(uuid.NewV7()).String(), uuid.NewString()
	m, decision, err := env.Store.StartMove(ctx, store.NewMove{
		OrderID: intent.OrderID, Kind: kind, Amount: minor, Origin: chargeonce.MoveByMerchant,
		Key: key, ReferencePrefix: activitiestest.ReferencePrefix,
		RequestKey: requestKey, RequestFingerprint: fmt.Sprintf("%x", sha256.Sum256([]byte(requestKey))), Now: createdAt,
	})
	require.NoError(t, err)
	require.Equal(t, store.MoveCreated, decision)
	return m.MoveIntent
}

// runMove executes a move's workflow to its end and returns its result.
func runMove(t *testing.T, wenv *testsuite.TestWorkflowEnvironment, m chargeonce.MoveIntent) workflows.MoveResult {
	t.Helper()
	wenv.ExecuteWorkflow(workflows.MoveWorkflow(m.Kind), workflows.MoveInput{Intent: m})
	require.True(t, wenv.IsWorkflowCompleted())
	require.NoError(t, wenv.GetWorkflowError())
	var res workflows.MoveResult
	require.NoError(t, wenv.GetWorkflowResult(&res))
	return res
}

func TestCaptureWorkflow_APartialCaptureTakesItsAmountAndReleasesTheRest(t *testing.T) {
	env, wenv, _ := newHoldEnv(t, activitiestest.Options{})
	intent := env.NewHeldIntent(t, "tok_visa", amount, createdAt, "")
	m := authorize(t, env, intent, chargeonce.MoveCapture, 10000)
	sent := toldPayments(env)

	res := runMove(t, wenv, m)

	require.Equal(t, chargeonce.MoveSucceeded, res.Status)
	require.Equal(t, chargeonce.HoldCaptured, res.Hold)
	require.Equal(t, int64(10000), res.Captured)
	charge := fakeCharge(t, env)
	require.Equal(t, provider.StatusSucceeded, charge.Status)
	require.Equal(t, int64(10000), charge.AmountCaptured)
	requireHold(t, env, intent, chargeonce.HoldCaptured, 10000)
	stored, err := env.Store.GetMove(context.Background(), m.Key)
	require.NoError(t, err)
	require.Equal(t, chargeonce.MoveSucceeded, stored.Status)
	require.Len(t, stored.Requests, 1)
	require.Equal(t, m.Key, stored.Requests[0].Key)
	require.Equal(t, []told{{intent.Key, activities.HoldMoved{Key: m.Key, Status: chargeonce.MoveSucceeded, Hold: chargeonce.HoldCaptured, Captured: 10000}}}, sent())
}

// captureAnswerLost is a provider that captures but loses the answer of
// the first capture request, and then processes nothing.
func captureAnswerLost() activitiestest.Options {
	var lost atomic.Bool
	return activitiestest.Options{
		Breaker: patientBreaker,
		Middleware: func(_ *fakeprovider.Provider, next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/capture") {
					next.ServeHTTP(w, r)
					return
				}
				if lost.CompareAndSwap(false, true) {
					chargedAnswerLost(w, r, next)
					return
				}
				serverError(w, r, next)
			})
		},
	}
}

func TestCaptureWorkflow_ACaptureWhoseAnswerWasLostIsFoundByALookupOfTheHold(t *testing.T) {
	env, wenv, _ := newHoldEnv(t, captureAnswerLost())
	intent := env.NewHeldIntent(t, "tok_visa", amount, createdAt, "")
	m := authorize(t, env, intent, chargeonce.MoveCapture, 0)

	res := runMove(t, wenv, m)

	require.Equal(t, chargeonce.MoveSucceeded, res.Status)
	require.Equal(t, amount.Minor, res.Captured)
	requireHold(t, env, intent, chargeonce.HoldCaptured, amount.Minor)
	stored, err := env.Store.GetMove(context.Background(), m.Key)
	require.NoError(t, err)
	require.NotNil(t, stored.LastCheckedAt, "a lookup found it")
}

func TestVoidWorkflow_AHoldThatExpiredIsDeclinedAndTheHoldRecordedExpired(t *testing.T) {
	env, wenv, _ := newHoldEnv(t, activitiestest.Options{})
	intent := env.NewHeldIntent(t, "tok_visa", amount, createdAt, "")
	m := authorize(t, env, intent, chargeonce.MoveVoid, 0)
	// The void is sent past the provider's window.
	wenv.SetStartTime(createdAt.Add(holdWindow + time.Minute))

	res := runMove(t, wenv, m)

	require.Equal(t, chargeonce.MoveDeclined, res.Status)
	require.Equal(t, provider.DeclineHoldExpired, res.DeclineCode)
	require.Equal(t, chargeonce.HoldExpired, res.Hold)
	requireHold(t, env, intent, chargeonce.HoldExpired, 0)
}

func TestVoidWorkflow_AVoidTheProviderNeverProcessedIsNotProcessedAndTheHoldStays(t *testing.T) {
	env, wenv, _ := newHoldEnv(t, activitiestest.Options{Breaker: patientBreaker})
	intent := env.NewHeldIntent(t, "tok_visa", amount, createdAt, "")
	m := authorize(t, env, intent, chargeonce.MoveVoid, 0)
	require.NoError(t, env.Fake.SetMode(failing.Mode))

	res := runMove(t, wenv, m)

	require.Equal(t, chargeonce.MoveNotProcessed, res.Status)
	requireHold(t, env, intent, chargeonce.HoldAuthorized, 0)
	require.Equal(t, provider.StatusAuthorized, fakeCharge(t, env).Status)
}

func TestPaymentWorkflow_AProviderEventAboutTheHoldReadsItAtOnce(t *testing.T) {
	env, wenv, logs := newHoldEnv(t, activitiestest.Options{})
	intent := env.NewHeldIntent(t, "tok_visa", amount, createdAt, "")
	wenv.RegisterDelayedCallback(func() {
		// Released on the provider's dashboard, which tells by an event.
		c := fakeCharge(t, env)
		require.Equal(t, provider.Approved, env.Client.Void(context.Background(), provider.VoidRequest{Key: uuid.NewString(), ChargeID: c.ID}).Outcome)
		wenv.SignalWorkflow(chargeonce.SignalProviderEvent, workflows.ProviderEvent{ChargeID: c.ID})
	}, 3*time.Hour)

	res := run(t, wenv, workflows.PaymentInput{Intent: intent})

	require.Equal(t, chargeonce.HoldVoided, res.Hold.Status)
	requireHold(t, env, intent, chargeonce.HoldVoided, 0)
	require.NotContains(t, logs.String(), "level=ERROR", "no deadline came")
	moves, err := env.Store.OrderMoves(context.Background(), intent.OrderID)
	require.NoError(t, err)
	require.Empty(t, moves)
}
