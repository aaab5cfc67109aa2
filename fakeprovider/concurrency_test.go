package fakeprovider

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPostCharge_SameNewKeyFromFiftyClientsAtOnceCreatesOneCharge(t *testing.T) {
	const clients = 50
	f := newFixture(t, Config{})
	start := make(chan struct{})
	replies := make([]reply, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			<-start
			replies[i], errs[i] = f.send(context.Background(), f.client, post("same-key", validBody))
		})
	}

	close(start)
	wg.Wait()

	var created, replayed, inFlight int
	for i, r := range replies {
		require.NoError(t, errs[i])
		switch {
		case r.status == http.StatusCreated && r.header.Get("Idempotent-Replayed") == "true":
			replayed++
		case r.status == http.StatusCreated:
			created++
		case r.status == http.StatusConflict:
			inFlight++
		default:
			require.Failf(t, "unexpected reply", "status %d: %s", r.status, r.body)
		}
	}
	require.Equal(t, 1, created)
	require.Equal(t, clients, created+replayed+inFlight)
	require.NoError(t, f.p.Wait(context.Background()))
	require.Len(t, f.p.Charges(), 1)
}

func TestPostCharge_AThousandKeysInParallelCreateAThousandCharges(t *testing.T) {
	const keys = 1000
	f := newFixture(t, Config{})
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 64, MaxIdleConnsPerHost: 64}}
	start := make(chan struct{})
	statuses := make([]int, keys)
	errs := make([]error, keys)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			<-start
			var r reply
			r, errs[i] = f.send(context.Background(), client, post(fmt.Sprintf("key-%04d", i), chargeBody(int64(i+1), "tok_visa", fmt.Sprintf("ref-%04d", i))))
			statuses[i] = r.status
		})
	}

	close(start)
	wg.Wait()

	for i := range keys {
		require.NoError(t, errs[i])
		require.Equal(t, http.StatusCreated, statuses[i])
	}
	charges := f.p.Charges()
	require.Len(t, charges, keys)
	seen := make(map[string]bool, keys)
	for i, c := range charges {
		require.Equal(t, fmt.Sprintf("ch_%06d", i+1), c.ID)
		require.False(t, seen[c.IdempotencyKey], "key %s charged twice", c.IdempotencyKey)
		seen[c.IdempotencyKey] = true
	}
}

func TestPostRefund_TwentyRefundsRacingOneChargeNeverPassItsAmount(t *testing.T) {
	f := newFixture(t, Config{})
	charge := paidCharge(t, f, 1000)
	statuses := make(chan int, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			r, err := f.send(context.Background(), f.client, postRefundCall(fmt.Sprint("race-", i), refundBody(charge, 100, fmt.Sprint("ref-", i))))
			if err != nil {
				statuses <- 0
				return
			}
			statuses <- r.status
		})
	}
	wg.Wait()
	close(statuses)

	counts := map[int]int{}
	for s := range statuses {
		counts[s]++
	}
	require.Equal(t, map[int]int{http.StatusCreated: 10, http.StatusPaymentRequired: 10}, counts)
	var refunded int64
	for _, r := range f.p.Refunds() {
		if r.Status == RefundSucceeded {
			refunded += r.Amount
		}
	}
	require.Equal(t, int64(1000), refunded)
}
