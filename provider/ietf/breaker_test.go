package ietf_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/provider"
)

// withBreaker configures the breaker and sends its logs to logs, if any.
func withBreaker(b provider.BreakerConfig, logs *logBuffer) func(*testConfig) {
	return func(cfg *testConfig) {
		cfg.Breaker = b
		if logs != nil {
			cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
		}
	}
}

func TestClient_BreakerOpensOnProviderFailuresAndSendsNothing(t *testing.T) {
	cases := []struct {
		name    string
		handler http.Handler
		want    provider.Outcome
	}{
		{"503", reply{status: http.StatusServiceUnavailable}, provider.Unavailable},
		{"500", reply{status: http.StatusInternalServerError}, provider.Unavailable},
		{"timeout", http.HandlerFunc(blockUntilClientGivesUp), provider.Timeout},
		{"dropped connection", http.HandlerFunc(dropConnection), provider.TransportError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			logs := &logBuffer{}
			c := newClient(t, srv.URL, withBreaker(provider.BreakerConfig{ConsecutiveFailures: 3, OpenTimeout: time.Hour}, logs))
			charge := func() provider.Result {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				return c.Charge(ctx, testCharge())
			}

			for range 3 {
				require.Equal(t, tc.want, charge().Outcome)
			}
			res := charge()

			require.Equal(t, provider.BreakerOpen, res.Outcome)
			require.True(t, res.Outcome.Retryable())
			require.False(t, res.Sent)
			require.Zero(t, res.StatusCode)
			require.Zero(t, res.Duration)
			require.Contains(t, res.Detail, "provider-charges is open")
			require.EqualValues(t, 3, srv.hits.Load(), "an open breaker sends nothing")
			require.Contains(t, logs.String(), "breaker=provider-charges from=closed to=open")
		})
	}
}

func TestClient_BreakerIgnoresAnswersThatAreNotProviderFailures(t *testing.T) {
	cases := []struct {
		name  string
		reply reply
		want  provider.Outcome
	}{
		{"decline", reply{status: 402, body: `{"code":"card_declined","decline_code":"do_not_honor","charge_id":"ch_1"}`}, provider.Declined},
		{"409 in flight", reply{status: 409, header: map[string]string{"Retry-After": "1"}}, provider.InFlight},
		{"422 key reused", reply{status: 422}, provider.ContractViolation},
		{"400 invalid", reply{status: 400}, provider.InvalidRequest},
		{"429 rate limited", reply{status: 429, header: map[string]string{"Retry-After": "1"}}, provider.RateLimited},
		{"2xx that breaks the contract", reply{status: 201, body: `{}`}, provider.ContractViolation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.reply)
			c := newClient(t, srv.URL, withBreaker(provider.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: time.Hour}, nil))

			for range 6 {
				require.Equal(t, tc.want, c.Charge(context.Background(), testCharge()).Outcome)
			}

			require.EqualValues(t, 6, srv.hits.Load())
		})
	}
}

func TestClient_BreakerProbesAfterTheOpenTimeoutAndClosesOnSuccess(t *testing.T) {
	var healthy atomic.Bool
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		reply{status: http.StatusCreated, body: chargeObject(t, nil)}.ServeHTTP(w, r)
	}))
	logs := &logBuffer{}
	c := newClient(t, srv.URL, withBreaker(provider.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: 20 * time.Millisecond}, logs))
	for range 2 {
		require.Equal(t, provider.Unavailable, c.Charge(context.Background(), testCharge()).Outcome)
	}
	require.Contains(t, logs.String(), "to=open")

	healthy.Store(true)
	require.Eventually(t, func() bool {
		return c.Charge(context.Background(), testCharge()).Outcome == provider.Approved
	}, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 3, srv.hits.Load(), "one probe, and nothing sent while open")

	for range 3 {
		require.Equal(t, provider.Approved, c.Charge(context.Background(), testCharge()).Outcome)
	}
	require.EqualValues(t, 6, srv.hits.Load())
	require.Contains(t, logs.String(), "from=open to=half-open")
	require.Contains(t, logs.String(), "from=half-open to=closed")
}

func TestClient_BreakerReopensWhenTheProbeFails(t *testing.T) {
	srv := newServer(t, reply{status: http.StatusServiceUnavailable})
	logs := &logBuffer{}
	c := newClient(t, srv.URL, withBreaker(provider.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: 20 * time.Millisecond}, logs))
	for range 2 {
		require.Equal(t, provider.Unavailable, c.Charge(context.Background(), testCharge()).Outcome)
	}

	require.Eventually(t, func() bool {
		return c.Charge(context.Background(), testCharge()).Outcome == provider.Unavailable
	}, 5*time.Second, 5*time.Millisecond)

	require.EqualValues(t, 3, srv.hits.Load())
	require.Contains(t, logs.String(), "from=half-open to=open")
}

func TestClient_BreakerOpensOnTheFailureRatio(t *testing.T) {
	var n atomic.Int64
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		reply{status: http.StatusCreated, body: chargeObject(t, nil)}.ServeHTTP(w, r)
	}))
	c := newClient(t, srv.URL, withBreaker(provider.BreakerConfig{
		ConsecutiveFailures: 100, FailureRatio: 0.5, MinRequests: 4, OpenTimeout: time.Hour,
	}, nil))

	var outcomes []provider.Outcome
	for range 5 {
		outcomes = append(outcomes, c.Charge(context.Background(), testCharge()).Outcome)
	}

	require.Equal(t, []provider.Outcome{
		provider.Approved, provider.Unavailable, provider.Approved, provider.Unavailable, provider.BreakerOpen,
	}, outcomes, "half of four answered requests failed")
	require.EqualValues(t, 4, srv.hits.Load())
}

func TestClient_BreakerIgnoresACallerThatCancels(t *testing.T) {
	arrived := make(chan struct{})
	var answer atomic.Bool
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answer.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		close(arrived)
		blockUntilClientGivesUp(w, r)
	}))
	c := newClient(t, srv.URL, withBreaker(provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()

	require.Equal(t, provider.Timeout, c.Charge(ctx, testCharge()).Outcome)
	answer.Store(true)
	res := c.Charge(context.Background(), testCharge())

	require.Equal(t, provider.Unavailable, res.Outcome, "a cancelled call is no provider failure")
	require.EqualValues(t, 2, srv.hits.Load())
}

func TestClient_LookupsHaveTheirOwnBreaker(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		reply{status: http.StatusOK, body: `{"data":[]}`}.ServeHTTP(w, r)
	}))
	c := newClient(t, srv.URL, withBreaker(provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, nil))
	require.Equal(t, provider.Unavailable, c.Charge(context.Background(), testCharge()).Outcome)
	require.Equal(t, provider.BreakerOpen, c.Charge(context.Background(), testCharge()).Outcome)

	charges, err := c.FindCharges(context.Background(), testCharge().MerchantReference)

	require.NoError(t, err)
	require.Empty(t, charges)
	require.EqualValues(t, 2, srv.hits.Load())
}
