package checkout_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/activities/activitiestest"
	"chargeonce/checkout"
	"chargeonce/store"
	"chargeonce/workflows"
)

// offline returns a store on a fresh SQLite file and a Temporal client that
// never dials: nothing listens on port 1, so a test that reached Temporal
// would fail.
func offline(t *testing.T) (store.Store, client.Client) {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "chargeonce.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	temporal, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(temporal.Close)
	return st, temporal
}

// publish stores timing as the workers' published timing, as a worker's
// start would.
func publish(t *testing.T, st store.Store, timing workflows.Timing, replace bool) {
	t.Helper()
	encoded, err := timing.Encode()
	require.NoError(t, err)
	_, err = st.PublishTiming(context.Background(), encoded, replace)
	require.NoError(t, err)
}

func TestNew_RefusesABadConfigWithAClearError(t *testing.T) {
	st, temporal := offline(t)

	tests := []struct {
		name string
		cfg  checkout.Config
		want string
	}{
		{"no store", checkout.Config{Temporal: temporal}, "Store is required"},
		{"no Temporal client", checkout.Config{Store: st}, "Temporal client is required"},
		{"no card hasher", checkout.Config{Store: st, Temporal: temporal}, "CardHasher is required"},
		{"negative budget", checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher, Budget: -time.Second}, "budget -1s is negative"},
		{"upper-case reference prefix", checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher, ReferencePrefix: "Shop"}, `reference prefix "Shop"`},
		{"reference prefix with a dash", checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher, ReferencePrefix: "book-store"}, `reference prefix "book-store"`},
		{"unknown capture mode", checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher, Capture: "later"}, `capture mode "later"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, err := checkout.New(tt.cfg)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, svc)
		})
	}

	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher})
	require.NoError(t, err, "the zero values of the optional fields are the defaults")
	require.NotNil(t, svc)
}

func TestCheckout_UnknownOrderIsErrNotFoundAndReachesNoWorkflow(t *testing.T) {
	st, temporal := offline(t)
	publish(t, st, workflows.DefaultTiming(), false)
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher})
	require.NoError(t, err)

	_, err = svc.Checkout(context.Background(), 424242, "tok_visa")
	require.ErrorIs(t, err, checkout.ErrNotFound)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestCheckout_BeforeAnyWorkerPublishedItsTimingIsErrNoTimingAndStoresNothing(t *testing.T) {
	st, temporal := offline(t)
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher})
	require.NoError(t, err)
	ctx := context.Background()
	order, err := st.CreateOrder(ctx, chargeonce.Money{Minor: 54890, Currency: "TRY"}, "")
	require.NoError(t, err)

	_, err = svc.Checkout(ctx, order.ID, "tok_visa")
	require.ErrorIs(t, err, checkout.ErrNoTiming)
	_, err = svc.Sweep(ctx)
	require.ErrorIs(t, err, checkout.ErrNoTiming)

	got, attempts, err := st.GetOrder(ctx, order.ID)
	require.NoError(t, err)
	require.Equal(t, order, got, "the order is still placed")
	require.Empty(t, attempts, "no attempt, no key")
}

func TestCheckout_NewAttemptTakesItsDeadlineFromThePublishedTimingAtEachCheckout(t *testing.T) {
	st, temporal := offline(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)
	// Temporal is unreachable, so each checkout answers pending once its
	// budget is spent, with the attempt stored.
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher, Budget: 200 * time.Millisecond, Now: func() time.Time { return now }})
	require.NoError(t, err)
	workers := workflows.DefaultTiming()
	workers.AbandonAfter = 17 * time.Minute
	publish(t, st, workers, false)

	abandonAfter := func() time.Duration {
		order, err := st.CreateOrder(ctx, chargeonce.Money{Minor: 54890, Currency: "TRY"}, "")
		require.NoError(t, err)
		res, err := svc.Checkout(ctx, order.ID, "tok_visa")
		require.NoError(t, err)
		require.Equal(t, checkout.OutcomePending, res.Outcome)
		require.Equal(t, now, res.Attempt.CreatedAt)
		return res.Attempt.AbandonAt.Sub(res.Attempt.CreatedAt)
	}
	require.Equal(t, 17*time.Minute, abandonAfter(), "the workers' deadline, not the default 30m")

	workers.AbandonAfter = 23 * time.Minute
	publish(t, st, workers, true)
	require.Equal(t, 23*time.Minute, abandonAfter(), "a replaced timing applies to the next checkout")
}

func TestCheckout_ACallerThatGivesUpIsAnsweredFromTheDatabaseAtOnce(t *testing.T) {
	st, temporal := offline(t)
	publish(t, st, workflows.DefaultTiming(), false)
	// Temporal is unreachable: the charge of the key would wait its whole
	// budget for an answer.
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher, Budget: 10 * time.Second})
	require.NoError(t, err)
	order, err := st.CreateOrder(context.Background(), chargeonce.Money{Minor: 54890, Currency: "TRY"}, "")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()

	start := time.Now()
	res, err := svc.Checkout(ctx, order.ID, "tok_visa")

	require.NoError(t, err)
	require.Less(t, time.Since(start), 5*time.Second, "the caller's end, not the budget, ends its wait")
	require.Equal(t, checkout.OutcomePending, res.Outcome)
	require.Equal(t, chargeonce.AttemptOpen, res.Attempt.Status, "the key is stored and the attempt stays open")
}

func TestCheckoutWith_RefusesABadCaptureBeforeItStoresAnything(t *testing.T) {
	st, temporal := offline(t)
	publish(t, st, workflows.DefaultTiming(), false)
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher})
	require.NoError(t, err)
	ctx := context.Background()
	order, err := st.CreateOrder(ctx, chargeonce.Money{Minor: 54890, Currency: "TRY"}, "")
	require.NoError(t, err)

	for name, c := range map[string]checkout.Capture{
		"an unknown mode":                       {Mode: "later"},
		"an unknown deadline action":            {Mode: chargeonce.CaptureManual, OnDeadline: "keep"},
		"a deadline action of automatic":        {Mode: chargeonce.CaptureAutomatic, OnDeadline: chargeonce.DeadlineCapture},
		"a deadline action of the default mode": {OnDeadline: chargeonce.DeadlineVoid},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := svc.CheckoutWith(ctx, order.ID, "tok_visa", c)
			require.Error(t, err)
			_, attempts, err := st.GetOrder(ctx, order.ID)
			require.NoError(t, err)
			require.Empty(t, attempts)
		})
	}
}
