package worker_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"chargeonce"
	"chargeonce/activities/activitiestest"
	"chargeonce/checkout"
	"chargeonce/fakeprovider"
	"chargeonce/internal/syncbuf"
	"chargeonce/provider"
	"chargeonce/provider/ietf"
	"chargeonce/provider/stripe"
	"chargeonce/refund"
	"chargeonce/store"
	"chargeonce/worker"
	"chargeonce/workflows"
)

func providerWithLimits(t *testing.T, retention time.Duration, lookupRate float64) provider.Port {
	t.Helper()
	fake, err := fakeprovider.New(fakeprovider.Config{Retention: retention, LookupRate: lookupRate})
	require.NoError(t, err)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c, err := ietf.New(ietf.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Timeout: 5 * time.Second}})
	require.NoError(t, err)
	return c
}

func providerWithRetention(t *testing.T, retention time.Duration) provider.Port {
	t.Helper()
	return providerWithLimits(t, retention, 0)
}

func TestCheckLimits_RefusesAnAbandonDeadlinePastTheProvidersRetention(t *testing.T) {
	timing := workflows.DefaultTiming() // abandons after 30 minutes

	_, err := worker.CheckLimits(context.Background(), providerWithRetention(t, 20*time.Minute), timing)
	require.ErrorContains(t, err, "abandon-after 30m0s must be shorter than the provider's key retention 20m0s")

	_, err = worker.CheckLimits(context.Background(), providerWithRetention(t, 30*time.Minute), timing)
	require.Error(t, err, "equal to the retention is already too late")

	_, err = worker.CheckLimits(context.Background(), providerWithRetention(t, 24*time.Hour), timing)
	require.NoError(t, err)
}

func TestCheckRefundWindow_RefusesAWindowTheRefundSweepCannotReach(t *testing.T) {
	timing := workflows.Timing{MinAge: 10 * time.Second, Interval: 5 * time.Second, AbandonAfter: 40 * time.Second}.WithDefaults()

	// 90 s less 40 s of lookups, 10 s of budget and 10 s of MinAge: 30 s.
	err := worker.CheckRefundWindow(timing, 90*time.Second, 42*time.Second)
	require.ErrorContains(t, err, "a refund may be sent until 30s after its creation")
	require.ErrorContains(t, err, "must exceed the 42s in which the refund sweep starts")

	require.NoError(t, worker.CheckRefundWindow(timing, 24*time.Hour, 42*time.Second), "a day's retention, not the 40 s abandon deadline, bounds the window")
}

func TestCheckLimits_ReturnsThePublishedLookupRate(t *testing.T) {
	limits, err := worker.CheckLimits(context.Background(), providerWithLimits(t, 24*time.Hour, 12.5), workflows.DefaultTiming())

	require.NoError(t, err)
	require.Equal(t, provider.Limits{KeyRetention: 24 * time.Hour, LookupsPerSecond: 12.5, HoldWindow: fakeprovider.DefaultHoldWindow}, limits)
}

func TestCheckLimits_RefusesInvalidTiming(t *testing.T) {
	timing := workflows.DefaultTiming()
	timing.AttemptTimeout = -time.Second
	_, err := worker.CheckLimits(context.Background(), providerWithRetention(t, 24*time.Hour), timing)
	require.ErrorContains(t, err, "worker: timing")
}

func TestCheckLimits_ReportsAnUnreachableProvider(t *testing.T) {
	c, err := ietf.New(ietf.Config{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Timeout: time.Second}})
	require.NoError(t, err)
	_, err = worker.CheckLimits(context.Background(), c, workflows.DefaultTiming())
	require.ErrorContains(t, err, "read the provider's published limits")
}

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "chargeonce.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// timings returns the default timing and one that abandons after 20 minutes.
func timings() (running, other workflows.Timing) {
	running, other = workflows.DefaultTiming(), workflows.DefaultTiming()
	other.AbandonAfter = 20 * time.Minute
	return running, other
}

func published(t *testing.T, st store.Store) (workflows.Timing, time.Time) {
	t.Helper()
	p, err := st.PaymentTiming(context.Background())
	require.NoError(t, err)
	timing, err := workflows.DecodeTiming(p.Timing)
	require.NoError(t, err)
	return timing, p.PublishedAt
}

