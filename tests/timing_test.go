package tests

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/checkout"
	"chargeonce/dev/stack"
	"chargeonce/internal/codec"
	"chargeonce/internal/openapitest"
	"chargeonce/provider"
	"chargeonce/provider/dialect"
	"chargeonce/worker"
	"chargeonce/workflows"
)

// TestCheckout_RunsWithTheTimingThePaymentWorkerPublished starts the API
// with no worker, then a worker of another timing than the default: the
// checkout is refused until the worker publishes, and then runs with the
// worker's timing, both in the attempt's deadline and in the workflow's
// input. Then, on the same stack, it plays the timings that the workers of
// a rolling deploy publish in either order.
func TestCheckout_RunsWithTheTimingThePaymentWorkerPublished(t *testing.T) {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	keys := "k1:" + base64.StdEncoding.EncodeToString(key)
	keyring, err := codec.ParseKeyring(keys)
	require.NoError(t, err)
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
	s := &checkoutStack{apiURL: st.APIURL(), apiKey: st.APIKey(), provider: st.Provider(), store: st.Store(), temporal: st.Client(), service: st.Checkout(),
		api: &http.Client{Timeout: testHTTP.Timeout, Transport: openapitest.Transport(t, nil)}}
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
	pc, err := dialect.New(dialect.Config{Settings: dialect.Settings{URL: st.ProviderURL()}, HTTPClient: &http.Client{Timeout: time.Minute}, Logger: logger})
	require.NoError(t, err)
	providers, err := provider.Single(chargeonce.DefaultProvider, pc)
	require.NoError(t, err)
	w, err := worker.Start(ctx, worker.Deps{Client: st.Client(), Providers: providers, Store: st.Store(), Checkout: st.Checkout(), Refunds: st.Refunds(), Timing: timing, Logger: logger})
	require.NoError(t, err)
	t.Cleanup(w.Stop) // before the stack closes its client

	deadline, input := paidWithTiming(t, s, keyring, id)
	require.Equal(t, 17*time.Minute, deadline, "the worker's deadline, not the default 30m")
	require.Equal(t, timing, input, "the workflow runs with the worker's timing, recorded in its history")

	// The documents below are what other builds' workers publish; this
	// build's API reads them, and this build's worker runs the workflows.
	publish := func(t *testing.T, document string) {
		t.Helper()
		_, err := st.Store().PublishTiming(ctx, []byte(document), true)
		require.NoError(t, err)
	}
	newer := timing
	newer.AbandonAfter = 19 * time.Minute
	encoded, err := newer.Encode()
	require.NoError(t, err)

	t.Run("a newer worker's timing, with a field this build does not know", func(t *testing.T) {
		publish(t, strings.Replace(string(encoded), "{", `{"lookupSpread":300000000000,`, 1))

		deadline, input := paidWithTiming(t, s, keyring, s.createOrder(t, "10.00", "TRY"))
		require.Equal(t, 19*time.Minute, deadline)
		require.Equal(t, newer, input, "every field this build knows, as published")
	})
	t.Run("an older worker's timing, without a version and without a field this build knows", func(t *testing.T) {
		// retry-interval stands for a field that an older build did not
		// write; the document is otherwise what builds before the format
		// version published.
		publish(t, `{"attemptTimeout":1500000000,"chargeBudget":5000000000,"minAge":120000000000,"interval":60000000000,"abandonAfter":1260000000000}`)

		deadline, input := paidWithTiming(t, s, keyring, s.createOrder(t, "11.00", "TRY"))
		require.Equal(t, 21*time.Minute, deadline)
		want := timing
		want.RetryInterval, want.AbandonAfter = workflows.DefaultTiming().RetryInterval, 21*time.Minute
		require.Equal(t, want, input, "the missing field takes its default, as a workflow would")
	})
	t.Run("a timing of a format version this build does not know", func(t *testing.T) {
		publish(t, strings.Replace(string(encoded), `"version":1`, `"version":2`, 1))
		id := s.createOrder(t, "12.00", "TRY")
		charges := len(s.provider.ChargeRequests())

		refused := s.checkout(t, id, "tok_visa")
		require.Equal(t, http.StatusServiceUnavailable, refused.status, "body: %s", refused.body)
		_, err := s.service.Checkout(ctx, id, "tok_visa")
		require.ErrorIs(t, err, checkout.ErrTimingUnreadable)
		require.ErrorContains(t, err, "timing: format version 2, and this program reads only version 1: "+
			"a newer program published this timing in a form that this one would misread; upgrade this program")
		o := s.order(t, id)
		require.Equal(t, "placed", o.Status)
		require.Empty(t, o.Attempts, "nothing is stored")
		require.Len(t, s.provider.ChargeRequests(), charges, "nothing is charged")
	})
}

// paidWithTiming pays the order and returns its attempt's time from creation
// to abandonment and the timing in its workflow's input, read from the
// workflow's history with the payload key.
func paidWithTiming(t *testing.T, s *checkoutStack, keyring *codec.Keyring, id int64) (time.Duration, workflows.Timing) {
	t.Helper()
	paid := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusOK, paid.status, "body: %s", paid.body)
	_, attempts, err := s.store.GetOrder(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	var input workflows.PaymentInput
	for _, e := range historyOf(t, s, workflows.WorkflowID(attempts[0].Key)) {
		if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			require.NoError(t, codec.NewDataConverter(keyring).FromPayload(a.GetInput().GetPayloads()[0], &input))
		}
	}
	return attempts[0].AbandonAt.Sub(attempts[0].CreatedAt), input.Timing
}
