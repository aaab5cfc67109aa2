package tests

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/dev/stack"
	"chargeonce/internal/codec"
	"chargeonce/provider/dialect"
	"chargeonce/worker"
	"chargeonce/workflows"
)

// TestCheckout_RunsWithTheTimingThePaymentWorkerPublished starts the API
// with no worker, then a worker of another timing than the default: the
// checkout is refused until the worker publishes, and then runs with the
// worker's timing, both in the attempt's deadline and in the workflow's
// input.
func TestCheckout_RunsWithTheTimingThePaymentWorkerPublished(t *testing.T) {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	keys := "k1:" + base64.StdEncoding.EncodeToString(key)
	logger := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Config{Host: "127.0.0.1", UIPort: -1, ExternalWorkers: true, CodecKeys: keys, Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, st.Close(ctx))
	})
	s := &checkoutStack{apiURL: st.APIURL(), provider: st.Provider(), store: st.Store(), temporal: st.Client(), service: st.Checkout()}
	id := s.createOrder(t, "548.90", "TRY")

	refused := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusServiceUnavailable, refused.status, "body: %s", refused.body)
	require.Equal(t, "No payment worker has started yet; nothing was charged", problemOf(t, refused).Title)
	require.NotEmpty(t, refused.header.Get("Retry-After"))
	o := s.order(t, id)
	require.Equal(t, "placed", o.Status)
	require.Empty(t, o.Attempts)
	require.Empty(t, s.provider.ChargeRequests())

	timing := articleTiming()
	timing.AbandonAfter = 17 * time.Minute
	pc, err := dialect.New(dialect.Config{BaseURL: st.ProviderURL(), HTTPClient: &http.Client{Timeout: time.Minute}, Logger: logger})
	require.NoError(t, err)
	w, err := worker.Start(ctx, worker.Deps{Client: st.Client(), Provider: pc, Store: st.Store(), Checkout: st.Checkout(), Timing: timing, Logger: logger})
	require.NoError(t, err)
	t.Cleanup(w.Stop) // before the stack closes its client

	paid := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, paid.status, "body: %s", paid.body)
	_, attempts, err := s.store.GetOrder(ctx, id)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	require.Equal(t, 17*time.Minute, attempts[0].AbandonAt.Sub(attempts[0].CreatedAt), "the worker's deadline, not the default 30m")

	keyring, err := codec.ParseKeyring(keys)
	require.NoError(t, err)
	var input workflows.PaymentInput
	for _, e := range historyOf(t, s, workflows.WorkflowID(attempts[0].Key)) {
		if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			require.NoError(t, codec.NewDataConverter(keyring).FromPayload(a.GetInput().GetPayloads()[0], &input))
		}
	}
	require.Equal(t, timing, input.Timing, "the workflow runs with the worker's timing, recorded in its history")
}