func TestPublishTiming_TheFirstWorkerPublishesAndAWorkerThatAgreesStarts(t *testing.T) {
	st := openStore(t)
	running, _ := timings()

	require.NoError(t, worker.PublishTiming(context.Background(), st, running, false, discard()))
	got, at := published(t, st)
	require.Equal(t, running, got)

	require.NoError(t, worker.PublishTiming(context.Background(), st, running, false, discard()))
	got, again := published(t, st)
	require.Equal(t, running, got)
	require.Equal(t, at, again, "an agreeing worker publishes nothing new")
}

func TestPublishTiming_AWorkerWithAnotherTimingIsRefusedNamingBoth(t *testing.T) {
	st := openStore(t)
	running, other := timings()
	require.NoError(t, worker.PublishTiming(context.Background(), st, running, false, discard()))
	_, at := published(t, st)

	err := worker.PublishTiming(context.Background(), st, other, false, discard())

	require.EqualError(t, err, "worker: payment timing "+
		"attempt-timeout 3s, charge-budget 10s, retry-interval 1s, reconcile-min-age 2m0s, reconcile-interval 1m0s, abandon-after 30m0s, hold-margin 1h0m0s, hold-warning 24h0m0s, "+
		"published by the running workers at "+at.Format(time.RFC3339)+"; this worker: "+
		"attempt-timeout 3s, charge-budget 10s, retry-interval 1s, reconcile-min-age 2m0s, reconcile-interval 1m0s, abandon-after 20m0s, hold-margin 1h0m0s, hold-warning 24h0m0s. "+
		"Checkouts and workflows run with the published timing, so this worker refuses to start with another: "+
		"start it with the published values, or with --replace-timing to make its timing the published one")
	got, _ := published(t, st)
	require.Equal(t, running, got, "the refused worker changed nothing")
}

func TestPublishTiming_ReplaceMakesThisWorkersTimingThePublishedOneAndWarnsInOneLine(t *testing.T) {
	st := openStore(t)
	running, other := timings()
	require.NoError(t, worker.PublishTiming(context.Background(), st, running, false, discard()))
	logs := &syncbuf.Buffer{}

	require.NoError(t, worker.PublishTiming(context.Background(), st, other, true, slog.New(slog.NewTextHandler(logs, nil))))

	got, _ := published(t, st)
	require.Equal(t, other, got)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 1, "one line says it all: %s", logs)
	require.Contains(t, lines[0], "level=WARN")
	require.Contains(t, lines[0], "open attempts keep the one they started with")
	require.Contains(t, lines[0], `old="attempt-timeout 3s, charge-budget 10s, retry-interval 1s, reconcile-min-age 2m0s, reconcile-interval 1m0s, abandon-after 30m0s, hold-margin 1h0m0s, hold-warning 24h0m0s"`)
	require.Contains(t, lines[0], `new="attempt-timeout 3s, charge-budget 10s, retry-interval 1s, reconcile-min-age 2m0s, reconcile-interval 1m0s, abandon-after 20m0s, hold-margin 1h0m0s, hold-warning 24h0m0s"`)
	require.NoError(t, worker.PublishTiming(context.Background(), st, other, false, discard()), "workers with the new timing now start")
}

func TestPublishTiming_OfTwoWorkersStartingAtOnceWithDifferentTimingsOneWins(t *testing.T) {
	st := openStore(t)
	running, other := timings()
	start := make(chan struct{})
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, timing := range []workflows.Timing{running, other} {
		wg.Go(func() {
			<-start
			errs[i] = worker.PublishTiming(context.Background(), st, timing, false, discard())
		})
	}
	close(start)
	wg.Wait()

	got, _ := published(t, st)
	if got == running {
		require.NoError(t, errs[0])
		require.ErrorContains(t, errs[1], "this worker refuses to start")
	} else {
		require.Equal(t, other, got)
		require.NoError(t, errs[1])
		require.ErrorContains(t, errs[0], "this worker refuses to start")
	}
}

