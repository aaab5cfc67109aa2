package ietf_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"chargeonce/fakeprovider"
	"chargeonce/provider"
)

// Only an answer the contract documents as processing nothing, or a request
// that never left, is certainly not processed. Everything that may hide a
// charge is not.
func TestResult_NotProcessedOnlyWhereNoChargeCanExist(t *testing.T) {
	tests := []struct {
		name    string
		handler http.Handler
		want    bool
	}{
		{"400 malformed", reply{status: http.StatusBadRequest, body: `{"title":"Invalid request"}`}, true},
		{"429 rate limited", reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "1"}}, true},
		{"500 provider error", reply{status: http.StatusInternalServerError}, true},
		{"503 provider error", reply{status: http.StatusServiceUnavailable}, true},
		{"502 from a gateway", reply{status: http.StatusBadGateway}, false},
		{"504 from a gateway", reply{status: http.StatusGatewayTimeout}, false},
		{"409 in flight", reply{status: http.StatusConflict, header: map[string]string{"Retry-After": "1"}}, false},
		{"422 key reused", reply{status: http.StatusUnprocessableEntity}, false},
		{"connection dropped after the request", http.HandlerFunc(dropConnection), false},
		{"no answer in time", http.HandlerFunc(blockUntilClientGivesUp), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.handler)
			c := newClient(t, srv.URL, func(cfg *testConfig) { cfg.HTTPClient = &http.Client{Timeout: 300 * time.Millisecond} })

			res := c.Charge(context.Background(), testCharge())

			require.Equal(t, tt.want, res.NotProcessed(), "%s: %s", res.Outcome, res.Detail)
			require.True(t, res.Sent)
		})
	}
}

func TestResult_NotProcessedWhenNothingLeft(t *testing.T) {
	// A port that was free a moment ago: the connection is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	res := newClient(t, refused).Charge(context.Background(), testCharge())
	require.Equal(t, provider.TransportError, res.Outcome, res.Detail)
	require.False(t, res.Sent, "a refused connection sends nothing")
	require.True(t, res.NotProcessed())

	invalid := testCharge()
	invalid.Source = ""
	res = newClient(t, refused).Charge(context.Background(), invalid)
	require.Equal(t, provider.InvalidRequest, res.Outcome)
	require.True(t, res.NotProcessed())

	// The breaker opens on a 503 and then holds requests back.
	srv := newServer(t, reply{status: http.StatusServiceUnavailable})
	c := newClient(t, srv.URL, func(cfg *testConfig) {
		cfg.Breaker = provider.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Minute}
	})
	require.True(t, c.Charge(context.Background(), testCharge()).NotProcessed())
	res = c.Charge(context.Background(), testCharge())
	require.Equal(t, provider.BreakerOpen, res.Outcome)
	require.False(t, res.Sent)
	require.True(t, res.NotProcessed())
	require.EqualValues(t, 1, srv.hits.Load(), "the open breaker sent nothing")
}

// The fake's own provider errors and rate limits, over HTTP.
func TestResult_FakeProviderErrorsAndRateLimitsAreNotProcessed(t *testing.T) {
	for _, mode := range []fakeprovider.ModeName{fakeprovider.ModeError, fakeprovider.ModeRateLimit} {
		t.Run(string(mode), func(t *testing.T) {
			fp, c := newFake(t, fakeprovider.Config{Mode: fakeprovider.Mode{Name: mode, Rate: 1}})

			res := c.Charge(context.Background(), testCharge())

			require.True(t, res.NotProcessed(), "%s: %s", res.Outcome, res.Detail)
			require.Empty(t, fp.Charges())
		})
	}
}
