package metrics_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/internal/metrics"
	"chargeonce/store"
)

const key = "01a1d96c-e23d-77bf-801e-9df969c1d378"

func TestOpenAttempts_ReadFromTheStoreAtEachScrape(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "app.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	reg := metrics.NewRegistry()
	require.NoError(t, metrics.RegisterOpenAttempts(reg, st, slog.New(slog.DiscardHandler)))

	expect := func(open, ageAtLeast float64) {
		t.Helper()
		families, err := reg.Gather()
		require.NoError(t, err)
		values := map[string]float64{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				values[f.GetName()] = m.GetGauge().GetValue()
			}
		}
		require.Equal(t, open, values["chargeonce_open_attempts"])
		require.GreaterOrEqual(t, values["chargeonce_oldest_open_attempt_age_seconds"], ageAtLeast)
		if open == 0 {
			require.Zero(t, values["chargeonce_oldest_open_attempt_age_seconds"])
		}
	}
	expect(0, 0)

	amount, err := chargeonce.ParseMoney("548.90", "TRY")
	require.NoError(t, err)
	order, err := st.CreateOrder(ctx, amount, "book")
	require.NoError(t, err)
	created := time.Now().Add(-10 * time.Minute)
	_, _, decision, err := st.GetOrStartAttempt(ctx, store.NewAttempt{
		OrderID: order.ID, CardHash: chargeonce.LegacyCardHash("tok_visa"), Key: key,
		ReferencePrefix: "shop", Now: created, AbandonAfter: 30 * time.Minute,
		Provider: chargeonce.DefaultProvider,
	})
	require.NoError(t, err)
	require.Equal(t, store.DecisionCreated, decision)
	expect(1, 10*60)

	_, err = st.SettleAttempt(ctx, key, chargeonce.AttemptSucceeded, "ch_000001", time.Now())
	require.NoError(t, err)
	expect(0, 0)
}

func TestHandler_ServesTheTextFormat(t *testing.T) {
	reg := metrics.NewRegistry()
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), "go_goroutines")
}

func TestTemporalHandler_RecordsIntoTheRegistry(t *testing.T) {
	reg := metrics.NewRegistry()
	h, err := metrics.TemporalHandler(reg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	h.WithTags(map[string]string{"namespace": "default"}).Counter("temporal_request").Inc(3)

	n, err := testutil.GatherAndCount(reg, "temporal_request")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