func TestPublishTiming_ATimingOfAnUnknownFormatVersionIsRefusedUnlessReplaced(t *testing.T) {
	st := openStore(t)
	running, _ := timings()
	_, err := st.PublishTiming(context.Background(), []byte(`{"version":2,"abandonAfter":"30m"}`), false)
	require.NoError(t, err)

	err = worker.PublishTiming(context.Background(), st, running, false, discard())
	require.ErrorContains(t, err, "cannot be read (timing: format version 2, and this program reads only version 1: ")
	require.ErrorContains(t, err, "start this worker with --replace-timing")

	require.NoError(t, worker.PublishTiming(context.Background(), st, running, true, discard()))
	got, _ := published(t, st)
	require.Equal(t, running, got)
}

// A rolling deploy that adds a timing field keeps the version, so that
// workers of both builds start, whichever published first: the older build
// ignores the field it does not know, and the newer reads the field that the
// older did not write as its default. Here the newer build's field is
// lookupSpread, which this build does not know, and retry-interval stands for
// the field that an older build did not write.
func TestPublishTiming_DuringARollingDeployWorkersOfBothBuildsStart(t *testing.T) {
	ctx := context.Background()
	running, other := timings()
	encoded, err := running.Encode()
	require.NoError(t, err)

	t.Run("an older worker, after a newer one published", func(t *testing.T) {
		st := openStore(t)
		newer := strings.Replace(string(encoded), "{", `{"lookupSpread":300000000000,`, 1)
		_, err := st.PublishTiming(ctx, []byte(newer), false)
		require.NoError(t, err)

		require.NoError(t, worker.PublishTiming(ctx, st, running, false, discard()), "it agrees on every field it knows")
		p, err := st.PaymentTiming(ctx)
		require.NoError(t, err)
		require.JSONEq(t, newer, string(p.Timing), "the newer worker's field stays published")
		require.ErrorContains(t, worker.PublishTiming(ctx, st, other, false, discard()), "this worker refuses to start",
			"a field both know still has to agree")
	})
	t.Run("a newer worker, after an older one published", func(t *testing.T) {
		st := openStore(t)
		_, err := st.PublishTiming(ctx, []byte(`{"attemptTimeout":3000000000,"chargeBudget":10000000000,`+
			`"minAge":120000000000,"interval":60000000000,"abandonAfter":1800000000000}`), false)
		require.NoError(t, err)

		require.NoError(t, worker.PublishTiming(ctx, st, running, false, discard()), "the missing field reads as its default, this worker's")
		slower := running
		slower.RetryInterval = 2 * time.Second
		require.ErrorContains(t, worker.PublishTiming(ctx, st, slower, false, discard()),
			"payment timing attempt-timeout 3s, charge-budget 10s, retry-interval 1s,",
			"a worker with another value than the default is refused, naming the default as the published value")
	})
}

func TestStart_RefusesATimingOtherThanThePublishedOneBeforePolling(t *testing.T) {
	st := openStore(t)
	running, other := timings()
	require.NoError(t, worker.PublishTiming(context.Background(), st, running, false, discard()))
	// Nothing listens on port 1: a worker that started polling would fail
	// otherwise than with the refusal.
	temporal, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(temporal.Close)
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher})
	require.NoError(t, err)
	refunds, err := refund.New(refund.Config{Store: st, Temporal: temporal})
	require.NoError(t, err)

	providers, err := provider.Single(chargeonce.DefaultProvider, providerWithRetention(t, 24*time.Hour))
	require.NoError(t, err)
	w, err := worker.Start(context.Background(), worker.Deps{
		Client: temporal, Providers: providers, Store: st, Checkout: svc, Refunds: refunds,
		Timing: other, Logger: discard(),
	})

	require.ErrorContains(t, err, "this worker: attempt-timeout 3s, charge-budget 10s, retry-interval 1s, reconcile-min-age 2m0s, reconcile-interval 1m0s, abandon-after 20m0s, hold-margin 1h0m0s, hold-warning 24h0m0s")
	require.Nil(t, w)
	got, _ := published(t, st)
	require.Equal(t, running, got)
}

