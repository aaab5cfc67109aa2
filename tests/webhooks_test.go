package tests

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce"
	"chargeonce/fakeprovider"
)

// slowerThanTheBudget is the article's 15-second provider at the half
// scale of articleTiming: it finishes every charge after the checkout has
// answered 202, long before the first lookup at MinAge (2 minutes).
var slowerThanTheBudget = fakeprovider.Mode{Name: fakeprovider.ModeSlow, Delay: 7500 * time.Millisecond}

// paidAfterCharge waits until the order is paid, and returns how long after
// the provider created its charge the order was marked paid.
func (s *checkoutStack) paidAfterCharge(t *testing.T, id int64) time.Duration {
	t.Helper()
	o := s.waitPaid(t, id)
	charges := s.provider.Charges()
	require.Len(t, charges, 1)
	require.Equal(t, charges[0].ID, *o.ProviderPaymentID)
	order, _, err := s.store.GetOrder(context.Background(), id)
	require.NoError(t, err)
	return order.UpdatedAt.Sub(charges[0].Created)
}

func TestProviderEvents_SlowProviderIsPaidWithinASecondOfTheChargeFinishing(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: articleTiming(), Budget: articleBudget, Mode: slowerThanTheBudget, ProviderEvents: true,
	})
	id := s.createOrder(t, "548.90", "TRY")

	res := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusAccepted, res.status, "body: %s", res.body)
	sent := len(s.provider.ChargeRequests())

	took := s.paidAfterCharge(t, id)
	require.Less(t, took, time.Second, "paid within a second of the charge finishing")
	require.Len(t, s.provider.ChargeRequests(), sent, "no customer retry, nothing re-sent")
	o := s.order(t, id)
	require.NotNil(t, o.Attempts[0].LastCheckedAt, "settled by a lookup, not by the event's body")
	require.Equal(t, "1", metricValue(t, s.metrics(t), `chargeonce_provider_events_total{result="signaled"}`))
	events, err := s.store.ProviderEvents(context.Background(), o.Attempts[0].MerchantReference)
	require.NoError(t, err)
	require.Len(t, events, 1)
	require.Equal(t, "charge.succeeded", events[0].Type)
}

func TestProviderEvents_TemporalUnreachableIs503ThenTheRedeliverySettles(t *testing.T) {
	s := startCheckoutStack(t, checkoutStackConfig{
		Timing: articleTiming(), Budget: articleBudget, Mode: slowerThanTheBudget, ProviderEvents: true,
		// The event is held back until Temporal is surely down, and retried
		// every second or two while it stays down.
		Webhooks: fakeprovider.WebhookConfig{
			Schedule: fakeprovider.Schedule{time.Second, time.Second, 2 * time.Second, 2 * time.Second, 5 * time.Second, 5 * time.Second, 10 * time.Second},
			Chaos:    fakeprovider.WebhookChaos{Delay: 5 * time.Second},
		},
		DataDir: t.TempDir(),
	})
	id := s.createOrder(t, "548.90", "TRY")
	res := s.checkout(t, id, "tok_visa")
	require.Equal(t, http.StatusAccepted, res.status, "body: %s", res.body)

	refused := func(context.Context) error {
		require.Eventually(t, func() bool {
			for _, d := range s.provider.Webhooks().Deliveries {
				if d.Status == http.StatusServiceUnavailable {
					return true
				}
			}
			return false
		}, time.Minute, 50*time.Millisecond, "a delivery answered 503 while Temporal is down")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, s.stack.RestartTemporalAfter(ctx, refused))

	took := s.paidAfterCharge(t, id)
	require.Less(t, took, articleTiming().MinAge, "settled by the redelivery, before any lookup was due")
	// The event reaches the workflow as an update, which the API waits for
	// a worker to accept. A redelivery while the worker is still finding
	// the restarted server may be answered 503 all the same, though the
	// server keeps its update and the workflow acts on it; a later
	// redelivery then finds the attempt settled.
	answered := func() bool {
		deliveries := s.provider.Webhooks().Deliveries
		return deliveries[len(deliveries)-1].Status == http.StatusOK
	}
	require.Eventually(t, answered, time.Minute, 50*time.Millisecond, "a redelivery is answered 200")
	deliveries := s.provider.Webhooks().Deliveries
	last := deliveries[len(deliveries)-1]
	require.Greater(t, last.Try, 1)
	require.Equal(t, deliveries[0].ID, last.ID, "the redelivery of the same event")
	o := s.order(t, id)
	events, err := s.store.ProviderEvents(context.Background(), o.Attempts[0].MerchantReference)
	require.NoError(t, err)
	require.Len(t, events, 1, "stored once")
	require.Contains(t, []string{"signaled", "settled"}, events[0].Result, "handled once, while the workflow ran or after it settled the attempt")
	metrics := s.metrics(t)
	require.NotEqual(t, "0", metricValue(t, metrics, `chargeonce_provider_events_total{result="unavailable"}`))
	require.Equal(t, "1", metricValue(t, metrics, `chargeonce_provider_events_total{result="`+events[0].Result+`"}`))
	_, attempts, err := s.store.GetOrder(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, chargeonce.AttemptSucceeded, attempts[0].Status)
}

// metricValue is the value of one sample in a /metrics scrape, "0" when
// the sample is absent.
func metricValue(t *testing.T, scrape, sample string) string {
	t.Helper()
	for line := range strings.SplitSeq(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return "0"
}