func TestCheckLimits_RefusesAFirstLookupBeforeStripesSearchCatchesUp(t *testing.T) {
	c, err := stripe.New(stripe.Config{APIKey: "sk_test_123", HTTPClient: &http.Client{Timeout: time.Second}, LookupDelay: stripe.SearchDelay})
	require.NoError(t, err)
	timing := workflows.DefaultTiming() // first lookup after 2 minutes

	limits, err := worker.CheckLimits(context.Background(), c, timing)
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, limits.KeyRetention)

	timing.MinAge = stripe.SearchDelay
	_, err = worker.CheckLimits(context.Background(), c, timing)
	require.ErrorContains(t, err, "reconcile-min-age 1m0s must exceed the 1m0s the provider's lookups may lag behind a new charge")
}

// Every provider of the registry must keep the keys longer than the timing
// abandons attempts, not only the default one.
func TestStart_ChecksTheTimingAgainstEveryProvider(t *testing.T) {
	st := openStore(t)
	temporal, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(temporal.Close)
	svc, err := checkout.New(checkout.Config{Store: st, Temporal: temporal, CardHasher: activitiestest.CardHasher})
	require.NoError(t, err)
	refunds, err := refund.New(refund.Config{Store: st, Temporal: temporal})
	require.NoError(t, err)
	providers, err := provider.NewRegistry(map[string]provider.Port{
		"eu": providerWithRetention(t, 24*time.Hour),
		"us": providerWithRetention(t, 20*time.Minute),
	}, "eu")
	require.NoError(t, err)

	w, err := worker.Start(context.Background(), worker.Deps{
		Client: temporal, Providers: providers, Store: st, Checkout: svc, Refunds: refunds,
		Timing: workflows.DefaultTiming(), Logger: discard(),
	})

	require.ErrorContains(t, err, `provider "us": worker: abandon-after 30m0s must be shorter than the provider's key retention 20m0s`)
	require.Nil(t, w)
	_, err = st.PaymentTiming(context.Background())
	require.ErrorIs(t, err, store.ErrNotFound, "nothing was published")
}

// Each provider's lookups are paced at that provider's own published rate,
// on a queue of their own; the runs recorded without a provider's name keep
// the shared queue, paced at the default provider's rate.
func TestLookupQueues_PaceEachProviderAtItsOwnRate(t *testing.T) {
	const slow, fast = 5, 20
	tests := []struct {
		name  string
		rates map[string]float64
		def   string
		want  []worker.LookupQueue
	}{
		{
			name:  "one provider named default",
			rates: map[string]float64{"default": slow},
			def:   "default",
			want:  []worker.LookupQueue{{Name: "chargeonce-lookups", Providers: []string{"default"}, PerSecond: slow}},
		},
		{
			name:  "the default provider keeps the default name",
			rates: map[string]float64{"default": fast, "us": slow},
			def:   "default",
			want: []worker.LookupQueue{
				{Name: "chargeonce-lookups", Providers: []string{"default"}, PerSecond: fast},
				{Name: "chargeonce-lookups-us", Providers: []string{"us"}, PerSecond: slow},
			},
		},
		{
			name:  "the default provider has a name of its own",
			rates: map[string]float64{"eu": slow, "us": fast},
			def:   "eu",
			want: []worker.LookupQueue{
				{Name: "chargeonce-lookups", Providers: []string{"eu"}, PerSecond: slow},
				{Name: "chargeonce-lookups-eu", Providers: []string{"eu"}, PerSecond: slow},
				{Name: "chargeonce-lookups-us", Providers: []string{"us"}, PerSecond: fast},
			},
		},
		{
			name:  "a provider that is not the default has the default name",
			rates: map[string]float64{"default": fast, "eu": slow},
			def:   "eu",
			want: []worker.LookupQueue{
				{Name: "chargeonce-lookups", Providers: []string{"default", "eu"}, PerSecond: slow},
				{Name: "chargeonce-lookups-eu", Providers: []string{"eu"}, PerSecond: slow},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ports := map[string]provider.Port{}
			for name, rate := range tt.rates {
				ports[name] = providerWithLimits(t, 24*time.Hour, rate)
			}
			providers, err := provider.NewRegistry(ports, tt.def)
			require.NoError(t, err)

			queues, err := worker.LookupQueues(context.Background(), providers, workflows.DefaultTiming())

			require.NoError(t, err)
			require.Equal(t, tt.want, queues)
		})
	}
}
